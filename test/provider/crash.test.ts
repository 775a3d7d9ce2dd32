/**
 * Crash hygiene on the real engine: `kill -9` of `pulumi up` in the middle of provisioning leaves no
 * language host, program or dynamic provider process behind (they watch the engine and exit with
 * it), also when the engine dies the moment a provider host starts (its watchdog runs before
 * anything else: _host.cjs), and the stack recovers with one documented command.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { ACME_PASSWORDS as PASSWORDS, PulumiProject, acmeStack, markedProcesses as marked, waitFor } from './_pulumi.ts';

describe('kill -9 of pulumi up', { timeout: 300_000 }, () => {
  let stack: Awaited<ReturnType<typeof acmeStack>>;
  let p: PulumiProject;
  let dataDir: string;

  beforeAll(async () => {
    stack = await acmeStack();
    ({ p, dataDir } = stack);
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  it('killed the moment a dynamic provider host starts, before its first call: nothing is left running', async () => {
    const mark = `early-${process.pid}-${Date.now()}`;
    const run = spawn('pulumi', ['preview', '--non-interactive'], {
      cwd: p.dir, env: { ...p.environment(), ...PASSWORDS, IDFORGE_CRASH_MARK: mark }, stdio: ['ignore', 'ignore', 'ignore'],
    });
    const closed = new Promise((r) => run.once('close', r));
    await waitFor('a provider host to start', async () => (await marked(mark)).some((l) => l.includes('_host.cjs')), 120_000);
    // Within its first half second: it is still loading, or has answered the engine's first calls.
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 500)));
    run.kill('SIGKILL');
    await closed;
    let last: string[] = [];
    await waitFor('the engine\'s children to exit', async () => (last = await marked(mark)).length === 0, 10_000)
      .catch((err) => { throw new Error(`${(err as Error).message}; still running:\n${last.join('\n')}`); });
  });

  it('leaves no host, program or provider process behind, and `pulumi cancel --yes && pulumi up` recovers the stack', async () => {
    const mark = `crash-${process.pid}-${Date.now()}`;
    const up = spawn('pulumi', ['up', '--yes', '--skip-preview', '--non-interactive'], {
      cwd: p.dir, env: { ...p.environment(), ...PASSWORDS, IDFORGE_CRASH_MARK: mark }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    up.stdout.on('data', (c: Buffer) => (out += c.toString()));
    up.stderr.on('data', (c: Buffer) => (out += c.toString()));
    // Kill it in the middle of provisioning: the server answers and a provider host is at work on the
    // tenant (its one batch may or may not have landed), before the state holds it.
    let before: string[] = [];
    await waitFor('the server to answer while a provider host runs', async () => {
      before = await marked(mark);
      if (!before.some((l) => l.includes('_host.cjs'))) return false;
      const admin = await AdminClient.forDataDir(dataDir).catch(() => undefined);
      return admin !== undefined && (await admin.find('getTenant', { tenant: 'nobody' }).then(() => true, () => false));
    });
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
