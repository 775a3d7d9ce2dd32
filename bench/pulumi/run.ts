/**
 * bench/pulumi: what `pulumi up` and `pulumi preview` cost for the fleet models of issue 23, each
 * figure beside its target with "met" or "MISSED" and the load average when it was taken; what the
 * engine costs per dynamic resource; and `pulumi up` next to `idforge apply` for the same models.
 * The engine runs as the dev stack does (src/provider/_dev-stack.ts): checkpoints off, the state
 * written once at the end of a run (README, "Scale"); `--checkpoints` turns per-step checkpoints
 * back on, to show what they cost. Prints figures; never a test.
 *
 *   node bin/run.js tsx bench/pulumi/run.ts [--only targets,engine,model,compile,scale,preview,kill] [--sizes 10,100,1000]
 *       [--users 2] [--checkpoints] [--compile-tenants 5] [--no-passwords] [--first-only]
 *       [--scale-tenants 5,10,20] [--budget-s 900] [--fleet-tenants 50] [--big-tenants 500]
 *       [--preview-tenants 500] [--kill-tenants 20] [--seed N]
 *
 * Rows:
 *   targets        (the default) issue 23's figures, each beside its target:
 *                    fleet F   `pulumi up` from empty of F tenants of the bench/compile model (50: ~1,000
 *                              applications, 10,000 users)                                 < 60 s
 *                    big B     the 100k-user model (500 tenants × 20 applications × 200 users):
 *                              `pulumi up` from empty                                       < 180 s
 *                              a no-op `pulumi preview` (it reads every tenant: drift shows) < 30 s
 *                              one application changed: `pulumi preview`, then `pulumi up`  < 20 s
 *                    kill K    `pulumi up` of K tenants SIGKILLed at 3 random points, then `pulumi
 *                              cancel` and `up`: converged (exit 0, no duplicate, nothing lost,
 *                              nothing left running, `preview --expect-no-changes` passes)
 *   engine N       N StableSecret resources (no remote calls): the engine's own per-resource cost
 *   model N        a generated model that makes about N Pulumi resources, deployed by `pulumi up`
 *                  (server start included), then a no-change `up`; next to `idforge apply` of the
 *                  same model against a fresh server (server start excluded)
 *   compile T      T tenants of the foundation's bench model (bench/compile: 20 apps, 200 users with
 *                  passwords, 10 groups per tenant); the 100k-user model is 500 such tenants
 *   scale T,...    `pulumi up` from empty of T tenants of that model (no passwords), stopped at
 *                  --budget-s; then a no-op `pulumi preview`; the time per resource, and a fit of up
 *                  time over resources (a + b·R + c·R²) extrapolated to 500 tenants
 *   preview T      a no-op `pulumi preview` of T tenants, beside the 30 s target
 *   kill T         as in targets
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort, waitForHttp } from '../../test/support/processes.ts';
import { PulumiProject, REPO, markedProcesses, waitFor } from '../../test/provider/_pulumi.ts';
import { RESOURCES_PER_TENANT, benchModel } from './_models.ts';
import { SetupFailed, setupStep } from '../_setup.ts';
import { readFile } from 'node:fs/promises';
import { parse, stringify } from 'yaml';

const args = process.argv.slice(2);
const opt = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
};
const sizes = opt('sizes', '10,100,1000').split(',').map(Number);
const usersPerTenant = Number(opt('users', '2'));
/**
 * --checkpoints: PULUMI_SKIP_CHECKPOINTS=false, the engine's default: it writes the whole state after
 * every step, which a file backend does by rewriting it (Pulumi 3.259's DIY backends have no journal:
 * backend/diy, one full save per mutation; the snapshot journal is Pulumi Cloud's), so an up from
 * empty is quadratic in the stack's size. Without the flag, the dev stack's setting: checkpoints off.
 */
const checkpoints = args.includes('--checkpoints');
const runEnv: Record<string, string> = checkpoints ? { PULUMI_SKIP_CHECKPOINTS: 'false' } : {};
const checkpointWords = checkpoints ? 'checkpoints on' : 'checkpoints off';
const only = opt('only', 'targets').split(',');
const compileTenants = Number(opt('compile-tenants', '5'));
/**
 * --no-passwords: the compile row's model without initial passwords, on both sides. Hashing 200
 * initial passwords per tenant with argon2 (~60 ms each, 100,000 for the full model) would dominate
 * both `pulumi up` and `idforge apply` and measure argon2, not Pulumi.
 */
