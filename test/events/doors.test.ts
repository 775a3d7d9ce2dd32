/**
 * The event log through every door, against a real server: each change appears exactly once, with
 * its actor, manager and Git commit, the fields before and after and never a secret; sign-in
 * outcomes, factor changes, lockouts and token revocations are events too; the read API filters
 * and pages. Doors: the admin API (single operations), `idforge apply` from a model in a temporary
 * Git repository (one batch), SCIM. The console's door is in activity.test.ts (Chromium).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventView } from '../../src/contract/index.ts';
import { runCli } from '../support/cli.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, tempDir, testServer, type AdminClient } from '../server/_support.ts';

const COMMIT = '0123456789abcdef0123456789abcdef01234567';
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-events-');

beforeAll(async () => {
  server = await testServer({ login: { backoffBaseMs: 0 } });
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

async function events(tenant: string, query: Record<string, string> = {}): Promise<EventView[]> {
  const out: EventView[] = [];
  let cursor: string | undefined;
  do {
    const page = await admin.typed.call('listEvents', { tenant }, { query: { ...query, limit: 2, cursor } });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}
const summary = (e: EventView) => `${e.type} ${e.object.kind}:${e.object.name}`;

describe('the admin API door', () => {
  it('records each change once, with who, the commit and the fields, secrets redacted; a dry run or a no-op records nothing', async () => {
    const ops = admin.typed.as({ who: 'ops-alice', git: { commit: COMMIT, branch: 'main', path: 'models/acme.yaml' } });
    await ops.call('putTenant', { tenant: 'acme' }, { body: { displayName: 'Acme' } });
    const web = { kind: 'web' as const, clientId: 'portal', clientSecret: 's'.repeat(40), redirectUris: ['https://portal.acme.test/cb'] };
    await ops.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: web });
    await ops.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: web }); // unchanged
    await ops.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: { ...web, redirectUris: ['https://portal.acme.test/cb2'] }, query: { dryRun: true } });
    await ops.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: { ...web, redirectUris: ['https://portal.acme.test/cb2'] } });
    await ops.call('putUser', { tenant: 'acme', userId: 'u-ann' }, { body: { email: 'ann@acme.test', initialPassword: PASSWORD } });
    await ops.call('putAssignment', { tenant: 'acme', application: 'portal', userId: 'u-ann' }, { body: {} });
    await ops.call('rotateClientSecret', { tenant: 'acme', application: 'portal' });
    await ops.call('deleteAssignment', { tenant: 'acme', application: 'portal', userId: 'u-ann' });

    const log = await events('acme');
    expect(log.map(summary)).toEqual([
      'tenant.created tenant:acme',
      'application.created application:portal',
      'application.updated application:portal',
      'user.created user:u-ann',
      'assignment.created assignment:portal/u-ann',
      'application.secret_rotated application:portal',
      'assignment.deleted assignment:portal/u-ann',
    ]);
    for (const e of log) {
      expect(e.actor).toEqual({ who: 'ops-alice', git: { commit: COMMIT, branch: 'main', path: 'models/acme.yaml' } });
      expect(e.requestId).toMatch(/./);
      expect(new Set(log.map((x) => x.id)).size).toBe(log.length);
    }
    const [, created, updated, user] = log;
    expect(created!.changes).toContainEqual({ field: 'clientSecret', redacted: true });
    expect(created!.changes).toContainEqual({ field: 'redirectUris', after: ['https://portal.acme.test/cb'] });
    expect(updated!.changes).toEqual([{ field: 'redirectUris', before: ['https://portal.acme.test/cb'], after: ['https://portal.acme.test/cb2'] }]);
    expect(user!.changes).toContainEqual({ field: 'password', redacted: true });
    // No secret, hash or password anywhere in the log.
    const text = JSON.stringify(log);
    expect(text).not.toContain('s'.repeat(40));
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toMatch(/argon2|hmac-sha256/);
  });

  it('refuses actor headers it cannot keep, and a tenant that never was', async () => {
    const r = await admin.typed.as({ git: { commit: 'not-a-commit' } as never }).raw('PUT', '/admin/v1/tenants/acme/users/u-x', { email: 'x@acme.test' });
    expect(r.status).toBe(400);
    expect(r.body.path).toBe('headers.idforge-git-commit');
    expect((await admin.call('GET', '/admin/v1/tenants/nowhere/events')).status).toBe(404);
    const bad = await admin.call('GET', '/admin/v1/tenants/acme/events?type=user.nonsense&since=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.problems.map((p: { path: string }) => p.path)).toEqual(['query.type', 'query.since']);
  });
});

describe('the batch door: idforge apply from a Git repository', () => {
  it('records every object of the batch once, with apply\'s manager, the commit, branch and model path', async () => {
    const repo = join(work.path, 'repo');
    mkdirSync(join(repo, 'models'), { recursive: true });
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } }).trim();
    git('init', '-q', '-b', 'release');
    const model = (displayName: string) => `server: { baseDomain: localhost, port: ${server.port} }
tenants:
  - name: beta
    displayName: Beta
    users:
      - { id: u-bea, email: bea@beta.test, displayName: ${displayName} }
    applications:
      - { name: wiki, kind: spa, origin: "http://wiki.localhost:5173" }
    assignments:
      - { application: wiki, users: [u-bea] }
`;
    writeFileSync(join(repo, 'models', 'beta.yaml'), model('Bea'));
    git('add', '.');
    git('commit', '-q', '-m', 'beta');
    const first = git('rev-parse', 'HEAD');
    const applied = await runCli(['apply', 'models/beta.yaml', '--data-dir', server.dataDir], { cwd: repo, env: { IDFORGE_STATE: join(work.path, 'state.json') } });
    expect(applied.code, applied.stderr).toBe(0);

    const log = await events('beta');
    expect(log.map(summary)).toEqual([
      'tenant.created tenant:beta', 'application.created application:wiki', 'user.created user:u-bea', 'assignment.created assignment:wiki/u-bea',
    ]);
    for (const e of log) expect(e.actor).toEqual({ manager: 'apply:default', who: 'idforge-admin', git: { commit: first, branch: 'release', path: 'models/beta.yaml' } });
    // One request, one batch: one request id.
    expect(new Set(log.map((e) => e.requestId)).size).toBe(1);

    // The next commit changes one user: one event naming that commit; apply again changes nothing and records nothing.
    writeFileSync(join(repo, 'models', 'beta.yaml'), model('Bea Smith'));
    git('commit', '-qam', 'rename bea');
    const second = git('rev-parse', 'HEAD');
    // plan names the commit that last changed what it would change.
    const planned = await runCli(['plan', 'models/beta.yaml', '--data-dir', server.dataDir], { cwd: repo, env: { IDFORGE_STATE: join(work.path, 'state.json') } });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain(`last changed by ${first.slice(0, 12)}`);
    expect((await runCli(['apply', 'models/beta.yaml', '--data-dir', server.dataDir], { cwd: repo, env: { IDFORGE_STATE: join(work.path, 'state.json') } })).code).toBe(0);
    expect((await runCli(['apply', 'models/beta.yaml', '--data-dir', server.dataDir], { cwd: repo, env: { IDFORGE_STATE: join(work.path, 'state.json') } })).code).toBe(0);
    const after = await events('beta', { actor: second.slice(0, 7) });
    expect(after.map(summary)).toEqual(['user.updated user:u-bea']);
    expect(after[0]!.changes).toEqual([{ field: 'displayName', before: 'Bea', after: 'Bea Smith' }]);
    expect(await events('beta')).toHaveLength(5);
  });
});

describe('the SCIM door', () => {
  it('records SCIM\'s writes with the token as who and scim as manager', async () => {
    await admin.typed.call('putTenant', { tenant: 'gamma' }, { body: { displayName: 'Gamma' } });
    const { id, token } = await admin.typed.call('createScimToken', { tenant: 'gamma' }, { body: { description: 'Okta' } });
    const scim = (method: string, path: string, body?: unknown) => localhostFetch(`http://gamma.localhost:${server.port}/scim/v2${path}`, {
      method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const made = await scim('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'gus', emails: [{ value: 'gus@gamma.test', primary: true }], name: { givenName: 'Gus' } });
    expect(made.status).toBe(201);
    const userId = ((await made.json()) as { id: string }).id;
    expect((await scim('PATCH', `/Users/${userId}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] })).status).toBe(200);
    expect((await scim('DELETE', `/Users/${userId}`)).status).toBe(204);

    const log = await events('gamma', { object: `user:${userId}` });
    expect(log.map((e) => e.type)).toEqual(['user.created', 'user.updated', 'user.deleted']);
    for (const e of log) expect(e.actor).toEqual({ manager: 'scim', who: `scim:${id}` });
    expect(log[0]!.changes).toContainEqual({ field: 'scim.name', after: { givenName: 'Gus' } });
    expect(log[1]!.changes).toEqual([{ field: 'disabled', before: false, after: true }]);
    expect((await events('gamma', { type: 'scim_token.*' })).map((e) => e.type)).toEqual(['scim_token.created']);
  });
});

describe('sign-in outcomes, lockouts and revocations', () => {
  it('records a failure, the lockout, a success and a revoked grant, with the person as who', async () => {
    const f = await fixtureTenant(admin, 'delta');
    const config = await relyingParty(server.issuer('delta'), f.web.clientId, f.web.clientSecret);
    for (let i = 0; i < 5; i++) await authorize(config, new Browser(), f.web.redirectUri, { email: f.users.carol.email, password: 'wrong password!' }).catch(() => {});
    const ok = await authorize(config, new Browser(), f.web.redirectUri, { email: f.users.alice.email, password: PASSWORD }, { scope: 'openid offline' });
    expect(ok.callback.searchParams.get('code')).toBeTruthy();

    // Sign-in events are appended after the outcome, without holding the sign-in up.
    await expect.poll(async () => (await events('delta', { type: 'login.*' })).map((e) => e.type)).toContain('login.success');
    const log = await events('delta', { type: 'login.*' });
    const failures = log.filter((e) => e.type === 'login.failure');
    expect(failures.length).toBeGreaterThanOrEqual(5);
    expect(failures[0]!.object).toEqual({ kind: 'account', name: f.users.carol.email });
    expect(failures[0]!.details).toMatchObject({ factor: 'password' });
    expect(log.some((e) => e.type === 'login.lockout')).toBe(true);
    const success = log.find((e) => e.type === 'login.success')!;
    expect(success.object).toEqual({ kind: 'user', name: f.users.alice.id });
    expect(success.actor.who).toBe(f.users.alice.id);
    expect(JSON.stringify(log)).not.toContain('wrong password!');

    // A token revoked at the revocation endpoint (RFC 7009) ends the grant: an event of the user.
    const tokens = await import('openid-client').then((oidc) => oidc.authorizationCodeGrant(config, ok.callback, { pkceCodeVerifier: ok.verifier, expectedState: ok.state }));
    expect(tokens.refresh_token).toBeTruthy();
    await import('openid-client').then((oidc) => oidc.tokenRevocation(config, tokens.refresh_token!));
    await expect.poll(async () => (await events('delta', { type: 'token.revoked' })).map((e) => e.object)).toContainEqual({ kind: 'user', name: f.users.alice.id });
  });
});
