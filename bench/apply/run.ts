/**
 * bench/apply: `idforge apply` and `idforge plan` of the 100k-user model (bench/compile: 500 tenants
 * × 20 applications × 200 users, 150,000 assignments) against a fresh server of their own (SQLite),
 * each figure beside its target (issue 13), and SIGKILLs at random points of a big apply after
 * which the next apply must converge. Prints figures; never fails a build.
 *
 *   node bin/run.js tsx bench/apply/run.ts [--tenants 500] [--only empty,noop,change,passwords,kill,events] [--kills 3] [--rounds 2] [--seed N]
 *
 * Rows:
 *   empty      apply from empty, no initial passwords                      target < 60 s
 *   noop       plan of the applied model: no changes                       target < 5 s
 *              (then, for comparison, plan --refresh: every tenant judged by the server again)
 *   change     one user's displayName changed, apply                       target < 3 s
 *   passwords  apply from empty, 10% of users with an initial password     target < 120 s
 *   kill       apply from empty SIGKILLed at random points (by tenants applied), N times, then run to the end: exit 0,
 *              then a no-op plan, and the server's tables hold exactly the model (no duplicate,
 *              nothing lost)
 *   events     the event log's cost (issue 24): apply from empty with this checkout; with this checkout
 *              less the event log (a temporary copy whose tenant batch makes and writes no event: the
 *              one line in src/server/directory/batch.ts that hands an entry's event to the write
 *              returns instead); and with the commit before the event log (1b0effc); each in a
 *              temporary git worktree of its commit (HEAD for this checkout: uncommitted changes are
 *              not measured), in turn, twice each, the fastest of each compared.
 *                the log's own cost: this checkout against itself less the log  target < 15% more time
 *                an upper bound: against 1b0effc, which also predates named managers, recorded model
 *                entries and their source lines (every later change to the write path is counted)
 *
 * Times are wall clock of the CLI process (model load, compile, requests, the server's work); the
 * server runs as its own process (`idforge serve`), started before the clock starts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { endedChildrenCpuSeconds, treeCpuSeconds } from '../_proc.ts';
import { generateModel } from '../compile/generate.ts';
import { PASSWORD_HASH_PARAMS } from '../../src/server/_crypto.ts';
import { freePort, waitForHttp } from '../../test/support/processes.ts';
import { setupCheck, setupStep } from '../_setup.ts';

const REPO = join(import.meta.dirname, '../..');
const args = process.argv.slice(2);
const opt = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
};
const tenants = Number(opt('tenants', '500'));
const only = opt('only', 'empty,noop,change,passwords,kill,events').split(',');
const kills = Number(opt('kills', '3'));
/** The events row: how many times each side applies (the fastest counts). */
const rounds = Number(opt('rounds', '2'));
let seed = Number(opt('seed', String(Date.now() % 100_000)));
/** Deterministic for a seed, so a surprising kill run can be repeated. */
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const row = (label: string, ms: number | undefined, target: number, note = '') =>
  console.log(`${label.padEnd(46)} ${ms === undefined ? 'n/a'.padStart(9) : seconds(ms).padStart(9)}   target < ${String(target).padStart(3)} s   ${ms === undefined ? '' : ms < target * 1000 ? 'met' : 'MISSED'}${note === '' ? '' : `   ${note}`}`);

const cpu = (cli: number, server: number) => `CPU: CLI ${cli.toFixed(1)} s, server ${server.toFixed(1)} s`;

type Passwords = 'none' | 'tenth';

