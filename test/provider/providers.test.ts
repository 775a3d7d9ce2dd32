/**
 * The providers' pure parts: input checks in Pulumi's terms, diffs (what replaces, what updates,
 * what is no change), per-entry change sets of the bulk resources, and the component's mapping of
 * a model onto resource bodies. Engine runs are in engine.test.ts.
 */
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UNKNOWN, checkWith, jsonEqual, propertyPath } from '../../src/provider/_common.ts';
import { applicationProvider, type ApplicationOutputs } from '../../src/provider/application.ts';
import { authServerProvider, needsRestart, serverUrls, type AuthServerInputs } from '../../src/provider/auth-server.ts';
import { clientConfigsProvider, syncFiles } from '../../src/provider/client-configs.ts';
import { tenantSpecs } from '../../src/provider/identity-stack.ts';
import { stableSecretProvider } from '../../src/provider/stable-secret.ts';
import { assignmentChanges, tenantAssignmentsProvider } from '../../src/provider/tenant-assignments.ts';
import { tenantUsersProvider, userChanges } from '../../src/provider/tenant-users.ts';
import { tenantProvider, type TenantInputs } from '../../src/provider/tenant.ts';
import { loadModel } from '../../src/schema/index.ts';
import { z } from 'zod';

const connection = {
  adminUrl: 'http://localhost:9080/admin/v1',
  tokenUrl: 'http://system.localhost:9080/oauth2/token',
  clientId: 'bootstrap',
  clientSecret: 's3cret',
};

const tenant: TenantInputs = { connection, name: 'acme', body: { displayName: 'Acme', scopes: [], managedBy: 'idforge' } };

describe('check', () => {
  it('maps zod issues to property paths and reasons', async () => {
    const r = await tenantProvider.check({} as never, { ...tenant, name: 'Acme!', body: { displayName: '', scopes: [{ name: 'a b' }] } } as never);
    expect(r.failures).toEqual([
      { property: 'name', reason: 'must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters' },
      { property: 'body.displayName', reason: expect.stringContaining('>=1') },
      { property: 'body.scopes[0].name', reason: expect.stringMatching(/^must be a scope token/) },
    ]);
  });

  it('fills defaults, so diffs compare normalized inputs', async () => {
    const r = await tenantProvider.check({} as never, { connection, name: 'acme', body: { displayName: 'Acme' } } as never);
    expect(r.failures).toBeUndefined();
    expect(r.inputs?.body).toEqual({ displayName: 'Acme', scopes: [] });
  });

  it('does not judge inputs that are unknown during a preview', async () => {
    const r = await tenantProvider.check({} as never, { ...tenant, connection: UNKNOWN } as never);
    expect(r.failures).toBeUndefined();
    const nested = checkWith(z.strictObject({ a: z.strictObject({ b: z.number() }) }), { a: UNKNOWN });
    expect(nested.failures).toBeUndefined();
  });

  it('refuses a client secret in an application body: the provider owns it', async () => {
    const r = await applicationProvider.check({} as never, {
      connection,
      tenant: 'acme',
      name: 'portal',
      body: { kind: 'web', clientId: 'portal', redirectUris: ['http://portal.localhost/cb'], clientSecret: 'x'.repeat(40) },
    } as never);
    expect(r.failures).toEqual([{ property: 'body.clientSecret', reason: 'the provider makes and keeps the client secret; leave it out' }]);
  });

  it('refuses pkce: optional for a single-page app with the rule every door runs', async () => {
    const r = await applicationProvider.check({} as never, {
      connection, tenant: 'acme', name: 'dash',
      body: { kind: 'spa', clientId: 'dash', redirectUris: ['http://dash.localhost:5173'], pkce: 'optional' },
    } as never);
    expect(r.failures).toEqual([{ property: 'body.pkce', reason: expect.stringMatching(/^pkce: optional is allowed only for confidential clients \(web, proxy\)/) }]);
  });

  it('names map keys in property paths', () => {
    expect(propertyPath(['users', 'u-alice@x', 'email'])).toBe('users["u-alice@x"].email');
    expect(propertyPath(['files', 'acme/portal/grant.json'])).toBe('files["acme/portal/grant.json"]');
  });

  it('refuses paths that leave the client config directory', async () => {
    const r = await clientConfigsProvider.check({} as never, { dir: '/tmp/x', files: { '../etc/passwd': '' } } as never);
    expect(r.failures?.[0]?.property).toBe('files["../etc/passwd"]');
  });
});