const noPasswords = args.includes('--no-passwords');
/** --first-only: only the first `pulumi up` and the first `idforge apply` (no no-op runs, no destroy), for the largest sizes. */
const firstOnly = args.includes('--first-only');

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const r = await fn();
  return [performance.now() - t0, r];
}

function runCli(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO, 'bin/idforge.js'), ...argv], {
      cwd: REPO,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

/** The engine's error lines, not its progress output. */
function errorLines(out: string): string {
  return out.split('\n').filter((l) => /error/i.test(l)).slice(0, 3).map((l) => l.trim()).join(' | ');
}

async function engineRow(n: number): Promise<string> {
  const p = await setupStep('a Pulumi project for the engine row', () => PulumiProject.create(join(REPO, 'bench/pulumi/n-resources.ts'), { 'bench:count': String(n) }, runEnv));
  try {
    const [create] = await timed(() => p.up());
    const [noop] = await timed(() => p.up());
    const [destroy] = await timed(() => p.must(['destroy', '--yes', '--skip-preview']));
    return `engine ${String(n).padStart(5)}  resources ${String(n).padStart(5)}  up ${seconds(create).padStart(9)}  (${(create / n).toFixed(0)} ms/resource)  no-op up ${seconds(noop).padStart(9)}  destroy ${seconds(destroy).padStart(9)}`;
  } finally {
    await p.cleanup();
  }
}

/** Writes the model for a server on `port` into `file` (or directory); returns the env it needs. */
type ModelWriter = (path: string, port: number) => Promise<Record<string, string>>;

async function compareRow(label: string, write: ModelWriter): Promise<string> {
  const port = await freePort();
  const p = await setupStep('a Pulumi project of the real program', () => PulumiProject.create(join(REPO, 'src/provider/pulumi-main.js'), {}, runEnv));
  const model = join(p.root, 'model');
  const env = await setupStep(`the model and stack config of ${label.trim()}`, async () => {
    const env = await write(model, port);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:dataDir', join(p.root, 'server'));
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
    return env;
  }).catch(async (e: unknown) => {
    await p.cleanup();
    throw e;
  });
  let line = label;
  try {
    const [create] = await timed(() => p.up(env));
    line += `  pulumi up ${seconds(create).padStart(9)}`;
    if (!firstOnly) {
      const [noop] = await timed(() => p.up(env));
      line += `  no-op up ${seconds(noop).padStart(9)}`;
      const [destroy, d] = await timed(() => p.run(['destroy', '--yes', '--skip-preview'], env));
      line += d.code === 0 ? `  destroy ${seconds(destroy).padStart(9)}` : `  destroy FAILED: ${errorLines(d.stdout + d.stderr)}`;
    }
  } catch (e) {
    line += `  pulumi up FAILED: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}`;
  } finally {
    const pid = Number((await readFile(join(p.root, 'server', PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, join(p.root, 'server'))) process.kill(-pid, 'SIGKILL');
  }
  // idforge apply of the same model against a fresh server of its own.
  const applyDir = await mkdtemp(join(tmpdir(), 'idforge-apply-bench-'));
  const applyPort = await freePort();
  const applyEnv = await write(join(applyDir, 'model'), applyPort);
  const server = spawn(
    process.execPath,
    [join(REPO, 'bin/idforge.js'), 'serve', '--data-dir', join(applyDir, 'server'), '--port', String(applyPort), '--base-domain', 'localhost'],
    { cwd: REPO, stdio: 'ignore', detached: true },
  );
  try {
    await setupStep(`idforge serve on port ${applyPort} for idforge apply`, () => waitForHttp(`http://127.0.0.1:${applyPort}/admin/v1/openapi.json`, { timeoutMs: 60_000 }));
    const argv = ['apply', join(applyDir, 'model'), '--data-dir', join(applyDir, 'server')];
    const [apply, r] = await timed(() => runCli(argv, applyEnv));
    line += r.code === 0 ? `  idforge apply ${seconds(apply).padStart(9)}` : `  idforge apply FAILED: ${r.out.split('\n')[0]}`;
    if (!firstOnly && r.code === 0) line += `  no-op apply ${seconds((await timed(() => runCli(argv, applyEnv)))[0]).padStart(9)}`;
  } catch (e) {
    if (e instanceof SetupFailed) throw e;
    line += `  idforge apply n/a: ${(e as Error).message.split('\n')[0]}`;
  } finally {
    if (server.pid) process.kill(-server.pid, 'SIGTERM');
    await p.cleanup();
    await rm(applyDir, { recursive: true, force: true });
  }
  return line;
}

function modelRow(n: number): Promise<string> {
  const tenants = Math.max(1, Math.round((n - 3) / RESOURCES_PER_TENANT));
  const resources = tenants * RESOURCES_PER_TENANT + 3;
  return compareRow(
    `model  ${String(n).padStart(5)}  resources ${String(resources).padStart(5)}  (${tenants} tenants × 3 apps × ${usersPerTenant} users)`,
    async (dir, port) => {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'model.yaml'), benchModel(tenants, usersPerTenant, port));
      return {};
    },
  );
}

/** Per tenant of the bench/compile model: the Tenant (its 20 apps, 200 users, assignments) and its TenantSecrets. */
const COMPILE_RESOURCES_PER_TENANT = 2;

function compileRow(tenants: number): Promise<string> {
  return compareRow(
    `compile ${String(tenants).padStart(4)}  resources ${String(tenants * COMPILE_RESOURCES_PER_TENANT + 3).padStart(5)}  (${tenants} tenants × 20 apps × 200 users ${noPasswords ? 'without' : 'with'} passwords)`,
    async (dir, port) => {
      const { generateModel } = await import('../compile/generate.ts');
      await generateModel(dir, tenants);
      await writeFile(join(dir, '000-server.yaml'), `server:\n  baseDomain: localhost\n  port: ${port}\n`);
      const env: Record<string, string> = {};
      if (noPasswords) {
        for (let t = 0; t < tenants; t++) {
          const file = join(dir, `t${String(t).padStart(5, '0')}.yaml`);
          const doc = parse(await readFile(file, 'utf8')) as { tenants: { users: { password?: unknown }[] }[] };
          for (const u of doc.tenants[0]!.users) delete u.password;
          await writeFile(file, stringify(doc));
        }
        return env;
      }
      for (let t = 0; t < tenants; t++) {
        for (let u = 0; u < 200; u++) env[`PW_T${String(t).padStart(5, '0')}_${u}`] = `bench-password-${t}-${u}`;
      }
      return env;
    },
  );
}

/** The bench/compile model of `tenants` tenants for a server on `port`, without initial passwords. */
async function writeCompileModel(dir: string, tenants: number, port: number): Promise<void> {
  const { generateModel } = await import('../compile/generate.ts');
  await generateModel(dir, tenants);
  await writeFile(join(dir, '000-server.yaml'), `server:\n  baseDomain: localhost\n  port: ${port}\n`);
  for (let t = 0; t < tenants; t++) {
    const file = join(dir, `t${String(t).padStart(5, '0')}.yaml`);
    await writeFile(file, (await readFile(file, 'utf8')).replace(/ {8}password:\n {10}env: PW_T\d+_\d+\n/g, ''));
  }
}

/** A project deploying `tenants` tenants of the compile model with the real program. */
async function compileProject(tenants: number, env: Record<string, string> = runEnv): Promise<{ p: PulumiProject; dataDir: string; stopServer: () => Promise<void> }> {
  const port = await freePort();
  // The program as a user's stack runs it: Pulumi.yaml's main (compiled when the build is fresh; the header says which).
  const p = await setupStep('a Pulumi project of the real program', () => PulumiProject.create(join(REPO, 'src/provider/pulumi-main.js'), {}, env));
  const model = join(p.root, 'model');
  const dataDir = join(p.root, 'server');
  await setupStep(`the model and stack config of ${tenants} tenants`, async () => {
    await writeCompileModel(model, tenants, port);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
  }).catch(async (e: unknown) => {
    await p.cleanup();
    throw e;
  });
  const stopServer = async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
  };
  return { p, dataDir, stopServer };
}

