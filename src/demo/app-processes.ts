/**
 * The demo's sample apps as managed background processes, one per application, each the project
 * `idforge scaffold` renders from the client configurations Pulumi wrote, started the way its
 * README says (`npm start`; the proxy's `./run.sh` with the oauth2-proxy of tools/bin), as
 * test/e2e does.
 *
 * Per app, under <appsDir>/<app>/: `project/` (the rendered project; node_modules links to the
 * clone's, which holds every package the templates use), `app.log` (stdout and stderr) and
 * `process.json` (pid, command line, working directory, hash of the rendered files).
 *
 * Running the demo again re-renders each project beside the running one and restarts an app only
 * when it is not running or its rendered files differ. Stopping signals only processes that are
 * provably ours: the recorded process group, each member still working in the app's project
 * directory, and the leader still showing the recorded command line; pids are reused, so a
 * stranger with our old pid is left alone (as src/provider/_local-server.ts does for the server).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { delimiter, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../cli/main.ts';
import type { SampleApp } from './sample-apps.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const PROJECT_DIR = 'project';
export const LOG_FILE = 'app.log';
export const RECORD_FILE = 'process.json';

/** What `process.json` holds for a started app. */
export interface AppRecord {
  /** The app's label, for messages. */
  readonly app: string;
  /** Process group leader (the app is started detached: its pid is the group id). */
  readonly pid: number;
  /** The leader's /proc cmdline once the app answered; null while it starts. */
  readonly cmdline: readonly string[] | null;
  /** The project directory: every process of the app works in it. */
  readonly cwd: string;
  /** sha256 of the rendered project's files: a different hash means the configuration changed. */
  readonly hash: string;
  readonly startedAt: string;
}

export type AppState = 'started' | 'restarted' | 'running';

export interface AppStatus {
  readonly app: SampleApp;
  readonly state: AppState;
  readonly pid: number;
  readonly log: string;
}

export class AppError extends Error {
  override readonly name = 'AppError';
}

export interface RunOptions {
  readonly appsDir: string;
  /** Client configurations in the layout of `idforge compile --out` (the stack's clientConfigDir). */
  readonly clientConfigDir: string;
  /** oauth2-proxy for the proxy's run.sh. */
  readonly oauth2ProxyBin: string;
  /** Progress lines. */
  readonly say: (line: string) => void;
  /** How long an app may take to listen. Default 90 s (the SPA bundles itself first). */
  readonly readyTimeoutMs?: number;
}

// ---------------------------------------------------------------------------------------------
// Processes: who is ours.

interface ProcInfo {
  readonly pid: number;
  readonly pgid: number;
  readonly zombie: boolean;
}

function procInfo(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, pgid: Number(fields[2]), zombie: fields[0] === 'Z' };
  } catch {
    return undefined;
  }
}

function cwdOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string[] | undefined {
  try {
    const parts = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
    return parts;
  } catch {
    return undefined;
  }
}

/**
 * The live processes of a recorded app: members of its process group that work in its project
 * directory; the leader only while it shows the recorded command line. Where /proc cannot be
 * read the answer is none: better an app left running than a stranger killed.
 */
export function appProcesses(record: AppRecord): number[] {
  if (!Number.isInteger(record.pid) || record.pid <= 1) return [];
  let pids: number[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  } catch {
    return [];
  }
  return pids.filter((pid) => {
    const info = procInfo(pid);
    if (info === undefined || info.zombie || info.pgid !== record.pid || cwdOf(pid) !== record.cwd) return false;
    if (pid === record.pid && record.cmdline !== null) {
      const now = cmdlineOf(pid);
      return now !== undefined && now.length === record.cmdline.length && now.every((a, i) => a === record.cmdline?.[i]);
    }
    return true;
  });
}

