/**
 * The dev stack's environment, shared by `npm run demo` (bin/demo.js), its teardown
 * (bin/demo-destroy.js) and bench/pulumi: the engine built into tools/bin, a local file backend in
 * the clone, and the documented dev-only passphrase.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEV_STACK = 'dev';

/** Where the dev stack keeps its local state. */
export interface DemoPaths {
  /** The folder holding .pulumi-state/ and .idforge/: the clone, or $IDFORGE_DEMO_DIR. */
  readonly root: string;
  /** The file backend (PULUMI_BACKEND_URL) and PULUMI_HOME. */
  readonly pulumiState: string;
  readonly pulumiHome: string;
  /** .idforge/dev: dev passwords, the server's data dir, client configs, sample apps. */
  readonly stateDir: string;
  readonly serverDir: string;
  readonly clientsDir: string;
  readonly appsDir: string;
  /**
   * With IDFORGE_DEMO_DIR: a stack config file written into the demo dir (the dev stack's own,
   * with the server's data dir and the client configs moved there), passed to pulumi as
   * --config-file, so stacks/Pulumi.dev.yaml stays untouched. Without it: undefined.
   */
  readonly configFile: string | undefined;
}

/**
 * The dev stack's paths. IDFORGE_DEMO_DIR moves all of the demo's state out of the clone (the
 * browser test runs the real `npm run demo` this way without touching a developer's own demo);
 * the ports stay the model's, so two demos still cannot run at once.
 */
export function demoPaths(env: NodeJS.ProcessEnv = process.env): DemoPaths {
  const override = env.IDFORGE_DEMO_DIR;
  const root = override ? resolve(override) : ROOT;
  const stateDir = join(root, '.idforge', DEV_STACK);
  return {
    root,
    pulumiState: join(root, '.pulumi-state'),
    pulumiHome: join(root, '.pulumi-state', 'home'),
    stateDir,
    // As in stacks/Pulumi.dev.yaml (idforge:dataDir, idforge:clientConfigDir).
    serverDir: join(stateDir, 'server'),
    clientsDir: join(stateDir, 'clients'),
    appsDir: join(stateDir, 'apps'),
    configFile: override ? join(stateDir, `Pulumi.${DEV_STACK}.yaml`) : undefined,
  };
}

/**
 * DEV ONLY, public, protects nothing: encrypts the dev stack's secrets in .pulumi-state/, which
 * never leaves this machine. Real stacks set their own PULUMI_CONFIG_PASSPHRASE (or a KMS secrets
 * provider); this default applies only when neither PULUMI_CONFIG_PASSPHRASE nor
 * PULUMI_CONFIG_PASSPHRASE_FILE is set.
 */
export const DEV_PASSPHRASE = 'idforge-dev-only-passphrase';

/**
 * A local file backend that survives `kill -9`: the state file itself is written to a temporary file
 * and renamed (atomic), but gocloud's fileblob, under Pulumi's file backend, rewrites a metadata
 * sidecar (`<stack>.json.attrs`) in place; a kill in that moment leaves it empty, and every later
 * command fails with "failed to load checkpoint: EOF". `metadata=skip` writes no sidecar.
 */
export function fileBackendUrl(dir: string): string {
  return `file://${dir}?metadata=skip`;
}

/**
 * Environment for the pulumi CLI: no update check, no plugin downloads, state in the clone (or in
 * $IDFORGE_DEMO_DIR).
 */
export function devPulumiEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  // The same tools dir as scripts/tools-env.sh: tools/bin, or $IDFORGE_TOOLS_DIR/bin; then scripts/,
  // which holds our pulumi-resource-pulumi-nodejs (the dynamic provider launcher; ensure-tools.sh
  // links it into tools/bin too), so the engine finds it even before the tools are built.
  env.PATH = [join(env.IDFORGE_TOOLS_DIR ?? join(ROOT, 'tools'), 'bin'), join(ROOT, 'scripts'), env.PATH ?? ''].join(delimiter);
  env.PULUMI_SKIP_UPDATE_CHECK = 'true';
  env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION = 'true';
  // The state is written once, at the end of a run, not after every step (README, "Scale"): safe
  // because every write of idforge's resources is idempotent and carries the stack's mark, so the
  // next up finishes what a killed one did. Set PULUMI_SKIP_CHECKPOINTS=false to keep checkpoints.
  env.PULUMI_SKIP_CHECKPOINTS ??= SKIP_CHECKPOINTS;
  const paths = demoPaths(base);
  if (base.IDFORGE_DEMO_DIR) {
    // The demo dir holds all of the demo's state: it wins over a backend exported in the shell.
    env.PULUMI_BACKEND_URL = fileBackendUrl(paths.pulumiState);
    env.PULUMI_HOME = paths.pulumiHome;
  }
  env.PULUMI_BACKEND_URL ??= fileBackendUrl(paths.pulumiState);
  env.PULUMI_HOME ??= paths.pulumiHome;
  if (env.PULUMI_CONFIG_PASSPHRASE === undefined && env.PULUMI_CONFIG_PASSPHRASE_FILE === undefined) {
    env.PULUMI_CONFIG_PASSPHRASE = DEV_PASSPHRASE;
  }
  return env;
}

