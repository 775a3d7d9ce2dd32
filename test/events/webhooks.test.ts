/**
 * Webhooks as a receiver meets them, against a real server and real HTTP receivers on loopback:
 * each event arrives signed per Standard Webhooks, verified here by the specification authors' own
 * library (`standardwebhooks` from npm, which shares no code with the server's signer); a receiver
 * that fails is retried with the same `webhook-id` (at least once, deduplicated by id); a receiver
 * that never answers holds up no write; URLs that are not https (but on loopback) are refused at the
 * admin API, and the delivery log says what happened to each attempt.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminClient, testServer, type AdminClient } from '../server/_support.ts';

interface Received {
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A receiver on loopback: answers each request with the next status of `statuses` (the last repeats), or never when it is 0. */
async function receiver(statuses: number[]) {
  const got: Received[] = [];
  const hanging: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body });
      const status = statuses.length > 1 ? statuses.shift()! : statuses[0]!;
      if (status === 0) hanging.push(res);
      else res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    got,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Polls until `check` holds; a deadline that fails the test instead of a hang. */
async function until<T>(what: string, check: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const receivers: Awaited<ReturnType<typeof receiver>>[] = [];

beforeAll(async () => {
  // Loopback receivers are private addresses: allowed here as an operator would for a local SIEM agent.
  server = await testServer({ webhooks: { allowPrivateAddresses: true, pollMs: 50, retrySeconds: [0.2, 0.2, 0.2] } });
  admin = await adminClient(server);
  await admin.typed.call('putTenant', { tenant: 'hooks' }, { body: { displayName: 'Hooks Inc.' } });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await server?.dispose();
});

it('delivers each change signed per Standard Webhooks: the specification\'s own library verifies it', async () => {
  const r = await receiver([204]);
  receivers.push(r);
  const made = await admin.typed.call('putWebhook', { tenant: 'hooks', webhook: 'siem' }, { body: { url: r.url, types: ['user.*'] } });
  expect(made.secret).toMatch(/^whsec_/);
  await admin.typed.call('putUser', { tenant: 'hooks', userId: 'u-ada' }, { body: { email: 'ada@hooks.test' } });

  const got = await until('the user.created delivery', () => r.got.find((g) => g.body.includes('"user.created"')));
  const verified = new Webhook(made.secret!).verify(got.body, got.headers) as { type: string; data: { id: string; tenant: string; object: { kind: string; name: string } } };
  expect(verified).toMatchObject({ type: 'user.created', data: { tenant: 'hooks', object: { kind: 'user', name: 'u-ada' } } });
  expect(got.headers['webhook-id']).toBe(verified.data.id);
  // A body changed on the way, or another secret, fails verification.
  expect(() => new Webhook(made.secret!).verify(got.body.replace('u-ada', 'u-eve'), got.headers)).toThrow();
  expect(() => new Webhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(got.body, got.headers)).toThrow();
  // Only the types asked for: no tenant or application events reached this one.
  expect(r.got.every((g) => JSON.parse(g.body).type.startsWith('user.'))).toBe(true);
});

it('retries a failing receiver with the same webhook-id until it answers 2xx, and the delivery log says so', async () => {
  const r = await receiver([500, 503, 200]);
  receivers.push(r);
  const made = await admin.typed.call('putWebhook', { tenant: 'hooks', webhook: 'flaky' }, { body: { url: r.url, types: ['user.updated'] } });
  await admin.typed.call('putUser', { tenant: 'hooks', userId: 'u-ada' }, { body: { email: 'ada@hooks.test', displayName: 'Ada' } });
  await until('three attempts', () => (r.got.length >= 3 ? true : undefined));
  const ids = new Set(r.got.map((g) => g.headers['webhook-id']));
  expect(ids.size).toBe(1);
  for (const g of r.got) new Webhook(made.secret!).verify(g.body, g.headers);
  const id = [...ids][0]!;
  let entry: { eventId: string; status: string; attempts: number; lastStatus?: number } | undefined;
  for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((res) => setTimeout(res, 50))) {
    const { items } = await admin.typed.call('listWebhookDeliveries', { tenant: 'hooks', webhook: 'flaky' }, {});
    entry = items.find((d) => d.eventId === id);
    if (entry?.status === 'delivered') break;
  }
  expect(entry).toMatchObject({ eventId: id, status: 'delivered', attempts: 3, lastStatus: 200 });
});

it('a receiver that never answers holds up no write, and URLs other than https (but loopback) are refused', async () => {
  const r = await receiver([0]);
  receivers.push(r);
  await admin.typed.call('putWebhook', { tenant: 'hooks', webhook: 'stuck' }, { body: { url: r.url } });
  await admin.typed.call('putUser', { tenant: 'hooks', userId: 'u-bo' }, { body: { email: 'bo@hooks.test' } });
  await until('an attempt to reach the stuck receiver', () => (r.got.length > 0 ? true : undefined));
  // While it hangs, writes go on (each under a deadline that fails the test rather than waiting).
  for (const id of ['u-c1', 'u-c2', 'u-c3']) {
    const write = admin.typed.call('putUser', { tenant: 'hooks', userId: id }, { body: { email: `${id}@hooks.test` } });
    await Promise.race([write, new Promise((_, reject) => setTimeout(() => reject(new Error(`the write of ${id} waited on the receiver`)), 5_000))]);
  }
  for (const url of ['http://hooks.example/cb', 'ftp://127.0.0.1/x', 'https://user:pw@hooks.example/cb', 'not a url']) {
    await expect(admin.typed.call('putWebhook', { tenant: 'hooks', webhook: 'bad' }, { body: { url } })).rejects.toMatchObject({ status: 400 });
  }
});
