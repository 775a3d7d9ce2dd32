/**
 * The Tenant provider against the real server (started in-process on a free port): create, read
 * (with drift, found by one dry run; a diff under idforge's host finds it too), update and delete of
 * a tenant with its applications, users and assignments through the admin API, exactly as the engine
 * calls them; a create that takes back what the stack made and refuses what others made.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, type AdminConnection } from '../../src/admin-client/index.ts';
import type { ProviderContext } from '../../src/provider/_common.ts';
import { fromWire, tenantProvider, toWire, type TenantInputs, type TenantOutputs } from '../../src/provider/tenant.ts';
import type { ApplicationBody } from '../../src/contract/index.ts';
import { startServer, type RunningServer } from '../../src/server/index.ts';

const STACK = 'idforge/admin-api-test';
const MANAGER = `pulumi:${STACK}`;
const marks = { managedBy: 'idforge', stack: STACK, manager: MANAGER };

describe('the Tenant provider against the real admin API', () => {
  let dir: string;
  let server: RunningServer;
  let connection: AdminConnection;
  let admin: AdminClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'idforge-provider-admin-'));
    server = await startServer({ dataDir: dir, port: 0, baseDomain: 'localhost' });
    const c = server.adminCredentials;
    connection = { adminUrl: c.adminUrl, tokenUrl: c.tokenEndpoint, clientId: c.clientId, clientSecret: c.clientSecret, resource: c.resource, scope: c.scope };
    admin = new AdminClient(connection);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const web = { kind: 'web' as const, clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [], ...marks };
  const tenant = (name = 'acme'): TenantInputs => ({
    connection,
    name,
    body: { displayName: 'Acme', scopes: [{ name: 'admin' }], ...marks },
    applications: { portal: web },
    clientSecrets: { portal: 'p'.repeat(43) },
    users: {
      'u-alice': { email: 'alice@acme.example', scopes: ['admin'], disabled: false, ...marks },
      'u-bob': { email: 'bob@acme.example', scopes: [], disabled: false, ...marks },
    },
    initialPasswords: { 'u-alice': 'alice-initial-password' },
    assignments: { portal: ['u-alice', 'u-bob'] },
    unmanaged: 'remove',
  });
  /** The provider's read, decoded from the engine's copy (TenantWire). */
  const read = async (t: TenantOutputs) => {
    const r = (await tenantProvider.read(t.name, toWire(t))) as { id: string; props: unknown; inputs: unknown; refreshBeforeUpdate?: boolean };
    return { ...r, props: fromWire(r.props), inputs: fromWire(r.inputs) };
  };

  it('create, read back unchanged, see drift (in a read, and in a diff of the recorded state), update, delete', async () => {
    const made = await tenantProvider.create(toWire(tenant()));
    expect(made).toMatchObject({ id: 'acme' });
    // The diff compares with the live server itself; the engine's reads one by one before the program (refreshBeforeUpdate) are not asked for.
    expect(made).not.toHaveProperty('refreshBeforeUpdate');
    const created = { ...made, outs: fromWire(made.outs) };
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-alice' })).toMatchObject({ hasPassword: true, manager: MANAGER });
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-bob' })).toMatchObject({ hasPassword: false });
    expect(await admin.call('verifyClientSecret', { tenant: 'acme', application: 'portal' }, { body: { clientSecret: 'p'.repeat(43) } })).toMatchObject({ matches: true });
    const same = await read(created.outs!);
    expect(same).not.toHaveProperty('refreshBeforeUpdate');
    expect(await tenantProvider.diff('acme', toWire(same.inputs), toWire(tenant()))).toEqual({ changes: false, replaces: [] });

    // Changes behind the stack's back (forced, as an operator would), a user made by hand, a rotated secret.
    await admin.call('putTenant', { tenant: 'acme' }, { body: { displayName: 'Changed behind our back', scopes: [] }, query: { force: true } });
    await admin.remove('deleteAssignment', { tenant: 'acme', application: 'portal', userId: 'u-bob' });
    await admin.call('putUser', { tenant: 'acme', userId: 'u-mallory' }, { body: { email: 'mallory@evil.example' } });
    await admin.call('rotateClientSecret', { tenant: 'acme', application: 'portal' });
    // Under idforge's host (a context), a diff of what the state recorded against the model sees it all, and says it.
    const said: string[] = [];
    const ctx = { urn: 'urn:pulumi:test::idforge::pulumi-nodejs:dynamic/idforge:Tenant::acme', log: async (_: string, m: string) => void said.push(m) };
    const diffUnderHost = tenantProvider.diff as (id: string, olds: unknown, news: unknown, ctx: ProviderContext) => ReturnType<typeof tenantProvider.diff>;
    expect(await diffUnderHost('acme', made.outs, toWire(tenant()), ctx)).toMatchObject({
      changes: true, detailedDiff: { body: 'update', 'drift.users': 'delete', 'drift.secrets': 'delete', 'assignments.portal': 'update' },
    });
    expect(said.join('\n')).toContain('acme: user u-mallory is in the tenant but not in the model: removed');
    expect(said.join('\n')).toContain("acme/portal: the client secret on the server is not the stack's: set again");
    const drifted = await read(created.outs!);
    expect(drifted.inputs.body.displayName).toBe('Changed behind our back');
    expect(drifted.inputs.assignments).toEqual({ portal: ['u-alice'] });
    expect(drifted.inputs.drift).toEqual({ users: ['u-mallory'], secrets: ['portal'] });
    const diff = await tenantProvider.diff('acme', toWire(drifted.props), toWire(tenant()));
    expect(diff).toMatchObject({ changes: true, detailedDiff: { body: 'update', 'drift.users': 'delete', 'drift.secrets': 'delete', 'assignments.portal': 'update' } });
    await tenantProvider.update('acme', toWire(drifted.props), toWire(tenant()));
    expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme', scopes: [{ name: 'admin' }] });
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-mallory' })).toBeUndefined();
    expect(await admin.find('getAssignment', { tenant: 'acme', application: 'portal', userId: 'u-bob' })).toBeDefined();
    expect(await admin.call('verifyClientSecret', { tenant: 'acme', application: 'portal' }, { body: { clientSecret: 'p'.repeat(43) } })).toMatchObject({ matches: true });
    expect((await read(created.outs!)).inputs.drift).toEqual({});
  });

  it("what this stack no longer declares goes with the next update (the batch's prune); others' objects stay", async () => {
    const t = tenant();
    await admin.call('putApplication', { tenant: 'acme', application: 'console-app' }, { body: { kind: 'spa', clientId: 'console-app', redirectUris: ['https://c.example'], scopes: ['openid'], managedBy: 'console' } as ApplicationBody });
    const news = { ...t, users: { 'u-alice': t.users['u-alice']! }, assignments: { portal: ['u-alice'] } };
    await tenantProvider.update('acme', toWire(t), toWire(news));
    expect((await admin.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id)).toEqual(['u-alice']);
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'console-app' })).toBeDefined();
    await tenantProvider.update('acme', toWire(news), toWire(t));
  });

  it('create takes back what this stack made (an up killed before its state was written); anything made outside the stack is refused', async () => {
    const t = tenant('crash');
    // Made by someone else (no marker, or another stack's): refused, whatever the body.
    await admin.call('putTenant', { tenant: 'crash' }, { body: { displayName: 'Acme', scopes: [{ name: 'admin' }] }, query: { force: true } });
    await expect(tenantProvider.create(toWire(t))).rejects.toThrow('tenant crash already exists on the server, outside this stack');
    await admin.call('putTenant', { tenant: 'crash' }, { body: { ...t.body, stack: 'idforge/other', manager: 'pulumi:idforge/other' }, query: { force: true } });
    await expect(tenantProvider.create(toWire(t))).rejects.toThrow('tenant crash already exists on the server, outside this stack');
    // As the killed run left it (an older body even): taken, and brought to the declared state.
    await admin.call('putTenant', { tenant: 'crash' }, { body: { ...t.body, displayName: 'Older' }, query: { force: true } });
    await admin.call('putApplication', { tenant: 'crash', application: 'portal' }, { body: { ...web, clientSecret: 'o'.repeat(43) } as ApplicationBody, query: { force: true } });
    expect((await tenantProvider.create(toWire(t))).id).toBe('crash');
    expect(await admin.find('getTenant', { tenant: 'crash' })).toMatchObject({ displayName: 'Acme', manager: MANAGER });
    // The stack's secret is the one the server now holds.
    expect(await admin.call('verifyClientSecret', { tenant: 'crash', application: 'portal' }, { body: { clientSecret: 'p'.repeat(43) } })).toMatchObject({ matches: true });
    // A user made by hand in it: refused, naming it.
    await admin.call('putUser', { tenant: 'crash', userId: 'u-2' }, { body: { email: 'u2@crash.test' } });
    await expect(tenantProvider.create(toWire({ ...t, users: { ...t.users, 'u-2': { email: 'u2@crash.test', scopes: [], disabled: false, ...marks } } })))
      .rejects.toThrow('in tenant crash, user u-2 already exists on the server, outside this stack');
    await tenantProvider.delete('crash', toWire(t));
  });

  it('deleting is idempotent, and a deleted tenant reads as gone; a diff under the host says so, and the update makes it again', async () => {
    await tenantProvider.delete('acme', toWire(tenant()));
    await tenantProvider.delete('acme', toWire(tenant()));
    expect(await tenantProvider.read('acme', toWire(tenant()))).toEqual({ id: '' });
    const said: string[] = [];
    const ctx = { urn: 'urn:pulumi:test::idforge::pulumi-nodejs:dynamic/idforge:Tenant::acme-gone', log: async (_: string, m: string) => void said.push(m) };
    const diffUnderHost = tenantProvider.diff as (id: string, olds: unknown, news: unknown, ctx: ProviderContext) => ReturnType<typeof tenantProvider.diff>;
    expect(await diffUnderHost('acme', toWire(tenant()), toWire(tenant()), ctx)).toMatchObject({ changes: true, detailedDiff: { name: 'add' } });
    expect(said.join('\n')).toContain('tenant acme is not on the server (deleted outside this stack): the next up makes it again');
    await tenantProvider.update('acme', toWire(tenant()), toWire(tenant()));
    expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme' });
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-alice' })).toBeDefined();
    await tenantProvider.delete('acme', toWire(tenant()));
  });
});
