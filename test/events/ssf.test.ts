/**
 * The SSF transmitter (src/server/ssf) as receivers meet it, against a real server:
 * - a receiver written in Python from the specifications (test/interop/python/ssf_receiver.py: no
 *   code shared with the transmitter; joserfc verifies the SETs) makes a poll stream, is verified,
 *   and gets CAEP session-revoked after an unassignment through the admin API;
 * - push (RFC 8935) to a loopback receiver that checks each SET with jose against the tenant's
 *   JWKS: a disabled user is session-revoked and account-disabled, the stream's Authorization
 *   header comes along, a deleted user is account-purged;
 * - a push receiver that never answers holds up no write;
 * - hostile input at the SSF endpoints gets clear 4xx problems.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { adminClient, fixtureTenant, localhostFetch, testServer, type AdminClient, type Fixture } from '../server/_support.ts';
import { interopProgram } from '../support/interop-clients.ts';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const ACCOUNT_PURGED = 'https://schemas.openid.net/secevent/risc/event-type/account-purged';
const PUSH = 'urn:ietf:rfc:8935';
const POLL = 'urn:ietf:rfc:8936';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // Loopback receivers are private addresses: allowed here as an operator would for a receiver on the same host.
  server = await testServer({ webhooks: { allowPrivateAddresses: true, pollMs: 50, retrySeconds: [0.2, 0.2, 0.2] } });
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  await fixtureTenant(admin, 'globex');
}, 120_000);
afterAll(async () => {
  for (const c of closers) await c();
  await server?.dispose();
});

const origin = (tenant: string) => new URL(server.issuer(tenant)).origin;

/** One exchange with a tenant's SSF endpoint; `token` undefined: the admin API's. */
async function ssf(tenant: string, method: string, path: string, body?: unknown, token?: string | null, raw?: string) {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token ?? admin.token}`;
  if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
  const res = await localhostFetch(`${origin(tenant)}${path}`, { method, headers, ...(raw !== undefined ? { body: raw } : body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
}

/** Polls until `check` holds; a deadline that fails the test instead of a hang. */
async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, ms = 20_000): Promise<T> {
  for (const end = Date.now() + ms; ;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('a receiver written from the specification (Python, joserfc) gets session-revoked after an unassignment, signed with the tenant key', { timeout: 600_000 }, async () => {
  const python = await interopProgram('python');
  const proc = spawn(python.command, [join(import.meta.dirname, '..', 'interop', 'python', 'ssf_receiver.py')], {
    env: { ...process.env, SSF_ORIGIN: origin('acme'), SSF_TOKEN: admin.token, SSF_AUDIENCE: acme.api, SSF_WANT: SESSION_REVOKED, SSF_SUB: acme.users.carol.id },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  closers.push(async () => void proc.kill());
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: proc.stdout }).on('line', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));

  await until('the receiver to be verified', () => (lines.some((l) => 'ready' in l || 'error' in l) ? true : undefined), 60_000);
  expect(lines.find((l) => 'error' in l)).toBeUndefined();
  await admin.typed.call('deleteAssignment', { tenant: 'acme', application: 'web', userId: acme.users.carol.id }, {});

  expect(await exited).toBe(0);
  const got = lines.find((l) => 'set' in l) as { set: Record<string, any>; header: Record<string, unknown> };
  expect(got.header).toMatchObject({ typ: 'secevent+jwt' });
  expect(got.set).toMatchObject({
    iss: server.issuer('acme'), aud: acme.api,
    sub_id: { format: 'complex', user: { format: 'iss_sub', iss: server.issuer('acme'), sub: acme.users.carol.id } },
    events: { [SESSION_REVOKED]: { initiating_entity: 'admin' } },
  });
  // The SET names the event of the log it came from (`txn`), which the admin API reads back.
  const events = await admin.typed.call('listEvents', { tenant: 'acme' }, { query: { type: 'assignment.deleted' } });
  expect(events.items.map((e) => e.id)).toContain(got.set.txn);
});

/** A push receiver on loopback: verifies each SET with jose against the tenant's JWKS; answers `status` (0: never). */
async function pushReceiver(tenant: string, status: number) {
  const got: { claims: Record<string, any>; headers: http.IncomingHttpHeaders }[] = [];
  const problems: string[] = [];
  const hanging: http.ServerResponse[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', async () => {
      if (status === 0) {
        got.push({ claims: {}, headers: req.headers });
        hanging.push(res);
        return;
      }
      try {
        // The tenant's published keys, fetched as any receiver would (localhostFetch: *.localhost without DNS).
        const jwks = (await (await localhostFetch(`${server.issuer(tenant)}.well-known/jwks.json`)).json()) as JSONWebKeySet;
        const { payload } = await jwtVerify(body, createLocalJWKSet(jwks), { issuer: server.issuer(tenant), typ: 'secevent+jwt', algorithms: ['RS256', 'ES256'] });
        got.push({ claims: payload, headers: req.headers });
        res.writeHead(status).end();
      } catch (err) {
        problems.push((err as Error).message);
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ err: 'invalid_request', description: (err as Error).message }));
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const close = () => {
    for (const res of hanging) res.destroy();
    srv.closeAllConnections();
    return new Promise<void>((r) => srv.close(() => r()));
  };
  closers.push(close);
  return { got, problems, url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/events` };
}