/** Runs a pulumi command, stopping it (the whole process group) after `budgetMs`. */
function pulumiWithin(p: PulumiProject, argv: readonly string[], budgetMs: number, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; ms: number; out: string; stopped: boolean }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn('pulumi', [...argv, '--non-interactive'], { cwd: p.dir, env: p.environment(extraEnv), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    let stopped = false;
    const timer = setTimeout(() => {
      stopped = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, budgetMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ms: performance.now() - t0, out, stopped });
    });
  });
}

const SCALE_TARGET_TENANTS = 500;
const RESOURCES_PER_COMPILE_TENANT = COMPILE_RESOURCES_PER_TENANT;

/** Least squares of t = a + b·R + c·R² over the measured points. */
function fitQuadratic(points: readonly [number, number][]): [number, number, number] | undefined {
  if (points.length < 3) return undefined;
  // Normal equations for the basis 1, R, R².
  const s = (k: number) => points.reduce((acc, [r]) => acc + r ** k, 0);
  const t = (k: number) => points.reduce((acc, [r, y]) => acc + y * r ** k, 0);
  const m = [[s(0), s(1), s(2)], [s(1), s(2), s(3)], [s(2), s(3), s(4)]];
  const v = [t(0), t(1), t(2)];
  const det = (x: number[][]) => x[0]![0]! * (x[1]![1]! * x[2]![2]! - x[1]![2]! * x[2]![1]!) - x[0]![1]! * (x[1]![0]! * x[2]![2]! - x[1]![2]! * x[2]![0]!) + x[0]![2]! * (x[1]![0]! * x[2]![1]! - x[1]![1]! * x[2]![0]!);
  const d = det(m);
  if (Math.abs(d) < 1e-12) return undefined;
  const col = (i: number) => m.map((r, j) => r.map((x, k) => (k === i ? v[j]! : x)));
  return [det(col(0)) / d, det(col(1)) / d, det(col(2)) / d];
}

