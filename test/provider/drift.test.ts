/**
 * Drift that matters, on the real engine and the real server: a user, an assignment and an
 * application added to a managed tenant through the admin API, behind the model's back, are found by
 * `pulumi refresh` and removed by the next `up` (the tenant's `unmanaged: remove` default); with
 * `unmanaged: keep` they are left alone, and objects another door owns (the console) are never
 * removed. Before, refresh said nothing and that user signed in to the portal.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO, urnName } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22' };

describe('objects nobody declared in a managed tenant', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let model: string;
  let dataDir: string;
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
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    model = join(p.root, 'acme.yaml');
    dataDir = join(p.root, 'server');
    await copyFile(join(REPO, 'examples/acme.yaml'), model);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:port', String(await freePort()));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
    await p.up(PASSWORDS);
    admin = await AdminClient.forDataDir(dataDir);
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('refresh reports them, the next up removes them (unmanaged: remove, the default)', async () => {
    await sneakIn();
    const refresh = await p.run(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    expect(refresh.code, 'refresh --expect-no-changes must fail on this drift').not.toBe(0);
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual(['update acme', 'update acme/assignments', 'update acme/users']);
    await p.up(PASSWORDS);
    expect(await present()).toEqual({ user: false, assignment: false, application: false });
    await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('objects the console made are reported, never removed', async () => {
    await sneakIn('console');
    await p.must(['refresh', '--yes', '--skip-preview'], PASSWORDS);
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
