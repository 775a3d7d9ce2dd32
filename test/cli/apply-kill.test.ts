/**
 * Crash safety of `idforge apply`: the apply of a many-tenant model is SIGKILLed three times at
 * random points (chosen by how far the server got, plus a random delay), then run to the end. The
 * next run converges: it succeeds, a plan right after has no changes, and the server holds exactly
 * the model (no duplicate, nothing lost, every tenant with its two signing keys). Each tenant's
 * batch is one transaction, so a kill leaves every tenant either as it was or as the model says.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { census, killModel, killModelCensus, progress, runAndKill, seeded } from '../support/kill.ts';
import { REPO_ROOT } from '../support/processes.ts';
import { tempDir, testServer } from '../server/_support.ts';

const TENANTS = 30;
const USERS = 40;
const SEED = Number(process.env.IDFORGE_KILL_SEED ?? Date.now() % 100_000);

describe('idforge apply killed with SIGKILL at random points', { timeout: 600_000 }, () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  const work = tempDir('idforge-apply-kill-');
  let model: string;

  beforeAll(async () => {
    server = await testServer();
    model = join(work.path, 'model.yaml');
    await writeFile(model, killModel(server.port, TENANTS, USERS));
  });
  afterAll(async () => {
    await server?.dispose();
    work.remove();
  });

  const argv = (cmd: string) => [join(REPO_ROOT, 'bin/idforge.js'), cmd, model, '--data-dir', server.dataDir, '--state', join(work.path, 'state.json')];
  const env = { ...process.env, NO_COLOR: '1' };

  it(`converges after three kills (seed ${SEED}): no duplicate, nothing lost, no changes left`, async () => {
    const random = seeded(SEED);
    const expected = killModelCensus(TENANTS, USERS);
    const total = expected.applications + expected.users + expected.assignments;
    const kills: string[] = [];
    for (let i = 0; i < 3; i++) {
      // Each kill in its own sixth of the work, within the first half: the delay after the mark never
      // lets a run finish, so every run is killed.
      const atObjects = Math.max(progress(server.dataDir) + 1, Math.floor(total * (i + random()) / 6));
      const delayMs = Math.floor(random() * 300);
      const r = await runAndKill(process.execPath, argv('apply'), { cwd: work.path, env, dataDir: server.dataDir, atObjects, delayMs });
      kills.push(r.killed ? `killed at ${r.objectsAtKill}/${total} objects + ${delayMs} ms` : `ended first (${r.code})`);
      expect(r.killed, `${kills.join('; ')}\n${r.output}`).toBe(true);
      // Whatever the kill interrupted, no tenant is half-written: its users and assignments come in whole.
      const c = census(server.dataDir);
      expect(c.users % USERS, kills.join('; ')).toBe(0);
      expect(c.tenantsWithoutTwoKeys).toBe(0);
    }
    const final = await runAndKill(process.execPath, argv('apply'), { cwd: work.path, env, dataDir: server.dataDir, atObjects: Number.POSITIVE_INFINITY, delayMs: 0 });
    expect(final.code, `${kills.join('; ')}\n${final.output}`).toBe(0);
    const plan = await runAndKill(process.execPath, argv('plan'), { cwd: work.path, env, dataDir: server.dataDir, atObjects: Number.POSITIVE_INFINITY, delayMs: 0 });
    expect(plan.output).toContain(`No changes: the server matches the model (${TENANTS + total} objects).`);
    expect(census(server.dataDir)).toEqual(expected);
    console.log(`idforge apply kill test (seed ${SEED}): ${kills.join('; ')}`);
  });
});
