/**
 * SETs survive a kill: a real `idforge serve` pushes three session-revoked SETs to a receiver that
 * holds the first attempt open; the server is SIGKILLed mid-attempt and started again on the same
 * data dir; the next process delivers every SET, the interrupted one again under the same `jti`
 * (so a receiver dedupes by it), each verified with jose against the tenant's JWKS.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { localhostFetch } from '../../src/admin-client/index.ts';
import { fixtureTenant, tempDir } from '../server/_support.ts';
import { serve, type Served } from '../support/db-faults.ts';
import { stopAll } from '../support/processes.ts';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const data = tempDir('idforge-ssf-kill-');
const got: string[] = [];
let hold = true;
const held: http.ServerResponse[] = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    got.push(body);
    if (hold) held.push(res); // the first attempts never get an answer: the server dies waiting
    else res.writeHead(202).end();
  });
});
let url = '';

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !(await check());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const args = ['--port', '0', '--webhook-private-addresses', '--webhook-timeout', '2'];

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
});
afterAll(async () => {
  for (const res of held) res.destroy();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
  await stopAll();
  data.remove();
});

it('a kill during push loses no SET: the next start delivers each, the interrupted one again with the same jti', { timeout: 180_000 }, async () => {
  let s: Served = await serve('ssf-kill-1', data.path, args);
  const fx = await fixtureTenant(s.admin, 'acme');
  const made = await localhostFetch(`http://acme.localhost:${s.port}/ssf/streams`, {
    method: 'POST', headers: { authorization: `Bearer ${s.admin.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: url }, events_requested: [SESSION_REVOKED] }),
  });
  expect(made.status).toBe(201);
  for (const [app, user] of [['web', fx.users.alice.id], ['spa', fx.users.alice.id], ['web', fx.users.carol.id]] as const) {
    await s.admin.typed.call('deleteAssignment', { tenant: 'acme', application: app, userId: user }, {});
  }
  await until('an attempt in flight', () => got.length > 0);
  const interrupted = got[0]!;

  process.kill(-s.proc.pid, 'SIGKILL');
  await s.proc.exited;
  hold = false;
  s = await serve('ssf-kill-2', data.path, args);

  const issuer = `http://acme.localhost:${s.port}/oauth2/`;
  const keys = createLocalJWKSet((await (await localhostFetch(`${issuer}.well-known/jwks.json`)).json()) as JSONWebKeySet);
  const events = await s.admin.typed.call('listEvents', { tenant: 'acme' }, { query: { type: 'assignment.deleted' } });
  const txns = events.items.map((e) => e.id).sort();
  expect(txns).toHaveLength(3);
  const claimsOf = async (jwt: string) => (await jwtVerify(jwt, keys, { typ: 'secevent+jwt', algorithms: ['RS256', 'ES256'] })).payload;
  const firstJti = (await claimsOf(interrupted)).jti;
  await until('all three delivered, the interrupted one twice', async () => {
    const claims = await Promise.all(got.map(claimsOf));
    return new Set(claims.map((c) => c.txn)).size === 3 && claims.filter((c) => c.jti === firstJti).length >= 2;
  });
  const claims = await Promise.all(got.map(claimsOf));
  expect([...new Set(claims.map((c) => c.txn as string))].sort()).toEqual(txns);
  // The interrupted SET went again with the same jti (signed anew: a receiver dedupes by jti, not by bytes).
  const [first, ...again] = claims.filter((c) => c.jti === firstJti);
  expect(again[0]).toMatchObject({ txn: first!.txn, sub_id: first!.sub_id, events: first!.events });
});
