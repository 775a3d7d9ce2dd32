/**
 * The authorization server's public API.
 *
 *   const server = await startServer({ dataDir, port: 0, baseDomain: 'localhost' });
 *   server.url            // http://localhost:PORT (the base host: admin API)
 *   server.issuer('acme') // http://acme.localhost:PORT/oauth2/
 *   await server.close();
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminBaseUrl, issuerUrl, type ServerAddress } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { createApp, createHandler } from './app.ts';
import { ensureSystemTenant, openMasterKey, writeAdminCredentials } from './bootstrap.ts';
import type { AdminCredentials } from '../contract/index.ts';
import { DEFAULTS, type ServerOptions } from './config.ts';
import { StartupError } from './errors.ts';
import { loginSettings } from './login/options.ts';
import { DATABASE_URL_ENV, openStorage, purgeExpired, type Storage } from './storage/index.ts';
import { ProviderCache } from './tenancy.ts';
import { scimSettings } from './scim/options.ts';

export type { ServerOptions } from './config.ts';
export { LIFETIMES, SYSTEM_TENANT, ADMIN_AUDIENCE, ADMIN_SCOPE, BOOTSTRAP_CREDENTIALS_FILE } from './config.ts';
export type { AdminCredentials } from '../contract/index.ts';
export { PASSWORD_HASH_PARAMS, MASTER_KEY_ENV } from './_crypto.ts';
export { ServerError, StartupError } from './errors.ts';
export type { Storage } from './storage/index.ts';
export { DATABASE_URL_ENV } from './storage/index.ts';
export type { LoginFactor, LoginPolicy } from './login/factors.ts';
export type { LoginOptions } from './login/options.ts';
export { LOGIN_DEFAULTS } from './login/options.ts';
export { SCIM_DEFAULTS, type ScimOptions } from './scim/options.ts';

export interface RunningServer {
  /** Base URL, e.g. `http://localhost:3000`; the admin API is at `${url}/admin/v1`. */
  readonly url: string;
  readonly port: number;
  readonly address: ServerAddress;
  readonly adminUrl: string;
  issuer(tenant: string): string;
  /** The bootstrap admin client's credentials (also in `<dataDir>/admin-credentials.json`). */
  readonly adminCredentials: AdminCredentials;
  /** Where state lives: `sqlite <file>` or `postgres <host>:<port>/<database>`. */
  readonly storage: string;
  /** Live oidc-provider instances (for benchmarks and tests of the LRU bound). */
  providerCount(): number;
  /** Stops accepting, ends open connections, closes storage. Idempotent. */
  close(): Promise<void>;
}

/** Expired sessions, codes and tokens are swept this often. */
const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const baseDomain = options.baseDomain ?? DEFAULTS.baseDomain;
  const scheme = options.scheme ?? DEFAULTS.scheme;
  const host = options.host ?? DEFAULTS.host;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const env = options.env ?? process.env;
  const storage: Storage = await openStorage({ dataDir: options.dataDir, database: options.database ?? env[DATABASE_URL_ENV], log });
  let master;
  try {
    master = await openMasterKey(options.dataDir, env, storage);
  } catch (err) {
    await storage.close();
    throw err;
  }
  const login = loginSettings(options.login ?? {}, options.dataDir, baseDomain, log);

  let address: ServerAddress | undefined;
  const providers: ProviderCache = new ProviderCache(
    {
      storage, master, log, login, keyAlg: options.keyAlg ?? DEFAULTS.keyAlg,
      address: () => {
        if (address === undefined) throw new Error('server address used before listening');
        return address;
      },
    },
    options.providerCacheSize ?? DEFAULTS.providerCacheSize,
  );
  const ctx: ServerContext = {
    storage, master, log, login, keyAlg: options.keyAlg ?? DEFAULTS.keyAlg,
    address: () => {
      if (address === undefined) throw new Error('server address used before listening');
      return address;
    },
    evictTenant: (t) => providers.evict(t),
    scim: scimSettings(options.scim),
  };

  let server: Server | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await ensureSystemTenant(ctx);
    const app = createApp(ctx, providers, options.trustedProxies ?? (scheme === 'https' ? 1 : 0));
    server = createServer(createHandler(ctx, providers, app));
    // Keep-alive beyond typical proxy idle timeouts, so proxies never reuse a socket we just closed.
    server.keepAliveTimeout = 65_000;
    const wanted = options.port ?? DEFAULTS.port;
    // With a fixed port the credentials file is written before the port opens, so a client that
    // waits for the port (idforge apply in scripts) never finds it missing.
    let adminCredentials: AdminCredentials | undefined;
    if (wanted !== 0) {
      address = { scheme, baseDomain, port: options.publicPort ?? wanted };
      adminCredentials = await writeAdminCredentials(ctx, options.dataDir);
    }
    await new Promise<void>((resolve, reject) => {
      server!.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL'
            ? new StartupError(`cannot listen on ${host}:${wanted}: ${err.code === 'EADDRINUSE' ? 'the port is already in use (stop the other process or choose another --port)' : err.code === 'EACCES' ? 'permission denied (choose a port above 1023)' : 'no such address on this machine (check --host)'}`)
            : err,
        ),
      );
      server!.listen(wanted, host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    address = { scheme, baseDomain, port: options.publicPort ?? port };
    adminCredentials ??= await writeAdminCredentials(ctx, options.dataDir);
    timer = setInterval(() => {
      purgeExpired(storage).catch((err: unknown) => log(`purge failed: ${(err as Error).message}`));
    }, PURGE_INTERVAL_MS);
    timer.unref();

    const addr = address;
    let closing: Promise<void> | undefined;
    const srv = server;
    return {
      url: adminBaseUrl(addr).slice(0, -'/admin/v1'.length),
      port,
      address: addr,
      adminUrl: adminBaseUrl(addr),
      issuer: (t) => issuerUrl(addr, t),
      adminCredentials,
      storage: storage.description,
      providerCount: () => providers.size,
      close: () => {
        closing ??= (async () => {
          clearInterval(timer);
          await new Promise<void>((resolve) => {
            srv.close(() => resolve());
            srv.closeAllConnections();
          });
          providers.clear();
          login.mailer.close();
          await storage.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    clearInterval(timer);
    server?.close();
    await storage.close();
    throw err;
  }
}
