/**
 * Renaming an application through the admin API (what a model's previousName asks for): the same
 * registration under a new name, with its client id, secret and assignments; a taken name is a
 * conflict that moves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { adminClient, fixtureTenant, testServer, type AdminClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let f: Awaited<ReturnType<typeof fixtureTenant>>;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  f = await fixtureTenant(admin, 'ren');
});
afterAll(async () => {
  await server?.dispose();
});

describe('renameApplication', () => {
  it('moves the application with its client id, secret and assignments', async () => {
    const before = (await admin.call('GET', routePath('getApplication', { tenant: 'ren', application: 'web' }))).body;
    const r = await admin.call('POST', routePath('renameApplication', { tenant: 'ren', application: 'web' }), { to: 'portal' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: 'portal', clientId: f.web.clientId, createdAt: before.createdAt });
    expect((await admin.call('GET', routePath('getApplication', { tenant: 'ren', application: 'web' }))).status).toBe(404);
    const verify = await admin.typed.call('verifyClientSecret', { tenant: 'ren', application: 'portal' }, { body: { clientSecret: f.web.clientSecret } });
    expect(verify.matches).toBe(true);
    const assigned = await admin.typed.listAll('listAssignments', { tenant: 'ren', application: 'portal' });
    expect(assigned!.map((a) => a.userId).sort()).toEqual([f.users.alice.id, f.users.carol.id].sort());
  });

  it('refuses a taken name with 409 at `to`, and an invalid one with 400', async () => {
    const taken = await admin.call('POST', routePath('renameApplication', { tenant: 'ren', application: 'portal' }), { to: 'spa' });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ error: 'conflict', path: 'to' });
    expect((await admin.call('GET', routePath('getApplication', { tenant: 'ren', application: 'portal' }))).status).toBe(200);
    const bad = await admin.call('POST', routePath('renameApplication', { tenant: 'ren', application: 'portal' }), { to: 'Not A Name' });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('to');
    expect((await admin.call('POST', routePath('renameApplication', { tenant: 'ren', application: 'gone' }), { to: 'x' })).status).toBe(404);
  });
});