async function scaleRows(tenantCounts: readonly number[], budgetMs: number): Promise<void> {
  const points: [number, number][] = [];
  for (const tenants of tenantCounts) {
    const resources = tenants * RESOURCES_PER_COMPILE_TENANT + 3;
    const { p, stopServer } = await compileProject(tenants);
    try {
      const up = await pulumiWithin(p, ['up', '--yes', '--skip-preview'], budgetMs);
      if (up.stopped) {
        const done = (up.out.match(/ created \(/g) ?? []).length;
        console.log(`scale ${String(tenants).padStart(4)}  resources ${String(resources).padStart(5)}  pulumi up (${checkpointWords}) > ${seconds(budgetMs)}: stopped at the budget with ${done} of ${resources} resources created`);
        continue;
      }
      if (up.code !== 0) {
        console.log(`scale ${String(tenants).padStart(4)}  pulumi up FAILED: ${errorLines(up.out)}`);
        continue;
      }
      points.push([resources, up.ms / 1000]);
      const preview = await pulumiWithin(p, ['preview', '--expect-no-changes'], budgetMs);
      console.log(`scale ${String(tenants).padStart(4)}  resources ${String(resources).padStart(5)}  users ${String(tenants * 200).padStart(6)}  pulumi up (${checkpointWords}) ${seconds(up.ms).padStart(9)} (${(up.ms / resources).toFixed(0)} ms/resource)` +
        `  no-op preview ${preview.code === 0 ? seconds(preview.ms).padStart(9) : 'FAILED'} (${(preview.ms / resources).toFixed(1)} ms/resource)`);
    } finally {
      await stopServer();
      await p.cleanup();
    }
  }
  const fit = fitQuadratic(points);
  const r500 = SCALE_TARGET_TENANTS * RESOURCES_PER_COMPILE_TENANT + 3;
  if (fit !== undefined) {
    const [a, b, c] = fit;
    const at = a + b * r500 + c * r500 ** 2;
    console.log(`  fit: up ≈ ${a.toFixed(1)} s + ${(b * 1000).toFixed(1)} ms·R + ${(c * 1e6).toFixed(2)} µs·R²; at ${SCALE_TARGET_TENANTS} tenants (R = ${r500}): ≈ ${seconds(at * 1000)} (extrapolated)   target < 180 s   ${at < 180 ? 'met' : 'MISSED'}${load()}`);
  } else if (points.length > 0) {
    const [r, t] = points[points.length - 1]!;
    const quadratic = t * (r500 / r) ** 2;
    console.log(`  at ${SCALE_TARGET_TENANTS} tenants (R = ${r500}): ≥ ${seconds(t * (r500 / r) * 1000)} if linear, ≈ ${seconds(quadratic * 1000)} if quadratic (extrapolated from R = ${r})   target < 180 s`);
  }
}

async function killRow(tenants: number, seed: number): Promise<string> {
  const { census, progress, runAndKill, seeded } = await import('../../test/support/kill.ts');
  const { p, dataDir, stopServer } = await compileProject(tenants);
  const random = seeded(seed);
  const total = tenants * (20 + 200 + 300);
  const kills: string[] = [];
  const left: string[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const mark = `bench-kill-${process.pid}-${i}`;
      // A point in what is left to do (10 to 60 % of it) and a delay under 300 ms, so every run is
      // killed before it ends: each run resumes from what the last one left on the server. Points up to
      // 70 % with delays up to 1 s let a run end first once an up of 20 tenants took ~2 s (2026-11-27).
      const done = progress(dataDir);
      const atObjects = done + 1 + Math.floor((total - done - 1) * (0.1 + 0.5 * random()));
      const delayMs = Math.floor(random() * 300);
      const r = await runAndKill('pulumi', ['up', '--yes', '--skip-preview', '--non-interactive'], { cwd: p.dir, env: p.environment({ IDFORGE_CRASH_MARK: mark }), dataDir, atObjects, delayMs });
      kills.push(r.killed ? `at ${r.objectsAtKill}/${total} objects + ${delayMs} ms` : `not killed, ended first (${r.code})`);
      let running: string[] = [];
      await waitFor('the killed run to leave nothing running', async () => (running = await markedProcesses(mark)).length === 0, 30_000).catch(() => left.push(...running));
      await p.run(['cancel', '--yes']);
    }
    const [ms, final] = await timed(() => p.run(['up', '--yes', '--skip-preview']));
    const preview = await p.run(['preview', '--expect-no-changes']);
    const c = census(dataDir);
    const exact = c.tenants === tenants && c.applications === tenants * 20 && c.users === tenants * 200 && c.assignments === tenants * 300 && c.tenantsWithoutTwoKeys === 0;
    const state = JSON.parse((await p.run(['stack', 'export'])).stdout) as { deployment: { resources: { type: string; id?: string }[]; pending_operations?: unknown[] } };
    const ids = state.deployment.resources.filter((r) => r.type.startsWith('pulumi-nodejs:dynamic/idforge:')).map((r) => `${r.type} ${r.id}`);
    const pending = (state.deployment.pending_operations ?? []).length;
    const killed = kills.filter((k) => k.startsWith('at ')).length;
    const converged = killed === 3 && final.code === 0 && preview.code === 0 && exact && left.length === 0 && new Set(ids).size === ids.length && pending === 0;
    return `kill ${tenants} tenants, pulumi up SIGKILLed 3× (seed ${seed}, ${checkpointWords}): ${kills.join('; ')}\n` +
      `  then pulumi cancel; pulumi up: ${final.code === 0 ? `exit 0 in ${seconds(ms)}` : `FAILED: ${errorLines(final.stdout + final.stderr)}`}; preview --expect-no-changes: ${preview.code === 0 ? 'passed' : 'FAILED'}; ` +
      `server ${exact ? 'holds exactly the model (no duplicate, nothing lost)' : `does NOT hold the model: ${JSON.stringify(c)}`}; ` +
      `${left.length === 0 ? 'nothing left running' : `left running: ${left.join(', ')}`}; pending operations: ${pending}\n` +
      `${'kill: converged'.padEnd(58)} ${converged ? 'met' : 'MISSED'}${load()}${killed === 3 ? '' : `   (only ${killed} of the 3 runs were killed)`}`;
  } finally {
    await stopServer();
    await p.cleanup();
  }
}