/**
 * Checkpoints off: the engine writes the state at the end of a run instead of after every step, which
 * a file backend does by rewriting the whole state (an up from empty is then quadratic in the stack's
 * size: bench/pulumi). idforge's resources do not need the per-step checkpoint to survive a crash
 * (README, "Scale"), and a killed run leaves no pending operations to clear.
 */
export const SKIP_CHECKPOINTS = 'true';

/**
 * Makes a PULUMI_HOME for idforge's stacks (the dev stack, tests, bench/pulumi), without the engine's
 * automatic log. Pulumi 3.259 writes every engine event at debug level, each resource's properties
 * included, gzipped and encrypted, to PULUMI_HOME/logs on every command (pkg/logging, StartLogging);
 * it has no switch. For a stack of big resources that is most of the engine's work: a no-op preview
 * of 100 tenants of the bench model spent 10.3 of its 13.5 s of engine CPU writing a 38 MB log
 * (`pulumi preview --profiling`: compress/flate under logging.VerboseLogger). Where `logs` is not a
 * directory the engine says "automatic logging unavailable" and logs nothing; `pulumi -v` and
 * `--logflow` still work. Delete the file to have the log back.
 */
export function preparePulumiHome(home: string): void {
  mkdirSync(home, { recursive: true });
  const logs = join(home, 'logs');
  const kind = (() => {
    try {
      return lstatSync(logs).isDirectory() ? 'dir' : 'other';
    } catch {
      return 'none';
    }
  })();
  if (kind === 'other') return;
  // The engine's own logs of earlier runs in this (idforge's own) home.
  if (kind === 'dir') rmSync(logs, { recursive: true, force: true });
  writeFileSync(logs, 'idforge: a file, not a directory, so the Pulumi engine writes no automatic log here (src/provider/_dev-stack.ts, preparePulumiHome)\n');
}

/** `--config-file <demo dir's stack config>` for `pulumi up` and `destroy`, when there is one. */
export function configFileArgs(paths: DemoPaths): string[] {
  return paths.configFile === undefined ? [] : ['--config-file', paths.configFile];
}

/**
 * With IDFORGE_DEMO_DIR: writes the demo dir's stack config, stacks/Pulumi.dev.yaml with the
 * server's data dir and the client configs in the demo dir (absolute, so the program's
 * project-relative paths never reach the clone's .idforge/). Everything else, the encryption salt
 * included, is the dev stack's own.
 */
export async function writeDemoStackConfig(paths: DemoPaths): Promise<void> {
  if (paths.configFile === undefined) return;
  const { mkdir, readFile, writeFile } = await import('node:fs/promises');
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(await readFile(join(ROOT, 'stacks', `Pulumi.${DEV_STACK}.yaml`), 'utf8'));
  doc.setIn(['config', 'idforge:dataDir'], paths.serverDir);
  doc.setIn(['config', 'idforge:clientConfigDir'], paths.clientsDir);
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  await writeFile(paths.configFile, doc.toString(), { mode: 0o600 });
}

/**
 * Releases the stack lock a killed `pulumi up` left in the file backend (the DIY backend never
 * releases it itself: every later command refuses until `pulumi cancel`), when each lock names
 * this host and a process that is gone: what the dead run held and nobody else does. A lock of a
 * live process, or of another host, is left alone. True when it released one.
 */
export async function releaseStaleLock(paths: DemoPaths, env: NodeJS.ProcessEnv, stack = DEV_STACK): Promise<boolean> {
  const { readdir, readFile } = await import('node:fs/promises');
  const dir = join(paths.pulumiState, '.pulumi', 'locks');
  const files = (await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []))
    .filter((e) => e.isFile() && e.name.endsWith('.json') && e.parentPath.split(/[\\/]/).includes(stack))
    .map((e) => join(e.parentPath, e.name));
  if (files.length === 0) return false;
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
  for (const f of files) {
    const lock = JSON.parse(await readFile(f, 'utf8').catch(() => '{}')) as { pid?: unknown; hostname?: unknown };
    if (lock.hostname !== hostname() || typeof lock.pid !== 'number' || alive(lock.pid)) return false;
  }
  return runOrExit('pulumi', ['cancel', '--yes', '--stack', stack], env, { capture: true, allowFailure: true }).status === 0;
}

/** Runs a command in the clone with output to the terminal (or captured); exits on failure. */
export function runOrExit(
  cmd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  opts: { capture?: boolean; allowFailure?: boolean } = {},
): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    env,
    stdio: opts.capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
  });
  if (r.error) {
    console.error(`${cmd}: ${r.error.message}`);
    process.exit(1);
  }
  if (r.status !== 0 && !opts.allowFailure) {
    if (opts.capture) process.stderr.write(r.stderr ?? '');
    console.error(`\n${cmd} ${args.join(' ')} failed (exit ${r.status})`);
    process.exit(r.status ?? 1);
  }
  return r;
}
