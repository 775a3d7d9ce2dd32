/**
 * The dev stack's environment, shared by `npm run demo` (bin/demo.js), its teardown
 * (bin/demo-destroy.js) and bench/pulumi: the engine built into tools/bin, a local file backend in
 * the clone, and the documented dev-only passphrase.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEV_STACK = 'dev';

/**
 * DEV ONLY, public, protects nothing: encrypts the dev stack's secrets in .pulumi-state/, which
 * never leaves this machine. Real stacks set their own PULUMI_CONFIG_PASSPHRASE (or a KMS secrets
 * provider); this default applies only when neither PULUMI_CONFIG_PASSPHRASE nor
 * PULUMI_CONFIG_PASSPHRASE_FILE is set.
 */
export const DEV_PASSPHRASE = 'idforge-dev-only-passphrase';

/** Environment for the pulumi CLI: no update check, no plugin downloads, state in the clone. */
export function devPulumiEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  // The same tools dir as scripts/tools-env.sh: tools/bin, or $IDFORGE_TOOLS_DIR/bin.
  // The SDK's own folder holds pulumi-resource-pulumi-nodejs, the dynamic provider plugin that
  // matches the installed @pulumi/pulumi by construction.
  env.PATH = [
    join(env.IDFORGE_TOOLS_DIR ?? join(ROOT, 'tools'), 'bin'),
    join(ROOT, 'node_modules/@pulumi/pulumi'),
    env.PATH ?? '',
  ].join(delimiter);
  env.PULUMI_SKIP_UPDATE_CHECK = 'true';
  env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION = 'true';
  env.PULUMI_BACKEND_URL ??= `file://${join(ROOT, '.pulumi-state')}`;
  env.PULUMI_HOME ??= join(ROOT, '.pulumi-state/home');
  if (env.PULUMI_CONFIG_PASSPHRASE === undefined && env.PULUMI_CONFIG_PASSPHRASE_FILE === undefined) {
    env.PULUMI_CONFIG_PASSPHRASE = DEV_PASSPHRASE;
  }
  return env;
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