/** `  (load 1.2 0.9 0.8)`: the load average when a figure was taken. */
const load = (): string => `   (load ${loadavg().map((l) => l.toFixed(1)).join(' ')})`;

/** A figure beside its target: `met` or `MISSED`, and the load average. */
function figure(label: string, ms: number | undefined, targetS: number, note = ''): string {
  const shown = ms === undefined ? 'FAILED'.padStart(9) : seconds(ms).padStart(9);
  const met = ms !== undefined && ms < targetS * 1000;
  return `${label.padEnd(58)} ${shown}   target < ${targetS} s   ${met ? 'met' : 'MISSED'}${load()}${note === '' ? '' : `   ${note}`}`;
}

async function previewRow(tenants: number): Promise<string> {
  const resources = tenants * RESOURCES_PER_COMPILE_TENANT + 3;
  const { p, stopServer } = await compileProject(tenants);
  try {
    const [setup] = await timed(() => setupStep(`pulumi up of ${tenants} tenants (set-up of the preview row)`, () => p.up()));
    const preview = await pulumiWithin(p, ['preview', '--expect-no-changes'], 3_600_000);
    return figure(`preview ${tenants} tenants (${resources} resources): no-op pulumi preview`, preview.code === 0 ? preview.ms : undefined, 30,
      `${preview.code === 0 ? '' : `${errorLines(preview.out)} `}(set-up up: ${seconds(setup)})`);
  } finally {
    await stopServer();
    await p.cleanup();
  }
}