/** The bench/compile model for a server on `port`: no initial passwords, or one user in ten (u0, u10, ...) with one. */
async function writeModel(dir: string, port: number, passwords: Passwords): Promise<Record<string, string>> {
  await generateModel(dir, tenants);
  await writeFile(join(dir, '000-server.yaml'), `server:\n  baseDomain: localhost\n  port: ${port}\n`);
  const env: Record<string, string> = {};
  for (const f of (await readdir(dir)).filter((f) => /^t\d+\.yaml$/.test(f))) {
    const file = join(dir, f);
    const text = (await readFile(file, 'utf8')).replace(/ {8}password:\n {10}env: (PW_T\d+_(\d+))\n/g, (line, name: string, n: string) => {
      if (passwords === 'none' || Number(n) % 10 !== 0) return '';
      env[name] = `bench-${name.toLowerCase()}`;
      return line;
    });
    await writeFile(file, text);
  }
  return env;
}

interface Server {
  readonly dataDir: string;
  readonly port: number;
  readonly process: ChildProcess;
}

async function startServer(root: string, port: number, repo = REPO): Promise<Server> {
  const dataDir = join(root, 'server');
  const child = spawn(process.execPath, [join(repo, 'bin/idforge.js'), 'serve', '--data-dir', dataDir, '--port', String(port), '--base-domain', 'localhost'], {
    cwd: repo, stdio: 'ignore', detached: true,
  });
  await setupStep(`idforge serve on port ${port}`, () => waitForHttp(`http://127.0.0.1:${port}/admin/v1/openapi.json`, { timeoutMs: 60_000 }));
  return { dataDir, port, process: child };
}

function stop(server: Server): void {
  try {
    process.kill(-server.process.pid!, 'SIGTERM');
  } catch {
    /* gone */
  }
}

interface CliRun {
  readonly code: number | string;
  readonly ms: number;
  readonly out: string;
  /** CPU seconds of the CLI process. */
  readonly cpu: number;
}

/** Runs the CLI; `killWhen`, asked every 50 ms, SIGKILLs it (and only it) once it answers true. */
function idforge(argv: readonly string[], env: Record<string, string>, killWhen?: () => boolean, repo = REPO): Promise<CliRun> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const c0 = endedChildrenCpuSeconds();
    const child = spawn(process.execPath, [join(repo, 'bin/idforge.js'), ...argv], { cwd: repo, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = killWhen === undefined ? undefined : setInterval(() => {
      if (killWhen()) {
        clearInterval(timer);
        child.kill('SIGKILL');
      }
    }, 50);
    child.on('close', (code, signal) => {
      clearInterval(timer);
      resolve({ code: code ?? signal ?? 'unknown', ms: performance.now() - t0, out, cpu: endedChildrenCpuSeconds() - c0 });
    });
  });
}

