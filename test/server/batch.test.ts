/**
 * The tenant batch against a live server: one request creates a tenant with its applications,
 * users and assignments and says what happened to each; repeating it changes nothing; a dry run
 * writes nothing. It runs the single-object rules: every refusal a single PUT or DELETE gives, the
 * batch gives for that entry, with the same status, code, message and path, and a batch with a
 * refused entry writes nothing. Removals revoke in the same transaction, prune deletes only what
 * the named owner manages, and initial passwords are hashed (on every core) only for users without one.
 */
import argon2 from 'argon2';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES, routePath, type BatchEntryResult, type TenantBatchBody } from '../../src/contract/index.ts';
import { PasswordHashPool } from '../../src/server/password-pool.ts';
import { verifyPassword } from '../../src/server/_crypto.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, testServer, type AdminClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
});

const batchPath = (tenant: string, dryRun = false) => routePath('applyTenantBatch', { tenant }) + (dryRun ? '?dryRun=true' : '');
const post = (tenant: string, body: unknown, dryRun = false) => admin.call('POST', batchPath(tenant, dryRun), body);
const outcomes = (results: readonly BatchEntryResult[]) => results.map((r) => `${r.outcome} ${r.kind} ${[r.application, r.user].filter(Boolean).join('/')}`.trim());

/** A tenant with an api, an SPA naming it, a web app, two users (one with an initial password) and three assignments. */
function shop(t: string): TenantBatchBody {
  return {
    tenant: { displayName: `${t} shop`, scopes: [{ name: 'admin' }], managedBy: 'idforge' },
    applications: [
      { name: 'dash', body: { kind: 'spa', clientId: `${t}-dash`, redirectUris: [`https://dash.${t}.test`], audience: [`https://api.${t}.test`], scopes: ['openid', 'admin'], offline: true, managedBy: 'idforge' } },
      { name: 'api', body: { kind: 'api', identifier: `https://api.${t}.test`, scopes: ['admin'], managedBy: 'idforge' } },
      { name: 'web', body: { kind: 'web', clientId: `${t}-web`, redirectUris: [`https://web.${t}.test/cb`], managedBy: 'idforge' } },
    ],
    users: [
      { id: 'u-ann', body: { email: `ann@${t}.test`, scopes: ['admin'], initialPassword: PASSWORD, managedBy: 'idforge' } },
      { id: 'u-ben', body: { email: `ben@${t}.test`, managedBy: 'idforge' } },
    ],
    assignments: [
      { application: 'dash', users: ['u-ann', 'u-ben'], body: { managedBy: 'idforge' } },
      { application: 'web', users: ['u-ann'], body: { managedBy: 'idforge' } },
    ],
  };
}