it('pushes signed SETs (202): a disabled user is session-revoked and account-disabled, a deleted one purged, with the stream\'s Authorization header', async () => {
  const r = await pushReceiver('acme', 202);
  const made = await ssf('acme', 'POST', '/ssf/streams', {
    delivery: { method: PUSH, endpoint_url: r.url, authorization_header: 'Bearer receiver-secret' },
    events_requested: [SESSION_REVOKED, ACCOUNT_DISABLED, ACCOUNT_PURGED],
  });
  expect(made.status).toBe(201);
  expect(made.body).toMatchObject({ iss: server.issuer('acme'), delivery: { method: PUSH, endpoint_url: r.url }, events_delivered: expect.arrayContaining([SESSION_REVOKED, ACCOUNT_DISABLED, ACCOUNT_PURGED]) });
  expect(JSON.stringify(made.body)).not.toContain('receiver-secret');
  const aud = made.body.aud as string;

  await admin.put(routePath('getUser', { tenant: 'acme', userId: acme.users.bob.id }), { email: acme.users.bob.email, disabled: true });
  const disabled = await until('account-disabled', () => r.got.find((g) => ACCOUNT_DISABLED in g.claims.events));
  expect(disabled.headers['content-type']).toBe('application/secevent+jwt');
  expect(disabled.headers.authorization).toBe('Bearer receiver-secret');
  expect(disabled.claims).toMatchObject({ aud, sub_id: { format: 'iss_sub', iss: server.issuer('acme'), sub: acme.users.bob.id } });
  // Each event is its own SET, pushed on its own: the session-revoked one may come after account-disabled.
  await until('session-revoked', () => r.got.find((g) => SESSION_REVOKED in g.claims.events && g.claims.sub_id.sub === acme.users.bob.id));

  await admin.call('DELETE', routePath('getUser', { tenant: 'acme', userId: acme.users.bob.id }));
  await until('account-purged', () => r.got.find((g) => ACCOUNT_PURGED in g.claims.events && g.claims.sub_id.sub === acme.users.bob.id));
  expect(r.problems).toEqual([]);
  // Each SET once (the receiver answered 202 to each), each with its own jti.
  const jtis = r.got.map((g) => g.claims.jti as string);
  expect(new Set(jtis).size).toBe(jtis.length);

  // Moved to another endpoint without naming a header: the old receiver's credential stays behind.
  const r2 = await pushReceiver('acme', 202);
  const moved = await ssf('acme', 'PATCH', '/ssf/streams', { stream_id: made.body.stream_id, delivery: { method: PUSH, endpoint_url: r2.url } });
  expect(moved.status).toBe(200);
  expect(moved.body.delivery).toEqual({ method: PUSH, endpoint_url: r2.url });
  await admin.put(routePath('getUser', { tenant: 'acme', userId: acme.users.carol.id }), { email: acme.users.carol.email, disabled: true });
  const atNew = await until('account-disabled at the new endpoint', () => r2.got.find((g) => ACCOUNT_DISABLED in g.claims.events));
  expect(atNew.headers.authorization).toBeUndefined();
  expect(r.got.some((g) => g.claims.sub_id?.sub === acme.users.carol.id && ACCOUNT_DISABLED in g.claims.events)).toBe(false);
  await ssf('acme', 'DELETE', `/ssf/streams?stream_id=${made.body.stream_id}`);
});

it('a push receiver that never answers holds up no write', async () => {
  const r = await pushReceiver('globex', 0);
  const made = await ssf('globex', 'POST', '/ssf/streams', { delivery: { method: PUSH, endpoint_url: r.url } });
  expect(made.status).toBe(201);
  await admin.typed.call('deleteAssignment', { tenant: 'globex', application: 'web', userId: 'u-alice' }, {});
  await until('an attempt to reach the stuck receiver', () => (r.got.length > 0 ? true : undefined));
  // While it hangs, writes go on (each under a deadline that fails the test rather than waiting).
  for (const id of ['u-c1', 'u-c2', 'u-c3']) {
    const write = admin.typed.call('putUser', { tenant: 'globex', userId: id }, { body: { email: `${id}@globex.test` } });
    await Promise.race([write, new Promise((_, reject) => setTimeout(() => reject(new Error(`the write of ${id} waited on the receiver`)), 5_000))]);
  }
  await ssf('globex', 'DELETE', `/ssf/streams?stream_id=${made.body.stream_id}`);
});

