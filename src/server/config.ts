/**
 * Server settings and their defaults, one block per key.
 */
import { DEFAULT_ACCESS_TOKEN_LIFETIME, DEFAULT_REFRESH_REUSE_GRACE, MAX_REFRESH_REUSE_GRACE, type EdgeApp, type SigningAlg } from '../contract/index.ts';
import { StartupError } from './errors.ts';
import type { LoginOptions } from './login/options.ts';
import type { NamedLocks } from './storage/_keyed-locks.ts';
import type { ScimOptions } from './scim/options.ts';
import type { WebhookOptions } from './webhooks/options.ts';

/**
 * Token and artifact lifetimes, in seconds. Access tokens are JWTs that resource servers verify
 * offline and nobody can revoke, so they are short; refresh tokens carry long sessions instead and
 * are revocable (rotated on every use, dropped when an assignment, a user or an application goes).
 */
export const LIFETIMES = {
  /**
   * JWT access tokens for users: 5 minutes by default (`accessTokenLifetime`), which clients with a
   * 60 s expiry margin can use; revocation is pushed instead (src/contract/tokens.ts).
   */
  AccessToken: DEFAULT_ACCESS_TOKEN_LIFETIME,
  /** client_credentials JWTs (machine clients, the admin bootstrap client): 10 minutes. */
  ClientCredentials: 10 * 60,
  /** ID tokens: 1 hour; they prove a login, clients should not use them as API credentials. */
  IdToken: 60 * 60,
  /** Authorization codes: 1 minute, single use. */
  AuthorizationCode: 60,
  /** Refresh tokens: 14 days since the grant, each rotated token inheriting the remainder. */
  RefreshToken: 14 * 24 * 60 * 60,
  /** Login sessions at the tenant and the grants they hold: 14 days. */
  Session: 14 * 24 * 60 * 60,
  Grant: 14 * 24 * 60 * 60,
  /** A login page may stay open 1 hour. */
  Interaction: 60 * 60,
} as const;

export interface ServerOptions {
  /**
   * Where the master key (unless IDFORGE_MASTER_KEY is set), the bootstrap credentials, the mail
   * outbox and (without `database`) the SQLite database live. Created if missing.
   */
  readonly dataDir: string;
  /**
   * PostgreSQL URL (`postgres://user:password@host:port/database`): state lives there instead of
   * SQLite in the data dir, so several replicas can share it; the schema is migrated at start.
   * Default: IDFORGE_DATABASE_URL from `env`; when that is unset too, SQLite.
   */
  readonly database?: string;
  /**
   * File holding the master key (32 bytes, base64url). Every replica of one database must use
   * the same key: give them the same file. Made (mode 0600, never overwritten) when missing and the
   * database holds nothing yet. Default: IDFORGE_MASTER_KEY_FILE from `env`, else the key in
   * IDFORGE_MASTER_KEY, else `<dataDir>/master.key`.
   */
  readonly masterKeyFile?: string;
  /** Base domain; tenants are `<tenant>.<baseDomain>`. Default `localhost`. */
  readonly baseDomain?: string;
  /** Port to listen on; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to bind; default `127.0.0.1`. */
  readonly host?: string;
  /**
   * Listen with SO_REUSEPORT (Linux), so several replicas on one machine share the port and the
   * kernel spreads connections over them (the Pulumi AuthServer's local-replicas mode). Default off:
   * a second server on the port is then an error, as it should be by mistake.
   */
  readonly reusePort?: boolean;
  /**
   * Scheme of the public URLs (issuer). Default `http`. With `https` the server expects a TLS
   * terminating proxy in front and trusts its X-Forwarded-* headers.
   */
  readonly scheme?: 'http' | 'https';
  /**
   * Reverse proxies in front of the server whose X-Forwarded-For entries are believed. The
   * client address (per-address login limits, audit lines) is the entry this many hops from the
   * right; entries further left are written by the client and could be forged. Default: 1 with
   * `https` (one TLS-terminating proxy), 0 with `http` (the socket's address).
   */
  readonly trustedProxies?: number;
  /**
   * Public port in URLs when it differs from the listening port (behind a proxy). Default: the
   * listening port.
   */
  readonly publicPort?: number;
  /** Signing algorithm of new tenants' keys. Default RS256. */
  readonly keyAlg?: SigningAlg;
  /**
   * How many tenants' oidc-provider instances stay built (least recently used go first). Default
   * 1000: about 70 KB of heap each (200 KB of RSS with the garbage they churn), so a process stays
   * well under 1 GB with any number of tenants. Discovery and JWKS are answered without one, from a
   * small per-tenant cache; a rebuild reads nothing from the database (tenancy.ts).
   */
  readonly providerCacheSize?: number;
  /**
   * close() (and SIGTERM under `idforge serve`) first stops accepting and answers /readyz with 503,
   * then waits this long at most for requests in flight before it ends the rest. Default 25 s:
   * inside Kubernetes' 30 s grace period.
   */
  readonly shutdownTimeoutSeconds?: number;
  /** One JSON line per request in the log (method, path, status, ms, tenant, request id). Default off. */
  readonly accessLog?: boolean;
  /**
   * Every request's time budget, in seconds: a request not answered by then gets a 503 with
   * Retry-After (and its connection is closed if an answer had begun), and the request's body must
   * arrive within it too (slow uploads). Default 30. Tenant batches (`POST /admin/v1/tenants/{t}/batch`)
   * are exempt: one may hash thousands of initial passwords, and its size is bounded instead.
   */
  readonly requestTimeoutSeconds?: number;
  /**
   * Apps served at the edge of every tenant host (the admin console, src/console): the entry point
   * (bin/idforge.js, or a test) hands them in; the server routes their path to them and answers
   * their sign-in client. Default none.
   */
  readonly edge?: readonly EdgeApp[];
  /**
   * PostgreSQL's statement timeout, in seconds: a statement running (or waiting for a lock) longer
   * is cancelled by the database, and its request answered 503 with Retry-After; the connection
   * stays usable. Default 10: far above any statement's normal time (a batch of 10,000 users is a
   * few statements of well under a second), and within the request budget.
   */
  readonly statementTimeoutSeconds?: number;
  /**
   * How long, in seconds, to wait for any answer of PostgreSQL (node-postgres `query_timeout`):
   * past it the request gets 503 with Retry-After and the connection is closed. For a database that
   * cannot even cancel (paused, or behind a partition that keeps connections open). Default 15: the
   * statement timeout plus room for the database's own cancel to arrive first.
   */
  readonly queryTimeoutSeconds?: number;
  /**
   * SQLite's busy timeout, in ms: how long a statement waits for another process's write lock
   * (`--workers` share the file) before failing, which the request answers 503 with Retry-After.
   * Default 5000.
   */
  readonly busyTimeoutMs?: number;
  /** Environment (master key). Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where to log one-line notices (and login audit lines, JSON); default stderr. */
  readonly log?: (line: string) => void;
  /** Lockout, backoff, emailed-code lifetime, mail delivery: defaults in login/options.ts. */
  readonly login?: LoginOptions;
  /**
   * Seconds a user's JWT access token lives. Default 300 (LIFETIMES.AccessToken): an API that hears
   * of no revocation accepts a token until it expires, so this bounds how long access outlives a
   * revoked assignment there; the generated clients refresh at half of it. At most 3600 (signing keys are published for
   * the longest token life after retirement).
   */
  readonly accessTokenLifetime?: number;
  /**
   * Seconds a used refresh token may be used again (each use rotates it). Default 5: two refreshes
   * in parallel with one token (a duplicated tab, a retried request) both succeed; a use later
   * than this is taken for theft and ends the whole grant (RFC 9700 §4.14.2). 0 turns it off.
   * Okta allows 0-60 s, Amazon Cognito 0-60 s, Ory Hydra a configurable period.
   */
  readonly refreshTokenReuseGrace?: number;
  /**
   * Set by `idforge serve --workers` in each worker: what the processes serving one port share
   * through the cluster primary (sign-in locks on SQLite, the metrics of every worker).
   */
  readonly cluster?: ClusterLink;
  /** The SCIM endpoint's rate limit per token: defaults in scim/options.ts. */
  readonly scim?: ScimOptions;
  /** Webhook delivery (private addresses, timeouts, retries): defaults in webhooks/options.ts. */
  readonly webhooks?: WebhookOptions;
}

