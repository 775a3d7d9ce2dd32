/**
 * Bench support: the server as a separate process pinned to one core (`taskset -c 0`), so the
 * load generator (this process; run it with `taskset -c 1`) does not share the server's core.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AdminClient } from '../../src/admin-client/index.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

export interface BenchServer {
  readonly port: number;
  readonly dataDir: string;
  readonly pid: number;
  readonly base: string;
  issuer(tenant: string): string;
  /** Resident set size of the server process, from /proc (bytes). */
  rss(): number;
  /** CPU seconds (user + system, all threads) the server process has used so far. */
  cpuSeconds(): number;
  /** The typed admin client for this server. */
  readonly client: AdminClient;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export async function startBenchServer(options: { keyAlg?: 'RS256' | 'ES256'; core?: number } = {}): Promise<BenchServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'idforge-bench-'));
  const port = await freePort();
  const args = [BIN, 'serve', '--data-dir', dataDir, '--port', String(port), '--key-alg', options.keyAlg ?? 'RS256'];
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the server.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child: ChildProcess = spawn('taskset', ['-c', String(options.core ?? 0), process.execPath, ...nodeArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => { output += String(d); });
  child.stderr!.on('data', (d) => { output += String(d); });
  for (let i = 0; !output.includes('listening on'); i++) {
    if (i > 300 || child.exitCode !== null) throw new Error(`server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const client = await AdminClient.forDataDir(dataDir);
  const base = `http://localhost:${port}`;
  return {
    port, dataDir, pid: child.pid!, base, client,
    issuer: (t) => `http://${t}.localhost:${port}/oauth2/`,
    rss() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      // taskset execs node, so the pid is node's own.
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    cpuSeconds() {
      // Fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 per second on Linux).
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    },
    async admin(method, path, body) {
      const r = await client.raw(method, path, body);
      return { status: r.status, body: r.body };
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
