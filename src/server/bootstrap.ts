/**
 * The built-in system tenant and the bootstrap admin client. The system tenant issues admin API
 * tokens; its client's credentials are written to `<dataDir>/admin-credentials.json` (mode 0600)
 * so that whoever can read the data dir (the operator, `idforge plan/apply --data-dir`) can get a
 * token with client_credentials. The client's secret is one for every replica of a database: it
 * is kept sealed with the master key in the database (the client itself holds only its hash), and
 * each replica writes it into its own data dir, so no replica's start invalidates another's file.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { adminBaseUrl, endpointUrl, issuerUrl, type AdminCredentials } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { MASTER_KEY_ENV, MASTER_KEY_FILE, MASTER_KEY_FILE_ENV, MasterKey, newClientSecret } from './_crypto.ts';
import {
  ADMIN_AUDIENCE, ADMIN_SCOPE, BOOTSTRAP_CLIENT_ID, BOOTSTRAP_CREDENTIALS_FILE, SYSTEM_TENANT,
} from './config.ts';
import { newTenantKeys } from './keys.ts';
import { StartupError } from './errors.ts';
import type { Storage } from './storage/types.ts';

/** Meta key of the master key's check value (see MasterKey.checkValue). */
const KEY_CHECK_META = 'master-key-check';
/** Meta key of the bootstrap client's secret, sealed with the master key. */
const BOOTSTRAP_SECRET_META = 'bootstrap-secret';
const BOOTSTRAP_SECRET_AAD = `meta:${BOOTSTRAP_SECRET_META}`;

/**
 * The master key for this data dir, refusing to start with a key that cannot be the one the data
 * was sealed with. Otherwise a lost master.key would silently be replaced by a new key (or a wrong
 * IDFORGE_MASTER_KEY accepted), the bootstrap admin secret overwritten under it, and every tenant
 * would fail at its first token because no signing key unseals any more.
 */
export async function openMasterKey(
  dataDir: string, env: Readonly<Record<string, string | undefined>>, storage: Storage, keyFile?: string,
): Promise<MasterKey> {
  const check = await storage.meta.get(KEY_CHECK_META);
  const hasData = check !== undefined || (await storage.tenants.count()) > 0;
  const named = keyFile ?? (env[MASTER_KEY_FILE_ENV] || undefined);
  const master = MasterKey.load(dataDir, env, !hasData, named);
  const where = storage.description.startsWith('sqlite') ? `the data dir ${dataDir}` : `the database ${storage.description.slice('postgres '.length)}`;
  const keep = named === undefined
    ? `Start it with the master key this data dir was created with: restore ${join(dataDir, MASTER_KEY_FILE)} from a backup, or set ${MASTER_KEY_ENV} to that key. (To start afresh instead, use an empty data dir.)`
    : `Start it with the master key the data was sealed with: restore ${named} from a backup (every replica needs the same key). (To start afresh instead, use an empty ${storage.description.startsWith('sqlite') ? 'data dir' : 'database'}.)`;
  if (master === undefined) {
    const missing = named === undefined ? `${MASTER_KEY_ENV} is unset and ${join(dataDir, MASTER_KEY_FILE)} does not exist` : `${named} does not exist`;
    throw new StartupError(`refusing to start: ${where} holds sealed keys and secrets, but its master key is missing (${missing}), and a new key could not open them. ${keep}`);
  }
  const wrong = () => new StartupError(`refusing to start: the master key from ${master.source} is not the key the data in ${where} was sealed with. ${keep}`);
  if (check !== undefined) {
    if (check !== master.checkValue()) throw wrong();
    return master;
  }
  if (hasData && !unsealsSystemKey(master, await storage.tenants.listKeys(SYSTEM_TENANT))) throw wrong();
  // First start, or data from before check values: from now on the key is checked before use. Set
  // only if absent: of replicas starting together on a new database with different keys, the
  // first to store its check value wins and every other one refuses here.
  if ((await storage.meta.setIfAbsent(KEY_CHECK_META, master.checkValue())) !== master.checkValue()) throw wrong();
  return master;
}