/** Token settings the server runs with (ServerOptions, defaults applied and checked). */
export interface TokenSettings {
  readonly accessTokenLifetime: number;
  readonly refreshTokenReuseGrace: number;
}

export const TOKEN_DEFAULTS: TokenSettings = { accessTokenLifetime: LIFETIMES.AccessToken, refreshTokenReuseGrace: DEFAULT_REFRESH_REUSE_GRACE };

/** The options' token settings, or a StartupError naming the option. */
export function tokenSettings(o: Pick<ServerOptions, 'accessTokenLifetime' | 'refreshTokenReuseGrace'>): TokenSettings {
  const seconds = (name: string, v: number | undefined, fallback: number, min: number, max: number) => {
    if (v === undefined) return fallback;
    if (!Number.isInteger(v) || v < min || v > max) throw new StartupError(`${name} must be a whole number of seconds from ${min} to ${max}, got ${v}`);
    return v;
  };
  return {
    accessTokenLifetime: seconds('accessTokenLifetime', o.accessTokenLifetime, TOKEN_DEFAULTS.accessTokenLifetime, 1, LIFETIMES.IdToken),
    // Longer would let a stolen token be used for minutes after its rightful use.
    refreshTokenReuseGrace: seconds('refreshTokenReuseGrace', o.refreshTokenReuseGrace, TOKEN_DEFAULTS.refreshTokenReuseGrace, 0, MAX_REFRESH_REUSE_GRACE),
  };
}

/** What a worker gets from the cluster primary. */
export interface ClusterLink {
  /** Serializes sign-in attempts between the workers (SQLite; PostgreSQL's advisory locks need none). */
  readonly locks: NamedLocks;
  /** The metrics of every worker, summed (prom-client's AggregatorRegistry in the primary). */
  readonly metricsText: () => Promise<string>;
}

export { SYSTEM_TENANT, ADMIN_AUDIENCE, ADMIN_SCOPE } from '../contract/index.ts';
/** File in the data dir with the bootstrap admin client's credentials (mode 0600). */
export { ADMIN_CREDENTIALS_FILE as BOOTSTRAP_CREDENTIALS_FILE } from '../contract/index.ts';
export const BOOTSTRAP_CLIENT_ID = 'idforge-admin';
