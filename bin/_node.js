// The Node.js that idforge runs on: release 22 or later (tested on 24 LTS). Where the machine's node is
// older, scripts/ensure-tools.sh installs the pinned Node 24 (scripts/tool-versions.env, NODE_VERSION) into
// tools/node, and every entry point (bin/idforge.js, bin/run.js, bin/demo.js) runs itself again under it.
//
// Plain JavaScript with node: builtins only: this file runs before anything is installed, on any node >= 18.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const MIN_NODE_MAJOR = 22;

const toolsDir = () => resolve(ROOT, process.env.IDFORGE_TOOLS_DIR ?? 'tools');
const major = (version) => Number(version.replace(/^v/, '').split('.')[0]);

/** PATH with these folders first (each once). */
export function pathWith(...dirs) {
  const rest = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '' && !dirs.includes(d));
  return [...dirs, ...rest].join(delimiter);
}

/**
 * Returns when this process runs on a supported node. Otherwise installs Node 24 into tools/node when it
 * is not there yet (one line of progress), runs this same script under it with the same arguments, and
 * exits with its exit code.
 */
export function ensureSupportedNode() {
  if (major(process.versions.node) >= MIN_NODE_MAJOR) return;
  let node = join(toolsDir(), 'node', 'bin', 'node');
  if (!existsSync(node)) {
    const r = spawnSync('bash', [join(ROOT, 'scripts', 'ensure-tools.sh'), 'node'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (r.status !== 0) {
      console.error(`idforge needs Node.js ${MIN_NODE_MAJOR} or later (this is ${process.version}), and installing Node.js 24 failed (above).`);
      process.exit(1);
    }
    node = r.stdout.trim().split('\n').pop();
  }
  const r = spawnSync(node, [...process.execArgv, process.argv[1], ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, PATH: pathWith(dirname(node)) },
  });
  if (r.error) {
    console.error(`cannot run ${node}: ${r.error.message}`);
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}

/**
 * Environment for npm under this node: this node first on PATH, and its headers for any native module
 * that builds from source (tools/node carries its own in include/node). better-sqlite3 and argon2 ship
 * Node-API prebuilds, which load on every node release, so normally nothing is compiled.
 */
export function npmEnv() {
  const env = { ...process.env, PATH: pathWith(dirname(process.execPath)) };
  const prefix = resolve(dirname(process.execPath), '..');
  if (existsSync(join(prefix, 'include', 'node', 'node_version.h'))) env.npm_config_nodedir = prefix;
  return env;
}
