/**
 * Secrets the CLI makes, kept stable across runs in a local state file that git ignores
 * (`.idforge/state.json` next to the model, mode 0600). Regenerating a client or cookie secret on
 * every compile would log everyone out and break deployed apps, so a secret is made once and reused.
 * The file belongs to the model, not to the directory a command happens to run in: the same model
 * planned from anywhere finds the same secrets (locateStateFile).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { requiredSecrets, type ResolvedPasswords, type ResolvedSecrets, type SecretKind } from '../generators/index.ts';
import type { Model } from '../schema/model.ts';
import type { Problem } from '../schema/problems.ts';
import { WEBHOOK_SECRET, WEBHOOK_SECRET_RULE, checkPassword } from '../contract/index.ts';

/** Where the state file is by default, relative to the model's directory. */
export const DEFAULT_STATE_FILE = join('.idforge', 'state.json');

/** Which state file a command uses, and why that one (printed, so nobody wonders). */
export interface StateLocation {
  readonly file: string;
  readonly why: string;
}

/**
 * The state file for a model: `--state`, else IDFORGE_STATE (both relative to the working
 * directory), else `.idforge/state.json` in the model's directory (the first model path given: a
 * directory, or the directory of a file). Releases before this one looked in the working directory;
 * when the model has none yet but the working directory has one, that one is used, and said so.
 */
export async function locateStateFile(
  modelPaths: readonly string[], given: string | undefined, env: Readonly<Record<string, string | undefined>>, cwd: string,
): Promise<StateLocation> {
  if (given !== undefined) return { file: resolve(cwd, given), why: 'given with --state' };
  const fromEnv = env.IDFORGE_STATE;
  if (fromEnv !== undefined && fromEnv !== '') return { file: resolve(cwd, fromEnv), why: 'named by IDFORGE_STATE' };
  const first = resolve(cwd, modelPaths[0] ?? '.');
  const dir = (await stat(first).catch(() => undefined))?.isDirectory() === true ? first : dirname(first);
  const file = join(dir, DEFAULT_STATE_FILE);
  const legacy = resolve(cwd, DEFAULT_STATE_FILE);
  if (legacy !== file && !(await exists(file)) && (await exists(legacy))) {
    return { file: legacy, why: `in the working directory, where releases before this one kept it; move it next to the model, to ${file}` };
  }
  return { file, why: 'next to the model' };
}

const exists = async (path: string) => (await stat(path).catch(() => undefined)) !== undefined;

/** The line plan, apply and compile print about it. */
export const stateLine = (s: StateLocation): string => `State file: ${s.file} (${s.why})\n`;

interface StateFile {
  version: 1;
  secrets: Record<string, Partial<Record<SecretKind, string>>>;
  /** Per server (its admin origin), per tenant: how the last apply found or left it exactly as declared (AsDeclared). */
  asDeclared?: Record<string, Record<string, AsDeclared>>;
}

/**
 * A tenant as the last apply found or left it exactly as declared (plan.ts): the digest of the batch
 * it sent or would have sent, the server's directory revision then, and how many objects that is. While
 * the model compiles to the same batch and the server's revision holds, plan and apply need not ask
 * the server to judge the tenant again.
 */
export interface AsDeclared {
  readonly digest: string;
  readonly revision: string;
  readonly objects: number;
}

const isAsDeclared = (v: unknown): v is AsDeclared => typeof v === 'object' && v !== null
  && typeof (v as AsDeclared).digest === 'string' && typeof (v as AsDeclared).revision === 'string' && Number.isInteger((v as AsDeclared).objects);

/** What the state file keeps of a server's tenants (AsDeclared); what does not read as one is not kept (it only saves a request). */
export async function readAsDeclared(stateFile: string, server: string): Promise<Map<string, AsDeclared>> {
  const kept = (await readState(stateFile)).asDeclared?.[server];
  return new Map(typeof kept === 'object' && kept !== null ? Object.entries(kept).filter((e): e is [string, AsDeclared] => isAsDeclared(e[1])) : []);
}