it('answers hostile input with clear 4xx problems', async () => {
  const poll = await ssf('acme', 'POST', '/ssf/streams', { delivery: { method: POLL }, aud: 'urn:example:rs' });
  expect(poll.status).toBe(201);
  const { stream_id: id, receiver_token: token } = poll.body as { stream_id: string; receiver_token: string };
  const other = await ssf('globex', 'POST', '/ssf/streams', { delivery: { method: POLL } });
  const otherToken = other.body.receiver_token as string;

  // Discovery needs no token and names what a receiver needs.
  const disco = await ssf('acme', 'GET', '/.well-known/ssf-configuration', undefined, null);
  expect(disco.status).toBe(200);
  expect(disco.body).toMatchObject({ issuer: server.issuer('acme'), jwks_uri: `${server.issuer('acme')}.well-known/jwks.json`, delivery_methods_supported: [PUSH, POLL] });
  expect((await ssf('acme', 'GET', '/.well-known/ssf-configuration/oauth2', undefined, null)).body).toEqual(disco.body);

  const bad = await ssf('acme', 'POST', '/ssf/streams', undefined, undefined, '{"delivery": ');
  expect(bad.status).toBe(400);
  expect(bad.body.message).toMatch(/not valid JSON/);
  const huge = await ssf('acme', 'POST', '/ssf/streams', { delivery: { method: POLL }, description: 'x'.repeat(64 * 1024) });
  expect(huge.status).toBe(413);
  const wrongUrl = await ssf('acme', 'POST', '/ssf/streams', { delivery: { method: PUSH, endpoint_url: 'http://receiver.example/events' } });
  expect(wrongUrl.status).toBe(400);
  expect(wrongUrl.body.path).toBe('delivery.endpoint_url');
  expect(wrongUrl.body.message).toMatch(/https/);
  const unknownMethod = await ssf('acme', 'POST', '/ssf/streams', { delivery: { method: 'urn:example:carrier-pigeon' } });
  expect(unknownMethod.status).toBe(400);

  expect((await ssf('acme', 'GET', '/ssf/streams', undefined, null)).status).toBe(401);
  expect((await ssf('acme', 'GET', `/ssf/streams?stream_id=${id}`, undefined, 'not-a-token')).status).toBe(401);
  // Another tenant's receiver token is no token here.
  const foreign = await ssf('acme', 'POST', `/ssf/poll/${other.body.stream_id}`, { returnImmediately: true }, otherToken);
  expect(foreign.status).toBe(401);
  expect(foreign.body.message).toMatch(/not a receiver token of a stream of tenant 'acme'/);
  // A receiver token reaches its stream only, and makes none.
  expect((await ssf('acme', 'GET', `/ssf/streams?stream_id=${id}`, undefined, token)).body).toMatchObject({ stream_id: id, aud: 'urn:example:rs' });
  expect((await ssf('acme', 'GET', '/ssf/streams', undefined, token)).body).toHaveLength(1);
  expect((await ssf('acme', 'POST', '/ssf/streams', { delivery: { method: POLL } }, token)).status).toBe(403);
  const tokenOfOther = await ssf('globex', 'GET', `/ssf/status?stream_id=${poll.body.stream_id}`, undefined, otherToken);
  expect(tokenOfOther.status).toBe(403);
  expect((await ssf('acme', 'GET', '/ssf/status?stream_id=no-such-stream')).status).toBe(404);
  const badPoll = await ssf('acme', 'POST', `/ssf/poll/${id}`, { maxEvents: 'all' }, token);
  expect(badPoll.status).toBe(400);
  expect(badPoll.body.path).toBe('maxEvents');
  expect((await ssf('acme', 'POST', '/ssf/status', { stream_id: id, status: 'asleep' }, token)).status).toBe(400);

  // Verification requests are rationed (each is a row until acknowledged): a burst, then 429 with Retry-After.
  const verifications = [];
  for (let i = 0; i < 4; i++) verifications.push(await ssf('acme', 'POST', '/ssf/verify', { stream_id: id, state: `s${i}` }, token));
  expect(verifications.map((v) => v.status)).toEqual([204, 204, 204, 429]);
  expect(Number(verifications[3]!.headers.get('retry-after'))).toBeGreaterThan(0);

  // And what it may do works: pause, poll returns nothing at once, enable, delete.
  expect((await ssf('acme', 'POST', '/ssf/status', { stream_id: id, status: 'paused', reason: 'maintenance' }, token)).body).toEqual({ stream_id: id, status: 'paused', reason: 'maintenance' });
  expect((await ssf('acme', 'POST', `/ssf/poll/${id}`, { returnImmediately: true }, token)).body).toEqual({ sets: {}, moreAvailable: false });
  expect((await ssf('acme', 'DELETE', `/ssf/streams?stream_id=${id}`, undefined, token)).status).toBe(204);
  expect((await ssf('acme', 'GET', `/ssf/streams?stream_id=${id}`, undefined, token)).status).toBe(401);
});

