/**
 * Pulumi is one of the doors (issue 20, point c): a seeded property on the real engine and the real
 * server, in a few runs. Each run `pulumi up`s a generated model (test/doors/_cross-door.ts), then
 * another door acts on the stack's tenant:
 *
 * - `idforge apply --manager other` of a changed model (the tenant's display name among its changes)
 *   is refused, naming the stack, and changes nothing on the server;
 * - an identity provider makes a group through SCIM;
 *
 * after which `pulumi preview --expect-no-changes` passes (the stack sees no drift in what it
 * declares, and leaves the other doors' objects alone), and `idforge export` of the stack's tenant
 * plans to no changes (the round trip through the other door is lossless).
 */
import fc from 'fast-check';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { scimBaseUrl } from '../../src/contract/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { modelArb, modelText, type ModelChoice } from '../doors/_cross-door.ts';
import { localhostFetch } from '../server/_support.ts';
import { runCli } from '../support/cli.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO } from './_pulumi.ts';

const RUNS = 2;
const SEED = Number(process.env.IDFORGE_DOORS_SEED ?? 20261126);

/** Everything the admin API shows of the tenant, for "nothing changed". */
async function snapshot(admin: AdminClient): Promise<string> {
  const t = await admin.find('getTenant', { tenant: 'doors' });
  const apps = (await admin.listAll('listApplications', { tenant: 'doors' })) ?? [];
  const users = (await admin.listAll('listUsers', { tenant: 'doors' })) ?? [];
  const assignments = await Promise.all(apps.filter((a) => a.kind !== 'api').map((a) => admin.listAll('listAssignments', { tenant: 'doors', application: a.name })));
  return JSON.stringify({ t, apps, users, assignments });
}

describe('Pulumi is one of the doors (seeded, on the real engine)', { timeout: 900_000 }, () => {
  let p: PulumiProject;
  let port: number;
  let dataDir: string;

  beforeAll(async () => {
    port = await freePort();
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {});
    dataDir = join(p.root, 'server');
    await p.configSet('idforge:model', join(p.root, 'model.yaml'));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
    // The runs' models differ at random: what one drops is no mistake to guard against here.
    await p.configSet('idforge:allowDelete', 'true');
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it(`another manager's change is refused naming the stack, SCIM's group is left alone, the preview stays empty, the export plans to nothing (seed ${SEED})`, async () => {
    const runs = fc.sample(fc.record({ model: modelArb, changed: modelArb, group: fc.subarray(['u-ann', 'u-ben', 'u-cat']) }), { seed: SEED, numRuns: RUNS });
    const cli = (args: string[]) => runCli([...args, '--data-dir', dataDir], { cwd: p.root, env: { IDFORGE_STATE: join(p.root, 'cli-state.json') } });
    let scimToken: string | undefined;
    for (const [i, run] of runs.entries()) {
      const where = `run ${i}: ${JSON.stringify(run)}`;
      await writeFile(join(p.root, 'model.yaml'), modelText(port, run.model as ModelChoice));
      await p.up();
      const admin = await AdminClient.forDataDir(dataDir);

      // Another manager's change: the tenant (kept by the stack) is in every batch, so this one is refused whole.
      await writeFile(join(p.root, 'other.yaml'), modelText(port, run.changed as ModelChoice).replace('displayName: Doors', 'displayName: Doors by other'));
      const before = await snapshot(admin);
      const other = await cli(['apply', join(p.root, 'other.yaml'), '--manager', 'other']);
      expect(other.code, `${where}\n${other.stdout}${other.stderr}`).toBe(1);
      expect(other.stderr, where).toContain("tenant 'doors' is managed by the Pulumi stack idforge/test; idforge apply (manager 'other') would change displayName");
      expect(await snapshot(admin), where).toBe(before);

      // An identity provider's group, of whichever of the stack's users exist.
      scimToken ??= (await admin.call('createScimToken', { tenant: 'doors' }, { body: { description: 'IdP' } })).token;
      const users = new Set(((await admin.listAll('listUsers', { tenant: 'doors' })) ?? []).map((u) => u.id));
      const r = await localhostFetch(`${scimBaseUrl({ scheme: 'http', baseDomain: 'localhost', port }, 'doors')}/Groups`, {
        method: 'POST', headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
        body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: `idp-${i}`, members: run.group.filter((u) => users.has(u)).map((value) => ({ value })) }),
      });
      expect(r.status, where).toBe(201);

      const preview = await p.run(['preview', '--expect-no-changes']);
      expect(preview.code, `${where}\n${preview.stdout}${preview.stderr}`).toBe(0);

      const exported = await cli(['export', 'doors', '--out', join(p.root, 'export.yaml')]);
      expect(exported.code, `${where}\n${exported.stderr}`).toBe(0);
      const plan = await cli(['plan', join(p.root, 'export.yaml'), '--json']);
      expect(plan.code, `${where}\n${plan.stderr}`).toBe(0);
      expect(JSON.parse(plan.stdout), where).toMatchObject({ summary: { create: 0, update: 0, delete: 0 } });
    }
  });
});
