/**
 * Relying parties of other languages for test/interop/matrix.test.ts: small programs kept in
 * test/interop/<language>, each using one real library at its defaults, installed or built on first
 * use into the git-ignored tools/interop folder (at the releases pinned in scripts/tool-versions.env)
 * and reused while their sources, pins and toolchain stay the same (a stamp file records what each
 * was built from). Parallel test files take turns building (a lock directory per client).
 *
 *   python  Authlib's Flask client (PyPI)          tools/interop/python/venv
 *   go      go-oidc + golang.org/x/oauth2 (Go)     tools/interop/go/go-oidc-client (cgo: *.localhost via nss)
 *   java    Nimbus oauth2-oidc-sdk (Maven Central) tools/interop/java/{classes,lib}
 *
 * Each program serves /login, /callback and /client-credentials on 127.0.0.1 and prints
 * "listening http://127.0.0.1:<port>"; startInteropClient waits for that line.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, startProcess, type RunningProcess } from './processes.ts';
import { toolVersions, toolsBinDir } from './tools.ts';

const run = promisify(execFile);
const TOOLS = join(toolsBinDir(), '..', 'interop');
const SOURCES = join(REPO_ROOT, 'test', 'interop');
const LOGS = join(toolsBinDir(), '..', 'logs');

export const INTEROP_CLIENTS = ['python', 'go', 'java'] as const;
export type InteropClientName = (typeof INTEROP_CLIENTS)[number];

/** How to run a built client, and what its first use cost on this machine. */
export interface InteropProgram {
  readonly name: InteropClientName;
  readonly command: string;
  readonly args: readonly string[];
  /** The pinned library releases it runs. */
  readonly versions: Readonly<Record<string, string>>;
  /** 'cached' when an earlier run built it, else how long installing or building took. */
  readonly prepared: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => !f.includes(`${join('java', 'target')}`) && !f.includes('__pycache__'))
    .sort();
}

function stampOf(parts: readonly string[], files: readonly string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(`${p}\n`);
  for (const f of files) h.update(`${relative(REPO_ROOT, f)}\n`).update(readFileSync(f));
  return h.digest('hex');
}