describe('diff', () => {
  it('tenant: a new name replaces, a display name updates, a new connection is no change', async () => {
    expect(await tenantProvider.diff('acme', tenant, { ...tenant, name: 'acme2' })).toMatchObject({ changes: true, replaces: ['name'] });
    expect(await tenantProvider.diff('acme', tenant, { ...tenant, body: { ...tenant.body, displayName: 'Acme Inc' } })).toEqual({
      changes: true,
      replaces: [],
    });
    expect(await tenantProvider.diff('acme', tenant, { ...tenant, connection: { ...connection, clientSecret: 'rotated' } })).toEqual({
      changes: false,
      replaces: [],
    });
  });

  it('application: kind and client id replace; redirect URIs update; the kept secret is no change', async () => {
    const body = { kind: 'web' as const, clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [] };
    const olds: ApplicationOutputs = { connection, tenant: 'acme', name: 'portal', body, clientId: 'portal', clientSecret: 'kept' };
    const news = { connection, tenant: 'acme', name: 'portal', body };
    // One name, one object on the server: any replacement deletes the old registration first.
    expect(await applicationProvider.diff('acme/portal', olds, news as never)).toEqual({ changes: false, replaces: [], deleteBeforeReplace: true });
    expect(await applicationProvider.diff('acme/portal', olds, { ...news, body: { ...body, clientId: 'portal2' } } as never)).toEqual({
      changes: true,
      replaces: ['body.clientId'],
      // Same path on the server: the old registration goes first, or its delete would remove the new one.
      deleteBeforeReplace: true,
    });
    expect(
      await applicationProvider.diff('acme/portal', olds, { ...news, body: { ...body, redirectUris: ['http://portal.localhost:3001/cb'] } } as never),
    ).toEqual({ changes: true, replaces: [], deleteBeforeReplace: true });
    // A secret a refresh found changed on the server is drift to repair.
    expect(await applicationProvider.diff('acme/portal', { ...olds, secretInSync: false }, news as never)).toMatchObject({ changes: true, replaces: [] });
  });

  it('users and assignments: per-entry change sets; order in the model is no change', async () => {
    const u = (email: string) => ({ email, scopes: [], disabled: false });
    expect(userChanges({ a: u('a@x.io'), b: u('b@x.io') }, { b: u('b2@x.io'), c: u('c@x.io') })).toEqual({
      add: ['c'],
      change: ['b'],
      remove: ['a'],
    });
    expect(assignmentChanges({ portal: ['a', 'b'], wiki: ['a'] }, { portal: ['b', 'a'], dashboard: ['a'] })).toEqual({
      add: [['dashboard', 'a']],
      remove: [['wiki', 'a']],
    });
    const checked = await tenantAssignmentsProvider.check({} as never, { connection, tenant: 'acme', assignments: { portal: ['b', 'a', 'b'] } } as never);
    expect(checked.inputs?.assignments).toEqual({ portal: ['a', 'b'] });
    const olds = { connection, tenant: 'acme', users: { a: u('a@x.io') } };
    expect(await tenantUsersProvider.diff('acme/users', olds, { ...olds, tenant: 'globex' })).toEqual({ changes: true, replaces: ['tenant'] });
    expect(await tenantUsersProvider.diff('acme/users', olds, { ...olds, initialPasswords: { a: 'changed-later' } })).toEqual({
      changes: false,
      replaces: [],
    });
  });

  it('auth server: port restarts in place, data dir replaces (old one stopped first), tenants only update outputs', async () => {
    const base: AuthServerInputs = {
      mode: 'local',
      scheme: 'http',
      baseDomain: 'localhost',
      port: 9080,
      local: { dataDir: '/tmp/a', startTimeoutSeconds: 60 },
      tenants: ['acme'],
    };
    expect(needsRestart(base, { ...base, port: 9081 })).toBe(true);
    expect(needsRestart(base, { ...base, tenants: ['acme', 'globex'] })).toBe(false);
    expect(needsRestart(base, { ...base, local: { ...base.local, env: { A: '1' } } })).toBe(true);
    const olds = { ...base, ...serverUrls(base), pid: 0, connection };
    expect(await authServerProvider.diff('/tmp/a', olds, { ...base, local: { ...base.local, dataDir: '/tmp/b' } })).toEqual({
      changes: true,
      replaces: ['local.dataDir'],
      deleteBeforeReplace: true,
    });
    // pid 0: the server was found stopped, so an unchanged config is still an update (a restart).
    expect(await authServerProvider.diff('/tmp/a', olds, base)).toMatchObject({ changes: true, replaces: [] });
    expect(serverUrls({ ...base, tenants: ['globex', 'acme'] })).toEqual({
      baseUrl: 'http://localhost:9080',
      adminUrl: 'http://localhost:9080/admin/v1',
      issuers: { acme: 'http://acme.localhost:9080/oauth2/', globex: 'http://globex.localhost:9080/oauth2/' },
      credentialsFile: '/tmp/a/admin-credentials.json',
    });
  });

  it('auth server check: local mode serves http only, and says so', async () => {
    const r = await authServerProvider.check({} as never, { scheme: 'https', port: 9080, local: { dataDir: '/tmp/a' } } as never);
    expect(r.failures).toEqual([{ property: 'scheme', reason: "local mode serves plain HTTP: use 'http'" }]);
  });
});

