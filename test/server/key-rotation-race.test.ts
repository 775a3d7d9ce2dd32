/**
 * Overlapping key rotations: each must build on the keys the previous one wrote. A rotation that
 * writes back a stale key set drops keys that were already published (and may have signed live
 * tokens), so every key any rotation reported must still be in the JWKS afterwards.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { jwksUrl } from '../../src/contract/index.ts';
import { adminClient, localhostFetch, testServer, type AdminClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
});

type Key = { kid: string; state: 'active' | 'next' | 'retired' };

it('3 concurrent rotations: each promotes a different key, and every key ever reported stays published', async () => {
  await admin.put(routePath('getTenant', { tenant: 'race' }), { displayName: 'Race' });
  const before = (await admin.call('GET', '/admin/v1/tenants/race/keys')).body.items as Key[];
  const rotations = await Promise.all([1, 2, 3].map(() => admin.call('POST', '/admin/v1/tenants/race/keys/rotate', {})));
  expect(rotations.map((r) => r.status)).toEqual([200, 200, 200]);
  const reported = rotations.map((r) => r.body.items as Key[]);

  const ever = new Set([...before, ...reported.flat()].map((k) => k.kid));
  const published = ((await (await localhostFetch(jwksUrl(server.address, 'race'))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
  // Two keys to start with and one fresh key per rotation, none dropped (retention is 1 h 5 min).
  expect(ever.size).toBe(5);
  expect([...ever].filter((kid) => !published.includes(kid))).toEqual([]);
  expect(published).toHaveLength(5);
  // Serialized, three rotations promote three different keys.
  const promoted = reported.map((items) => items.find((k) => k.state === 'active')!.kid);
  expect(new Set(promoted).size).toBe(3);
});