function unsealsSystemKey(master: MasterKey, keys: readonly { tenant: string; kid: string; sealedJwk: string }[]): boolean {
  const k = keys[0];
  if (k === undefined) return true;
  try {
    master.unseal(k.sealedJwk, `key:${k.tenant}:${k.kid}`);
    return true;
  } catch {
    return false;
  }
}

/** Creates the system tenant, its admin API resource and the bootstrap client if missing. */
export async function ensureSystemTenant(ctx: ServerContext): Promise<void> {
  const s = ctx.storage;
  if ((await s.tenants.get(SYSTEM_TENANT)) === undefined) {
    const keys = await newTenantKeys(ctx.master, SYSTEM_TENANT, ctx.keyAlg);
    await s.tenants.put(SYSTEM_TENANT, { displayName: 'idforge system', scopes: [{ name: ADMIN_SCOPE, description: 'administer every tenant' }] }, keys);
  }
  if ((await s.applications.get(SYSTEM_TENANT, 'admin-api')) === undefined) {
    await s.applications.put(SYSTEM_TENANT, 'admin-api', { kind: 'api', identifier: ADMIN_AUDIENCE, scopes: [ADMIN_SCOPE], displayName: 'idforge admin API' }, null);
  }
}

/**
 * The bootstrap client's secret, the same for every replica of the database: the one sealed in the
 * database; else (data from before it was kept there) the one in this data dir's credentials file
 * if it still matches the client; else a new one. Whichever replica stores first wins, and the
 * client's hash is made to match it.
 */
async function bootstrapSecret(ctx: ServerContext, file: string): Promise<string> {
  const { meta, applications } = ctx.storage;
  const app = await applications.get(SYSTEM_TENANT, BOOTSTRAP_CLIENT_ID);
  let sealed = await meta.get(BOOTSTRAP_SECRET_META);
  if (sealed === undefined) {
    let candidate: string | undefined;
    try {
      const existing = JSON.parse(readFileSync(file, 'utf8')) as Partial<AdminCredentials>;
      if (typeof existing.clientSecret === 'string' && app?.secretHash != null && ctx.master.verifyClientSecret(app.secretHash, existing.clientSecret)) {
        candidate = existing.clientSecret;
      }
    } catch {
      /* missing or unreadable: a new secret */
    }
    sealed = await meta.setIfAbsent(BOOTSTRAP_SECRET_META, ctx.master.seal(candidate ?? newClientSecret(), BOOTSTRAP_SECRET_AAD));
  }
  const secret = ctx.master.unseal(sealed, BOOTSTRAP_SECRET_AAD);
  if (app?.secretHash == null || !ctx.master.verifyClientSecret(app.secretHash, secret)) {
    await applications.put(SYSTEM_TENANT, BOOTSTRAP_CLIENT_ID, {
      kind: 'service', clientId: BOOTSTRAP_CLIENT_ID, scopes: [ADMIN_SCOPE], audience: [ADMIN_AUDIENCE],
    }, ctx.master.hashClientSecret(secret));
    ctx.evictTenant(SYSTEM_TENANT);
  }
  return secret;
}

/** Writes the credentials file for the current address with the database's bootstrap secret. */
export async function writeAdminCredentials(ctx: ServerContext, dataDir: string): Promise<AdminCredentials> {
  const file = join(dataDir, BOOTSTRAP_CREDENTIALS_FILE);
  const secret = await bootstrapSecret(ctx, file);
  const addr = ctx.address();
  const creds: AdminCredentials = {
    clientId: BOOTSTRAP_CLIENT_ID,
    clientSecret: secret,
    issuer: issuerUrl(addr, SYSTEM_TENANT),
    tokenEndpoint: endpointUrl(addr, SYSTEM_TENANT, 'token'),
    resource: ADMIN_AUDIENCE,
    scope: ADMIN_SCOPE,
    adminUrl: adminBaseUrl(addr),
  };
  // Write-then-rename so a reader never sees half a file; mode 0600 from the first byte.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return creds;
}
