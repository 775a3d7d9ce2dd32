/**
 * Where a model comes from in Git, for the event log (src/contract/events.ts): the commit checked
 * out, its branch, and the model's path from the repository's top. `idforge plan` and `apply`, and
 * the Pulumi provider, send them with every write (ACTOR_HEADERS), so each change the server records
 * names the commit it came from. A model outside a repository, or without git on PATH, has none.
 *
 * The commit is HEAD's: a model with changes not yet committed is applied from HEAD's commit plus
 * those changes (`git status` says so; the event cannot).
 */
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { dirname, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { GitInfo } from '../contract/index.ts';

const run = promisify(execFile);

async function git(cwd: string, args: readonly string[]): Promise<string | undefined> {
  try {
    const { stdout } = await run('git', [...args], { cwd, timeout: 10_000, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/** The Git commit, branch and repository-relative path of the first model file, or undefined outside a repository. */
export async function gitInfoOf(modelPath: string): Promise<GitInfo | undefined> {
  const isDir = await stat(modelPath).then((s) => s.isDirectory(), () => false);
  const dir = isDir ? modelPath : dirname(modelPath);
  const top = await git(dir, ['rev-parse', '--show-toplevel']);
  const commit = top === undefined ? undefined : await git(dir, ['rev-parse', 'HEAD']);
  if (top === undefined || commit === undefined) return undefined;
  const branch = await git(dir, ['rev-parse', '--abbrev-ref', 'HEAD']);
  const path = relative(top, modelPath).split(sep).join('/');
  const parsed = GitInfo.safeParse({
    commit, ...(branch === undefined || branch === 'HEAD' ? {} : { branch }), ...(path === '' || path.startsWith('..') ? {} : { path }),
  });
  return parsed.success ? parsed.data : undefined;
}
