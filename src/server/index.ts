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
import { SSF_LONG_POLL_SECONDS, adminBaseUrl, isLocalHost, issuerUrl, type ServerAddress } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { createApp, createHandler } from './app.ts';
import { ensureSystemTenant, openMasterKey, writeAdminCredentials } from './bootstrap.ts';
import type { AdminCredentials, EdgeHost } from '../contract/index.ts';
import { tokenSettings, type ServerOptions } from './config.ts';
import { DEFAULTS } from './options.ts';
import { StartupError, type DatabaseFaultKind } from './errors.ts';
import { loginSettings } from './login/options.ts';
import { DATABASE_URL_ENV, openStorage, purgeExpired, type GuardedStorage } from './storage/index.ts';
import { OpsState } from './ops/index.ts';
import { jsonLogLine } from './ops/log.ts';
import { ServerMetrics } from './ops/metrics.ts';
import { ProviderCache } from './tenancy.ts';
import { SYSTEM_TENANT } from './config.ts';
import { scimSettings } from './scim/options.ts';
import { auditToEvents, revocationEvent } from './events/audit.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { BackchannelDispatcher } from './backchannel/dispatcher.ts';
import { SsfDispatcher } from './ssf/dispatcher.ts';
import { ssfRouter } from './ssf/router.ts';
import { SetSigner } from './ssf/sign.ts';
import { webhookSettings } from './webhooks/options.ts';

export type { ServerOptions, ClusterLink } from './config.ts';
export { jsonLogLine } from './ops/log.ts';
export { MASTER_KEY_FILE_ENV } from './_crypto.ts';
export { LIFETIMES, TOKEN_DEFAULTS, SYSTEM_TENANT, ADMIN_AUDIENCE, ADMIN_SCOPE, BOOTSTRAP_CREDENTIALS_FILE } from './config.ts';
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
  /** Live oidc-provider instances (for benchmarks and tests of the cache bound). */
  providerCount(): number;
  /**
   * Stops accepting, answers /readyz with 503, lets requests in flight finish (at most
   * `shutdownTimeoutSeconds`), ends the rest, closes storage. Idempotent.
   */
  close(): Promise<void>;
}

/** After a write failed for lack of space, a read-only file system or database, readiness stays 503 this long. */
const WRITE_FAULT_MEMORY_MS = 10_000;

