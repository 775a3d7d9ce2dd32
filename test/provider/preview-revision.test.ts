/**
 * A plain preview skips a tenant's dry run while the server's directory revision of that tenant is
 * the one the state recorded when the stack last found or left it exactly as declared (issue 23):
 * so a change through any other door must move that revision, and the next plain preview must show
 * it. On the real engine and the real server: after an up, the state holds the revision and a preview
 * is empty; a field changed through the admin API, then a user made through SCIM, each show in the
 * next plain preview (a diff, a report) as they did when every preview read every tenant.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import type { ApplicationBody } from '../../src/contract/index.ts';
import { scimClient, scimUser } from '../scim/_support.ts';
import { ACME_PASSWORDS as PASSWORDS, PulumiProject, acmeStack, urnName } from './_pulumi.ts';

interface PreviewJson {
  readonly steps: { op: string; urn: string; detailedDiff?: Record<string, { kind: string }> }[];
  readonly diagnostics?: { message: string; severity: string }[];
}

/** The acme Tenant's recorded revision in the stack's state. */
async function recordedRevision(p: PulumiProject): Promise<string | undefined> {
  const state = JSON.parse((await p.must(['stack', 'export'])).stdout) as { deployment: { resources: { type: string; id?: string; outputs?: { revision?: string } }[] } };
  const tenant = state.deployment.resources.find((r) => r.type.endsWith(':Tenant') && r.id === 'acme');
  expect(tenant, 'the acme Tenant in the state').toBeDefined();
  return tenant!.outputs?.revision;
}

async function plainPreview(p: PulumiProject): Promise<{ changed: string[]; detailed: Record<string, { kind: string }>; said: string }> {
  const r = await p.run(['preview', '--json'], PASSWORDS);
  expect(r.code, r.stderr).toBe(0);
  const preview = JSON.parse(r.stdout) as PreviewJson;
  const changed = preview.steps.filter((s) => s.op !== 'same' && s.op !== 'refresh');
  return {
    changed: changed.map((s) => `${s.op} ${urnName(s.urn)}`),
    detailed: changed.find((s) => urnName(s.urn) === 'acme')?.detailedDiff ?? {},
    said: (preview.diagnostics ?? []).map((d) => d.message).join('\n'),
  };
}

describe('a plain preview after a change through another door', { timeout: 300_000 }, () => {
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

  it('sees a field changed through the admin API and a user made through SCIM, each after the state recorded the revision', async () => {
    const recorded = await recordedRevision(p);
    expect(recorded, 'an up that leaves the tenant as declared records its revision').toBeDefined();
    expect((await admin.call('listTenantRevisions', {})).revisions.acme).toBe(recorded);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);

    // The admin API: a declared application's redirect URI changed behind the stack's back.
    const wiki = (await admin.find('getApplication', { tenant: 'acme', application: 'wiki' })) as Record<string, unknown>;
    const { name: _n, createdAt: _c, updatedAt: _u, ...body } = wiki;
    await admin.call('putApplication', { tenant: 'acme', application: 'wiki' }, { body: { ...body, redirectUris: ['http://evil.localhost/oauth2/callback'] } as ApplicationBody });
    expect((await admin.call('listTenantRevisions', {})).revisions.acme).not.toBe(recorded);
    const afterAdmin = await plainPreview(p);
    expect(afterAdmin.changed).toEqual(['update acme']);
    expect(afterAdmin.detailed).toEqual({ 'applications.wiki': { kind: 'update', inputDiff: true } });
    expect(afterAdmin.said).toContain('acme/wiki: redirectUris[0] changed');

    // The up repairs it and records the revision it left; the preview after it is empty.
    await p.up(PASSWORDS);
    const repaired = await recordedRevision(p);
    expect(repaired).toBeDefined();
    expect(repaired).not.toBe(recorded);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);

    // SCIM: an identity provider provisions a user into the managed tenant (reported, never removed).
    const { token } = await admin.call('createScimToken', { tenant: 'acme' }, { body: { description: 'Okta' } });
    const port = Number(new URL((await admin.endpoint).adminUrl).port);
    const scim = scimClient({ address: { scheme: 'http', baseDomain: 'localhost', port } }, 'acme', token);
    const made = await scim.call('POST', '/Users', scimUser('okta.user', 'okta.user@acme.example'));
    expect(made.status).toBe(201);
    expect((await admin.call('listTenantRevisions', {})).revisions.acme).not.toBe(repaired);
    const afterScim = await plainPreview(p);
    expect(afterScim.changed).toEqual([]);
    expect(afterScim.said).toMatch(/tenant acme holds objects this stack does not declare, kept by other managers \(reported, never removed\): SCIM[^:]*: user /);
    // A tenant holding another manager's objects keeps the revision the stack's last write left (the up
    // has nothing to change): the live one differs, so every preview reads it, and says so again.
    await p.up(PASSWORDS);
    expect(await recordedRevision(p)).toBe(repaired);
    expect((await plainPreview(p)).said).toMatch(/kept by other managers \(reported, never removed\): SCIM/);
  });

  it('a state whose tenants asked to be read before every update (until now) stops asking at its next up', async () => {
    type Exported = { deployment: { resources: { type: string; refreshBeforeUpdate?: boolean }[] } };
    const asking = (e: Exported) => e.deployment.resources.filter((r) => r.refreshBeforeUpdate === true).map((r) => r.type);
    const now = JSON.parse((await p.must(['stack', 'export'])).stdout) as Exported;
    expect(asking(now)).toEqual([]);
    // The state as the provider left it until now: every Tenant asks the engine to read it before each update.
    for (const r of now.deployment.resources) if (r.type.endsWith(':Tenant')) r.refreshBeforeUpdate = true;
    const file = join(p.root, 'asking.json');
    await writeFile(file, JSON.stringify(now));
    await p.must(['stack', 'import', '--file', file]);
    expect(asking(JSON.parse((await p.must(['stack', 'export'])).stdout) as Exported)).toEqual(['pulumi-nodejs:dynamic/idforge:Tenant']);
    const reads = async () => (JSON.parse((await p.must(['preview', '--json'], PASSWORDS)).stdout) as PreviewJson).steps.filter((s) => s.op === 'refresh').map((s) => urnName(s.urn));
    expect(await reads()).toEqual(['acme']);
    await p.up(PASSWORDS);
    expect(asking(JSON.parse((await p.must(['stack', 'export'])).stdout) as Exported)).toEqual([]);
    expect(await reads()).toEqual([]);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
