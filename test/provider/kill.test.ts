/**
 * Crash safety of `pulumi up` with per-step checkpoints off (PULUMI_SKIP_CHECKPOINTS=true, what the
 * dev stack and the README's scale section use: the engine writes the state once, at the end): the
 * up of a many-tenant model is SIGKILLed three times at random points (chosen by how far the server
 * got, plus a random delay of up to 40 ms, so kills land inside a tenant's request too), each time the
 * whole process group at once. Each kill leaves nothing running (language host, program and provider
 * hosts watch the engine). After each kill the stack's lock is released (`pulumi cancel`, what the
 * DIY backend asks for after a crash) and `up` runs again; the next run converges with no other
 * flag: it succeeds without a word about pending operations (there are none: no checkpoint was
 * written mid-run), `pulumi preview --expect-no-changes` passes, the server holds exactly the model
 * (no duplicate, nothing lost: the stack's mark let each run take back what the killed ones made),
 * and the state holds each object once.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { census, killModel, killModelCensus, progress, runAndKill, seeded } from '../support/kill.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO, markedProcesses, waitFor } from './_pulumi.ts';

/** Enough tenants that a run is still at work after its kill point (a tenant batch lands in about 30 ms here). */
const TENANTS = 24;
const USERS = 20;
const SEED = Number(process.env.IDFORGE_KILL_SEED ?? Date.now() % 100_000);

describe('pulumi up killed with SIGKILL at random points, checkpoints off', { timeout: 900_000 }, () => {
  let p: PulumiProject;
  let dataDir: string;

  beforeAll(async () => {
    const port = await freePort();
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {});
    const model = join(p.root, 'model.yaml');
    dataDir = join(p.root, 'server');
    await writeFile(model, killModel(port, TENANTS, USERS));
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it(`converges after three kills (seed ${SEED}): no duplicate, nothing lost, nothing running, no changes left`, async () => {
    expect(p.environment().PULUMI_SKIP_CHECKPOINTS).toBe('true');
    const random = seeded(SEED);
    const kills: string[] = [];
    const total = Object.values(killModelCensus(TENANTS, USERS)).reduce((a, b) => a + b, 0) - TENANTS;
    for (let i = 0; i < 3; i++) {
      const mark = `kill-${process.pid}-${i}-${Date.now()}`;
      const env = p.environment({ IDFORGE_CRASH_MARK: mark });
      // Each kill in its own eighth of the work (objects on the server), later than the one before and
      // within the first three eighths. The work lands a tenant batch at a time (a Tenant resource
      // is one batch, about 30 ms each here), so a run may be a few tenants past its mark when
      // killed; what the delay (up to 40 ms: with checkpoints off there is no state write to land
      // between) lets it do then never finishes the work, so every run is killed (CI once saw a
      // third run of 12 tenants end first with kills in the first half and delays up to 250 ms).
      const atObjects = Math.max(progress(dataDir) + 1, Math.floor(total * (i + random()) / 8));
      const delayMs = Math.floor(random() * 40);
      const r = await runAndKill('pulumi', ['up', '--yes', '--skip-preview', '--non-interactive'], { cwd: p.dir, env, dataDir, atObjects, delayMs });
      kills.push(r.killed ? `killed at ${r.objectsAtKill}/${total} objects + ${delayMs} ms` : `ended first (${r.code})`);
      expect(r.killed, `${kills.join('; ')}\n${r.output}`).toBe(true);
      // Nothing the killed run started keeps running (the server is meant to).
      let left: string[] = [];
      await waitFor('the killed run\'s processes to exit', async () => (left = await markedProcesses(mark)).length === 0, 30_000)
        .catch((err) => { throw new Error(`${(err as Error).message}; still running:\n${left.join('\n')}`); });
      // The DIY backend's lock outlives a killed up; `pulumi cancel` is its documented release.
      await p.must(['cancel', '--yes']);
    }
    const final = await p.run(['up', '--yes', '--skip-preview']);
    expect(final.code, `${kills.join('; ')}\n${final.stdout}\n${final.stderr}`).toBe(0);
    expect(final.stdout + final.stderr).not.toMatch(/pending operations/);
    await p.must(['preview', '--expect-no-changes']);
    expect(census(dataDir)).toEqual(killModelCensus(TENANTS, USERS));
    const state = JSON.parse((await p.must(['stack', 'export'])).stdout) as { deployment: { resources: { type: string; id?: string }[]; pending_operations?: unknown[] } };
    expect(state.deployment.pending_operations ?? []).toEqual([]);
    const ids = state.deployment.resources.filter((r) => r.type.startsWith('pulumi-nodejs:dynamic/idforge:'))
      .map((r) => `${r.type.slice('pulumi-nodejs:dynamic/idforge:'.length)} ${r.id}`);
    expect(new Set(ids).size).toBe(ids.length);
    const tenants = Array.from({ length: TENANTS }, (_, t) => `k${String(t).padStart(3, '0')}`);
    expect(ids.filter((id) => /^(Tenant|DeleteGuard) /.test(id)).sort()).toEqual([...tenants.map((t) => `Tenant ${t}`), 'DeleteGuard delete-guard'].sort());
    expect(ids.filter((id) => id.startsWith('TenantSecrets ')).length).toBe(TENANTS);
    console.log(`pulumi up kill test (seed ${SEED}), checkpoints off: ${kills.join('; ')}`);
  });
});
