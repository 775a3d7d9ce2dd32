/**
 * Bench support: the server as a separate process, either pinned to one core (`taskset -c 0`, one
 * worker) so the load generator (this process; run it with `taskset -c 1`) does not share the
 * server's core, or on every core (`--workers <CPUs>`, unpinned). CPU and memory are read from
 * /proc for the server's whole process tree (the cluster primary and its workers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AdminClient } from '../../src/admin-client/index.ts';
import { treeCpuSeconds, treeMaxRss } from '../_proc.ts';
import { SetupFailed, setupCheck } from '../_setup.ts';

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
  /** An admin-API setup call: its answer when 2xx, else SetupFailed naming the call and the server's message. */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/** The pids of `pid` and every process below it. */
export interface BenchServerOptions {
  readonly keyAlg?: 'RS256' | 'ES256';
  /** Pin to this core with one worker (default 0); null: every core, `workers` processes. */
  readonly core?: number | null;
  /** Worker processes when not pinned (default: the number of CPUs). */
  readonly workers?: number;
  /** A data dir already provisioned (bench/server/_provision.ts); default a new empty one. */
  readonly dataDir?: string;
  readonly extraArgs?: readonly string[];
}

export async function startBenchServer(options: BenchServerOptions = {}): Promise<BenchServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'idforge-bench-'));
  const port = await freePort();
  const pinned = options.core !== null;
  // BENCH_BIN runs another checkout's bin/idforge.js (before/after figures); it may not know --workers.
  const bin = process.env.BENCH_BIN ?? BIN;
  const workers = pinned ? 1 : (options.workers ?? availableParallelism());
  const args = [bin, 'serve', '--data-dir', dataDir, '--port', String(port), '--key-alg', options.keyAlg ?? 'RS256',
    ...(process.env.BENCH_BIN === undefined ? ['--workers', String(workers)] : []), ...(options.extraArgs ?? []),
    // BENCH_SERVER_ARGS, e.g. "--provider-cache-size 10000", to try a server setting.
    ...(process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean)];
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the server.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child: ChildProcess = pinned
    ? spawn('taskset', ['-c', String(options.core ?? 0), process.execPath, ...nodeArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [...nodeArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => { output += String(d); });
  child.stderr!.on('data', (d) => { output += String(d); });
  for (let i = 0; !output.includes('listening on'); i++) {
    if (i > 300 || child.exitCode !== null) throw new SetupFailed(`idforge serve did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const client = await AdminClient.forDataDir(dataDir);
  const base = `http://localhost:${port}`;
  return {
    port, dataDir, pid: child.pid!, base, client,
    issuer: (t) => `http://${t}.localhost:${port}/oauth2/`,
    rss() {
      // taskset execs node, so the pid is node's own; the primary of --workers serves nothing.
      return treeMaxRss(child.pid!);
    },
    cpuSeconds() {
      return treeCpuSeconds(child.pid!);
    },
    async admin(method, path, body) {
      const r = await client.raw(method, path, body);
      const b = r.body as { message?: unknown; path?: unknown } | undefined;
      const why = typeof b?.message === 'string' ? `${b.message}${typeof b.path === 'string' ? ` (at ${b.path})` : ''}` : JSON.stringify(r.body)?.slice(0, 300);
      setupCheck(r.status >= 200 && r.status < 300, `${method} ${path}`, `HTTP ${r.status}: ${why}`);
      return { status: r.status, body: r.body };
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
