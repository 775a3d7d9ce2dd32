/**
 * Crash hygiene on the real engine: `kill -9` of `pulumi up` in the middle of provisioning leaves no
 * language host, program or dynamic provider process behind (they watch the engine and exit with
 * it), and the stack recovers with one documented command.
 */
import { spawn } from 'node:child_process';
import { copyFile, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22' };

/** Live processes whose environment carries `mark`, other than the idforge server (meant to stay). */
async function marked(mark: string): Promise<string[]> {
  const out: string[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    try {
      const environ = await readFile(`/proc/${pid}/environ`, 'latin1');
      if (!environ.includes(`IDFORGE_CRASH_MARK=${mark}`)) continue;
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      const state = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.[0];
      if (state === 'Z' || / serve /.test(`${cmdline} `)) continue;
      out.push(`${pid} ${cmdline}`);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('kill -9 of pulumi up', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let dataDir: string;

  beforeAll(async () => {
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    dataDir = join(p.root, 'server');
    await copyFile(join(REPO, 'examples/acme.yaml'), join(p.root, 'acme.yaml'));
    await p.configSet('idforge:model', join(p.root, 'acme.yaml'));
    await p.configSet('idforge:port', String(await freePort()));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('leaves no host, program or provider process behind, and `pulumi cancel --yes && pulumi up` recovers the stack', async () => {
    const mark = `crash-${process.pid}-${Date.now()}`;
    const up = spawn('pulumi', ['up', '--yes', '--skip-preview', '--non-interactive'], {
      cwd: p.dir, env: { ...p.environment(), ...PASSWORDS, IDFORGE_CRASH_MARK: mark }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    up.stdout.on('data', (c: Buffer) => (out += c.toString()));
    up.stderr.on('data', (c: Buffer) => (out += c.toString()));
    // Kill it in the middle of provisioning: once the tenant exists on the server, before the rest is in the state.
    await waitFor('the tenant to be created', async () => {
      const admin = await AdminClient.forDataDir(dataDir).catch(() => undefined);
      return admin !== undefined && (await admin.find('getTenant', { tenant: 'acme' }).catch(() => undefined)) !== undefined;
    });
    const before = await marked(mark);
    expect(before.length, 'the engine has a language host and providers running').toBeGreaterThan(1);
    up.kill('SIGKILL');
    await new Promise((r) => up.once('close', r));
    // Everything the engine started notices within seconds and exits.
    let last: string[] = [];
    await waitFor('the engine\'s children to exit', async () => (last = await marked(mark)).length === 0, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}; still running:\n${last.join('\n')}`); });

    // The documented recovery: one command, then the stack converges and previews clean.
    // The documented recovery (README, Pulumi): `pulumi cancel --yes && pulumi up`. The lock the dead
    // run left goes; the objects its cut-short creates made carry this stack's marker and are taken back.
    await p.must(['cancel', '--yes']);
    const recover = await p.run(['up', '--yes', '--skip-preview'], PASSWORDS);
    expect(recover.code, recover.stdout + recover.stderr).toBe(0);
    expect(recover.stdout).not.toMatch(/already exists on the server/);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
    const admin = await AdminClient.forDataDir(dataDir);
    expect((await admin.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id).sort()).toEqual(['u-alice', 'u-bob']);
  });

  it('pulumi refresh with the server down reports the server as down and keeps the rest as it was', async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    expect(isOurProcess(pid, dataDir)).toBe(true);
    process.kill(-pid, 'SIGKILL');
    await waitFor('the server to stop', async () => !isOurProcess(pid, dataDir));
    const refresh = await p.run(['refresh', '--yes', '--skip-preview', '--diff'], PASSWORDS);
    expect(refresh.code, refresh.stdout + refresh.stderr).toBe(0);
    // The server's pid is the one change; tenants, applications, users and assignments stay as they were.
    expect(refresh.stdout).toMatch(/~ pulumi-nodejs:dynamic\/idforge:AuthServer: \(update\)/);
    expect(refresh.stdout).toMatch(/~ pid +: \d+ => 0/);
    expect(refresh.stdout).toMatch(/1 updated/);
    expect(refresh.stdout).not.toMatch(/deleted/);
    // The next up starts the server again, and nothing else changes.
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${s.urn.slice(s.urn.lastIndexOf('::') + 2)}`)).toEqual(['update server']);
    await p.up(PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
