/**
 * The open-source SCIM checkers from PyPI, each installed on first use into its own venv in the
 * git-ignored tools/ folder at the releases pinned in scripts/tool-versions.env, and reused while
 * those stay installed: scim2-tester through scim2-cli's `test` command (tools/scim-venv), and
 * scim-sanity's live probe (tools/scim-sanity-venv). Parallel test files take turns installing (a
 * lock directory per venv), so one install serves them all.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolVersions, toolsBinDir } from './tools.ts';

const run = promisify(execFile);
const venvDir = (name: string) => join(toolsBinDir(), '..', name);

/** A Python of at least 3.10 (scim2-tester's floor): python3.11 first, as the machine has it. */
async function python(): Promise<string> {
  for (const candidate of ['python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3']) {
    try {
      const { stdout } = await run(candidate, ['-c', 'import sys; print(sys.version_info >= (3, 10))']);
      if (stdout.trim() === 'True') return candidate;
    } catch {
      // not on PATH
    }
  }
  throw new Error('scim2-tester needs Python 3.10 or later (python3.11 on Debian): none found on PATH');
}

async function installed(venv: string, bin: string, pins: Record<string, string>): Promise<boolean> {
  const pip = join(venv, 'bin', 'pip');
  if (!existsSync(join(venv, 'bin', bin)) || !existsSync(pip)) return false;
  try {
    const { stdout } = await run(pip, ['list', '--format=freeze', '--disable-pip-version-check']);
    return Object.entries(pins).every(([pkg, version]) => stdout.split('\n').includes(`${pkg}==${version}`));
  } catch {
    return false;
  }
}

async function withLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  const LOCK = lock;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Another test file is installing; a lock older than 10 minutes is a crashed install's.
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held !== undefined && Date.now() - held.mtimeMs > 600_000) rmSync(LOCK, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** `bin` of a venv holding `pins`, installed if missing. */
async function venvCommand(name: string, bin: string, pins: Record<string, string>): Promise<string> {
  const venv = venvDir(name);
  if (await installed(venv, bin, pins)) return join(venv, 'bin', bin);
  return withLock(`${venv}.lock`, async () => {
    if (!(await installed(venv, bin, pins))) {
      if (!existsSync(join(venv, 'bin', 'pip'))) await run(await python(), ['-m', 'venv', venv]);
      await run(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...Object.entries(pins).map(([p, ver]) => `${p}==${ver}`)],
        { timeout: 600_000 });
    }
    return join(venv, 'bin', bin);
  });
}

/** The `scim2` command (scim2-cli with scim2-tester), installed if missing. */
export async function scim2Command(): Promise<string> {
  const v = toolVersions();
  return venvCommand('scim-venv', 'scim2', { 'scim2-tester': v.SCIM2_TESTER_VERSION!, 'scim2-cli': v.SCIM2_CLI_VERSION! });
}

/**
 * The Python of a venv with scim-sanity, installed if missing. Its probe is driven through its
 * Python API (`run_probe`) so the token travels in the environment, not on a command line.
 */
export async function scimSanityPython(): Promise<string> {
  return venvCommand('scim-sanity-venv', 'python', { 'scim-sanity': toolVersions().SCIM_SANITY_VERSION! });
}