async function withLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(TOOLS, { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another test file builds it; a lock older than 20 minutes is a crashed build's.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held !== undefined && Date.now() - held.mtimeMs > 1_200_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Runs one build step, its output kept in tools/logs/interop-<name>.log and shown when it fails. */
async function step(name: string, command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<void> {
  mkdirSync(LOGS, { recursive: true });
  const log = join(LOGS, `interop-${name}.log`);
  try {
    const { stdout, stderr } = await run(command, [...args], { ...options, timeout: 1_200_000, maxBuffer: 64 * 1024 * 1024 });
    writeFileSync(log, `$ ${command} ${args.join(' ')}\n${stdout}${stderr}`, { flag: 'a' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    writeFileSync(log, `$ ${command} ${args.join(' ')}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { flag: 'a' });
    throw new Error(`building the ${name} interop client failed (${command} ${args.join(' ')}); the log is ${log}:\n${(e.stderr ?? e.message).slice(-3000)}`);
  }
}

async function toolVersion(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(command, [...args]);
    return `${stdout}${stderr}`.split('\n')[0]!.trim();
  } catch {
    throw new Error(`${command} is not on PATH: the interop matrix needs it (${command === 'go' ? 'Go 1.24 or later' : command === 'mvn' ? 'Maven 3.8 and a JDK 17' : 'Python 3.10 or later'})`);
  }
}

/** A Python of at least 3.10 (Authlib 1.9's floor). */
async function python(): Promise<string> {
  for (const candidate of ['python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3']) {
    try {
      const { stdout } = await run(candidate, ['-c', 'import sys; print(sys.version_info >= (3, 10))']);
      if (stdout.trim() === 'True') return candidate;
    } catch {
      // not on PATH
    }
  }
  throw new Error('the Python interop client needs Python 3.10 or later: none found on PATH');
}

interface Recipe {
  readonly versions: Record<string, string>;
  /** The files the build reads (a change means rebuild). */
  readonly inputs: readonly string[];
  /** What identifies the toolchain (its version line). */
  toolchain(): Promise<string>;
  /** Where the build lands (removed before a rebuild). */
  readonly out: string;
  build(): Promise<void>;
  readonly command: string;
  readonly args: readonly string[];
}

function recipe(name: InteropClientName): Recipe {
  const v = toolVersions();
  const pin = (key: string) => {
    const value = v[key];
    if (value === undefined || value === '') throw new Error(`${key} is not set in scripts/tool-versions.env`);
    return value;
  };
  const src = join(SOURCES, name);
  const out = join(TOOLS, name);
  if (name === 'python') {
    const venv = join(out, 'venv');
    return {
      versions: { authlib: pin('AUTHLIB_VERSION') },
      // client.py runs from the source tree: only what pip installs is built.
      inputs: [join(src, 'requirements.txt')],
      toolchain: async () => toolVersion(await python(), ['--version']),
      out,
      async build() {
        await step(name, await python(), ['-m', 'venv', venv]);
        await step(name, join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--quiet', `authlib==${pin('AUTHLIB_VERSION')}`, '-r', join(src, 'requirements.txt')]);
      },
      command: join(venv, 'bin', 'python'),
      args: [join(src, 'client.py')],
    };
  }
  if (name === 'go') {
    const binary = join(out, 'go-oidc-client');
    const versions = { 'github.com/coreos/go-oidc/v3': pin('GO_OIDC_VERSION'), 'golang.org/x/oauth2': pin('X_OAUTH2_VERSION') };
    return {
      versions,
      inputs: filesUnder(src),
      toolchain: () => toolVersion('go', ['version']),
      out,
      async build() {
        const mod = readFileSync(join(src, 'go.mod'), 'utf8');
        for (const [path, version] of Object.entries(versions)) {
          if (!new RegExp(`^\\s*(?:require\\s+)?${path.replace(/[./]/g, '\\$&')} ${version.replace(/\./g, '\\.')}$`, 'm').test(mod)) {
            throw new Error(`test/interop/go/go.mod does not require ${path} ${version} (the pin in scripts/tool-versions.env); run: cd test/interop/go && go get ${path}@${version} && go mod tidy`);
          }
        }
        mkdirSync(out, { recursive: true });
        // cgo: Go then asks the system resolver (libnss-myhostname) for <tenant>.localhost, as oauth2-proxy does.
        await step(name, 'go', ['build', '-trimpath', '-o', binary, '.'], { cwd: src, env: { ...process.env, CGO_ENABLED: '1' } });
      },
      command: binary,
      args: [],
    };
  }
  return {
    versions: { 'com.nimbusds:oauth2-oidc-sdk': pin('NIMBUS_OIDC_SDK_VERSION') },
    inputs: filesUnder(src),
    toolchain: async () => `${await toolVersion('mvn', ['--version'])} ${await toolVersion('java', ['-version'])}`,
    out,
    async build() {
      await step(name, 'mvn', ['-B', '-q', '-f', join(src, 'pom.xml'), `-Didforge.build.dir=${out}`, `-Dnimbus.oidc.sdk.version=${pin('NIMBUS_OIDC_SDK_VERSION')}`, 'package']);
    },
    command: 'java',
    args: ['-cp', `${join(out, 'classes')}:${join(out, 'lib', '*')}`, 'idforge.interop.Client'],
  };
}

/** The client `name`, installed or built first if its stamp does not match. */
export async function interopProgram(name: InteropClientName): Promise<InteropProgram> {
  const r = recipe(name);
  const stampFile = join(TOOLS, `${name}.stamp`);
  const stamp = stampOf([name, JSON.stringify(r.versions), await r.toolchain()], r.inputs);
  const current = () => existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp;
  const program = (prepared: string): InteropProgram => ({ name, command: r.command, args: r.args, versions: r.versions, prepared });
  if (current()) return program('cached');
  return withLock(join(TOOLS, `${name}.lock`), async () => {
    if (current()) return program('cached');
    const started = Date.now();
    rmSync(stampFile, { force: true });
    rmSync(r.out, { recursive: true, force: true });
    await r.build();
    writeFileSync(stampFile, `${stamp}\n`);
    const took = `${Math.round((Date.now() - started) / 1000)} s`;
    process.stderr.write(`interop: ${name} client installed or built into ${relative(REPO_ROOT, r.out)} in ${took}\n`);
    return program(took);
  });
}

export interface RunningInteropClient {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly process: RunningProcess;
  stop(): Promise<void>;
}

/** Starts a built client with `env` and waits for its "listening" line. */
export async function startInteropClient(program: InteropProgram, env: Readonly<Record<string, string>>, label: string = program.name): Promise<RunningInteropClient> {
  const proc = startProcess(`interop-${label}`, program.command, program.args, { env });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const m = /listening (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.output());
    if (m !== null) return { url: m[1]!, process: proc, stop: () => proc.stop() };
    if (proc.hasExited() || Date.now() > deadline) {
      await proc.stop();
      throw new Error(`the ${label} interop client did not start:\n${proc.output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
