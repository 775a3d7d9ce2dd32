/**
 * The state file belongs to the model: `.idforge/state.json` next to it, whichever directory plan,
 * apply and compile run in, and each of them says which file it used. Before, it was found in the
 * working directory, so planning the same model from another directory wanted to change the client
 * secrets apply had made. A state file where older releases kept it is still found, and said so.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { tempDir, testServer } from '../server/_support.ts';
import { acmeModel } from '../support/model.ts';

const env = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12' };
let server: Awaited<ReturnType<typeof testServer>>;
const work = tempDir('idforge-state-file-');
const modelDir = join(work.path, 'infra', 'identity');
const elsewhere = join(work.path, 'elsewhere');
const model = join(modelDir, 'acme.yaml');
const state = join(modelDir, '.idforge', 'state.json');

beforeAll(async () => {
  server = await testServer();
  mkdirSync(modelDir, { recursive: true });
  mkdirSync(elsewhere, { recursive: true });
  writeFileSync(model, acmeModel(server.port));
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

describe('the state file next to the model', () => {
  it('apply keeps the secrets it makes next to the model, and says so', async () => {
    const r = await runCli(['apply', model, '--data-dir', server.dataDir], { cwd: work.path, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`State file: ${state} (next to the model)\n`);
    expect(r.stdout).toContain(`new client secrets kept in ${state}`);
    expect(existsSync(state)).toBe(true);
    expect(existsSync(join(work.path, '.idforge'))).toBe(false);
  });

  it('plan of the same model from another directory, by file or by directory, finds it and changes nothing', async () => {
    // That directory has a state file of its own (another model's, or a stale copy): it is not the model's.
    const stale = JSON.parse(readFileSync(state, 'utf8')) as { secrets: Record<string, { clientSecret?: string }> };
    for (const entry of Object.values(stale.secrets)) if (entry.clientSecret !== undefined) entry.clientSecret = 'stale-secret-0123456789abcdefghijklmnop';
    mkdirSync(join(elsewhere, '.idforge'), { recursive: true });
    writeFileSync(join(elsewhere, '.idforge', 'state.json'), JSON.stringify(stale));
    const staleFile = await runCli(['plan', model, '--data-dir', server.dataDir, '--state', '.idforge/state.json'], { cwd: elsewhere, env });
    expect(staleFile.stdout).toMatch(/~ application acme\/portal \(.*clientSecret\)/);
    for (const path of [model, modelDir]) {
      const r = await runCli(['plan', path, '--data-dir', server.dataDir], { cwd: elsewhere, env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`State file: ${state} (next to the model)\n`);
      // The client secrets apply made are the ones the plan compares with: none to change.
      expect(r.stdout).not.toContain('clientSecret');
    }
    const json = await runCli(['plan', model, '--data-dir', server.dataDir, '--json'], { cwd: elsewhere, env });
    const plan = JSON.parse(json.stdout) as { ok: boolean; stateFile: string; changes: { fields: string[] }[] };
    expect(plan).toMatchObject({ ok: true, stateFile: state });
    expect(plan.changes.flatMap((c) => c.fields)).not.toContain('clientSecret');
  });

  it('compile writes the client configurations with the same secrets, and names the file', async () => {
    const r = await runCli(['compile', model, '--out', join(elsewhere, 'out')], { cwd: elsewhere, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`State file: ${state} (next to the model)\n`);
  });

  it('--state and IDFORGE_STATE still choose another file, relative to the working directory', async () => {
    const given = await runCli(['plan', model, '--data-dir', server.dataDir, '--state', 'mine.json'], { cwd: elsewhere, env });
    expect(given.stdout).toContain(`State file: ${join(elsewhere, 'mine.json')} (given with --state)\n`);
    const named = await runCli(['plan', model, '--data-dir', server.dataDir], { cwd: elsewhere, env: { ...env, IDFORGE_STATE: 'env.json' } });
    expect(named.stdout).toContain(`State file: ${join(elsewhere, 'env.json')} (named by IDFORGE_STATE)\n`);
  });

  it('a state file where older releases kept it (the working directory) is used when the model has none, and said so', async () => {
    const legacyDir = join(work.path, 'legacy');
    mkdirSync(join(legacyDir, '.idforge'), { recursive: true });
    renameSync(state, join(legacyDir, '.idforge', 'state.json'));
    try {
      const r = await runCli(['plan', model, '--data-dir', server.dataDir], { cwd: legacyDir, env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`State file: ${join(legacyDir, '.idforge', 'state.json')} (in the working directory, where releases before this one kept it; move it next to the model, to ${state})\n`);
      expect(r.stdout).not.toContain('clientSecret');
    } finally {
      renameSync(join(legacyDir, '.idforge', 'state.json'), state);
    }
  });
});
