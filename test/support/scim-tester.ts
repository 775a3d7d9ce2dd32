/**
 * The open-source SCIM compliance checker, scim2-tester (PyPI), through scim2-cli's `test` command:
 * installed on first use into a venv in the git-ignored tools/ folder (tools/scim-venv), at the
 * releases pinned in scripts/tool-versions.env, and reused while those stay installed. Parallel
 * test files take turns installing (a lock directory), so one install serves them all.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolVersions, toolsBinDir } from './tools.ts';

const run = promisify(execFile);
const VENV = join(toolsBinDir(), '..', 'scim-venv');
const LOCK = `${VENV}.lock`;

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

async function installed(pins: Record<string, string>): Promise<boolean> {
  const pip = join(VENV, 'bin', 'pip');
  if (!existsSync(join(VENV, 'bin', 'scim2')) || !existsSync(pip)) return false;
  try {
    const { stdout } = await run(pip, ['list', '--format=freeze', '--disable-pip-version-check']);
    return Object.entries(pins).every(([pkg, version]) => stdout.split('\n').includes(`${pkg}==${version}`));
  } catch {
    return false;
  }
}

async function withLock<T>(fn: () => Promise<T>): Promise<T> {
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

/** The `scim2` command (scim2-cli with scim2-tester), installed if missing. */
export async function scim2Command(): Promise<string> {
  const v = toolVersions();
  const pins = { 'scim2-tester': v.SCIM2_TESTER_VERSION!, 'scim2-cli': v.SCIM2_CLI_VERSION! };
  if (await installed(pins)) return join(VENV, 'bin', 'scim2');
  return withLock(async () => {
    if (!(await installed(pins))) {
      if (!existsSync(join(VENV, 'bin', 'pip'))) await run(await python(), ['-m', 'venv', VENV]);
      await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...Object.entries(pins).map(([p, ver]) => `${p}==${ver}`)],
        { timeout: 600_000 });
    }
    return join(VENV, 'bin', 'scim2');
  });
}