/** Tenants applied so far (read while an apply runs: the server's SQLite in WAL mode). */
function tenantCount(dataDir: string): number {
  const db = new Database(join(dataDir, 'idforge.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM tenants WHERE name <> 'system'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** The server's tables, counted, and the keys that would show a duplicate or a loss. */
function census(dataDir: string) {
  const db = new Database(join(dataDir, 'idforge.db'), { readonly: true, fileMustExist: true });
  try {
    const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      tenants: n("SELECT count(*) AS n FROM tenants WHERE name <> 'system'"),
      tenantsWithoutTwoKeys: n("SELECT count(*) AS n FROM tenants t WHERE name <> 'system' AND (SELECT count(*) FROM keys k WHERE k.tenant = t.name) <> 2"),
      applications: n("SELECT count(*) AS n FROM applications WHERE tenant <> 'system'"),
      users: n("SELECT count(*) AS n FROM users WHERE tenant <> 'system'"),
      usersWithPassword: n("SELECT count(*) AS n FROM users WHERE tenant <> 'system' AND password_hash IS NOT NULL"),
      assignments: n('SELECT count(*) AS n FROM assignments'),
      distinctEmails: n("SELECT count(*) AS n FROM (SELECT DISTINCT tenant, email FROM users WHERE tenant <> 'system')"),
    };
  } finally {
    db.close();
  }
}

const expected = { tenants, tenantsWithoutTwoKeys: 0, applications: tenants * 20, users: tenants * 200, assignments: tenants * 300, distinctEmails: tenants * 200 };

async function scenario<T>(fn: (root: string, port: number) => Promise<T>): Promise<T> {
  const root = await mkdtemp(join(tmpdir(), 'idforge-apply-bench-'));
  try {
    return await fn(root, await freePort());
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

console.log(`bench/apply on ${process.platform}/${process.arch}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`model: ${tenants} tenants × 20 applications × 200 users = ${tenants * 200} users, ${tenants * 300} assignments`);

if (only.some((o) => ['empty', 'noop', 'change'].includes(o))) {
  await scenario(async (root, port) => {
    const model = join(root, 'model');
    const env = await writeModel(model, port, 'none');
    const server = await startServer(root, port);
    const argv = (cmd: string) => [cmd, model, '--data-dir', server.dataDir, '--state', join(root, 'state.json')];
    const measured = async (cmd: string) => {
      const s0 = treeCpuSeconds(server.process.pid!);
      const r = await idforge(argv(cmd), env);
      return { ...r, note: cpu(r.cpu, treeCpuSeconds(server.process.pid!) - s0) };
    };
    try {
      const first = await measured('apply');
      row('apply from empty, no initial passwords', first.code === 0 ? first.ms : undefined, 60, first.code === 0 ? `${/^Applied: .*$/m.exec(first.out)?.[0] ?? ''} ${first.note}` : `FAILED: ${first.out.slice(0, 300)}`);
      // The plan and the change below start from this apply: without it they would time a failure.
      setupCheck(first.code === 0 || !(only.includes('noop') || only.includes('change')), 'apply from empty (the plan and change rows start from it)', `exit ${first.code}`);
      if (only.includes('noop') || only.includes('change')) {
        const noop = await measured('plan');
        const said = (out: string) => /^No changes: .*$/m.exec(out)?.[0] ?? out.trim().split('\n').pop() ?? '';
        const reused = /^(\d+) tenants? as the last apply left/m.exec(noop.out)?.[1] ?? '0';
        row('plan of the applied model (no changes)', noop.code === 0 && /No changes/.test(noop.out) ? noop.ms : undefined, 5, `${said(noop.out)} ${reused} tenants not judged again. ${noop.note}`);
        // For comparison: every tenant judged by the server (what the first plan after another state file pays).
        const all = await idforge([...argv('plan'), '--refresh'], env);
        console.log(`  for comparison, plan --refresh (every tenant judged): ${seconds(all.ms)}${all.code === 0 && /No changes/.test(all.out) ? '' : ' FAILED'}, CPU: CLI ${all.cpu.toFixed(1)} s`);
      }
      if (only.includes('change')) {
        const at = Math.min(250, tenants - 1);
        const target = join(model, `t${String(at).padStart(5, '0')}.yaml`);
        await writeFile(target, (await readFile(target, 'utf8')).replace('displayName: User 7\n', 'displayName: User Seven\n'));
        const change = await measured('apply');
        row('one user changed, apply', change.code === 0 && /1 changed/.test(change.out) ? change.ms : undefined, 3, `${/^Applied: .*$/m.exec(change.out)?.[0] ?? change.out.slice(0, 200)} ${change.note}`);
      }
      const c = census(server.dataDir);
      console.log(`  server holds ${JSON.stringify(c)}`);
    } finally {
      stop(server);
    }
  });
}

if (only.includes('passwords')) {
  await scenario(async (root, port) => {
    const model = join(root, 'model');
    const env = await writeModel(model, port, 'tenth');
    const server = await startServer(root, port);
    try {
      const s0 = treeCpuSeconds(server.process.pid!);
      const r = await idforge(['apply', model, '--data-dir', server.dataDir, '--state', join(root, 'state.json')], env);
      row(`apply from empty, ${Object.keys(env).length} initial passwords (10%)`, r.code === 0 ? r.ms : undefined, 120,
        r.code === 0 ? `argon2id m=${PASSWORD_HASH_PARAMS.memoryCost} t=${PASSWORD_HASH_PARAMS.timeCost} on ${availableParallelism()} cores; ${cpu(r.cpu, treeCpuSeconds(server.process.pid!) - s0)}` : `FAILED: ${r.out.slice(0, 300)}`);
      console.log(`  server holds ${JSON.stringify(census(server.dataDir))}`);
    } finally {
      stop(server);
    }
  });
}

if (only.includes('kill')) {
  await scenario(async (root, port) => {
    const model = join(root, 'model');
    const env = await writeModel(model, port, 'none');
    const server = await startServer(root, port);
    const argv = (cmd: string) => [cmd, model, '--data-dir', server.dataDir, '--state', join(root, 'state.json')];
    try {
      // Each run resumes where the last was killed, so kill points go by progress, not time: a
      // random point in the first 90% of the tenants still to apply (a time-based point could fall
      // after a shortened run had already ended).
      const points: string[] = [];
      for (let i = 0; i < kills; i++) {
        const before = census(server.dataDir).tenants;
        const target = before + Math.max(1, Math.floor(random() * 0.9 * (tenants - before)));
        const r = await idforge(argv('apply'), env, () => tenantCount(server.dataDir) >= target);
        const c = census(server.dataDir);
        points.push(`${target}/${tenants} tenants (${r.code === 'SIGKILL' ? 'killed' : `exited ${r.code}`} after ${seconds(r.ms)}; then ${c.tenants} tenants, ${c.users} users, ${c.assignments} assignments)`);
      }
      const final = await idforge(argv('apply'), env);
      const noop = await idforge(argv('plan'), env);
      const c = census(server.dataDir);
      const exact = Object.entries(expected).every(([k, v]) => (c as Record<string, number>)[k] === v);
      console.log(`apply SIGKILLed ${kills}× once it had applied ${points.join(', ')}`);
      console.log(`  then apply ${final.code === 0 ? 'exit 0' : `FAILED (${final.code}): ${final.out.slice(0, 300)}`} in ${seconds(final.ms)}: ${/^Applied: .*$/m.exec(final.out)?.[0] ?? final.out.trim().split('\n').pop()}`);
      console.log(`  then plan: ${noop.out.trim().split('\n').pop()}`);
      console.log(`  server holds ${JSON.stringify(c)}: ${exact ? 'exactly the model (no duplicate, nothing lost)' : `NOT the model, expected ${JSON.stringify(expected)}`}`);
    } finally {
      stop(server);
    }
  });
}

/**
 * The last landed commit before the event log (8b4ccea wrote it into every change's transaction;
 * the commits between were not each buildable on their own). It also predates the directory core,
 * so the row is an upper bound of the log's cost.
 */
const BEFORE_EVENTS = '1b0effc';

/**
 * The ablation: the tenant batch's `tell`, which makes an entry's event and hands it to the write,
 * returns at once (by a condition that is always true, since tsc refuses unreachable code). Nothing else changes, so the difference is the log's making and writing.
 */
const NO_EVENTS = { file: 'src/server/directory/batch.ts', from: '    if (prepared.dry) return;\n    const e = make();', to: '    if (prepared.dry || events.length >= 0) return;\n    const e = make();' };

if (only.includes('events')) {
  const trees: string[] = [];
  /** A built worktree at `commit`, with this checkout's packages (a superset of what older commits used). */
  const worktree = async (label: string, commit: string, change?: (tree: string) => Promise<void>) => {
    const tree = await mkdtemp(join(tmpdir(), `idforge-events-${label}-`));
    trees.push(tree);
    await setupStep(`a worktree of ${label}, built`, async () => {
      execFileSync('git', ['worktree', 'add', '--detach', '--force', tree, commit], { cwd: REPO, stdio: 'ignore' });
      await symlink(join(REPO, 'node_modules'), join(tree, 'node_modules'), 'dir');
      await change?.(tree);
      execFileSync(process.execPath, ['scripts/build.js'], { cwd: tree, stdio: 'ignore' });
    });
    return tree;
  };
  try {
    // This checkout's commit (HEAD: uncommitted changes are not measured), once with the log and once without.
    const now = await worktree('this checkout', 'HEAD');
    const without = await worktree('this checkout less the event log', 'HEAD', async (tree) => {
      const file = join(tree, NO_EVENTS.file);
      const text = await readFile(file, 'utf8');
      setupCheck(text.split(NO_EVENTS.from).length === 2, `the ablation's line in ${NO_EVENTS.file}`, `"${NO_EVENTS.from}" is not there once: update NO_EVENTS`);
      await writeFile(file, text.replace(NO_EVENTS.from, NO_EVENTS.to));
    });
    const before = await worktree(BEFORE_EVENTS, BEFORE_EVENTS);
    const applyWith = (repo: string, label: string) => scenario(async (root, port) => {
      const model = join(root, 'model');
      const env = await writeModel(model, port, 'none');
      const server = await startServer(root, port, repo);
      try {
        const r = await idforge(['apply', model, '--data-dir', server.dataDir, '--state', join(root, 'state.json')], env, undefined, repo);
        setupCheck(r.code === 0, `apply from empty with ${label}`, r.out.slice(0, 300));
        const events = (() => {
          const db = new Database(join(server.dataDir, 'idforge.db'), { readonly: true, fileMustExist: true });
          try {
            return (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'events'").get() as { n: number }).n === 0
              ? 0 : (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
          } finally {
            db.close();
          }
        })();
        return { ms: r.ms, events };
      } finally {
        stop(server);
      }
    });
    const runs = { now: [] as number[], without: [] as number[], before: [] as number[] };
    let written = { now: 0, without: 0 };
    for (let round = 0; round < rounds; round++) {
      const b = await applyWith(before, BEFORE_EVENTS);
      runs.before.push(b.ms);
      const w = await applyWith(without, 'this checkout less the event log');
      runs.without.push(w.ms);
      const n = await applyWith(now, 'this checkout');
      runs.now.push(n.ms);
      written = { now: n.events, without: w.events };
    }
    // The ablation must be one: the copy without the log wrote no event of the batch, this checkout did.
    setupCheck(written.without === 0 && written.now > 0, 'the ablation (events written: none without the log, some with it)', JSON.stringify(written));
    const fastest = (xs: number[]) => Math.min(...xs);
    const pct = (a: number, b: number) => {
      const more = (a / b - 1) * 100;
      return { more, shown: `${more >= 0 ? '+' : ''}${more.toFixed(1)} %` };
    };
    const own = pct(fastest(runs.now), fastest(runs.without));
    const upper = pct(fastest(runs.now), fastest(runs.before));
    console.log(`${'event log: its own cost (against itself less it)'.padEnd(46)} ${own.shown.padStart(9)}   target < ${'15'.padStart(3)} %   ${own.more < 15 ? 'met' : 'MISSED'}   ` +
      `fastest of ${rounds}: ${seconds(fastest(runs.now))} with ${written.now} events, ${seconds(fastest(runs.without))} without (runs: with ${runs.now.map(seconds).join(', ')}; without ${runs.without.map(seconds).join(', ')})`);
    console.log(`${'  upper bound: against 1b0effc, before it'.padEnd(46)} ${upper.shown.padStart(9)}   target < ${'15'.padStart(3)} %   ${upper.more < 15 ? 'met' : 'MISSED'}   ` +
      `fastest of ${rounds}: ${seconds(fastest(runs.before))} at ${BEFORE_EVENTS} (runs: ${runs.before.map(seconds).join(', ')}); counts named managers, recorded model entries and their source lines too`);
    console.log(`  load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    for (const tree of trees) {
      try {
        execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: REPO, stdio: 'ignore' });
      } catch {
        await rm(tree, { recursive: true, force: true });
      }
    }
  }
}