describe('tenant batch', () => {
  it('creates a whole tenant in one request, entry by entry in dependency order; again, everything is unchanged', async () => {
    const dry = await post('shop1', shop('shop1'), true);
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body.applied).toBe(false);
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'shop1' }))).status).toBe(404);

    const r = await post('shop1', shop('shop1'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ applied: true, before: { users: 0, assignments: 0 } });
    const expected = [
      'created tenant', 'created application api', 'created application dash', 'created application web',
      'created user u-ann', 'created user u-ben', 'created assignment dash/u-ann', 'created assignment dash/u-ben', 'created assignment web/u-ann',
    ];
    expect(outcomes(r.body.results)).toEqual(expected);
    expect(outcomes(dry.body.results)).toEqual(expected);
    // A confidential client without a secret gets one from the server, answered once (never in a dry run).
    expect(r.body.results.find((x: BatchEntryResult) => x.application === 'web').clientSecret).toMatch(/^[\w-]{43}$/);
    expect(dry.body.results.find((x: BatchEntryResult) => x.application === 'web').clientSecret).toBeUndefined();
    expect((await admin.call('GET', routePath('getUser', { tenant: 'shop1', userId: 'u-ann' }))).body).toMatchObject({ hasPassword: true, scopes: ['admin'] });
    expect((await admin.call('GET', routePath('getUser', { tenant: 'shop1', userId: 'u-ben' }))).body).toMatchObject({ hasPassword: false });

    const again = await post('shop1', shop('shop1'));
    expect(again.body.before).toEqual({ users: 2, assignments: 3 });
    expect(outcomes(again.body.results)).toEqual(expected.map((e) => e.replace('created', 'unchanged')));
    expect(again.body.unchanged).toBe(expected.length);
    // Asked to report only changes, a no-op batch answers with counts alone.
    expect((await post('shop1', { ...shop('shop1'), report: 'changes' })).body).toMatchObject({ applied: true, results: [], unchanged: expected.length });

    // Changes show with their fields; an initial password counts only for a user without one.
    const changed = shop('shop1');
    changed.users = [
      { id: 'u-ann', body: { email: `ann@shop1.test`, displayName: 'Ann', scopes: ['admin'], initialPassword: 'another-password', managedBy: 'idforge' } },
      { id: 'u-ben', body: { email: `ben@shop1.test`, initialPassword: 'bens-first-password', managedBy: 'idforge' } },
    ];
    const update = await post('shop1', changed);
    expect(update.body.results.filter((x: BatchEntryResult) => x.outcome !== 'unchanged')).toEqual([
      { kind: 'user', user: 'u-ann', outcome: 'updated', changes: ['displayName'], managedBy: 'idforge', manager: 'apply:default' },
      { kind: 'user', user: 'u-ben', outcome: 'updated', changes: ['password'], managedBy: 'idforge', manager: 'apply:default' },
    ]);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'shop1', userId: 'u-ben' }))).body.hasPassword).toBe(true);
  });

  it('the typed client sends batches and reads refusals as answers', async () => {
    const r = await admin.typed.batch('shop2', shop('shop2'));
    expect(r).toMatchObject({ applied: true, refused: false });
    const refused = await admin.typed.batch('shop2', { users: [{ id: 'u-cid', body: { email: 'ann@shop2.test' } }] }, { dryRun: true });
    expect(refused).toMatchObject({ applied: false, refused: true });
    await expect(admin.typed.batch('system', {})).rejects.toMatchObject({ status: 403 });
    await expect(admin.typed.batch('nowhere', { users: [] })).rejects.toMatchObject({ status: 404 });
  });

  it('refuses each entry as the single-object operation would (same status, code, message, path), and writes nothing of a refused batch', async () => {
    const t = 'rules';
    expect((await post(t, shop(t))).status).toBe(200);
    await admin.put(routePath('getUser', { tenant: t, userId: 'u-hand' }), { email: 'hand@rules.test' });
    // Each case: a batch entry, and the single-object call with the same body.
    const cases: { name: string; batch: TenantBatchBody; single: [method: string, path: string, body?: unknown] }[] = [
      {
        name: 'clientId taken by another application',
        batch: { applications: [{ name: 'web2', body: { kind: 'web', clientId: `${t}-web`, redirectUris: ['https://web2.rules.test/cb'] } }] },
        single: ['PUT', routePath('getApplication', { tenant: t, application: 'web2' }), { kind: 'web', clientId: `${t}-web`, redirectUris: ['https://web2.rules.test/cb'] }],
      },
      {
        name: 'audience that is no api of the tenant',
        batch: { applications: [{ name: 'spa2', body: { kind: 'spa', clientId: 'spa2', redirectUris: ['https://spa2.rules.test'], audience: ['https://nope.test'] } }] },
        single: ['PUT', routePath('getApplication', { tenant: t, application: 'spa2' }), { kind: 'spa', clientId: 'spa2', redirectUris: ['https://spa2.rules.test'], audience: ['https://nope.test'] }],
      },
      {
        name: 'scope the tenant does not define',
        batch: { applications: [{ name: 'spa3', body: { kind: 'spa', clientId: 'spa3', redirectUris: ['https://spa3.rules.test'], scopes: ['openid', 'reports', 'openid'] } }] },
        single: ['PUT', routePath('getApplication', { tenant: t, application: 'spa3' }), { kind: 'spa', clientId: 'spa3', redirectUris: ['https://spa3.rules.test'], scopes: ['openid', 'reports', 'openid'] }],
      },
      {
        name: 'email of another user',
        batch: { users: [{ id: 'u-new', body: { email: 'HAND@rules.test' } }] },
        single: ['PUT', routePath('getUser', { tenant: t, userId: 'u-new' }), { email: 'HAND@rules.test' }],
      },
      {
        name: 'assignment of a user that does not exist',
        batch: { assignments: [{ application: 'dash', users: ['u-ghost'] }] },
        single: ['PUT', routePath('getAssignment', { tenant: t, application: 'dash', userId: 'u-ghost' }), {}],
      },
      {
        name: 'assignment to an api',
        batch: { assignments: [{ application: 'api', users: ['u-ann'] }] },
        single: ['PUT', routePath('getAssignment', { tenant: t, application: 'api', userId: 'u-ann' }), {}],
      },
      {
        name: 'deleting an api that a client names as audience',
        batch: { delete: { applications: ['api'] } },
        single: ['DELETE', routePath('deleteApplication', { tenant: t, application: 'api' })],
      },
      {
        name: "changing an api's identifier while a client names it",
        batch: { applications: [{ name: 'api', body: { kind: 'api', identifier: 'https://moved.rules.test', scopes: ['admin'] } }] },
        single: ['PUT', routePath('getApplication', { tenant: t, application: 'api' }), { kind: 'api', identifier: 'https://moved.rules.test', scopes: ['admin'] }],
      },
    ];
    const before = (await admin.call('GET', routePath('listUsers', { tenant: t }))).body;
    for (const c of cases) {
      const single = await admin.call(c.single[0], `${c.single[1]}?dryRun=true`, c.single[2]);
      expect(single.status, c.name).toBeGreaterThanOrEqual(400);
      // A valid entry first: it is judged (created), but not written, since another entry is refused.
      const valid = { id: 'u-valid', body: { email: 'valid@rules.test' } };
      const r = await post(t, { ...c.batch, users: [valid, ...(c.batch.users ?? [])] });
      expect(r.status, c.name).toBe(422);
      expect(r.body.applied).toBe(false);
      const refusal = (r.body.results as BatchEntryResult[]).find((x) => x.outcome === 'refused')!;
      expect({ status: refusal.status, error: refusal.error, message: refusal.reason, path: refusal.path }, c.name).toEqual({
        status: single.status, error: single.body.error, message: single.body.message, path: single.body.path,
      });
      if (single.body.problems !== undefined) expect(refusal.problems, c.name).toEqual(single.body.problems);
      expect(r.body).toMatchObject({ error: 'refused', path: single.body.path });
      expect(r.body.message, c.name).toContain(single.body.message);
      expect((r.body.results as BatchEntryResult[]).find((x) => x.user === 'u-valid')?.outcome, c.name).toBe('created');
      // Dry runs are refused the same way.
      expect((await post(t, c.batch, true)).status, c.name).toBe(422);
    }
    expect((await admin.call('GET', routePath('listUsers', { tenant: t }))).body).toEqual(before);
  });

  it('judges each entry after the ones before it: an api and its client, a scope the tenant gains, a user and its assignment, clients deleted before their api', async () => {
    const t = 'order';
    const r = await post(t, {
      tenant: { displayName: 'Order', scopes: [{ name: 'reports' }] },
      applications: [
        { name: 'spa', body: { kind: 'spa', clientId: 'spa', redirectUris: ['https://spa.order.test'], audience: ['https://api.order.test'], scopes: ['openid', 'reports', 'read'] } },
        { name: 'api', body: { kind: 'api', identifier: 'https://api.order.test', scopes: ['read'] } },
      ],
      users: [{ id: 'u1', body: { email: 'u1@order.test' } }],
      assignments: [{ application: 'spa', users: ['u1'] }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // In one batch: the client goes, then its api (deleting the api first would be refused).
    const gone = await post(t, { delete: { applications: ['api', 'spa'] } });
    expect(gone.status, JSON.stringify(gone.body)).toBe(200);
    expect(outcomes(gone.body.results)).toEqual(['deleted application spa', 'deleted application api']);
    expect((await admin.call('GET', routePath('getAssignment', { tenant: t, application: 'spa', userId: 'u1' }))).status).toBe(404);
    // Deleting what is not there is no change.
    expect(outcomes((await post(t, { delete: { applications: ['api'], users: ['nobody'], assignments: [{ application: 'spa', users: ['u1'] }] } })).body.results))
      .toEqual(['unchanged assignment spa/u1', 'unchanged user nobody', 'unchanged application api']);
  });

  it('prune deletes what the named managers keep and the batch leaves out, children first; objects of other managers stay', async () => {
    const t = 'prune';
    expect((await post(t, shop(t))).status).toBe(200);
    await admin.put(routePath('getUser', { tenant: t, userId: 'u-hand' }), { email: 'hand@prune.test' });
    await admin.put(routePath('getAssignment', { tenant: t, application: 'web', userId: 'u-hand' }), {});
    const kept = shop(t);
    kept.users = kept.users!.filter((u) => u.id === 'u-ann');
    kept.assignments = [{ application: 'dash', users: ['u-ann'], body: { managedBy: 'idforge' } }];
    kept.applications = kept.applications!.filter((a) => a.name !== 'web');
    const r = await post(t, { ...kept, prune: { managers: ['apply:default'] } }, true);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.before).toEqual({ users: 3, assignments: 4 });
    expect(outcomes(r.body.results.filter((x: BatchEntryResult) => x.outcome !== 'unchanged'))).toEqual([
      'deleted assignment dash/u-ben', 'deleted assignment web/u-ann', 'deleted user u-ben', 'deleted application web',
    ]);
    // Deletions name the manager the object had; a list of managers prunes each of them.
    expect(r.body.results.find((x: BatchEntryResult) => x.kind === 'user' && x.outcome === 'deleted')).toMatchObject({ user: 'u-ben', managedBy: 'idforge', manager: 'apply:default' });
    await admin.put(routePath('getUser', { tenant: t, userId: 'u-cons' }), { email: 'cons@prune.test', managedBy: 'console' });
    // Another manager's objects are never pruned by this one.
    await admin.put(routePath('getUser', { tenant: t, userId: 'u-stack' }), { email: 'stack@prune.test', manager: 'pulumi:shop/dev' });
    const both = await post(t, { ...kept, prune: { managers: ['apply:default', 'console'] } }, true);
    expect(both.body.results.filter((x: BatchEntryResult) => x.kind === 'user' && x.outcome === 'deleted')).toEqual([
      { kind: 'user', user: 'u-ben', outcome: 'deleted', managedBy: 'idforge', manager: 'apply:default' },
      { kind: 'user', user: 'u-cons', outcome: 'deleted', managedBy: 'console', manager: 'console' },
    ]);
    expect((await post(t, { ...kept, prune: { managers: ['apply:default'] } })).status).toBe(200);
    expect((await admin.call('GET', routePath('getUser', { tenant: t, userId: 'u-stack' }))).status).toBe(200);
    expect((await admin.call('GET', routePath('getUser', { tenant: t, userId: 'u-ben' }))).status).toBe(404);
    expect((await admin.call('GET', routePath('getUser', { tenant: t, userId: 'u-cons' }))).status).toBe(200);
    expect((await admin.call('GET', routePath('getApplication', { tenant: t, application: 'web' }))).status).toBe(404);
    expect((await admin.call('GET', routePath('getUser', { tenant: t, userId: 'u-hand' }))).status).toBe(200);
    // The unmanaged assignment went with its application, as a single DELETE of the application does.
    expect((await admin.call('GET', routePath('listAssignments', { tenant: t, application: 'dash' }))).body.items.map((a: { userId: string }) => a.userId)).toEqual(['u-ann']);
  });

  it('removing an assignment or a user in a batch ends their grants and refresh tokens in the same transaction', async () => {
    const f = await fixtureTenant(admin, 'revoke');
    const spa = await relyingParty(server.issuer('revoke'), f.spa.clientId);
    const signIn = async (email: string) => {
      const flow = await authorize(spa, new Browser(), f.spa.redirectUri, { email, password: PASSWORD }, { scope: 'openid offline' });
      const tokens = await oidc.authorizationCodeGrant(spa, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
      return tokens.refresh_token!;
    };
    const alice = await signIn(f.users.alice.email);
    const carol = await signIn(f.users.carol.email);
    const r = await post('revoke', { delete: { assignments: [{ application: 'spa', users: [f.users.alice.id] }], users: [f.users.carol.id] } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await expect(oidc.refreshTokenGrant(spa, alice)).rejects.toHaveProperty('error', 'invalid_grant');
    await expect(oidc.refreshTokenGrant(spa, carol)).rejects.toHaveProperty('error', 'invalid_grant');
  });

  it('an invalid body is refused whole with every problem at its path; an entry listed twice is a problem', async () => {
    const r = await post('shop1', {
      users: [{ id: 'u1', body: { email: 'not-an-email' } }, { id: 'u1', body: { email: 'u1@x.test' } }],
      applications: [{ name: 'web', body: { kind: 'web', clientId: 'w', redirectUris: ['http://evil.example/cb'] } }],
    });
    expect(r.status).toBe(400);
    expect(r.body.problems.map((p: { path: string }) => p.path)).toEqual(expect.arrayContaining(['users[0].body.email', 'users[1].id', 'applications[0].body.redirectUris[0]']));
    expect(r.body.problems.find((p: { path: string }) => p.path === 'users[1].id').message).toBe("user 'u1' is listed more than once");
  });

  it('is documented in the OpenAPI document: its body by name, its answer, and the 422 of a refused batch', async () => {
    const doc = (await admin.call('GET', '/admin/v1/openapi.json', undefined, '')).body;
    const op = doc.paths[ADMIN_ROUTES.applyTenantBatch.path].post;
    expect(op.operationId).toBe('applyTenantBatch');
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TenantBatchBody' });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '413', '422']));
    expect(doc.components.schemas.TenantBatchBody.properties).toHaveProperty('users');
  });
});

describe('password hash pool', () => {
  it('hashes with argon2id on as many threads as it has slots, each hash verifiable', async () => {
    const pool = new PasswordHashPool(2);
    const passwords = Array.from({ length: 6 }, (_, i) => `password-${i}-long-enough`);
    const hashes = await pool.hashAll(passwords);
    expect(pool.peak).toBe(2);
    for (const [i, h] of hashes.entries()) {
      // OWASP's first configuration: 19 MiB, 2 passes, one lane.
      expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
      expect(await argon2.verify(h, passwords[i]!)).toBe(true);
    }
  });

  it('still verifies hashes made with earlier parameters (each hash carries its own)', async () => {
    const earlier = await argon2.hash('an-earlier-password', { type: argon2.argon2id, memoryCost: 19_456, timeCost: 5, parallelism: 1 });
    expect(earlier).toMatch(/t=5\$/);
    expect(await verifyPassword(earlier, 'an-earlier-password')).toBe(true);
    expect(await verifyPassword(earlier, 'another-password')).toBe(false);
  });
});
