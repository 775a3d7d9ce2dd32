/**
 * Running `idforge serve` as managed background processes: start detached with a pid file and a
 * log in the data dir, wait until it answers, read the bootstrap admin credentials it wrote, stop
 * it by pid (checking that the pid still is our server, since pids are reused). In local-replicas
 * mode there are N such processes, each with its own data dir `<dataDir>/replica-<i>`, all on one
 * PostgreSQL database and one master key file, sharing the port (SO_REUSEPORT: the kernel spreads
 * connections over them).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_BASE_PATH, ADMIN_CREDENTIALS_FILE, adminBaseUrl } from '../contract/index.ts';
import { endpointFromCredentials, localhostFetch, readAdminCredentials as readCredentialsFile, type AdminEndpoint } from '../admin-client/index.ts';

/** The servers to run: the part of an AuthServer's inputs that says how its processes start. */
export interface LocalServers {
  readonly scheme: 'http';
  readonly baseDomain: string;
  readonly port: number;
  readonly local: {
    readonly dataDir: string;
    readonly command?: string[];
    readonly env?: Record<string, string>;
    readonly startTimeoutSeconds: number;
    readonly replicas?: { readonly count: number; readonly database: string; readonly masterKeyFile?: string };
  };
}

export const PID_FILE = 'idforge-serve.pid';
export const LOG_FILE = 'idforge-serve.log';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function defaultCommand(): string[] {
  return [process.execPath, join(REPO_ROOT, 'bin/idforge.js')];
}

/** Is `pid` a live process whose command line is an `idforge serve`? */
/**
 * Is `pid` the `idforge serve` of this data dir? A pid file can outlive its process (a reboot, a
 * lost state) and the number be reused, even by another stack's server: only a process whose
 * own command line says `serve --data-dir <dataDir>` is ever signalled. Where the command line
 * cannot be read, the answer is no: better a server left running than a stranger killed.
 */
export function isOurProcess(pid: number, dataDir: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // A zombie has exited; only its parent has not collected it yet.
    if (/\) Z /.test(stat)) return false;
    const at = cmdline.indexOf('--data-dir');
    return cmdline.includes('serve') && at >= 0 && cmdline[at + 1] === dataDir;
  } catch {
    return false;
  }
}

/** Does the server answer on its base host? Any HTTP answer from the admin API counts. */
export async function answers(baseUrl: string): Promise<boolean> {
  try {
    const res = await localhostFetch(`${baseUrl}${ADMIN_BASE_PATH}/openapi.json`, { signal: AbortSignal.timeout(2_000) });
    await res.arrayBuffer();
    return res.status > 0 && res.status < 500;
  } catch {
    return false;
  }
}

export async function isServing(pid: number, baseUrl: string, dataDir: string): Promise<boolean> {
  return isOurProcess(pid, dataDir) && (await answers(baseUrl));
}

/** File in the data dir where `idforge serve` writes its bootstrap admin client (mode 0600). */
export const CREDENTIALS_FILE = ADMIN_CREDENTIALS_FILE;

/**
 * The bootstrap admin client that `idforge serve` writes into its data dir on every start
 * (src/server/bootstrap.ts), read and checked by the admin client; its adminUrl is the server that wrote it.
 */