/** Is the app's process group leader alive and ours? */
export function isRunning(record: AppRecord): boolean {
  return appProcesses(record).includes(record.pid);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function signal(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/**
 * SIGTERM to every process of the app, SIGKILL to what is left after 10 s; resolves with the pids
 * it signalled once none is left (or, for a process that ignores even SIGKILL, 5 s later).
 */
export async function stopApp(record: AppRecord): Promise<number[]> {
  const seen = new Set<number>();
  const termed = new Set<number>();
  const deadline = Date.now() + 10_000;
  for (let left = appProcesses(record); left.length > 0 && Date.now() < deadline + 5_000; left = appProcesses(record)) {
    for (const pid of left) seen.add(pid);
    if (Date.now() > deadline) signal(left, 'SIGKILL');
    else signal(left.filter((pid) => !termed.has(pid)), 'SIGTERM');
    for (const pid of left) termed.add(pid);
    await sleep(100);
  }
  return [...seen].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Records and projects.

async function readRecord(appDir: string): Promise<AppRecord | undefined> {
  try {
    const r = JSON.parse(await readFile(join(appDir, RECORD_FILE), 'utf8')) as AppRecord;
    return Number.isInteger(r.pid) && typeof r.cwd === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

async function writeRecord(appDir: string, record: AppRecord): Promise<void> {
  const file = join(appDir, RECORD_FILE);
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/** sha256 over the sorted paths and contents of the files `scaffold` wrote. */
function hashTree(root: string): string {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.isFile()) files.push(full);
    }
  };
  walk(root);
  const h = createHash('sha256');
  for (const f of files.sort()) {
    h.update(`${relative(root, f).split(sep).join('/')}\0`);
    h.update(readFileSync(f));
    h.update('\0');
  }
  return h.digest('hex');
}

/** Renders the app's project with `idforge scaffold` (in-process, its own command) into `out`. */
async function scaffold(app: SampleApp, clientConfigDir: string, out: string): Promise<void> {
  let said = '';
  const code = await main(['scaffold', `${app.tenant}/${app.name}`, '--from', clientConfigDir, '--out', out], {
    stdout: (t) => void (said += t),
    stderr: (t) => void (said += t),
    env: process.env,
    cwd: REPO_ROOT,
    color: false,
  });
  if (code !== 0) throw new AppError(`${app.label}: idforge scaffold failed:\n${said}`);
}

// ---------------------------------------------------------------------------------------------
// Ports.

/** Can a server listen on `port` (any address, as the apps do)? */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once('error', () => resolvePort(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolvePort(true)));
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolveConnect(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolveConnect(true);
    });
    socket.once('error', () => resolveConnect(false));
  });
}

async function logTail(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-15).map((l) => `    ${l}`).join('\n');
}

// ---------------------------------------------------------------------------------------------
// Starting.

function commandFor(app: SampleApp, oauth2ProxyBin: string): { cmd: string; args: string[]; env: NodeJS.ProcessEnv } {
  // The node that runs the demo runs the apps too (Node 24 from tools/node on an old machine):
  // first on PATH for npm and for the `node` in each start script.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
    NO_UPDATE_NOTIFIER: '1',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
  };
  if (app.kind === 'proxy') return { cmd: './run.sh', args: [], env: { ...env, OAUTH2_PROXY_BIN: oauth2ProxyBin } };
  return { cmd: 'npm', args: ['start', '--silent'], env };
}

async function start(app: SampleApp, appDir: string, hash: string, opts: RunOptions): Promise<{ record: AppRecord; ready: Promise<void> }> {
  const project = join(appDir, PROJECT_DIR);
  for (const port of app.ports) {
    if (!(await portFree(port))) {
      throw new AppError(
        `${app.label}: port ${port} is in use by another program (another demo?), so ${app.url} cannot start here; ` +
          `\`ss -ltnp 'sport = :${port}'\` names it. Stop it and run the demo again.`,
      );
    }
  }
  const logFile = join(appDir, LOG_FILE);
  const { cmd, args, env } = commandFor(app, opts.oauth2ProxyBin);
  const log = openSync(logFile, 'a', 0o600);
  // The log keeps every run's output: a header says where this one starts.
  writeSync(log, `\n--- ${new Date().toISOString()} ${[cmd, ...args].join(' ')} in ${project}\n`);
  const child = spawn(cmd, args, { cwd: project, detached: true, stdio: ['ignore', log, log], env });
  closeSync(log);
  let exited: string | undefined;
  child.on('exit', (code, sig) => (exited = String(code ?? sig)));
  child.on('error', (err) => (exited = err.message));
  if (child.pid === undefined) throw new AppError(`${app.label}: could not start ${cmd} in ${project}`);
  child.unref();
  const cwd = realpathSync(project);
  let record: AppRecord = { app: app.label, pid: child.pid, cmdline: null, cwd, hash, startedAt: new Date().toISOString() };
  // Recorded at once, so a teardown finds the app even if this run is interrupted.
  await writeRecord(appDir, record);
  const ready = (async () => {
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 90_000);
    for (;;) {
      if (exited !== undefined) {
        throw new AppError(`${app.label}: ${cmd} exited (${exited}) before listening; last lines of ${logFile}:\n${await logTail(logFile)}`);
      }
      if ((await Promise.all(app.ports.map(answers))).every(Boolean)) break;
      if (Date.now() > deadline) {
        await stopApp(record);
        throw new AppError(`${app.label}: nothing listens on port ${app.ports.join(' and ')} after ${Math.round((opts.readyTimeoutMs ?? 90_000) / 1000)} s; last lines of ${logFile}:\n${await logTail(logFile)}`);
      }
      await sleep(150);
    }
    // npm retitles itself once it runs: the command line is read now that the app answers.
    record = { ...record, cmdline: cmdlineOf(record.pid) ?? null };
    await writeRecord(appDir, record);
  })();
  return { record, ready };
}

