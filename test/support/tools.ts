/**
 * Where the external tools live for tests: tools/bin (built by scripts/ensure-tools.sh, or
 * $IDFORGE_TOOLS_DIR/bin), then PATH. A missing tool throws an error that says how to get it,
 * instead of a test failing later with ENOENT.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ToolName =
  | 'pulumi'
  | 'pulumi-language-nodejs'
  | 'pulumi-resource-pulumi-nodejs'
  | 'oauth2-proxy'
  | 'chromium'
  | 'haproxy';

/** Absolute path of the folder ensure-tools.sh builds into. */
export function toolsBinDir(): string {
  const dir = process.env.IDFORGE_TOOLS_DIR;
  return join(dir ? resolve(REPO_ROOT, dir) : join(REPO_ROOT, 'tools'), 'bin');
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Absolute path of a tool: tools/bin first, then PATH; Chromium is Debian's /usr/bin/chromium
 * (IDFORGE_CHROMIUM overrides). Throws when the tool is nowhere to be found.
 */
export function toolPath(name: ToolName): string {
  if (name === 'chromium') {
    const override = process.env.IDFORGE_CHROMIUM;
    const candidates = override ? [override] : ['/usr/bin/chromium'];
    const found = candidates.find(isExecutable) ?? (override ? undefined : onPath('chromium'));
    if (found) return found;
    throw new Error(
      `chromium not found (looked at ${candidates.join(', ')} and PATH): run scripts/ensure-tools.sh ` +
        `(installs Debian's chromium)`,
    );
  }
  if (name === 'haproxy') {
    // Debian's, in /usr/sbin (not on a non-root PATH).
    const found = ['/usr/sbin/haproxy'].find(isExecutable) ?? onPath('haproxy');
    if (found) return found;
    throw new Error("haproxy not found (looked at /usr/sbin/haproxy and PATH): run scripts/ensure-tools.sh (installs Debian's haproxy)");
  }
  const local = join(toolsBinDir(), name);
  if (isExecutable(local)) return local;
  const found = onPath(name);
  if (found) return found;
  throw new Error(`${name} not found in ${toolsBinDir()} or on PATH: run scripts/ensure-tools.sh`);
}

/** The pins in scripts/tool-versions.env, e.g. { PULUMI_VERSION: 'v3.248.0', OAUTH2_PROXY_VERSION: ... }. */
export function toolVersions(): Readonly<Record<string, string>> {
  const versions: Record<string, string> = {};
  const text = readFileSync(join(REPO_ROOT, 'scripts', 'tool-versions.env'), 'utf8');
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) versions[match[1]!] = match[2]!;
  }
  return versions;
}

/**
 * Environment for running `pulumi`: the current environment, tools/bin first on PATH (so the
 * CLI finds pulumi-language-nodejs and pulumi-resource-pulumi-nodejs there), no update check and
 * no plugin downloads, then `extra` on top.
 *
 * PULUMI_CONFIG_PASSPHRASE is the caller's to set (in `extra`). Tests should also give each run
 * its own PULUMI_HOME (credentials, workspace settings) and a file backend (PULUMI_BACKEND_URL, or
 * `pulumi login file://...` with that PULUMI_HOME) so parallel tests never share state.
 */
export function pulumiEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const bin = toolsBinDir();
  const inherited = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && dir !== bin);
  return {
    ...process.env,
    PATH: [bin, ...inherited].join(delimiter),
    PULUMI_SKIP_UPDATE_CHECK: 'true',
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
    ...extra,
  };
}
