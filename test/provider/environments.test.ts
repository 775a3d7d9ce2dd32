/**
 * Environments on the real engine: one model in Git, a dev stack and a staging stack with the
 * repository's staging overlay (stacks/staging.overlay.yaml), each with its own running server, side by
 * side. Staging has its own port, origins and people; dev is the model as written.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22', ACME_CAROL_PASSWORD: 'carol-password-3' };

describe('a dev and a staging stack of one model, side by side', { timeout: 300_000 }, () => {
  const stacks: Record<'dev' | 'staging', { p: PulumiProject; dataDir: string }> = {} as never;

  beforeAll(async () => {
    for (const env of ['dev', 'staging'] as const) {
      const p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
      const dataDir = join(p.root, 'server');
      await p.configSet('idforge:model', join(REPO, 'examples/acme.yaml'));
      if (env === 'staging') await p.configSet('idforge:overlay', join(REPO, 'stacks/staging.overlay.yaml'));
      // Tests cannot count on 9080 and 9180 being free: the stack's port wins over model and overlay.
      await p.configSet('idforge:port', String(await freePort()));
      await p.configSet('idforge:dataDir', dataDir);
      await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
      stacks[env] = { p, dataDir };
    }
  });

  afterAll(async () => {
    for (const { p, dataDir } of Object.values(stacks)) {
      const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
      if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
      await p?.cleanup();
    }
  });

  it('each deploys its own server with its own people, origins and issuer', async () => {
    await stacks.dev.p.up(PASSWORDS);
    await stacks.staging.p.up(PASSWORDS);
    const dev = await AdminClient.forDataDir(stacks.dev.dataDir);
    const staging = await AdminClient.forDataDir(stacks.staging.dataDir);
    expect(await dev.server()).not.toBe(await staging.server());
    expect((await dev.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id)).toEqual(['u-alice', 'u-bob']);
    expect((await staging.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id)).toEqual(['u-alice', 'u-carol']);
    expect(await staging.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme Corporation (staging)' });
    expect(await dev.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({ redirectUris: ['http://portal.localhost:3000/connect/acme/callback'] });
    expect(await staging.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({ redirectUris: ['http://portal.localhost:3100/connect/acme/callback'] });
    const grant = JSON.parse(await readFile(join(stacks.staging.p.root, 'clients/acme/portal/grant.json'), 'utf8')) as { defaults: { origin: string } };
    expect(grant.defaults.origin).toBe('http://portal.localhost:3100');
    for (const { p } of Object.values(stacks)) await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
