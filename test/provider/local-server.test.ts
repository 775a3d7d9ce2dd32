/**
 * The local server is stopped by pid. A pid file can outlive its process and the number be
 * reused, so only the `idforge serve` of the same data dir may ever be signalled.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isOurProcess } from '../../src/provider/_local-server.ts';

function sleeper(args: string[]) {
  // A process whose command line looks like a server's, without being one.
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', ...args], { stdio: 'ignore' });
  return { pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

describe('isOurProcess', () => {
  it('recognises the server of this data dir only', () => {
    const ours = sleeper(['serve', '--data-dir', '/tmp/stack-a/server']);
    const theirs = sleeper(['serve', '--data-dir', '/tmp/stack-b/server']);
    const other = sleeper(['vite', 'serve']);
    try {
      expect(isOurProcess(ours.pid, '/tmp/stack-a/server')).toBe(true);
      expect(isOurProcess(theirs.pid, '/tmp/stack-a/server')).toBe(false);
      expect(isOurProcess(other.pid, '/tmp/stack-a/server')).toBe(false);
    } finally {
      ours.stop();
      theirs.stop();
      other.stop();
    }
  });
  it('says no for a pid that does not exist', () => {
    expect(isOurProcess(2 ** 22 + 12345, '/tmp/stack-a/server')).toBe(false);
    expect(isOurProcess(0, '/tmp/stack-a/server')).toBe(false);
  });
});
