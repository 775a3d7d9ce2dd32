/**
 * Server settings and their defaults, one block per key.
 */
import type { SigningAlg } from './keys.ts';
import type { LoginOptions } from './login/options.ts';
import type { ScimOptions } from './scim/options.ts';

/**
 * Token and artifact lifetimes, in seconds. Access tokens are JWTs that resource servers verify
 * offline and nobody can revoke, so they are short; refresh tokens carry long sessions instead and
 * are revocable (rotated on every use for public clients, dropped when an assignment goes).
 */
export const LIFETIMES = {
  /** JWT access tokens for users: 10 minutes. */
  AccessToken: 10 * 60,
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
  /** Base domain; tenants are `<tenant>.<baseDomain>`. Default `localhost`. */
  readonly baseDomain?: string;
  /** Port to listen on; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to bind; default `127.0.0.1`. */
  readonly host?: string;
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
  /** How many tenants' oidc-provider instances stay in memory (LRU). Default 500. */
  readonly providerCacheSize?: number;
  /** Environment (master key). Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where to log one-line notices (and login audit lines, JSON); default stderr. */
  readonly log?: (line: string) => void;
  /** Lockout, backoff, emailed-code lifetime, mail delivery: defaults in login/options.ts. */
  readonly login?: LoginOptions;
  /** The SCIM endpoint's rate limit per token: defaults in scim/options.ts. */
  readonly scim?: ScimOptions;
}

export const DEFAULTS = {
  baseDomain: 'localhost',
  port: 0,
  host: '127.0.0.1',
  scheme: 'http' as const,
  keyAlg: 'RS256' as SigningAlg,
  providerCacheSize: 500,
};

export { SYSTEM_TENANT, ADMIN_AUDIENCE, ADMIN_SCOPE } from '../contract/index.ts';
/** File in the data dir with the bootstrap admin client's credentials (mode 0600). */
export { ADMIN_CREDENTIALS_FILE as BOOTSTRAP_CREDENTIALS_FILE } from '../contract/index.ts';
export const BOOTSTRAP_CLIENT_ID = 'idforge-admin';
