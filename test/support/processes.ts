/**
 * Child processes for end-to-end tests: start a real program, wait until it listens, stop it and
 * everything it started. Output goes to test-output/logs/<name>.log and is kept in memory, so a
 * failure can show what the process said.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const OUTPUT_DIR = join(REPO_ROOT, 'test-output');

export interface StartOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface RunningProcess {
  readonly name: string;
  readonly pid: number;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  hasExited(): boolean;
  /** SIGTERM to the whole process group, SIGKILL if it lingers. Idempotent. */
  stop(): Promise<void>;
}

const running = new Set<RunningProcess>();

/**
 * Starts `command` in its own process group (so run scripts and npm take their children down
 * with them on stop).
 */
export function startProcess(name: string, command: string, args: readonly string[], options: StartOptions = {}): RunningProcess {
  const logDir = join(OUTPUT_DIR, 'logs');
  mkdirSync(logDir, { recursive: true });
  const log = createWriteStream(join(logDir, `${name}.log`));
  const env = { ...process.env, ...options.env } as NodeJS.ProcessEnv;
  const child: ChildProcess = spawn(command, args, { cwd: options.cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let buffer = '';
  const onData = (chunk: Buffer): void => {
    buffer += chunk.toString();
    log.write(chunk);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let exitedFlag = false;
  const exited = new Promise<number | string>((resolveExit) => {
    child.on('exit', (code, signal) => {
      exitedFlag = true;
      resolveExit(code ?? signal ?? 'unknown');
    });
    child.on('error', (err) => {
      exitedFlag = true;
      buffer += `\n[spawn error] ${err.message}\n`;
      resolveExit(`spawn error: ${err.message}`);
    });
  });
  void exited.then(() => log.end());
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  const pid = child.pid;

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  /** A member of the process group still runs (a zombie waiting to be reaped holds no port). */
  const groupAlive = (): boolean => readdirSync('/proc').some((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(pgrp) === pid && state !== 'Z';
    } catch {
      return false; // ended meanwhile
    }
  });
  const handle: RunningProcess = {
    name,
    pid,
    output: () => buffer,
    exited,
    hasExited: () => exitedFlag,
    async stop() {
      running.delete(handle);
      if (!exitedFlag) {
        signalGroup('SIGTERM');
        const lingering = await Promise.race([exited.then(() => false), sleep(5_000).then(() => true)]);
        if (lingering) signalGroup('SIGKILL');
        await exited;
      }
      // Children of a run script may outlive it (the script's own exit ends the wait above): they
      // are killed too, and stop() returns once none is left, so their ports are free again.
      signalGroup('SIGKILL');
      for (const deadline = Date.now() + 5_000; groupAlive() && Date.now() < deadline;) await sleep(20);
    },
  };
  running.add(handle);
  return handle;
}

/** Stops every process started by this test file that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

export interface RunResult {
  readonly code: number | string;
  readonly output: string;
}

/** Runs a command to completion; throws with its output when it fails (unless allowFailure). */
export async function runToCompletion(
  name: string,
  command: string,
  args: readonly string[],
  options: StartOptions & { readonly allowFailure?: boolean } = {},
): Promise<RunResult> {
  const p = startProcess(name, command, args, options);
  const code = await p.exited;
  running.delete(p);
  if (code !== 0 && !options.allowFailure) {
    throw new Error(`${name} (${command} ${args.join(' ')}) exited with ${code}:\n${p.output()}`);
  }
  return { code, output: p.output() };
}

/**
 * Where a port is listened on: whether a connection to 127.0.0.1 gets through, and whether one to
 * 127.0.0.2 does (every 127.x address is this machine's loopback, but a socket bound to 127.0.0.1
 * answers only that one; one bound to every interface answers both).
 */
export async function reachableAt(port: number): Promise<{ loopback: boolean; otherAddress: boolean }> {
  const tryAt = (host: string) => new Promise<boolean>((resolveTry) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(5_000, () => { socket.destroy(); resolveTry(false); });
    socket.once('connect', () => { socket.destroy(); resolveTry(true); });
    socket.once('error', () => resolveTry(false));
  });
  return { loopback: await tryAt('127.0.0.1'), otherAddress: await tryAt('127.0.0.2') };
}

/** A port that was free a moment ago (the kernel's choice), for a process that binds it next. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

export interface WaitOptions {
  readonly host?: string;
  /** Fail early, with its output, if this process exits while we wait. */
  readonly process?: RunningProcess;
  /** A readiness deadline, not a timing assertion: a process that never listens fails the run. */
  readonly timeoutMs?: number;
}

/** Waits until something accepts TCP connections on host:port. */
export async function waitForPort(port: number, options: WaitOptions = {}): Promise<void> {
  const host = options.host ?? '127.0.0.1';
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (options.process?.hasExited()) {
      throw new Error(`${options.process.name} exited before listening on ${host}:${port}:\n${options.process.output()}`);
    }
    if (await canConnect(host, port)) return;
    if (Date.now() > deadline) {
      throw new Error(`nothing listens on ${host}:${port}${options.process ? `; ${options.process.name} said:\n${options.process.output()}` : ''}`);
    }
    await sleep(100);
  }
}

/** Waits until `url` answers with a status below 500 (the app is up and routing). */
/**
 * Waits until nothing listens on the port any more: a process group's leader may exit before the child
 * holding the port closes it, and a restart on the same port must not take the old listener for the new.
 */
export async function waitForPortClosed(port: number, options: WaitOptions = {}): Promise<void> {
  const host = options.host ?? '127.0.0.1';
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (await canConnect(host, port)) {
    if (Date.now() > deadline) throw new Error(`something still listens on ${host}:${port}`);
    await sleep(100);
  }
}

export async function waitForHttp(url: string, options: WaitOptions = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (options.process?.hasExited()) {
      throw new Error(`${options.process.name} exited before ${url} answered:\n${options.process.output()}`);
    }
    try {
      const res = await fetch(url, { redirect: 'manual' });
      if (res.status < 500) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer${options.process ? `; ${options.process.name} said:\n${options.process.output()}` : ''}`);
    await sleep(150);
  }
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolveConnect(true);
    });
    socket.once('error', () => resolveConnect(false));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