describe('stable secret', () => {
  it('makes the value once: a later diff with the same inputs is no change, a new size replaces', async () => {
    const checked = await stableSecretProvider.check({} as never, { bytes: 16 } as never);
    const created = await stableSecretProvider.create(checked.inputs!);
    expect(Buffer.from(created.outs!.value, 'base64url')).toHaveLength(16);
    expect(await stableSecretProvider.diff(created.id, created.outs!, checked.inputs!)).toEqual({ changes: false, replaces: [] });
    expect(await stableSecretProvider.diff(created.id, created.outs!, { ...checked.inputs!, bytes: 32 })).toEqual({
      changes: true,
      replaces: ['bytes'],
    });
  });
});

describe('client configs on disk', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('writes 0600 files, replaces changed ones, removes dropped ones and the folders they leave empty', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'idforge-configs-'));
    dirs.push(dir);
    await syncFiles(dir, {}, { 'acme/portal/grant.json': '{"a":1}', 'acme/wiki/oauth2-proxy.env': 'A=1\n' });
    expect((await stat(join(dir, 'acme/portal/grant.json'))).mode & 0o777).toBe(0o600);
    await syncFiles(dir, { 'acme/portal/grant.json': '{"a":1}', 'acme/wiki/oauth2-proxy.env': 'A=1\n' }, { 'acme/portal/grant.json': '{"a":2}' });
    expect(await readFile(join(dir, 'acme/portal/grant.json'), 'utf8')).toBe('{"a":2}');
    expect(await readdir(join(dir, 'acme'))).toEqual(['portal']);
    const read = await clientConfigsProvider.read(dir, { dir, files: { 'acme/portal/grant.json': '{"a":1}' } });
    expect(read.inputs).toEqual({ dir, files: { 'acme/portal/grant.json': '{"a":2}' } });
  });
});

describe('model → resources', () => {
  it('takes bodies from the same plan as idforge apply, minus the secrets Pulumi keeps', async () => {
    const loaded = await loadModel([join(import.meta.dirname, '../../examples/acme.yaml')]);
    if (!loaded.ok) throw new Error('example model invalid');
    const [acme] = tenantSpecs(loaded.model);
    expect(acme?.tenant).toBe('acme');
    expect(acme?.applications.map((a) => [a.name, a.body.kind])).toEqual([
      ['orders-api', 'api'],
      ['dashboard', 'spa'],
      ['portal', 'web'],
      ['wiki', 'proxy'],
    ]);
    expect(acme?.applications.some((a) => 'clientSecret' in a.body)).toBe(false);
    expect(Object.keys(acme?.users ?? {})).toEqual(['u-alice', 'u-bob']);
    expect(Object.values(acme?.users ?? {}).some((u) => 'initialPassword' in u)).toBe(false);
    expect(acme?.assignments).toEqual({ dashboard: ['u-alice', 'u-bob'], portal: ['u-alice', 'u-bob'], wiki: ['u-alice'] });
    expect(jsonEqual(tenantSpecs(loaded.model), tenantSpecs(loaded.model))).toBe(true);
  });
});