export async function readAdminCredentials(inputs: LocalServers): Promise<AdminEndpoint> {
  return endpointFromCredentials(await readCredentialsFile(processDataDirs(inputs)[0]!));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function logTail(dataDir: string): Promise<string> {
  const text = await readFile(join(dataDir, LOG_FILE), 'utf8').catch(() => '');
  return text.split('\n').slice(-20).join('\n');
}

/** The data dir of each process: the one data dir, or (local-replicas) one below it per replica. */
export function processDataDirs(inputs: Pick<LocalServers, 'local'>): string[] {
  const { dataDir, replicas } = inputs.local;
  return replicas === undefined ? [dataDir] : Array.from({ length: replicas.count }, (_, i) => join(dataDir, `replica-${i}`));
}

/** `idforge serve` arguments (after `serve`) of the process with data dir `dataDir`. */
function serveArgs(inputs: LocalServers, dataDir: string): string[] {
  const base = ['--data-dir', dataDir, '--port', String(inputs.port), '--base-domain', inputs.baseDomain];
  const r = inputs.local.replicas;
  if (r === undefined) return base;
  // One process per replica (the replicas are the unit here), the port shared with the others.
  return [...base, '--database', r.database, '--master-key-file', r.masterKeyFile ?? join(inputs.local.dataDir, 'master.key'), '--reuse-port', '--workers', '1'];
}

/** Starts every process (one, or one per replica) and waits until each answers; returns their pids and the admin connection. */
export async function startServers(inputs: LocalServers): Promise<{ pid: number; pids: number[]; connection: AdminEndpoint }> {
  const dirs = processDataDirs(inputs);
  const baseUrl = adminBaseUrl({ scheme: inputs.scheme, baseDomain: inputs.baseDomain, port: inputs.port }).slice(0, -ADMIN_BASE_PATH.length);
  // Servers left over from lost state would hold the port and the database: stop them first.
  for (const dir of [inputs.local.dataDir, ...dirs]) {
    const stale = Number((await readFile(join(dir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (stale) await stopServer(stale, dir);
  }
  if (await answers(baseUrl)) {
    throw new Error(`port ${inputs.port} is already served by another process: stop it or choose another port`);
  }
  const pids: number[] = [];
  try {
    // The first alone (it migrates the schema and makes the master key and system tenant), then the rest.
    pids.push(await startServer(inputs, dirs[0]!));
    pids.push(...(await Promise.all(dirs.slice(1).map((d) => startServer(inputs, d)))));
  } catch (err) {
    await stopServers(pids, dirs);
    throw err;
  }
  return { pid: pids[0]!, pids, connection: await readAdminCredentials(inputs) };
}

/** Are all of them (`pids[i]` the process of `dirs[i]`) alive and is the port answering? */
export async function allServing(pids: readonly number[], baseUrl: string, dirs: readonly string[]): Promise<boolean> {
  return pids.length === dirs.length && pids.every((p, i) => isOurProcess(p, dirs[i]!)) && (await answers(baseUrl));
}

export async function stopServers(pids: readonly number[], dirs: readonly string[]): Promise<void> {
  await Promise.all(dirs.map((d, i) => stopServer(pids[i] ?? 0, d)));
}

/** Starts one process with data dir `dataDir` and waits until it answers and has written its credentials; returns its pid. */
async function startServer(inputs: LocalServers, dataDir: string): Promise<number> {
  const baseUrl = adminBaseUrl({ scheme: inputs.scheme, baseDomain: inputs.baseDomain, port: inputs.port }).slice(0, -ADMIN_BASE_PATH.length);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const [cmd, ...cmdArgs] = inputs.local.command ?? defaultCommand();
  const logFile = join(dataDir, LOG_FILE);
  const log = openSync(logFile, 'a', 0o600);
  const logStart = statSync(logFile).size;
  const startedAt = Date.now();
  const child = spawn(
    cmd as string,
    [...cmdArgs, 'serve', ...serveArgs(inputs, dataDir)],
    { detached: true, stdio: ['ignore', log, log], env: { ...process.env, ...inputs.local.env }, cwd: REPO_ROOT },
  );
  closeSync(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${cmd}`);
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  child.unref();
  await writeFile(join(dataDir, PID_FILE), `${pid}\n`, { mode: 0o600 });
  const deadline = Date.now() + inputs.local.startTimeoutSeconds * 1000;
  // The server writes its credentials file right after it starts listening: wait for both.
  const credentialsWritten = (): boolean => {
    try {
      return statSync(join(dataDir, CREDENTIALS_FILE)).mtimeMs >= startedAt - 1_000;
    } catch {
      return false;
    }
  };
  // This process's own word that it listens (with local replicas the port may be another's).
  const listening = (): boolean => {
    try {
      return readFileSync(logFile).subarray(logStart).includes('idforge server listening on');
    } catch {
      return false;
    }
  };
  while (!(await answers(baseUrl)) || !credentialsWritten() || !listening()) {
    if (exited !== undefined) {
      throw new Error(`idforge serve exited (code ${exited}) before answering; last log lines:\n${await logTail(dataDir)}`);
    }
    if (Date.now() > deadline) {
      await stopServer(pid, dataDir);
      throw new Error(`idforge serve did not answer on ${baseUrl} within ${inputs.local.startTimeoutSeconds} s; last log lines:\n${await logTail(dataDir)}`);
    }
    await sleep(100);
  }
  return pid;
}

/** Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its pid file. */
export async function stopServer(pid: number, dataDir: string): Promise<void> {
  if (isOurProcess(pid, dataDir)) {
    const signal = (s: NodeJS.Signals): void => {
      try {
        // The server leads its own process group (detached): signal the group, children included.
        process.kill(-pid, s);
      } catch {
        try {
          process.kill(pid, s);
        } catch {
          // already gone
        }
      }
    };
    signal('SIGTERM');
    const deadline = Date.now() + 10_000;
    while (isOurProcess(pid, dataDir) && Date.now() < deadline) await sleep(50);
    if (isOurProcess(pid, dataDir)) signal('SIGKILL');
    while (isOurProcess(pid, dataDir)) await sleep(50);
  }
  if (existsSync(join(dataDir, PID_FILE))) await rm(join(dataDir, PID_FILE), { force: true });
}
