/**
 * The master key is checked against the data before it is used: a lost master.key is not silently
 * replaced by a new key, and a wrong IDFORGE_MASTER_KEY is refused, each with a message that names
 * the data dir and what to do, before anything (the bootstrap admin secret) is overwritten.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { BOOTSTRAP_CREDENTIALS_FILE, MASTER_KEY_ENV } from '../../src/server/index.ts';
import { adminClient, fixtureTenant, tempDir, testServer } from './_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');
const dir = tempDir();
afterAll(() => dir.remove());
const keyFile = join(dir.path, 'master.key');
const credsFile = join(dir.path, BOOTSTRAP_CREDENTIALS_FILE);
const MISSING = /^refusing to start: the data dir .* holds sealed keys and secrets, but its master key is missing/;
const WRONG = /^refusing to start: the master key from .* is not the key the data in .* was sealed with/;

/** Starts on the data dir with only these env vars (never the test runner's). */
const start = (env: Record<string, string> = {}) => testServer({ dataDir: dir.path, env });

it('refuses a missing or wrong master key, naming the data dir; starts with the right one', async () => {
  const first = await start();
  await fixtureTenant(await adminClient(first), 'acme');
  await first.close();
  const key = readFileSync(keyFile, 'utf8').trim();
  const creds = readFileSync(credsFile, 'utf8');

  rmSync(keyFile);
  const missing = start().then(() => 'started', (e: Error) => e.message);
  expect(await missing).toMatch(MISSING);
  expect(await missing).toContain(dir.path);
  expect(await missing).toContain(`set ${MASTER_KEY_ENV}`);
  // Nothing was made or overwritten: no new key file, the admin secret untouched.
  expect(existsSync(keyFile)).toBe(false);
  expect(readFileSync(credsFile, 'utf8')).toBe(creds);

  const wrong = await start({ [MASTER_KEY_ENV]: randomBytes(32).toString('base64url') }).then(() => 'started', (e: Error) => e.message);
  expect(wrong).toMatch(WRONG);
  expect(wrong).toContain(dir.path);
  expect(readFileSync(credsFile, 'utf8')).toBe(creds);

  // The right key, from the env and then from the restored file: the tenant works as before.
  for (const env of [{ [MASTER_KEY_ENV]: key }, {}] as Record<string, string>[]) {
    if (Object.keys(env).length === 0) writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const server = await start(env);
    try {
      expect(server.adminCredentials.clientSecret).toBe(JSON.parse(creds).clientSecret);
      const admin = await adminClient(server);
      expect((await admin.call('GET', '/admin/v1/tenants/acme/users/u-alice')).status).toBe(200);
    } finally {
      await server.close();
    }
  }
});

it('data from before key check values: adopts the key that opens its sealed keys, refuses another', async () => {
  const db = new Database(join(dir.path, 'idforge.db'));
  db.prepare('DELETE FROM meta WHERE key = ?').run('master-key-check');
  db.close();
  const wrong = await start({ [MASTER_KEY_ENV]: randomBytes(32).toString('base64url') }).then(() => 'started', (e: Error) => e.message);
  expect(wrong).toMatch(WRONG);
  const server = await start();
  await server.close();
  // Its check value is stored again: a missing key is refused as before (and by `idforge serve` below).
  rmSync(keyFile);
  expect(await start().then(() => 'started', (e: Error) => e.message)).toMatch(MISSING);
});

it('`idforge serve` exits non-zero with the message and no stack trace', async () => {
  const env = { ...process.env };
  delete env[MASTER_KEY_ENV];
  delete env.IDFORGE_DEBUG;
  const child = spawn(process.execPath, [BIN, 'serve', '--data-dir', dir.path, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  child.stderr.on('data', (d) => { err += String(d); });
  // Should it start after all, stop it at once rather than wait out the test's time limit.
  child.stdout.on('data', (d) => { if (String(d).includes('listening on')) child.kill('SIGTERM'); });
  const [code] = await once(child, 'exit');
  expect(code).not.toBe(0);
  expect(code).toBe(1);
  expect(err).toMatch(/^idforge serve: refusing to start: the data dir .* but its master key is missing/m);
  expect(err).not.toContain('internal error');
  expect(err).not.toMatch(/^\s+at /m);
});

it('`idforge serve` on a port that is taken says so plainly', async () => {
  const { createServer } = await import('node:net');
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  const fresh = tempDir();
  try {
    const child = spawn(process.execPath, [BIN, 'serve', '--data-dir', fresh.path, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += String(d); });
    child.stdout.on('data', (d) => { if (String(d).includes('listening on')) child.kill('SIGTERM'); });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(err).toContain(`idforge serve: cannot listen on 127.0.0.1:${port}: the port is already in use`);
    expect(err).not.toContain('internal error');
  } finally {
    blocker.close();
    fresh.remove();
  }
});
