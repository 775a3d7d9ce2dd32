/**
 * Drift that matters, on the real engine and the real server: a user, an assignment and an
 * application added to a managed tenant through the admin API, behind the model's back, are found by
 * `pulumi refresh` and removed by the next `up` (the tenant's `unmanaged: remove` default); with
 * `unmanaged: keep` they are left alone, and objects another door owns (the console) are never
 * removed. Before, refresh said nothing and that user signed in to the portal.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { ACME_PASSWORDS as PASSWORDS, PulumiProject, acmeStack, urnName } from './_pulumi.ts';

describe('objects nobody declared in a managed tenant', { timeout: 300_000 }, () => {
  let stack: Awaited<ReturnType<typeof acmeStack>>;
  let p: PulumiProject;
  let model: string;
  let admin: AdminClient;

  async function sneakIn(managedBy?: string): Promise<void> {
    const owner = managedBy === undefined ? {} : { managedBy };
    await admin.call('putUser', { tenant: 'acme', userId: 'u-mallory' }, { body: { email: 'mallory@evil.example', ...owner } });
    await admin.call('putAssignment', { tenant: 'acme', application: 'portal', userId: 'u-mallory' }, { body: { ...owner } });
    await admin.call('putApplication', { tenant: 'acme', application: 'backdoor' }, {
      body: { kind: 'web', clientId: 'backdoor', redirectUris: ['https://backdoor.example/cb'], scopes: ['openid'], ...owner },
    });
  }

  const present = async () => ({
    user: (await admin.find('getUser', { tenant: 'acme', userId: 'u-mallory' })) !== undefined,
    assignment: (await admin.find('getAssignment', { tenant: 'acme', application: 'portal', userId: 'u-mallory' })) !== undefined,
    application: (await admin.find('getApplication', { tenant: 'acme', application: 'backdoor' })) !== undefined,
  });

  beforeAll(async () => {
    stack = await acmeStack();
    ({ p, model } = stack);
    await p.up(PASSWORDS);
    admin = await AdminClient.forDataDir(stack.dataDir);
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  it('refresh reports them, the next up removes them (unmanaged: remove, the default)', async () => {
    await sneakIn();
    const refresh = await p.run(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    expect(refresh.code, 'refresh --expect-no-changes must fail on this drift').not.toBe(0);
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual(['update acme']);
    expect(steps[0]?.detailedDiff).toMatchObject({ 'drift.applications': { kind: 'delete' }, 'drift.users': { kind: 'delete' }, 'drift.assignments': { kind: 'delete' } });
    await p.up(PASSWORDS);
    expect(await present()).toEqual({ user: false, assignment: false, application: false });
    await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('objects the console made are reported, never removed', async () => {
    await sneakIn('console');
    const refresh = await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    expect(refresh.stdout).toContain('tenant acme holds objects this stack does not declare, kept by other managers (reported, never removed): the admin console: application backdoor, user u-mallory, assignment portal/u-mallory');
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
    await p.up(PASSWORDS);
    expect(await present()).toEqual({ user: true, assignment: true, application: true });
    await admin.remove('deleteApplication', { tenant: 'acme', application: 'backdoor' });
    await admin.remove('deleteUser', { tenant: 'acme', userId: 'u-mallory' });
  });

  it('with unmanaged: keep they stay and are no drift', async () => {
    const doc = parseDocument(await readFile(model, 'utf8'));
    doc.setIn(['tenants', 0, 'unmanaged'], 'keep');
    await writeFile(model, doc.toString());
    await p.up(PASSWORDS);
    await sneakIn();
    await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
    expect(await present()).toEqual({ user: true, assignment: true, application: true });
  });
});
