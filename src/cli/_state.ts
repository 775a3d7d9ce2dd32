/**
 * Secrets the CLI makes, kept stable across runs in a local state file that git ignores
 * (`.idforge/state.json`, mode 0600). Regenerating a client or cookie secret on every compile
 * would log everyone out and break deployed apps, so a secret is made once and reused.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { requiredSecrets, type ResolvedPasswords, type ResolvedSecrets, type SecretKind } from '../generators/index.ts';
import type { Model } from '../schema/model.ts';
import type { Problem } from '../schema/problems.ts';

export const DEFAULT_STATE_FILE = join('.idforge', 'state.json');

interface StateFile {
  version: 1;
  secrets: Record<string, Partial<Record<SecretKind, string>>>;
}

/** Sizes chosen for their use: the proxy's cookie secret is 16 bytes, as the contract requires. */
const MAKE: Readonly<Record<SecretKind, () => string>> = {
  clientSecret: () => randomBytes(32).toString('base64url'),
  sessionSecret: () => randomBytes(32).toString('base64url'),
  cookieSecret: () => randomBytes(16).toString('base64url'),
};

export class StateFileError extends Error {
  override readonly name = 'StateFileError';
}

async function readState(file: string): Promise<StateFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, secrets: {} };
    throw new StateFileError(`${file}: cannot read the state file (${(err as NodeJS.ErrnoException).code})`);
  }
  try {
    const parsed = JSON.parse(text) as StateFile;
    if (parsed?.version !== 1 || typeof parsed.secrets !== 'object' || parsed.secrets === null) throw new Error('shape');
    return parsed;
  } catch {
    // Never overwrite a damaged state file: it holds the only copy of the secrets.
    throw new StateFileError(`${file}: the state file is damaged; fix or remove it (removing it makes new secrets)`);
  }
}

/** Resolve every secret the model needs, making and saving the missing ones. */
export async function resolveSecrets(model: Model, stateFile: string): Promise<ResolvedSecrets> {
  const state = await readState(stateFile);
  let changed = false;
  for (const { key, kind, previousKeys } of requiredSecrets(model)) {
    const entry = (state.secrets[key] ??= {});
    if (entry[kind] === undefined) {
      // A renamed tenant or application keeps its secrets: the client and its apps go on working.
      entry[kind] = previousKeys.map((k) => state.secrets[k]?.[kind]).find((v) => v !== undefined) ?? MAKE[kind]();
      changed = true;
    }
  }
  if (changed) {
    await mkdir(dirname(stateFile), { recursive: true, mode: 0o700 });
    const tmp = `${stateFile}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, stateFile);
  }
  return state.secrets;
}

/**
 * Initial passwords from the environment variables the model names. `{config: key}` references
 * belong to the Pulumi program; the CLI reports them instead of guessing.
 */
export function resolvePasswords(
  model: Model,
  env: Readonly<Record<string, string | undefined>>,
): { passwords: ResolvedPasswords; problems: Problem[] } {
  const passwords: Record<string, string> = {};
  const problems: Problem[] = [];
  model.tenants.forEach((t, ti) =>
    t.users.forEach((u, ui) => {
      const ref = u.password;
      if (ref === undefined) return;
      const path = ['tenants', ti, 'users', ui, 'password'];
      if ('config' in ref) {
        problems.push({ code: 'unresolvable-secret', path, message: `password of ${u.id} is a Pulumi config reference ('${ref.config}'): apply this model with pulumi up, or use {env: VAR}` });
        return;
      }
      const value = env[ref.env];
      if (value === undefined || value === '') {
        problems.push({ code: 'missing-secret', path, message: `password of ${u.id}: environment variable ${ref.env} is not set` });
      } else if (value.length < 8) {
        problems.push({ code: 'weak-secret', path, message: `password of ${u.id}: ${ref.env} must hold at least 8 characters` });
      } else {
        passwords[`${t.name}/${u.id}`] = value;
      }
    }),
  );
  return { passwords, problems };
}
