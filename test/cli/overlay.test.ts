/**
 * `idforge plan --overlay` and `idforge apply --overlay`: the model of one environment (the model in
 * Git with the environment's overlay merged over it, as a stack's `idforge:overlay` does), planned
 * and applied against a live server (in-process) without Pulumi. An overlay that names a tenant the
 * model lacks is a located problem, never a new tenant.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { acmeModel } from '../support/model.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

const STAGING = resolve(import.meta.dirname, '../../stacks/staging.overlay.yaml');
// Staging has no bob and has carol (stacks/staging.overlay.yaml).
const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_CAROL_PASSWORD: 'carol-password-3' };

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-overlay-');

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'acme.yaml'), acmeModel(server.port));
  // The repository's staging overlay, its port pointed at this test's server.
  writeFileSync(join(work.path, 'staging.yaml'), readFileSync(STAGING, 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${server.port}`));
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

const idforge = (...args: string[]) =>
  runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { ...PASSWORDS, IDFORGE_STATE: join(work.path, 'state.json') } });

describe('plan and apply --overlay', () => {
  it('plan shows, and apply makes, the environment the overlay describes; a second plan has nothing to do', async () => {
    const plan = await idforge('plan', 'acme.yaml', '--overlay', 'staging.yaml', '--json');
    expect(plan.code, plan.stderr).toBe(0);
    const names = (JSON.parse(plan.stdout) as { changes: { op: string; name: string }[] }).changes.map((c) => `${c.op} ${c.name}`);
    expect(names).toContain('create acme/u-carol');
    expect(names.filter((n) => n.includes('u-bob'))).toEqual([]);

    const apply = await idforge('apply', 'acme.yaml', '--overlay', 'staging.yaml');
    expect(apply.code, apply.stderr).toBe(0);
    expect((await admin.typed.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id).sort()).toEqual(['u-alice', 'u-carol']);
    expect(await admin.typed.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme Corporation (staging)' });
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'portal' }))
      .toMatchObject({ redirectUris: ['http://portal.localhost:3100/connect/acme/callback'] });

    const again = await idforge('plan', 'acme.yaml', '--overlay', 'staging.yaml');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('No changes: the server matches the model');
  });

  it('an overlay tenant the model lacks is a located problem with a did-you-mean: nothing is planned or applied', async () => {
    writeFileSync(join(work.path, 'typo.yaml'), `server:\n  port: ${server.port}\ntenants:\n  - name: acmee\n    displayName: Acme (typo)\n`);
    for (const command of ['plan', 'apply']) {
      const r = await idforge(command, 'acme.yaml', '--overlay', 'typo.yaml');
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${join(work.path, 'typo.yaml')}:4:11  tenant "acmee" is not in the model (did you mean 'acme'?)`);
    }
    expect(await admin.typed.find('getTenant', { tenant: 'acmee' })).toBeUndefined();
  });

  it('--help of both commands says what --overlay does', async () => {
    for (const command of ['plan', 'apply']) {
      const help = await runCli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^usage: idforge ${command} <model file or directory>\\.\\.\\. \\[--overlay <environment overlay>\\]`));
      expect(help.stdout).toContain("--overlay <file> merges an environment's overlay over the model");
    }
  });
});