/** Expired sessions, codes and tokens are swept this often. */
const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const baseDomain = options.baseDomain ?? DEFAULTS.baseDomain;
  const scheme = options.scheme ?? DEFAULTS.scheme;
  const host = options.host ?? DEFAULTS.host;
  const log = options.log ?? ((line: string) => process.stderr.write(`${jsonLogLine(line)}\n`));
  const tokens = tokenSettings(options);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const env = options.env ?? process.env;
  // Database faults are counted once the metrics exist (they are made below, asking storage for counts).
  let countFault: (kind: DatabaseFaultKind) => void = () => {};
  const storage: GuardedStorage = await openStorage({
    dataDir: options.dataDir, database: options.database ?? env[DATABASE_URL_ENV], log,
    ...(options.cluster === undefined ? {} : { locks: options.cluster.locks }),
    statementTimeoutMs: (options.statementTimeoutSeconds ?? DEFAULTS.statementTimeoutSeconds) * 1000,
    queryTimeoutMs: (options.queryTimeoutSeconds ?? DEFAULTS.queryTimeoutSeconds) * 1000,
    busyTimeoutMs: options.busyTimeoutMs ?? DEFAULTS.busyTimeoutMs,
    onFault: (f) => countFault(f.kind),
  });
  let master;
  try {
    master = await openMasterKey(options.dataDir, env, storage, options.masterKeyFile);
  } catch (err) {
    await storage.close();
    throw err;
  }
  let address: ServerAddress | undefined;
  const addressOf = () => {
    if (address === undefined) throw new Error('server address used before listening');
    return address;
  };
  const keyAlg = options.keyAlg ?? DEFAULTS.keyAlg;
  // The admin API's bootstrap credentials, once written (the apps at the edge call the admin API with them).
  let adminCredentials: AdminCredentials | undefined;
  const edge = options.edge ?? [];
  const edgeHost: EdgeHost = {
    address: addressOf,
    log,
    adminCredentials: () => adminCredentials,
    derive: (purpose) => master.derive(`edge:${purpose}`),
    seal: (plaintext, associated) => master.seal(plaintext, `edge:${associated}`),
    unseal: (sealed, associated) => master.unseal(sealed, `edge:${associated}`),
  };

  let providers: ProviderCache | undefined;
  const metrics = new ServerMetrics({ tenantCount: () => storage.tenants.count(), runtimes: () => providers?.size ?? 0 });
  countFault = (kind) => metrics.databaseFault(kind);
  const plainLogin = loginSettings(options.login ?? {}, options.dataDir, baseDomain, log);
  // Every audit line is counted, logged, and (sign-ins, factors, lockouts) kept in the event log.
  const recordAudit = auditToEvents(storage, log);
  const login = { ...plainLogin, audit: (event: Readonly<Record<string, unknown>>) => { metrics.audit(event); plainLogin.audit(event); recordAudit(event); } };

  providers = new ProviderCache(
    { storage, master, log, login, tokens, keyAlg, address: addressOf, edge, edgeHost },
    options.providerCacheSize ?? DEFAULTS.providerCacheSize,
    {
      built: (runtime) => {
        metrics.built();
        runtime.provider.on('grant.success', (c: { oidc?: { params?: { grant_type?: unknown } } }) => metrics.grant(c.oidc?.params?.grant_type, true));
        runtime.provider.on('grant.error', (c: { oidc?: { params?: { grant_type?: unknown } } }) => metrics.grant(c.oidc?.params?.grant_type, false));
        runtime.provider.on('grant.revoked', (c: { oidc?: Parameters<typeof revocationEvent>[1] }, grantId: string) => {
          storage.events.append([revocationEvent(runtime.tenant.name, c.oidc, grantId)]).catch((err: unknown) => log(`cannot record a token revocation at tenant ${runtime.tenant.name}: ${(err as Error).message}`));
        });
      },
    },
  );
  const cache = providers;
  if (options.cluster !== undefined) metrics.shareWithCluster();
  // Changes made through any replica (this one included) drop what is kept for the tenant.
  const unsubscribe = storage.changes.subscribe((tenant) => {
    metrics.invalidated();
    cache.evict(tenant);
  });
  const ctx: ServerContext = {
    storage, master, log, login, tokens, keyAlg, address: addressOf, scim: scimSettings(options.scim), edge, edgeHost,
    evictTenant: (t) => {
      // At once here, so the admin's next request sees the change; within a second elsewhere.
      cache.evict(t);
      storage.changes.publish(t).catch((err: unknown) => log(`cannot announce the change of tenant ${t} to other replicas: ${(err as Error).message}`));
    },
  };
  const ops = new OpsState(
    metrics,
    [
      { name: 'storage', run: () => storage.ping() },
      {
        name: 'writes',
        run: async () => {
          // A full disk, a read-only file system or a standby in recovery: reads may still answer.
          const last = storage.lastWriteFault();
          const ago = last === undefined ? Infinity : Date.now() - last.atMs;
          if (last !== undefined && ago < WRITE_FAULT_MEMORY_MS) throw new Error(`writes failed ${Math.round(ago / 1000)} s ago (${last.fault.kind.replace('_', ' ')}: ${last.fault.detail})`);
          await storage.pingWrite();
        },
      },
      { name: 'changes', run: async () => { if (!storage.changes.listening) throw new Error('not listening for changes made by other replicas'); } },
      {
        name: 'keys',
        run: async () => {
          // The system tenant's provider holds its unsealed keys: it builds only if they open.
          if ((await cache.get(SYSTEM_TENANT)) === undefined) throw new Error('the system tenant is missing');
        },
      },
    ],
    options.accessLog ?? false,
    log,
    options.cluster?.metricsText,
  );

  let server: Server | undefined;
  let timer: NodeJS.Timeout | undefined;
  const webhooks = new WebhookDispatcher(storage, master, webhookSettings(options.webhooks), log);
  // Back-channel logout goes under the webhooks' rules too; a server on a localhost base domain (a
  // developer's machine) may reach the apps beside it on loopback, where its tenants live too.
  const hookRules = webhookSettings(options.webhooks);
  const backchannel = new BackchannelDispatcher(storage, master, { ...hookRules, allowPrivateAddresses: hookRules.allowPrivateAddresses || isLocalHost(baseDomain) }, (t) => issuerUrl(ctx.address(), t), log);
  // The SSF transmitter pushes under the webhooks' rules (SSRF, timeout, retries) from the same outbox.
  const ssfSigner = new SetSigner(storage, master);
  const ssf = new SsfDispatcher(storage, ssfSigner, master, webhookSettings(options.webhooks), (t) => issuerUrl(ctx.address(), t), log);
  try {
    await ensureSystemTenant(ctx);
    const budgetMs = (options.requestTimeoutSeconds ?? DEFAULTS.requestTimeoutSeconds) * 1000;
    // A long poll ends well within the request's budget.
    const longPollMs = Math.max(0, Math.min(SSF_LONG_POLL_SECONDS * 1000, budgetMs - 2000));
    const app = createApp(ctx, cache, options.trustedProxies ?? (scheme === 'https' ? 1 : 0), ssfRouter(ctx, ssf, ssfSigner, longPollMs));
    server = createServer(createHandler(ctx, cache, app, ops, budgetMs));
    // Keep-alive beyond typical proxy idle timeouts, so proxies never reuse a socket we just closed.
    server.keepAliveTimeout = 65_000;
    // A request's headers and body must arrive within its budget too (node's own limit is 5 minutes);
    // tenant batches, exempt above, still get node's.
    server.headersTimeout = Math.min(60_000, budgetMs + 1000);
    const wanted = options.port ?? DEFAULTS.port;
    // With a fixed port the credentials file is written before the port opens, so a client that
    // waits for the port (idforge apply in scripts) never finds it missing.
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
      server!.listen({ port: wanted, host, reusePort: options.reusePort === true }, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    address = { scheme, baseDomain, port: options.publicPort ?? port };
    adminCredentials ??= await writeAdminCredentials(ctx, options.dataDir);
    timer = setInterval(() => {
      purgeExpired(storage).catch((err: unknown) => log(`purge failed: ${(err as Error).message}`));
    }, PURGE_INTERVAL_MS);
    timer.unref();
    // Webhooks: the event log's outbox delivered in the background, never in a request's way.
    webhooks.start();
    await backchannel.start();
    ssf.start();

    const addr = address;
    let closing: Promise<void> | undefined;
    const srv = server;
    const drainMs = (options.shutdownTimeoutSeconds ?? DEFAULTS.shutdownTimeoutSeconds) * 1000;
    return {
      url: adminBaseUrl(addr).slice(0, -'/admin/v1'.length),
      port,
      address: addr,
      adminUrl: adminBaseUrl(addr),
      issuer: (t) => issuerUrl(addr, t),
      adminCredentials,
      storage: storage.description,
      providerCount: () => cache.size,
      close: () => {
        closing ??= (async () => {
          clearInterval(timer);
          await webhooks.stop();
          await ssf.stop();
          await backchannel.stop();
          ops.startDraining();
          const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
          // Idle keep-alive connections go now; busy ones after their response (Connection: close).
          srv.closeIdleConnections();
          if (!(await ops.drained(drainMs))) log(`shutdown: ${ops.inFlight} request(s) still in flight after ${drainMs / 1000} s; closing their connections`);
          srv.closeAllConnections();
          await closed;
          unsubscribe();
          cache.clear();
          login.mailer.close();
          await storage.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    clearInterval(timer);
    await webhooks.stop();
    await ssf.stop();
    await backchannel.stop();
    unsubscribe();
    server?.close();
    await storage.close();
    throw err;
  }
}
