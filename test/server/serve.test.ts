/**
 * `idforge serve` as a process: prints where it listens, serves, and exits cleanly on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { localhostFetch, tempDir } from './_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');

it('serves until SIGTERM, then shuts down cleanly', async () => {
  const dir = tempDir();
  const child = spawn(process.execPath, [BIN, 'serve', '--data-dir', join(dir.path, 'data'), '--port', '0', '--base-domain', 'localhost'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += String(d); });
    child.stderr.on('data', () => {});
    while (!/listening on (http:\/\/localhost:\d+)/.test(out)) {
      if (child.exitCode !== null) throw new Error(`serve exited early: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const url = /listening on (http:\/\/localhost:\d+)/.exec(out)![1]!;
    const res = await localhostFetch(`${url}/admin/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(statSync(join(dir.path, 'data', 'admin-credentials.json')).mode & 0o777).toBe(0o600);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    // WAL checkpointed and closed: no -wal file left behind by a clean close.
    expect(existsSync(join(dir.path, 'data', 'idforge.db-wal'))).toBe(false);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    dir.remove();
  }
});

it('refuses to start without --data-dir, with a usage message', async () => {
  const child = spawn(process.execPath, [BIN, 'serve'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += String(d); });
  const [code] = await once(child, 'exit');
  expect(code).toBe(2);
  expect(err).toContain('--data-dir is required');
});
