/**
 * The delete guard on the Pulumi path, on the real engine and the real server: a model change that
 * would delete a tenant with users, or most of a tenant's applications, users or assignments, fails
 * `pulumi preview` already and leaves the server as it was, unless the stack config allows it for one
 * run. A model directory is read through its symbolic links, so a linked file never turns into a plan
 * to delete its tenants.
 */
import { copyFile, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO, urnName } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22' };

/**
 * The refusal is one diagnostic of the guard, whole (the engine's progress line may repeat its first
 * line): never echoed again by the stack, never with a stack trace.
 */
function expectRefusalOnce(r: { stdout: string; stderr: string }): void {
  const out = r.stdout + r.stderr;
  expect(out.split('If that is intended, allow it for one run').length - 1, out).toBe(1);
  expect(out, out).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
  expect(out).not.toContain('Error: refusing');
}

describe('the delete guard refuses mass deletions in preview', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let models: string;
  let dataDir: string;
  let admin: AdminClient;

  async function editModel(edit: (doc: ReturnType<typeof parseDocument>) => void): Promise<void> {
    const file = join(models, 'acme.yaml');
    const doc = parseDocument(await readFile(file, 'utf8'));
    edit(doc);
    await writeFile(file, doc.toString());
  }

  beforeAll(async () => {
    const port = await freePort();
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    models = join(p.root, 'model');
    dataDir = join(p.root, 'server');
    await mkdir(models);
    // The model is a directory whose one file is a symbolic link to the real one.
    await mkdir(join(p.root, 'elsewhere'));
    await copyFile(join(REPO, 'examples/acme.yaml'), join(p.root, 'elsewhere', 'acme.yaml'));
    await symlink(join(p.root, 'elsewhere', 'acme.yaml'), join(models, 'acme.yaml'));
    await p.configSet('idforge:model', models);
    await p.configSet('idforge:port', String(port));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
    await p.up();
    admin = await AdminClient.forDataDir(dataDir);
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('reads the linked model file: a preview plans nothing', async () => {
    expect(await p.previewSteps(PASSWORDS)).toEqual([]);
  });

  it('a link that leads nowhere fails the preview with the file named, never an empty model', async () => {
    await symlink(join(p.root, 'elsewhere', 'gone.yaml'), join(models, 'globex.yaml'));
    try {
      const r = await p.run(['preview'], PASSWORDS);
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain(`${join(models, 'globex.yaml')}  no such file or directory`);
      expect(r.stdout).not.toMatch(/to delete/);
    } finally {
      await rm(join(models, 'globex.yaml'));
    }
  });

  it('renaming a tenant (it would delete the old one with its users) fails the preview and changes nothing', async () => {
    await editModel((doc) => doc.setIn(['tenants', 0, 'name'], 'acme2'));
    try {
      const r = await p.run(['preview'], PASSWORDS);
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain("refusing to delete tenant 'acme', which still has users");
      expect(r.stdout + r.stderr).toContain('pulumi config set idforge:allowDelete true');
      expectRefusalOnce(r);
      const up = await p.run(['up', '--yes', '--skip-preview'], PASSWORDS);
      expect(up.code).not.toBe(0);
      expectRefusalOnce(up);
      expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ name: 'acme' });
      expect(await admin.find('getTenant', { tenant: 'acme2' })).toBeUndefined();
    } finally {
      await editModel((doc) => doc.setIn(['tenants', 0, 'name'], 'acme'));
    }
    expect(await p.previewSteps(PASSWORDS)).toEqual([]);
  });

  it('removing most of a tenant\'s users or applications fails the preview; allowed for one run, it applies', async () => {
    const before = await readFile(join(p.root, 'elsewhere', 'acme.yaml'), 'utf8');
    await editModel((doc) => {
      // Keep alice; bob (one of two users) goes, and with him his assignments.
      const users = doc.getIn(['tenants', 0, 'users']) as { items: unknown[] };
      users.items.splice(1, 1);
      doc.setIn(['tenants', 0, 'groups', 0, 'members'], ['u-alice']);
      // Three of the four applications go.
      const apps = doc.getIn(['tenants', 0, 'applications']) as { items: { get(k: string): unknown }[] };
      apps.items = apps.items.filter((a) => a.get('name') === 'portal');
      doc.deleteIn(['tenants', 0, 'applications', 0, 'audience']); // orders-api goes too
      const as = doc.getIn(['tenants', 0, 'assignments']) as { items: { get(k: string): unknown }[] };
      as.items = as.items.filter((a) => a.get('application') === 'portal');
    });
    const r = await p.run(['preview'], PASSWORDS);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain("refusing to delete 3 of 4 applications of tenant 'acme' (most of them)");
    expectRefusalOnce(r);
    expect((await admin.listAll('listApplications', { tenant: 'acme' }))!.map((a) => a.name).sort()).toEqual(['dashboard', 'orders-api', 'portal', 'wiki']);

    await p.configSet('idforge:allowDelete', 'true');
    try {
      const steps = await p.previewSteps(PASSWORDS);
      const acme = steps.find((s) => urnName(s.urn) === 'acme');
      expect(Object.entries(acme?.detailedDiff ?? {}).filter(([k, d]) => d.kind === 'delete' && /^applications\.[^.[]+$|^applications\["[^"]+"\]$/.test(k)).map(([k]) => k).sort())
        .toEqual(['applications.dashboard', 'applications.wiki', 'applications["orders-api"]']);
      await p.up(PASSWORDS);
    } finally {
      await p.must(['config', 'rm', 'idforge:allowDelete']);
    }
    expect((await admin.listAll('listApplications', { tenant: 'acme' }))!.map((a) => a.name)).toEqual(['portal']);
    // Back to the whole model: adding is never guarded.
    await writeFile(join(p.root, 'elsewhere', 'acme.yaml'), before);
    await p.up(PASSWORDS);
    expect(await p.previewSteps(PASSWORDS)).toEqual([]);
  });

  it('a tenant rename declared with previousName passes the guard and moves the tenant in place: updates only, nothing lost', async () => {
    const users = (await admin.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id).sort();
    const portal = (await admin.find('getApplication', { tenant: 'acme', application: 'portal' })) as { clientId: string; createdAt: string } | undefined;
    await editModel((doc) => {
      doc.setIn(['tenants', 0, 'name'], 'acmecorp');
      doc.setIn(['tenants', 0, 'previousName'], 'acme');
    });
    const steps = await p.previewSteps(PASSWORDS);
    const ops = new Set(steps.filter((s) => !s.urn.includes('ClientConfigs') && !s.urn.includes('AuthServer')).map((s) => s.op));
    expect([...ops]).toEqual(['update']);
    expect(steps.filter((s) => s.urn.includes('idforge:Tenant::')).map((s) => urnName(s.urn))).toEqual(['acmecorp']);

    await p.up(PASSWORDS);
    expect(await admin.find('getTenant', { tenant: 'acme' })).toBeUndefined();
    expect((await admin.listAll('listUsers', { tenant: 'acmecorp' }))!.map((u) => u.id).sort()).toEqual(users);
    // The same registration, client id and creation time: moved, not made again.
    expect(await admin.find('getApplication', { tenant: 'acmecorp', application: 'portal' })).toMatchObject({ clientId: portal!.clientId, createdAt: portal!.createdAt });
    expect(await p.previewSteps(PASSWORDS)).toEqual([]);
    // Once applied, the previousName may go: no change.
    await editModel((doc) => doc.deleteIn(['tenants', 0, 'previousName']));
    expect(await p.previewSteps(PASSWORDS)).toEqual([]);
  });
});
