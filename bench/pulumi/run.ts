/**
 * bench/pulumi: what `pulumi up` costs next to `idforge apply` for the same models, and what the
 * engine costs per dynamic resource. Prints figures; never a test.
 *
 *   npx tsx bench/pulumi/run.ts [--sizes 10,100,1000] [--users 2] [--only engine,model,compile] [--skip-checkpoints]
 *                               [--compile-tenants 5] [--no-passwords] [--first-only]
 *
 * Rows:
 *   engine N       N StableSecret resources (no remote calls): the engine's own per-resource cost
 *   model N        a generated model that makes about N Pulumi resources, deployed by `pulumi up`
 *                  (server start included), then a no-change `up`; next to `idforge apply` of the
 *                  same model against a fresh server (server start excluded)
 *   compile T      T tenants of the foundation's bench model (bench/compile: 20 apps, 200 users with
 *                  passwords, 10 groups per tenant); the 100k-user model is 500 such tenants
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort, waitForHttp } from '../../test/support/processes.ts';
import { PulumiProject, REPO } from '../../test/provider/_pulumi.ts';
import { RESOURCES_PER_TENANT, benchModel } from './_models.ts';
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
 * PULUMI_SKIP_CHECKPOINTS=true: the engine writes the state once at the end instead of after every
 * step. The per-step rewrite of the whole state makes a large stack's up quadratic (each of N steps
 * rewrites a state of up to N resources), so the 100k-user row is run with it. Safe for idforge's
 * resources: every create is an idempotent PUT, and if an up dies before the state is written the
 * objects it made are taken back with one `up` under `idforge:adopt` (see _common.ts).
 */
const skipCheckpoints = args.includes('--skip-checkpoints');
const runEnv: Record<string, string> = skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: 'true' } : {};
const only = opt('only', 'engine,model').split(',');
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
  const p = await PulumiProject.create(join(REPO, 'bench/pulumi/n-resources.ts'), { 'bench:count': String(n) }, runEnv);
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
  const p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, runEnv);
  const model = join(p.root, 'model');
  const env = await write(model, port);
  await p.configSet('idforge:model', model);
  await p.configSet('idforge:dataDir', join(p.root, 'server'));
  await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
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
    await waitForHttp(`http://127.0.0.1:${applyPort}/admin/v1/openapi.json`, { timeoutMs: 60_000 });
    const argv = ['apply', join(applyDir, 'model'), '--data-dir', join(applyDir, 'server')];
    const [apply, r] = await timed(() => runCli(argv, applyEnv));
    line += r.code === 0 ? `  idforge apply ${seconds(apply).padStart(9)}` : `  idforge apply FAILED: ${r.out.split('\n')[0]}`;
    if (!firstOnly && r.code === 0) line += `  no-op apply ${seconds((await timed(() => runCli(argv, applyEnv)))[0]).padStart(9)}`;
  } catch (e) {
    line += `  idforge apply n/a: ${(e as Error).message.split('\n')[0]}`;
  } finally {
    if (server.pid) process.kill(-server.pid, 'SIGTERM');
    await p.cleanup();
    await rm(applyDir, { recursive: true, force: true });
  }
  return line;
}

function modelRow(n: number): Promise<string> {
  const tenants = Math.max(1, Math.round((n - 2) / RESOURCES_PER_TENANT));
  const resources = tenants * RESOURCES_PER_TENANT + 2;
  return compareRow(
    `model  ${String(n).padStart(5)}  resources ${String(resources).padStart(5)}  (${tenants} tenants × 3 apps × ${usersPerTenant} users)`,
    async (dir, port) => {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'model.yaml'), benchModel(tenants, usersPerTenant, port));
      return {};
    },
  );
}

/** Per tenant of the bench/compile model: tenant, 20 apps, 20 secrets (10 confidential apps × 2), users, assignments. */
const COMPILE_RESOURCES_PER_TENANT = 43;

function compileRow(tenants: number): Promise<string> {
  return compareRow(
    `compile ${String(tenants).padStart(4)}  resources ${String(tenants * COMPILE_RESOURCES_PER_TENANT + 2).padStart(5)}  (${tenants} tenants × 20 apps × 200 users ${noPasswords ? 'without' : 'with'} passwords)`,
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

console.log(`bench/pulumi on ${process.platform}/${process.arch}, node ${process.version}${skipCheckpoints ? ', PULUMI_SKIP_CHECKPOINTS=true' : ''}`);
if (only.includes('engine')) for (const n of sizes) console.log(await engineRow(n));
if (only.includes('model')) for (const n of sizes) console.log(await modelRow(n));
if (only.includes('compile')) console.log(await compileRow(compileTenants));
