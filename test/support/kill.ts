/**
 * Crash tests: a model of many tenants, a process killed with SIGKILL at random points of its
 * work (chosen by how far it got, read from the live server), and a census of what the server
 * holds, to compare with the model: no duplicate, nothing lost.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { stringify } from 'yaml';

/** Tenants × (api, web, spa, proxy) × users; every user on web and spa, every other one on proxy. */
export function killModel(port: number, tenants: number, users: number): string {
  return stringify({
    server: { baseDomain: 'localhost', port },
    tenants: Array.from({ length: tenants }, (_, t) => {
      const name = `k${String(t).padStart(3, '0')}`;
      const ids = Array.from({ length: users }, (_, u) => `u${u}`);
      return {
        name,
        displayName: `Kill ${t}`,
        scopes: [{ name: 'admin' }],
        users: ids.map((id) => ({ id, email: `${id}@${name}.example`, displayName: id })),
        applications: [
          { name: 'api', kind: 'api', audience: `https://api.${name}.example`, routes: [{ path: '/admin', scopes: ['admin'] }] },
          { name: 'web', kind: 'web', origin: `https://web.${name}.example`, provider: name },
          { name: 'spa', kind: 'spa', origin: `https://spa.${name}.example`, audience: ['api'] },
          { name: 'proxy', kind: 'proxy', origin: `https://proxy.${name}.example`, upstream: 'http://127.0.0.1:8080' },
        ],
        assignments: [
          { application: 'web', users: ids },
          { application: 'spa', users: ids },
          { application: 'proxy', users: ids.filter((_, i) => i % 2 === 0) },
        ],
      };
    }),
  });
}

/** What killModel(tenants, users) puts on a server. */
export function killModelCensus(tenants: number, users: number) {
  return { tenants, applications: tenants * 4, users: tenants * users, assignments: tenants * (2 * users + Math.ceil(users / 2)), tenantsWithoutTwoKeys: 0 };
}

/** The server's tables, counted (SQLite, read-only, beside the running server). */
export function census(dataDir: string) {
  const db = new Database(join(dataDir, 'idforge.db'), { readonly: true, fileMustExist: true });
  try {
    const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      tenants: n("SELECT count(*) AS n FROM tenants WHERE name <> 'system'"),
      applications: n("SELECT count(*) AS n FROM applications WHERE tenant <> 'system'"),
      users: n("SELECT count(*) AS n FROM users WHERE tenant <> 'system'"),
      assignments: n("SELECT count(*) AS n FROM assignments WHERE tenant <> 'system'"),
      tenantsWithoutTwoKeys: n("SELECT count(*) AS n FROM tenants t WHERE name <> 'system' AND (SELECT count(*) FROM keys k WHERE k.tenant = t.name) <> 2"),
    };
  } finally {
    db.close();
  }
}

/** A small deterministic generator, so a failing run can be repeated with its seed. */
export function seeded(seed: number): () => number {
  let s = seed % 2 ** 31;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

export interface KillRun {
  /** True when the process was killed; false when it ended on its own first. */
  readonly killed: boolean;
  readonly code: number | null;
  readonly output: string;
  /** Objects (applications, users, assignments) the server held when the kill was sent. */
  readonly objectsAtKill: number;
}

/** Applications, users and assignments the server in `dataDir` holds: how far a run got. */
export function progress(dataDir: string): number {
  try {
    const c = census(dataDir);
    return c.applications + c.users + c.assignments;
  } catch {
    return 0; // no database yet
  }
}

/**
 * Runs `command` in a process group of its own and SIGKILLs the whole group (the command and every
 * process it started: plugins, language host) once the server in `dataDir` holds `atObjects`
 * objects, plus `delayMs`: a point chosen by progress, so it lands inside the work.
 */
export function runAndKill(command: string, args: readonly string[], opts: {
  readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly dataDir: string; readonly atObjects: number; readonly delayMs: number;
}): Promise<KillRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    let done = false;
    let killed = false;
    let objectsAtKill = -1;
    const poll = async (): Promise<void> => {
      while (!done) {
        await new Promise((r) => setTimeout(r, 25));
        const n = progress(opts.dataDir);
        if (n < opts.atObjects) continue;
        await new Promise((r) => setTimeout(r, opts.delayMs));
        if (done) return;
        try {
          process.kill(-child.pid!, 'SIGKILL');
          killed = true;
          objectsAtKill = n;
        } catch {
          // it ended meanwhile
        }
        return;
      }
    };
    child.on('error', reject);
    child.on('close', (code) => {
      done = true;
      resolve({ killed, code, output, objectsAtKill });
    });
    void poll();
  });
}
