/**
 * Renaming an application through the admin API (what a model's previousName asks for): the same
 * registration under a new name, with its client id, secret and assignments; a taken name is a
 * conflict that moves nothing. Renaming a tenant moves everything in it to the new subdomain and issuer.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, testServer, type AdminClient } from './_support.ts';

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

describe('renameTenant', () => {
  it('moves the tenant to its new name: clients, passwords and keys work at the new issuer; the old issuer and its tokens are gone', async () => {
    const old = await fixtureTenant(admin, 'oldco');
    const login = { email: old.users.alice.email, password: PASSWORD };
    // A session and a refresh token at the old issuer.
    const before = await relyingParty(server.issuer('oldco'), old.web.clientId, old.web.clientSecret);
    const first = await authorize(before, new Browser(), old.web.redirectUri, login, { scope: 'openid offline' });
    const oldTokens = await oidc.authorizationCodeGrant(before, first.callback, { pkceCodeVerifier: first.verifier, expectedState: first.state });
    expect(oldTokens.refresh_token).toBeDefined();
    const kids = (await admin.typed.call('listKeys', { tenant: 'oldco' }, {})).items.map((k) => k.kid).sort();

    const r = await admin.call('POST', routePath('renameTenant', { tenant: 'oldco' }), { to: 'newco' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: 'newco', displayName: 'oldco Inc.' });
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'oldco' }))).status).toBe(404);
    expect((await localhostFetch(`${server.issuer('oldco')}.well-known/openid-configuration`)).status).toBe(404);

    // The same keys, unsealed under the new name, sign at the new issuer; the same client and password sign in.
    expect((await admin.typed.call('listKeys', { tenant: 'newco' }, {})).items.map((k) => k.kid).sort()).toEqual(kids);
    const after = await relyingParty(server.issuer('newco'), old.web.clientId, old.web.clientSecret);
    const again = await authorize(after, new Browser(), old.web.redirectUri, login);
    const tokens = await oidc.authorizationCodeGrant(after, again.callback, { pkceCodeVerifier: again.verifier, expectedState: again.state });
    const header = JSON.parse(Buffer.from(tokens.access_token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string };
    expect(kids).toContain(header.kid);
    expect(tokens.claims()!.iss).toBe(server.issuer('newco'));
    expect(tokens.claims()!.sub).toBe(old.users.alice.id);
    // Users, applications and assignments moved; an unassigned user is still refused.
    const assigned = await admin.typed.listAll('listAssignments', { tenant: 'newco', application: 'web' });
    expect(assigned!.map((a) => a.userId).sort()).toEqual([old.users.alice.id, old.users.carol.id].sort());
    // What the old issuer issued is gone with it.
    await expect(oidc.refreshTokenGrant(after, oldTokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a taken name (409 at `to`), a reserved one, an invalid one, and an unknown tenant; nothing moves', async () => {
    await fixtureTenant(admin, 'taken');
    const taken = await admin.call('POST', routePath('renameTenant', { tenant: 'newco' }), { to: 'taken' });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ error: 'conflict', path: 'to' });
    expect((await admin.call('GET', routePath('getApplication', { tenant: 'newco', application: 'web' }))).status).toBe(200);
    const reserved = await admin.call('POST', routePath('renameTenant', { tenant: 'newco' }), { to: 'system' });
    expect(reserved.status).toBe(403);
    expect(reserved.body.message).toContain('system');
    const bad = await admin.call('POST', routePath('renameTenant', { tenant: 'newco' }), { to: 'Not_A_Label' });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('to');
    expect((await admin.call('POST', routePath('renameTenant', { tenant: 'gone' }), { to: 'elsewhere' })).status).toBe(404);
  });
});
