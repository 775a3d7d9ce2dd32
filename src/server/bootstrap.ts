/**
 * The built-in system tenant and the bootstrap admin client. The system tenant issues admin API
 * tokens; its client's credentials are written to `<dataDir>/admin-credentials.json` (mode 0600)
 * so that whoever can read the data dir (the operator, `idforge plan/apply --data-dir`) can get a
 * token with client_credentials. The secret is stored hashed; if the file is lost or no longer
 * matches, a new secret is made and written (access to the data dir is admin access anyway).
 */
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { adminBaseUrl, endpointUrl, issuerUrl } from '../schema/urls.ts';
import type { ServerContext } from './_context.ts';
import { newClientSecret } from './_crypto.ts';
import {
  ADMIN_AUDIENCE, ADMIN_SCOPE, BOOTSTRAP_CLIENT_ID, BOOTSTRAP_CREDENTIALS_FILE, SYSTEM_TENANT,
} from './config.ts';
import { newTenantKeys } from './keys.ts';

export interface AdminCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly issuer: string;
  readonly tokenEndpoint: string;
  /** Resource indicator to request (RFC 8707); the token's audience. */
  readonly resource: string;
  readonly scope: string;
  readonly adminUrl: string;
}

/** Creates the system tenant, its admin API resource and the bootstrap client if missing. */
export async function ensureSystemTenant(ctx: ServerContext): Promise<void> {
  const s = ctx.storage;
  if ((await s.getTenant(SYSTEM_TENANT)) === undefined) {
    const keys = await newTenantKeys(ctx.master, SYSTEM_TENANT, ctx.keyAlg);
    await s.putTenant(SYSTEM_TENANT, { displayName: 'idforge system', scopes: [{ name: ADMIN_SCOPE, description: 'administer every tenant' }] }, keys);
  }
  if ((await s.getApplication(SYSTEM_TENANT, 'admin-api')) === undefined) {
    await s.putApplication(SYSTEM_TENANT, 'admin-api', { kind: 'api', identifier: ADMIN_AUDIENCE, scopes: [ADMIN_SCOPE], displayName: 'idforge admin API' }, null);
  }
}

/** Writes the credentials file for the current address, keeping a secret that still matches. */
export async function writeAdminCredentials(ctx: ServerContext, dataDir: string): Promise<AdminCredentials> {
  const file = join(dataDir, BOOTSTRAP_CREDENTIALS_FILE);
  const app = await ctx.storage.getApplication(SYSTEM_TENANT, BOOTSTRAP_CLIENT_ID);
  let secret: string | undefined;
  try {
    const existing = JSON.parse(readFileSync(file, 'utf8')) as Partial<AdminCredentials>;
    if (typeof existing.clientSecret === 'string' && app?.secretHash != null && ctx.master.verifyClientSecret(app.secretHash, existing.clientSecret)) {
      secret = existing.clientSecret;
    }
  } catch {
    /* missing or unreadable: make a new secret below */
  }
  if (secret === undefined) {
    secret = newClientSecret();
    await ctx.storage.putApplication(SYSTEM_TENANT, BOOTSTRAP_CLIENT_ID, {
      kind: 'service', clientId: BOOTSTRAP_CLIENT_ID, scopes: [ADMIN_SCOPE], audience: [ADMIN_AUDIENCE],
    }, ctx.master.hashClientSecret(secret));
  }
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
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return creds;
}