it('a long poll with nothing to send ends inside the request budget, answering no SETs rather than a 503', async () => {
  const quick = await testServer({ requestTimeoutSeconds: 3 });
  closers.push(() => quick.dispose());
  const quickAdmin = await adminClient(quick);
  await quickAdmin.typed.call('putTenant', { tenant: 'calm' }, { body: { displayName: 'Calm' } });
  const base = new URL(quick.issuer('calm')).origin;
  const made = await localhostFetch(`${base}/ssf/streams`, {
    method: 'POST', headers: { authorization: `Bearer ${quickAdmin.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ delivery: { method: POLL } }),
  });
  const { stream_id: id, receiver_token: token } = (await made.json()) as { stream_id: string; receiver_token: string };
  const res = await localhostFetch(`${base}/ssf/poll/${id}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ sets: {}, moreAvailable: false });
});

it('session-revoked follows access, not rows: none while a group still lets the person in, one for each person a group change leaves out', { timeout: 60_000 }, async () => {
  await fixtureTenant(admin, 'initech');
  await admin.put(routePath('putGroup', { tenant: 'initech', group: 'staff' }), { displayName: 'Staff', members: ['u-bob', 'u-carol'] });
  await admin.put(routePath('putGroupAssignment', { tenant: 'initech', application: 'web', group: 'staff' }), {});
  const made = await ssf('initech', 'POST', '/ssf/streams', { delivery: { method: POLL }, events_requested: [SESSION_REVOKED, ACCOUNT_DISABLED] });
  const { stream_id: id, receiver_token: token } = made.body as { stream_id: string; receiver_token: string };
  const got: Record<string, any>[] = [];
  let ack: string[] = [];
  const collect = async (what: string, done: () => boolean) => {
    await until(what, async () => {
      const r = await ssf('initech', 'POST', `/ssf/poll/${id}`, { ack, returnImmediately: true }, token);
      ack = Object.keys(r.body.sets);
      for (const jwt of Object.values(r.body.sets as Record<string, string>)) got.push(decodeJwt(jwt));
      return done() ? true : undefined;
    });
  };
  const revoked = () => got.filter((c) => SESSION_REVOKED in c.events).map((c) => c.sub_id.user?.sub ?? c.sub_id.sub);

  // carol loses her own assignment but keeps access through staff: nothing. (alice's disabling marks
  // the point: SETs come in the log's order, so once its SETs are here, carol's event was read.)
  await admin.typed.call('deleteAssignment', { tenant: 'initech', application: 'web', userId: 'u-carol' }, {});
  await admin.put(routePath('getUser', { tenant: 'initech', userId: 'u-alice' }), { email: 'alice@initech.test', disabled: true });
  await collect('alice disabled', () => got.some((c) => ACCOUNT_DISABLED in c.events));
  expect(revoked()).toEqual(['u-alice']);

  // bob leaves staff, his only way in: revoked, the group named. Then staff loses web: carol too.
  await admin.put(routePath('putGroup', { tenant: 'initech', group: 'staff' }), { displayName: 'Staff', members: ['u-carol'] });
  await collect('bob revoked', () => revoked().includes('u-bob'));
  expect(got.find((c) => c.sub_id.user?.sub === 'u-bob')!.sub_id.group).toEqual({ format: 'opaque', id: 'staff' });
  await admin.call('DELETE', routePath('deleteGroupAssignment', { tenant: 'initech', application: 'web', group: 'staff' }));
  await collect('carol revoked', () => revoked().includes('u-carol'));
  expect(revoked()).toEqual(['u-alice', 'u-bob', 'u-carol']);

  // A group deleted outright: its members lose what it gave them. crew lets bob into spa (his only
  // way in) and carol too, who keeps her own assignment there: bob alone is revoked.
  await admin.put(routePath('putGroup', { tenant: 'initech', group: 'crew' }), { displayName: 'Crew', members: ['u-bob', 'u-carol'] });
  await admin.put(routePath('putGroupAssignment', { tenant: 'initech', application: 'spa', group: 'crew' }), {});
  await admin.call('DELETE', routePath('deleteGroup', { tenant: 'initech', group: 'crew' }));
  await collect('bob revoked again', () => revoked().filter((u) => u === 'u-bob').length === 2);
  expect(got.filter((c) => SESSION_REVOKED in c.events && c.sub_id.group?.id === 'crew').map((c) => c.sub_id.user.sub)).toEqual(['u-bob']);
  expect(revoked()).toEqual(['u-alice', 'u-bob', 'u-carol', 'u-bob']);
});
