/**
 * Previews that see drift (issue 23): a plain `pulumi preview`, without --refresh, compares the model
 * with the live server (each Tenant's diff, in every preview and up: one dry run of its batch), so it
 * shows an admin user made by hand in a managed tenant, a client secret changed on the
 * server and a field changed behind the stack's back, each named in the detailed diff and in one
 * line each; it reports, never removes, an application the console made there (issue 20, point b).
 * With the server down it says so and shows the plain diff of the model against the state. The next
 * `up` repairs what the preview showed, and the preview after it is empty.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { scimBaseUrl, type ApplicationBody } from '../../src/contract/index.ts';
import { localhostFetch } from '../server/_support.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { ACME_PASSWORDS as PASSWORDS, PulumiProject, acmeStack, urnName, waitFor } from './_pulumi.ts';

interface PreviewJson {
  readonly steps: { op: string; urn: string; detailedDiff?: Record<string, { kind: string }> }[];
  readonly diagnostics?: { message: string; severity: string }[];
}

describe('a plain pulumi preview sees drift', { timeout: 300_000 }, () => {
  let stack: Awaited<ReturnType<typeof acmeStack>>;
  let p: PulumiProject;
  let admin: AdminClient;

  beforeAll(async () => {
    stack = await acmeStack();
    p = stack.p;
    await p.up(PASSWORDS);
    admin = await AdminClient.forDataDir(stack.dataDir);
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  it('shows a hand-made admin user, a changed secret and a changed field; reports a console application; up repairs the rest', async () => {
    await admin.call('putUser', { tenant: 'acme', userId: 'u-mallory' }, { body: { email: 'mallory@evil.example', scopes: ['admin'] } });
    await admin.call('rotateClientSecret', { tenant: 'acme', application: 'portal' });
    const wiki = (await admin.find('getApplication', { tenant: 'acme', application: 'wiki' })) as Record<string, unknown>;
    const { name: _n, createdAt: _c, updatedAt: _u, ...body } = wiki;
    await admin.call('putApplication', { tenant: 'acme', application: 'wiki' }, { body: { ...body, redirectUris: ['http://evil.localhost/oauth2/callback'] } as ApplicationBody });
    await admin.call('putApplication', { tenant: 'acme', application: 'console-reports' }, {
      body: { kind: 'spa', clientId: 'console-reports', redirectUris: ['http://reports.localhost:5174'], scopes: ['openid'], managedBy: 'console' } as ApplicationBody,
    });
    // An identity provider's group (made through SCIM, with a member) assigned to a Git-managed application: access the model does not declare.
    const { token } = await admin.call('createScimToken', { tenant: 'acme' }, { body: {} });
    const port = Number(new URL(await admin.server()).port);
    const made = await localhostFetch(`${scimBaseUrl({ scheme: 'http', baseDomain: 'localhost', port }, 'acme')}/Groups`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'contractors', members: [{ value: 'u-bob' }] }),
    });
    expect(made.status).toBe(201);
    const group = ((await made.json()) as { id: string }).id;
    await admin.call('putGroupAssignment', { tenant: 'acme', application: 'portal', group }, {});

    const plain = await p.run(['preview', '--json'], PASSWORDS);
    expect(plain.code, plain.stderr).toBe(0);
    const preview = JSON.parse(plain.stdout) as PreviewJson;
    const changed = preview.steps.filter((s) => s.op !== 'same' && s.op !== 'refresh');
    expect(changed.map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual(['update acme']);
    expect(changed[0]?.detailedDiff).toEqual({
      'applications.wiki': { kind: 'update', inputDiff: true },
      'drift.grants': { kind: 'delete', inputDiff: true },
      'drift.secrets': { kind: 'delete', inputDiff: true },
      'drift.users': { kind: 'delete', inputDiff: true },
    });
    const said = (preview.diagnostics ?? []).map((d) => d.message).join('\n');
    expect(said).toContain('acme/wiki: redirectUris[0] changed');
    expect(said).toContain("acme/portal: the client secret on the server is not the stack's: set again");
    expect(said).toContain('acme: user u-mallory is in the tenant but not in the model: removed');
    expect(said).toContain(`acme/portal: group ${group} grants access the model does not declare: removed`);
    expect(said).toContain('tenant acme holds objects this stack does not declare, kept by other managers (reported, never removed): the admin console: application console-reports');
    expect((await p.run(['preview', '--expect-no-changes'], PASSWORDS)).code).not.toBe(0);
    // With --refresh, the engine's read finds the same, and each warning is said once (the refresh's), not again by the diff.
    const refreshed = await p.run(['preview', '--refresh', '--json'], PASSWORDS);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    const withRefresh = JSON.parse(refreshed.stdout) as PreviewJson;
    expect(withRefresh.steps.find((s) => s.op === 'update' && urnName(s.urn) === 'acme')?.detailedDiff).toEqual(changed[0]?.detailedDiff);
    const kept = (withRefresh.diagnostics ?? []).filter((d) => d.message.includes('kept by other managers'));
    expect(kept, JSON.stringify(kept)).toHaveLength(1);
    expect(kept[0]?.message).toContain('tenant acme holds objects this stack does not declare, kept by other managers (reported, never removed): the admin console: application console-reports');

    await p.up(PASSWORDS);
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-mallory' })).toBeUndefined();
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ redirectUris: ['http://wiki.localhost:4180/oauth2/callback'] });
    const secret = /^OAUTH2_PROXY_CLIENT_SECRET=(.+)$/m.exec(await readFile(join(stack.clients, 'acme/wiki/oauth2-proxy.env'), 'utf8'))?.[1];
    expect(secret).toBeDefined();
    const portalSecret = (JSON.parse(await readFile(join(stack.clients, 'acme/portal/grant.json'), 'utf8')) as { acme: { secret: string } }).acme.secret;
    expect(await admin.call('verifyClientSecret', { tenant: 'acme', application: 'portal' }, { body: { clientSecret: portalSecret } })).toMatchObject({ matches: true });
    // The undeclared access is gone; the identity provider's group itself stays (SCIM keeps it).
    expect(await admin.find('getGroupAssignment', { tenant: 'acme', application: 'portal', group })).toBeUndefined();
    expect(await admin.find('getGroup', { tenant: 'acme', group })).toBeDefined();
    // The console's application is reported, never removed, and is no change.
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'console-reports' })).toBeDefined();
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('with the server down it says so and shows the plain diff', async () => {
    const pid = Number((await readFile(join(stack.dataDir, PID_FILE), 'utf8')).trim());
    process.kill(-pid, 'SIGKILL');
    await waitFor('the server to stop', async () => !isOurProcess(pid, stack.dataDir));
    await writeFile(stack.model, (await readFile(stack.model, 'utf8')).replace('displayName: Acme Corporation', 'displayName: Acme Corp'));
    const r = await p.run(['preview', '--json'], PASSWORDS);
    expect(r.code, r.stderr).toBe(0);
    const preview = JSON.parse(r.stdout) as PreviewJson;
    expect((preview.diagnostics ?? []).map((d) => d.message).join('\n')).toMatch(/compared with the state, not the live server \(the server is down or not deployed yet\)/);
    const changed = preview.steps.filter((s) => s.op !== 'same' && s.op !== 'refresh');
    // The server is started again, the tenant's display name changes (and with it the proxy's configuration).
    expect(changed.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual(['update acme', 'update client-configs', 'update server']);
    expect(Object.keys(changed.find((s) => urnName(s.urn) === 'acme')?.detailedDiff ?? {})).toEqual(['body']);
    await p.up(PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
