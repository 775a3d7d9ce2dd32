/**
 * SETs survive a kill: a real `idforge serve` pushes three session-revoked SETs to a receiver that
 * holds the first attempt open; the server is SIGKILLed mid-attempt and started again on the same
 * data dir; the next process delivers every SET, the interrupted one again under the same `jti`
 * (so a receiver dedupes by it), each verified with jose against the tenant's JWKS.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { localhostFetch } from '../../src/admin-client/index.ts';
import { fixtureTenant, tempDir } from '../server/_support.ts';
import { serve, type Served } from '../support/db-faults.ts';
import { holdingReceiver, until, type HoldingReceiver } from '../support/holding-receiver.ts';
import { stopAll } from '../support/processes.ts';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const data = tempDir('idforge-ssf-kill-');
let receiver: HoldingReceiver;
const bodies = () => receiver.got.map((g) => g.body);

const args = ['--port', '0', '--webhook-private-addresses', '--webhook-timeout', '2'];

beforeAll(async () => {
  receiver = await holdingReceiver('/events', 202);
});
afterAll(async () => {
  await receiver?.close();
  await stopAll();
  data.remove();
});

it('a kill during push loses no SET: the next start delivers each, the interrupted one again with the same jti', { timeout: 180_000 }, async () => {
  let s: Served = await serve('ssf-kill-1', data.path, args);
  const fx = await fixtureTenant(s.admin, 'acme');
  const made = await localhostFetch(`http://acme.localhost:${s.port}/ssf/streams`, {
    method: 'POST', headers: { authorization: `Bearer ${s.admin.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url }, events_requested: [SESSION_REVOKED] }),
  });
  expect(made.status).toBe(201);
  for (const [app, user] of [['web', fx.users.alice.id], ['spa', fx.users.alice.id], ['web', fx.users.carol.id]] as const) {
    await s.admin.typed.call('deleteAssignment', { tenant: 'acme', application: app, userId: user }, {});
  }
  await until('an attempt in flight', () => bodies().length > 0);
  const interrupted = bodies()[0]!;

  process.kill(-s.proc.pid, 'SIGKILL');
  await s.proc.exited;
  receiver.release();
  s = await serve('ssf-kill-2', data.path, args);

  const issuer = `http://acme.localhost:${s.port}/oauth2/`;
  const keys = createLocalJWKSet((await (await localhostFetch(`${issuer}.well-known/jwks.json`)).json()) as JSONWebKeySet);
  const events = await s.admin.typed.call('listEvents', { tenant: 'acme' }, { query: { type: 'assignment.deleted' } });
  const txns = events.items.map((e) => e.id).sort();
  expect(txns).toHaveLength(3);
  const claimsOf = async (jwt: string) => (await jwtVerify(jwt, keys, { typ: 'secevent+jwt', algorithms: ['RS256', 'ES256'] })).payload;
  const firstJti = (await claimsOf(interrupted)).jti;
  await until('all three delivered, the interrupted one twice', async () => {
    const claims = await Promise.all(bodies().map(claimsOf));
    return new Set(claims.map((c) => c.txn)).size === 3 && claims.filter((c) => c.jti === firstJti).length >= 2;
  });
  const claims = await Promise.all(bodies().map(claimsOf));
  expect([...new Set(claims.map((c) => c.txn as string))].sort()).toEqual(txns);
  // The interrupted SET went again with the same jti (signed anew: a receiver dedupes by jti, not by bytes).
  const [first, ...again] = claims.filter((c) => c.jti === firstJti);
  expect(again[0]).toMatchObject({ txn: first!.txn, sub_id: first!.sub_id, events: first!.events });
});