/** Keeps what apply found or left as declared, for a server: every tenant of it, replacing what the file had. */
export async function saveAsDeclared(stateFile: string, server: string, tenants: ReadonlyMap<string, AsDeclared>): Promise<void> {
  const state = await readState(stateFile);
  const all = { ...(state.asDeclared ?? {}) };
  if (tenants.size === 0) delete all[server];
  else all[server] = Object.fromEntries([...tenants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  if (Object.keys(all).length === 0 && state.asDeclared === undefined) return;
  await writeState(stateFile, { ...state, asDeclared: all });
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
  if (changed) await writeState(stateFile, state);
  return state.secrets;
}

/**
 * The client secrets the state file keeps, for plan and apply: read, never made and never written
 * (a plan changes no file). A client without one keeps the secret the server has, or gets one the
 * server makes when apply creates it (saveClientSecrets keeps that one).
 */
export async function readClientSecrets(model: Model, stateFile: string): Promise<{ secrets: ResolvedSecrets; moved: { key: string; clientSecret: string }[] }> {
  const state = await readState(stateFile);
  const out: Record<string, Partial<Record<SecretKind, string>>> = {};
  // Found only under a name a declared rename left behind: apply keeps it under the new name too.
  const moved: { key: string; clientSecret: string }[] = [];
  for (const { key, kind, previousKeys } of requiredSecrets(model)) {
    if (kind !== 'clientSecret') continue;
    const own = state.secrets[key]?.[kind];
    const value = own ?? previousKeys.map((k) => state.secrets[k]?.[kind]).find((v) => v !== undefined);
    if (value === undefined) continue;
    out[key] = { clientSecret: value };
    if (own === undefined) moved.push({ key, clientSecret: value });
  }
  return { secrets: out, moved };
}

/** A new client secret, for a client that apply is about to create. */
export const newClientSecret = (): string => MAKE.clientSecret();

/**
 * Keeps client secrets in the state file, for compile: apply makes them for the clients it creates
 * and saves them before it sends them, so a killed apply never leaves a client whose secret nobody has.
 */
export async function saveClientSecrets(stateFile: string, made: readonly { readonly key: string; readonly clientSecret: string }[]): Promise<void> {
  if (made.length === 0) return;
  const state = await readState(stateFile);
  for (const m of made) (state.secrets[m.key] ??= {}).clientSecret = m.clientSecret;
  await writeState(stateFile, state);
}

async function writeState(stateFile: string, state: StateFile): Promise<void> {
  await mkdir(dirname(stateFile), { recursive: true, mode: 0o700 });
  const tmp = `${stateFile}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, stateFile);
}

/**
 * Initial passwords from the environment variables the model names, and per `<tenant>/<userId>` why
 * one could not be had. `{config: key}` references belong to the Pulumi program; the CLI reports
 * them instead of guessing. Only a user being created needs its password (see preparePlan).
 */
export function resolvePasswords(
  model: Model,
  env: Readonly<Record<string, string | undefined>>,
): { passwords: ResolvedPasswords; unresolved: ReadonlyMap<string, Problem> } {
  const passwords: Record<string, string> = {};
  const unresolved = new Map<string, Problem>();
  model.tenants.forEach((t, ti) =>
    t.users.forEach((u, ui) => {
      const ref = u.password;
      if (ref === undefined) return;
      const path = ['tenants', ti, 'users', ui, 'password'];
      const key = `${t.name}/${u.id}`;
      if ('config' in ref) {
        unresolved.set(key, { code: 'unresolvable-secret', path, message: `password of ${u.id} is a Pulumi config reference ('${ref.config}'): apply this model with pulumi up, or use {env: VAR}` });
        return;
      }
      const value = env[ref.env];
      if (value === undefined || value === '') {
        unresolved.set(key, { code: 'missing-secret', path, message: `password of ${u.id}: environment variable ${ref.env} is not set` });
      } else {
        // The tenant's password policy, the one rule the server runs again where the password is set.
        const weak = checkPassword(value, t.passwordPolicy, { email: u.email, tenantNames: [t.name, t.displayName] }, path)[0];
        if (weak !== undefined) unresolved.set(key, { ...weak, message: `password of ${u.id}: the value of ${ref.env} ${weak.message}` });
        else passwords[key] = value;
      }
    }),
  );
  return { passwords, unresolved };
}

/**
 * The webhooks' signing secrets, per `<tenant>/<webhook>`, from the model's `{env: VAR}` references.
 * Every declared secret is sent on every run (the server compares it with the one it keeps, so a new
 * value is a rotation), so a missing or malformed one is a problem at its place in the model.
 */
export function resolveWebhookSecrets(
  model: Model,
  env: Readonly<Record<string, string | undefined>>,
): { secrets: Record<string, string>; problems: Problem[] } {
  const secrets: Record<string, string> = {};
  const problems: Problem[] = [];
  model.tenants.forEach((t, ti) =>
    t.webhooks.forEach((w, wi) => {
      const ref = w.secret;
      if (ref === undefined) return;
      const path = ['tenants', ti, 'webhooks', wi, 'secret'];
      if ('config' in ref) {
        problems.push({ code: 'unresolvable-secret', path, message: `secret of webhook ${w.name} is a Pulumi config reference ('${ref.config}'): apply this model with pulumi up, or use {env: VAR}` });
        return;
      }
      const value = env[ref.env];
      if (value === undefined || value === '') problems.push({ code: 'missing-secret', path, message: `secret of webhook ${w.name}: environment variable ${ref.env} is not set` });
      else if (!WEBHOOK_SECRET.test(value)) problems.push({ code: 'invalid-secret', path, message: `secret of webhook ${w.name}: the value of ${ref.env} ${WEBHOOK_SECRET_RULE}` });
      else secrets[`${t.name}/${w.name}`] = value;
    }),
  );
  return { secrets, problems };
}
