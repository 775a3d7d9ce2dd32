/**
 * The assignments batch (POST .../assignments:batch): adds and removes of one application in one
 * storage transaction, all or nothing, answered per entry; its row feeds the route, the typed
 * client and the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { AdminApiError } from '../../src/admin-client/index.ts';
import { adminClient, authorize, Browser, fixtureTenant, localhostFetch, PASSWORD, relyingParty, testServer, type AdminClient, type Fixture } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let fx: Fixture;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  fx = await fixtureTenant(admin, 'batch');
});
afterAll(async () => {
  await server?.dispose();
});

const assigned = async (application: string) =>
  ((await admin.typed.listAll('listAssignments', { tenant: fx.tenant, application })) ?? []).map((a) => `${a.userId}:${a.managedBy ?? '-'}`).sort();

describe('assignments batch', () => {
  it('adds and removes together and answers each entry; an existing assignment keeps its owner', async () => {
    expect(await assigned('web')).toEqual(['u-alice:-', 'u-carol:-']);
    const r = await admin.typed.call('changeAssignments', { tenant: fx.tenant, application: 'web' }, {
      body: { add: ['u-bob', 'u-alice'], remove: ['u-carol', 'nobody'], managedBy: 'console' },
    });
    expect(r.results).toEqual([
      { op: 'add', userId: 'u-bob', outcome: 'created' },
      { op: 'add', userId: 'u-alice', outcome: 'unchanged' },
      { op: 'remove', userId: 'u-carol', outcome: 'deleted' },
      { op: 'remove', userId: 'nobody', outcome: 'unchanged' },
    ]);
    expect(await assigned('web')).toEqual(['u-alice:-', 'u-bob:console']);
  });

  it('dry run says what would happen and changes nothing', async () => {
    const r = await admin.typed.call('changeAssignments', { tenant: fx.tenant, application: 'web' }, { body: { add: ['u-carol'], remove: ['u-bob'] }, query: { dryRun: true } });
    expect(r.results.map((e) => e.outcome)).toEqual(['created', 'deleted']);
    expect(await assigned('web')).toEqual(['u-alice:-', 'u-bob:console']);
  });

  it('a user to add that does not exist fails the whole batch with one problem per entry, and nothing changes', async () => {
    const err = await admin.typed.call('changeAssignments', { tenant: fx.tenant, application: 'web' }, {
      body: { add: ['u-carol', 'ghost-1', 'ghost-2'], remove: ['u-bob'] },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdminApiError);
    const e = err as AdminApiError;
    expect(e.status).toBe(409);
    expect(e.body?.problems).toEqual([
      { path: 'add[1]', message: "user 'ghost-1' does not exist in tenant 'batch'", code: 'not_found' },
      { path: 'add[2]', message: "user 'ghost-2' does not exist in tenant 'batch'", code: 'not_found' },
    ]);
    expect(e.body?.message).toMatch(/nothing was changed/);
    expect(await assigned('web')).toEqual(['u-alice:-', 'u-bob:console']);
  });

  it('refuses a user listed twice, an api, and a missing application, each with its reason', async () => {
    const twice = await admin.call('POST', `/admin/v1/tenants/${fx.tenant}/applications/web/assignments:batch`, { add: ['u-bob'], remove: ['u-bob'] });
    expect(twice.status).toBe(400);
    expect(twice.body.path).toBe('remove[0]');
    expect(twice.body.message).toMatch(/already listed at add\[0\]/);
    const api = await admin.call('POST', `/admin/v1/tenants/${fx.tenant}/applications/api/assignments:batch`, { add: ['u-bob'] });
    expect(api.status).toBe(400);
    expect(api.body.message).toMatch(/is an api/);
    const none = await admin.call('POST', `/admin/v1/tenants/${fx.tenant}/applications/nope/assignments:batch`, { add: ['u-bob'] });
    expect(none.status).toBe(404);
    const noToken = await admin.call('POST', `/admin/v1/tenants/${fx.tenant}/applications/web/assignments:batch`, { add: ['u-bob'] }, '');
    expect(noToken.status).toBe(401);
  });

  it('a removed user loses the refresh token at that application at once', async () => {
    const rp = await relyingParty(server.issuer(fx.tenant), fx.web.clientId, fx.web.clientSecret);
    const flow = await authorize(rp, new Browser(), fx.web.redirectUri, { email: fx.users.bob.email, password: PASSWORD }, { scope: 'openid offline' });
    const tokens = await oidc.authorizationCodeGrant(rp, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
    expect(tokens.refresh_token).toBeDefined();
    await admin.typed.call('changeAssignments', { tenant: fx.tenant, application: 'web' }, { body: { remove: ['u-bob'] } });
    await expect(oidc.refreshTokenGrant(rp, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
  });

  it('is documented in the OpenAPI document from its row', async () => {
    const doc = (await (await localhostFetch(`${server.adminUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown }>> };
    const op = doc.paths['/tenants/{tenant}/applications/{application}/assignments:batch']?.post;
    expect(op).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(['200', '409']));
    expect(op!.requestBody).toBeDefined();
  });
});
