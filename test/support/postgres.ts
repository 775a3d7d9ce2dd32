/**
 * A real PostgreSQL for tests: a throwaway cluster (initdb) in a temp dir, listening on a free
 * loopback port and a unix socket in that dir, stopped and removed by `stop()` (or, if a test
 * process ends without it, on exit). PostgreSQL refuses to run as root, so as root the cluster
 * belongs to the `postgres` user and its programs run through `runuser`; otherwise they run as
 * the current user.
 *
 * Binaries: $IDFORGE_PG_BIN, else the newest /usr/lib/postgresql/<n>/bin (Debian's postgresql).
 * Durability is off (fsync, full-page writes): a test cluster never survives a crash anyway.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './processes.ts';

const run = promisify(execFile);

export interface TestPostgres {
  readonly port: number;
  /** URL of a database in this cluster (superuser `postgres`, no password). */
  url(database: string): string;
  /**
   * A new empty database, with an ICU en-US default collation on purpose: code that relies on
   * the database's collation for bytewise order (rather than saying COLLATE "C") shows up.
   */
  createDatabase(prefix?: string): Promise<{ name: string; url: string }>;
  /** Drops a database, ending its remaining connections. */
  dropDatabase(name: string): Promise<void>;
  /** Runs SQL in one database as the superuser. */
  sql(database: string, text: string, params?: unknown[]): Promise<pg.QueryResult>;
  /**
   * Restarts the cluster (pg_ctl restart, fast mode: connections are ended, "the database system
   * is shutting down" meanwhile); resolves when it accepts connections again.
   */
  restart(): Promise<void>;
  /**
   * Freezes every process of the cluster (SIGSTOP): connections stay open and nothing answers, as
   * behind a network partition that does not close them. `resume()` thaws them (SIGCONT).
   */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** The postmaster's pid (postmaster.pid's first line) and every process below it. */
function clusterPids(data: string): number[] {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const out = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(join('/proc', entry, 'stat'), 'utf8');
      // pid (comm) state ppid ...: the comm may hold spaces, so read after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export function postgresBin(): string {
  const fromEnv = process.env.IDFORGE_PG_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  throw new Error('PostgreSQL binaries not found: install Debian\'s postgresql (initdb, pg_ctl) or set IDFORGE_PG_BIN');
}

let counter = 0;

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'idforge-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  /** Runs a PostgreSQL program as the cluster's owner. */
  const as = (program: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]) : run(join(bin, program), args);
  const data = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');

  await as('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  let port = 0;
  for (let tries = 0; ; tries++) {
    port = await freePort();
    try {
      await as('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=300`, 'start']);
      break;
    } catch (err) {
      // Another process may have taken the port between freePort and the bind: try another.
      if (tries >= 2) throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`);
    }
  }

  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    try {
      execFileSync(asRoot ? 'runuser' : join(bin, 'pg_ctl'), [...(asRoot ? ['-u', 'postgres', '--', join(bin, 'pg_ctl')] : []), '-D', data, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore' });
    } catch {
      // already down
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stopNow);

  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const sql = async (database: string, text: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url(database) });
    await client.connect();
    try {
      return await client.query(text, params);
    } finally {
      await client.end();
    }
  };
  return {
    port,
    url,
    sql,
    async createDatabase(prefix = 't') {
      const name = `${prefix}_${process.pid}_${++counter}`;
      await sql('postgres', `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
      return { name, url: url(name) };
    },
    async dropDatabase(name) {
      await sql('postgres', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
    async restart() {
      const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=300`;
      await as('pg_ctl', ['-D', data, '-l', logFile, '-m', 'fast', '-w', '-t', '60', 'restart', '-o', options]);
      // The cluster answers again before this returns: a postmaster that went down after pg_ctl
      // said it was up (a loaded CI machine saw one) is started once more, or the log says why not.
      for (let tries = 0; ; tries++) {
        try {
          await sql('postgres', 'SELECT 1');
          return;
        } catch (err) {
          if (tries === 20) {
            try {
              await as('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', options, 'start']);
            } catch {
              throw new Error(`PostgreSQL did not come back after a restart: ${(err as Error).message}\n${existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-4000) : ''}`);
            }
          }
          if (tries > 40) throw err;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    },
    pause() {
      for (const pid of clusterPids(data)) process.kill(pid, 'SIGSTOP');
    },
    resume() {
      // The postmaster last: its children are running again when it hands them work.
      for (const pid of clusterPids(data).reverse()) process.kill(pid, 'SIGCONT');
    },
    async stop() {
      process.off('exit', stopNow);
      stopNow();
    },
  };
}
