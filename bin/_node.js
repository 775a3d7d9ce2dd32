// The Node.js that idforge runs on: release 22 or later (tested on 24 LTS). Where the machine's node is
// older, scripts/ensure-tools.sh installs the pinned Node 24 (scripts/tool-versions.env, NODE_VERSION) into
// tools/node, and every entry point (bin/idforge.js, bin/run.js, bin/demo.js) runs itself again under it.
//
// Plain JavaScript with node: builtins only: this file runs before anything is installed, on any node >= 18.
import { spawn, spawnSync } from 'node:child_process';
import { constants } from 'node:os';
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

/** Signals a wrapper passes on to the process it runs (SIGKILL and SIGSTOP cannot be caught; SIGUSR1 is node's debugger's; terminal stops reach the whole process group anyway). */
const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];

/**
 * Runs a command as this process's stand-in: every signal this process gets is passed on to it, and
 * when it ends this process ends the same way (its exit code, or the same signal, so a shell or a
 * process manager sees `kill` take effect). Never returns: the promise only settles by exiting.
 * Without this, `kill <pid>` of a wrapper left the real server running and holding its port.
 */
export function runAsStandIn(command, args, options = {}) {
  return new Promise(() => {
    const child = spawn(command, args, { stdio: 'inherit', ...options });
    const relay = (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    for (const signal of FORWARDED) process.on(signal, relay);
    child.on('error', (err) => {
      console.error(`${command}: ${err.message}`);
      process.exit(127);
    });
    child.on('exit', (code, signal) => {
      for (const s of FORWARDED) process.off(s, relay);
      if (signal !== null) {
        // End as the child did: the default action of the same signal (a terminal stop is not an end).
        process.kill(process.pid, signal);
        setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 1000).unref();
        return;
      }
      process.exit(code ?? 1);
    });
  });
}

/**
 * Returns when this process runs on a supported node. Otherwise installs Node 24 into tools/node when it
 * is not there yet (one line of progress), runs this same script under it with the same arguments as a
 * stand-in (runAsStandIn: signals passed on, the exit status passed back), and never returns.
 */
export async function ensureSupportedNode() {
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
  await runAsStandIn(node, [...process.execArgv, process.argv[1], ...process.argv.slice(2)], {
    env: { ...process.env, PATH: pathWith(dirname(node)) },
  });
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
