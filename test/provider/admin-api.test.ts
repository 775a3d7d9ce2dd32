/**
 * The provider implementations against the real server (started in-process on a free port):
 * create, read (with drift), update and delete of tenants, applications, users and assignments
 * through the admin API, exactly as the engine calls them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, type AdminConnection } from '../../src/admin-client/index.ts';
import { applicationProvider, type ApplicationInputs, type ApplicationOutputs } from '../../src/provider/application.ts';
import { tenantAssignmentsProvider, type TenantAssignmentsInputs } from '../../src/provider/tenant-assignments.ts';
import { tenantUsersProvider, type TenantUsersInputs } from '../../src/provider/tenant-users.ts';
import { tenantProvider, type TenantInputs } from '../../src/provider/tenant.ts';
import type { ApplicationBody } from '../../src/contract/index.ts';
import { startServer, type RunningServer } from '../../src/server/index.ts';

describe('provider implementations against the real admin API', () => {
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

  const tenant = (): TenantInputs => ({ connection, name: 'acme', body: { displayName: 'Acme', scopes: [{ name: 'admin' }], managedBy: 'idforge' } });

  it('tenant: create, read back unchanged, see drift, update, delete', async () => {
    const created = await tenantProvider.create(tenant());
    expect(created.id).toBe('acme');
    const read = await tenantProvider.read('acme', created.outs);
    expect(await tenantProvider.diff('acme', read.props!, tenant())).toEqual({ changes: false, replaces: [] });
    // A change by hand to a managed object is taken over explicitly (force), as an operator would.
    await admin.call('putTenant', { tenant: 'acme' }, { body: { displayName: 'Changed behind our back', scopes: [] }, query: { force: true } });
    const drifted = await tenantProvider.read('acme', created.outs);
    expect(drifted.inputs?.body.displayName).toBe('Changed behind our back');
    expect((await tenantProvider.diff('acme', drifted.props!, tenant())).changes).toBe(true);
    await tenantProvider.update('acme', drifted.props!, tenant());
    expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme', scopes: [{ name: 'admin' }] });
  });

  it('application: the client secret is made once and survives updates', async () => {
    const inputs: ApplicationInputs = {
      connection,
      tenant: 'acme',
      name: 'portal',
      body: { kind: 'web', clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [], managedBy: 'idforge' },
    };
    const created = await applicationProvider.create(inputs);
    const outs = created.outs as ApplicationOutputs;
    expect(outs.clientId).toBe('portal');
    expect(outs.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const changed = { ...inputs, body: { ...inputs.body, redirectUris: ['http://portal.localhost:3001/connect/acme/callback'] } };
    const updated = await applicationProvider.update(created.id, outs, changed);
    expect(updated.outs?.clientSecret).toBe(outs.clientSecret);
    // The server still holds the same secret: PUTting it again changes nothing.
    const again = await admin.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: { ...changed.body, clientSecret: outs.clientSecret } as ApplicationBody });
    expect(again.outcome).toBe('unchanged');
    const read = await applicationProvider.read(created.id, updated.outs);
    expect(read.inputs?.body).toEqual(changed.body);
    expect(read.props?.clientSecret).toBe(outs.clientSecret);
  });

  it('users and assignments in bulk: only what changed is sent; drift is read back per entry', async () => {
    const users: TenantUsersInputs = {
      connection,
      tenant: 'acme',
      users: {
        'u-alice': { email: 'alice@acme.example', scopes: ['admin'], disabled: false, managedBy: 'idforge' },
        'u-bob': { email: 'bob@acme.example', scopes: [], disabled: false, managedBy: 'idforge' },
      },
      initialPasswords: { 'u-alice': 'alice-initial-password' },
    };
    const u = await tenantUsersProvider.create(users);
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-alice' })).toMatchObject({ hasPassword: true });
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-bob' })).toMatchObject({ hasPassword: false });

    const assignments: TenantAssignmentsInputs = { connection, tenant: 'acme', assignments: { portal: ['u-alice', 'u-bob'] } };
    const a = await tenantAssignmentsProvider.create(assignments);
    await admin.remove('deleteAssignment', { tenant: 'acme', application: 'portal', userId: 'u-bob' });
    await admin.remove('deleteUser', { tenant: 'acme', userId: 'u-bob' });

    const readUsers = await tenantUsersProvider.read(u.id, u.outs);
    expect(Object.keys(readUsers.inputs!.users)).toEqual(['u-alice']);
    const readAssignments = await tenantAssignmentsProvider.read(a.id, a.outs);
    expect(readAssignments.inputs?.assignments).toEqual({ portal: ['u-alice'] });

    await tenantUsersProvider.update(u.id, readUsers.props!, users);
    await tenantAssignmentsProvider.update(a.id, readAssignments.props!, assignments);
    expect(await admin.find('getAssignment', { tenant: 'acme', application: 'portal', userId: 'u-bob' })).toBeDefined();

    await tenantAssignmentsProvider.delete(a.id, assignments);
    await tenantUsersProvider.delete(u.id, users);
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-alice' })).toBeUndefined();
  });

  // (Writes by others are forced: each takes the object over, as its manager.)
  it('create takes back what this stack made (a create killed before its checkpoint); anything made outside the stack is refused', async () => {
    // Objects carry the stack that made them (`stack`); a killed create leaves them with this stack's marker.
    const stack = 'idforge/crash-test';
    const t: TenantInputs = { connection, name: 'crash', body: { displayName: 'Crash', scopes: [{ name: 'admin' }], managedBy: 'idforge', stack } };
    // Made by someone else (no marker, or another stack's): refused, whatever the body.
    await admin.call('putTenant', { tenant: 'crash' }, { body: { ...t.body, stack: undefined } , query: { force: true } });
    await expect(tenantProvider.create(t)).rejects.toThrow('tenant crash already exists on the server, outside this stack');
    await admin.call('putTenant', { tenant: 'crash' }, { body: { ...t.body, stack: 'idforge/other' } , query: { force: true } });
    await expect(tenantProvider.create(t)).rejects.toThrow('tenant crash already exists on the server, outside this stack');
    // As the killed create left it (an older body even): taken, and brought to the declared body.
    await admin.call('putTenant', { tenant: 'crash' }, { body: { ...t.body, displayName: 'Older' } , query: { force: true } });
    expect((await tenantProvider.create(t)).id).toBe('crash');
    expect(await admin.find('getTenant', { tenant: 'crash' })).toMatchObject({ displayName: 'Crash', stack });

    const secret = 's'.repeat(43);
    const app: ApplicationInputs = {
      connection, tenant: 'crash', name: 'web', clientSecret: secret,
      body: { kind: 'web', clientId: 'crash-web', redirectUris: ['https://web.crash.test/cb'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [], managedBy: 'idforge', stack },
    };
    await admin.call('putApplication', { tenant: 'crash', application: 'web' }, { body: { ...app.body, stack: undefined, clientSecret: secret } as ApplicationBody , query: { force: true } });
    await expect(applicationProvider.create(app)).rejects.toThrow('application crash/web already exists on the server, outside this stack');
    await admin.call('putApplication', { tenant: 'crash', application: 'web' }, { body: { ...app.body, clientSecret: 'o'.repeat(43) } as ApplicationBody , query: { force: true } });
    expect((await applicationProvider.create(app)).id).toBe('crash/web');
    // The stack's secret is the one the server now holds.
    expect(await admin.call('verifyClientSecret', { tenant: 'crash', application: 'web' }, { body: { clientSecret: secret } })).toMatchObject({ matches: true });

    const users: TenantUsersInputs = { connection, tenant: 'crash', users: { 'u-1': { email: 'u1@crash.test', scopes: [], disabled: false, managedBy: 'idforge', stack } } };
    await admin.call('putUser', { tenant: 'crash', userId: 'u-1' }, { body: { ...users.users['u-1']!, displayName: 'Older' } });
    await tenantUsersProvider.create(users);
    expect((await admin.find('getUser', { tenant: 'crash', userId: 'u-1' }))?.displayName).toBeUndefined();
    await admin.call('putUser', { tenant: 'crash', userId: 'u-2' }, { body: { email: 'u2@crash.test' } });
    await expect(tenantUsersProvider.create({ ...users, users: { ...users.users, 'u-2': { email: 'u2@crash.test', scopes: [], disabled: false, managedBy: 'idforge', stack } } }))
      .rejects.toThrow('in tenant crash, user u-2 already exists on the server, outside this stack');

    const assignments: TenantAssignmentsInputs = { connection, tenant: 'crash', stack, assignments: { web: ['u-1'] } };
    await admin.call('putAssignment', { tenant: 'crash', application: 'web', userId: 'u-1' }, { body: { managedBy: 'idforge', stack } });
    await tenantAssignmentsProvider.create(assignments);
    await admin.call('putAssignment', { tenant: 'crash', application: 'web', userId: 'u-2' }, { body: {} });
    await expect(tenantAssignmentsProvider.create({ ...assignments, assignments: { web: ['u-1', 'u-2'] } }))
      .rejects.toThrow('in tenant crash, assignment web→u-2 already exists on the server, outside this stack');
    await tenantProvider.delete('crash', t);
  });

  it('deleting is idempotent, and a deleted tenant reads as gone', async () => {
    await tenantProvider.delete('acme', tenant());
    await tenantProvider.delete('acme', tenant());
    expect(await tenantProvider.read('acme', tenant())).toEqual({ id: '' });
  });
});