/** Bytes of the stack's state in the file backend. */
async function stateBytes(p: PulumiProject): Promise<number> {
  const { readdir, stat } = await import('node:fs/promises');
  let n = 0;
  for (const e of await readdir(p.backend, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.json') && e.parentPath.includes('stacks')) n += (await stat(join(e.parentPath, e.name))).size;
  }
  return n;
}

/** Issue 23's figures: a 50-tenant fleet and the 100k-user model from empty, its no-op preview, one change; the kill test. */
async function targetRows(fleet: number, big: number, killTenants: number, seed: number): Promise<void> {
  {
    const { p, stopServer } = await compileProject(fleet);
    try {
      const up = await pulumiWithin(p, ['up', '--yes', '--skip-preview'], 1_800_000);
      console.log(figure(`fleet ${fleet} tenants (${fleet * 20} apps, ${fleet * 200} users): up from empty`, up.code === 0 ? up.ms : undefined, 60,
        up.code === 0 ? `${fleet * COMPILE_RESOURCES_PER_TENANT + 3} resources, state ${(await stateBytes(p) / 1e6).toFixed(1)} MB` : errorLines(up.out)));
    } finally {
      await stopServer();
      await p.cleanup();
    }
  }
  {
    const { p, stopServer } = await compileProject(big);
    try {
      const up = await pulumiWithin(p, ['up', '--yes', '--skip-preview'], 3_600_000);
      console.log(figure(`big ${big} tenants (${big * 200} users): up from empty`, up.code === 0 ? up.ms : undefined, 180,
        up.code === 0 ? `${big * COMPILE_RESOURCES_PER_TENANT + 3} resources, state ${(await stateBytes(p) / 1e6).toFixed(1)} MB` : errorLines(up.out)));
      if (up.code === 0) {
        const preview = await pulumiWithin(p, ['preview', '--expect-no-changes'], 3_600_000);
        console.log(figure(`big ${big} tenants: no-op preview (compares every tenant with the server)`, preview.code === 0 ? preview.ms : undefined, 30, preview.code === 0 ? '' : errorLines(preview.out)));
        // One application changed: a web app's origin (its redirect URI and its recorded model entry).
        const file = join(p.root, 'model', 't00000.yaml');
        await writeFile(file, (await readFile(file, 'utf8')).replace('origin: https://web0.t00000.example', 'origin: https://web0-moved.t00000.example'));
        const changedPreview = await pulumiWithin(p, ['preview'], 3_600_000);
        const changedUp = await pulumiWithin(p, ['up', '--yes', '--skip-preview'], 3_600_000);
        const ok = changedPreview.code === 0 && changedUp.code === 0;
        const after = await pulumiWithin(p, ['preview', '--expect-no-changes'], 3_600_000);
        console.log(figure(`big ${big} tenants: one application changed, previewed and applied`, ok ? changedPreview.ms + changedUp.ms : undefined, 20,
          ok ? `(preview ${seconds(changedPreview.ms)}, up ${seconds(changedUp.ms)}; the preview after: ${after.code === 0 ? 'empty' : 'NOT empty'})` : errorLines(changedPreview.out + changedUp.out)));
      }
    } finally {
      await stopServer();
      await p.cleanup();
    }
  }
  console.log(await killRow(killTenants, seed));
}

const { buildIsFresh } = await import('../../bin/_load.js');
const programWords = buildIsFresh() ? 'the compiled program (dist/)' : 'the program from its TypeScript sources (the build is stale: npm run build)';
console.log(`bench/pulumi on ${process.platform}/${process.arch}, ${availableParallelism()} cores, node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}, ${checkpointWords}, ${programWords}`);
const seed = Number(opt('seed', String(Date.now() % 100_000)));
if (only.includes('targets')) await targetRows(Number(opt('fleet-tenants', '50')), Number(opt('big-tenants', '500')), Number(opt('kill-tenants', '20')), seed);
if (only.includes('engine')) for (const n of sizes) console.log(await engineRow(n));
if (only.includes('model')) for (const n of sizes) console.log(await modelRow(n));
if (only.includes('compile')) console.log(await compileRow(compileTenants));
if (only.includes('scale')) await scaleRows(opt('scale-tenants', '5,10,20').split(',').map(Number), Number(opt('budget-s', '900')) * 1000);
if (only.includes('preview')) console.log(await previewRow(Number(opt('preview-tenants', '500'))));
if (only.includes('kill')) console.log(await killRow(Number(opt('kill-tenants', '20')), seed));