/** Is the recorded app running, ours, and answering on every port? */
async function isServing(app: SampleApp, record: AppRecord): Promise<boolean> {
  return isRunning(record) && (await Promise.all(app.ports.map(answers))).every(Boolean);
}

/**
 * Makes one app run its current configuration: renders its project beside the running one, and
 * leaves the app alone when it runs the same files; otherwise stops it (if ours) and starts the
 * new project. Resolves once started, with a promise of it listening.
 */
async function runApp(app: SampleApp, opts: RunOptions): Promise<{ status: AppStatus; ready: Promise<void> }> {
  const appDir = join(opts.appsDir, app.dir);
  await mkdir(appDir, { recursive: true, mode: 0o700 });
  const log = join(appDir, LOG_FILE);
  const next = join(appDir, `${PROJECT_DIR}.next`);
  await rm(next, { recursive: true, force: true });
  await scaffold(app, opts.clientConfigDir, next);
  const hash = hashTree(next);
  const old = await readRecord(appDir);
  if (old !== undefined && old.hash === hash && (await isServing(app, old))) {
    await rm(next, { recursive: true, force: true });
    return { status: { app, state: 'running', pid: old.pid, log }, ready: Promise.resolve() };
  }
  const stopped = old === undefined ? [] : await stopApp(old);
  const project = join(appDir, PROJECT_DIR);
  await rm(project, { recursive: true, force: true });
  await rename(next, project);
  // The clone's node_modules holds every package the templates use; no `npm install` per app.
  await symlink(join(REPO_ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
  const { record, ready } = await start(app, appDir, hash, opts);
  return { status: { app, state: stopped.length > 0 ? 'restarted' : 'started', pid: record.pid, log }, ready };
}

export interface RunResult {
  /** Apps that listen now, in the given order. */
  readonly running: readonly AppStatus[];
  /** Apps that did not start, each with why (and the end of its log). */
  readonly failed: readonly { readonly app: SampleApp; readonly message: string }[];
}

/**
 * Makes every app run with its current configuration and stops apps that left the model.
 * Resolves once every started app listens or has failed; one app failing leaves the others running.
 */
export async function runApps(apps: readonly SampleApp[], opts: RunOptions): Promise<RunResult> {
  await mkdir(opts.appsDir, { recursive: true, mode: 0o700 });
  await stopAppsExcept(opts.appsDir, new Set(apps.map((a) => a.dir)), opts.say);
  // Started one after another, awaited together: the SPA bundles itself while the rest start.
  const outcomes: Promise<AppStatus>[] = [];
  for (const app of apps) {
    const started = runApp(app, opts);
    const outcome = started.then(({ status, ready }) => ready.then(() => status));
    // Settled with the others below; until then a failure must not count as unhandled.
    outcome.catch(() => undefined);
    outcomes.push(outcome);
    await started.catch(() => undefined);
  }
  const settled = await Promise.allSettled(outcomes);
  const running: AppStatus[] = [];
  const failed: { app: SampleApp; message: string }[] = [];
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') running.push(r.value);
    else failed.push({ app: apps[i] as SampleApp, message: r.reason instanceof Error ? r.reason.message : String(r.reason) });
  });
  return { running, failed };
}

/** Stops the apps recorded under appsDir whose folder is not in `keep`, and removes their folders. */
async function stopAppsExcept(appsDir: string, keep: ReadonlySet<string>, say: (line: string) => void): Promise<void> {
  const dirs = await readdir(appsDir, { withFileTypes: true }).catch(() => []);
  for (const d of dirs) {
    if (!d.isDirectory() || keep.has(d.name)) continue;
    const appDir = join(appsDir, d.name);
    const record = await readRecord(appDir);
    if (record !== undefined) {
      const stopped = await stopApp(record);
      if (stopped.length > 0) say(`demo: stopped ${record.app} (pid ${stopped.join(', ')}): no longer in the model`);
    }
    await rm(appDir, { recursive: true, force: true });
  }
}

/** Stops every app recorded under appsDir; safe when none runs. Returns one line per app stopped. */
export async function stopApps(appsDir: string): Promise<string[]> {
  const lines: string[] = [];
  const dirs = await readdir(appsDir, { withFileTypes: true }).catch(() => []);
  for (const d of dirs) {
    if (!d.isDirectory()) continue;
    const appDir = join(appsDir, d.name);
    const record = await readRecord(appDir);
    if (record === undefined) continue;
    const stopped = await stopApp(record);
    if (stopped.length > 0) lines.push(`stopped ${record.app} (pid ${stopped.join(', ')})`);
    await rm(join(appDir, RECORD_FILE), { force: true });
  }
  return lines;
}
