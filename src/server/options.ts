/**
 * `idforge serve`'s options, one row each: flag, the setting it fills, its environment variable,
 * default, and meaning. The row is the one source: the argument parser, `--help`, the usage line,
 * the in-process DEFAULTS (config.ts) and the option list in src/server/README.md (kept equal by a
 * test) are all read from it.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { MASTER_KEY_ENV, MASTER_KEY_FILE_ENV } from './_crypto.ts';
import { UsageError } from '../command/io.ts';
import { LOGIN_DEFAULTS, type LoginOptions } from './login/options.ts';
import { SCIM_DEFAULTS, type ScimOptions } from './scim/options.ts';
import { WEBHOOK_DEFAULTS, type WebhookOptions } from './webhooks/options.ts';
import { DATABASE_URL_ENV } from './storage/index.ts';
import type { ServerOptions } from './config.ts';
import { DEFAULT_ACCESS_TOKEN_LIFETIME, DEFAULT_REFRESH_REUSE_GRACE, type SigningAlg } from '../contract/index.ts';

/** What a value must look like; also how it is parsed. */
type Kind =
  | 'path' // resolved against the working directory
  | 'text'
  | 'port' // 0-65535
  | 'positive' // a number > 0
  | 'count' // a number >= 0
  | 'flag' // present or not
  | { readonly oneOf: readonly string[] };

/** The settings `idforge serve` fills: the server's options, plus how many processes run them. */
export interface ServeSettings extends ServerOptions {
  /** Processes serving one port (node:cluster); 1 runs the server in the command's own process. */
  readonly workers: number;
}

type Key = Exclude<keyof ServeSettings, 'login' | 'scim' | 'webhooks' | 'env' | 'log'> | `login.${keyof LoginOptions}` | `scim.${keyof ScimOptions}` | `webhooks.${keyof WebhookOptions}`;

export interface OptionRow {
  readonly flag: `--${string}`;
  readonly key: Key;
  readonly kind: Kind;
  /** Placeholder in the usage line, e.g. `<dir>`. */
  readonly meta?: string;
  readonly env?: string;
  /** The default `idforge serve` uses (undefined: unset unless given). */
  readonly default?: string | number | boolean | (() => number);
  /** How the default reads in help and README, when the value alone would not say it. */
  readonly defaultText?: string;
  readonly required?: boolean;
  readonly group: 'server' | 'database' | 'operations' | 'sign-in' | 'scim' | 'webhooks';
  readonly help: string;
}

/** Every option of `idforge serve`. Order is the order of `--help` and the README. */
export const SERVE_OPTIONS: readonly OptionRow[] = [
  {
    flag: '--data-dir', key: 'dataDir', kind: 'path', meta: '<dir>', required: true, group: 'server',
    help: 'the bootstrap admin credentials (admin-credentials.json, mode 0600), the mail outbox, the master key when none is given, and without --database the SQLite database; created if missing',
  },
  {
    flag: '--database', key: 'database', kind: 'text', meta: '<postgres-url>', env: DATABASE_URL_ENV, group: 'server', defaultText: 'SQLite in the data dir',
    help: 'PostgreSQL instead of SQLite: postgres://user:password@host:port/database; replicas share it (the schema is migrated at start)',
  },
  {
    flag: '--db-statement-timeout', key: 'statementTimeoutSeconds', kind: 'positive', meta: '<s>', default: 10, group: 'database',
    help: 'PostgreSQL: a statement running (or waiting for a lock) longer is cancelled by the database, and its request answered 503 with Retry-After',
  },
  {
    flag: '--db-query-timeout', key: 'queryTimeoutSeconds', kind: 'positive', meta: '<s>', default: 15, group: 'database',
    help: 'PostgreSQL: how long to wait for any answer of the database (a paused server, a partition that keeps connections open); then the request gets 503 with Retry-After and the connection is closed',
  },
  {
    flag: '--db-busy-timeout', key: 'busyTimeoutMs', kind: 'count', meta: '<ms>', default: 5000, group: 'database',
    help: "SQLite: how long a statement waits for another process's write lock (--workers share the file); then the request gets 503 with Retry-After",
  },
  {
    flag: '--master-key-file', key: 'masterKeyFile', kind: 'path', meta: '<file>', env: MASTER_KEY_FILE_ENV, group: 'server',
    defaultText: `$${MASTER_KEY_ENV}, else <data-dir>/master.key`,
    help: 'the master key (32 bytes, base64url): give every replica the same file; made (mode 0600) if missing and the database is new',
  },
  { flag: '--port', key: 'port', kind: 'port', meta: '<n>', default: 9080, group: 'server', help: 'port to listen on (0 picks a free one)' },
  {
    flag: '--base-domain', key: 'baseDomain', kind: 'text', meta: '<domain>', default: 'localhost', group: 'server',
    help: 'tenants are served at <tenant>.<base-domain>, the admin API, health and metrics at the base domain itself',
  },
  {
    flag: '--scheme', key: 'scheme', kind: { oneOf: ['http', 'https'] }, default: 'http', group: 'server',
    help: 'scheme of public URLs; with https, put a TLS-terminating proxy in front: the server trusts its X-Forwarded-* headers',
  },
  {
    flag: '--access-token-lifetime', key: 'accessTokenLifetime', kind: 'positive', meta: '<s>', default: DEFAULT_ACCESS_TOKEN_LIFETIME, group: 'server',
    help: "seconds a user's JWT access token lives (at most 3600): the longest a removed assignment, user or application still opens an API (see the server README, Revocation)",
  },
  {
    flag: '--refresh-reuse-grace', key: 'refreshTokenReuseGrace', kind: 'count', meta: '<s>', default: DEFAULT_REFRESH_REUSE_GRACE, group: 'server',
    help: 'seconds a used refresh token still works once more, for parallel refreshes and retries (at most 60; 0 = off)',
  },
  {
    flag: '--reuse-port', key: 'reusePort', kind: 'flag', default: false, group: 'server',
    help: 'let other processes listen on the same port (SO_REUSEPORT, Linux): the kernel spreads connections over local replicas',
  },
  { flag: '--host', key: 'host', kind: 'text', meta: '<addr>', default: '127.0.0.1', group: 'server', help: 'address to bind (0.0.0.0 in a container)' },
  {
    flag: '--public-port', key: 'publicPort', kind: 'port', meta: '<n>', group: 'server', defaultText: 'the listening port',
    help: 'port in public URLs when a proxy or load balancer listens on another port than the server',
  },
  {
    flag: '--trusted-proxies', key: 'trustedProxies', kind: 'count', meta: '<n>', group: 'server', defaultText: '1 with https, 0 with http',
    help: "proxies in front whose X-Forwarded-For entries are believed; the client address is read that many hops from the right",
  },
  { flag: '--key-alg', key: 'keyAlg', kind: { oneOf: ['RS256', 'ES256'] }, default: 'RS256', group: 'server', help: "signing algorithm of new tenants' keys" },
  {
    flag: '--workers', key: 'workers', kind: 'positive', meta: '<n>', default: () => availableParallelism(), defaultText: 'the number of CPUs', group: 'operations',
    help: 'processes serving the one port (node:cluster), sharing the storage; a worker that dies is replaced',
  },
  {
    flag: '--shutdown-timeout', key: 'shutdownTimeoutSeconds', kind: 'count', meta: '<s>', default: 25, group: 'operations',
    help: 'on SIGTERM or SIGINT: stop accepting, answer /readyz 503, let requests in flight finish for at most this long, then close',
  },
  {
    flag: '--request-timeout', key: 'requestTimeoutSeconds', kind: 'positive', meta: '<s>', default: 30, group: 'operations',
    help: 'time budget of every request (its body included): unanswered by then, it gets 503 with Retry-After; tenant batches are exempt',
  },
  {
    flag: '--access-log', key: 'accessLog', kind: 'flag', default: false, group: 'operations',
    help: 'one JSON line per request (method, path, status, duration, tenant, request id); errors are logged either way',
  },
  {
    flag: '--provider-cache-size', key: 'providerCacheSize', kind: 'positive', meta: '<n>', default: 1000, group: 'operations',
    help: "tenants' oidc-provider instances kept built per process (least recently used go first); discovery and JWKS never need one",
  },
  { flag: '--smtp-url', key: 'login.smtpUrl', kind: 'text', meta: '<url>', group: 'sign-in', help: "the server's own SMTP relay, for tenants that declare no mail settings, e.g. smtps://user:pass@mail.example.com" },
  {
    flag: '--mail-outbox', key: 'login.mailOutbox', kind: 'path', meta: '<dir>', group: 'sign-in', defaultText: '<data-dir>/outbox on localhost',
    help: 'without --smtp-url, write the mail of tenants without mail settings as .eml files here (the default only for a localhost base domain; elsewhere such mail is refused with a clear error)',
  },
  { flag: '--mail-from', key: 'login.mailFrom', kind: 'text', meta: '<addr>', group: 'sign-in', defaultText: 'idforge <no-reply@<base-domain>>', help: 'sender address' },
  { flag: '--otp-lifetime', key: 'login.otpLifetimeSeconds', kind: 'positive', meta: '<s>', default: LOGIN_DEFAULTS.otpLifetimeSeconds, group: 'sign-in', help: 'seconds an emailed code stays valid' },
  { flag: '--otp-attempts', key: 'login.otpMaxAttempts', kind: 'positive', meta: '<n>', default: LOGIN_DEFAULTS.otpMaxAttempts, group: 'sign-in', help: 'wrong entries that void an emailed code' },
  {
    flag: '--lockout-threshold', key: 'login.lockoutThreshold', kind: 'positive', meta: '<n>', default: LOGIN_DEFAULTS.lockoutThreshold, group: 'sign-in',
    help: 'failed attempts that lock an account (consecutive, on the email typed, existing or not)',
  },
  { flag: '--lockout-seconds', key: 'login.lockoutSeconds', kind: 'positive', meta: '<s>', default: LOGIN_DEFAULTS.lockoutSeconds, group: 'sign-in', help: 'how long a lock lasts' },
  {
    flag: '--failure-window', key: 'login.failureWindowSeconds', kind: 'positive', meta: '<s>', default: LOGIN_DEFAULTS.failureWindowSeconds, group: 'sign-in',
    help: 'how long a failure counts; after a failure-free spell this long the count starts afresh',
  },
  {
    flag: '--address-lockout-threshold', key: 'login.addressLockoutThreshold', kind: 'positive', meta: '<n>', default: LOGIN_DEFAULTS.addressLockoutThreshold, group: 'sign-in',
    help: 'failures from one client address (any accounts) that lock the address',
  },
  {
    flag: '--backoff-ms', key: 'login.backoffBaseMs', kind: 'count', meta: '<ms>', default: LOGIN_DEFAULTS.backoffBaseMs, group: 'sign-in',
    help: 'after 2 free failures per account (10 per address) each try waits this, doubling, at most 60 s; 0 = off',
  },
  {
    flag: '--scim-rate', key: 'scim.requestsPerSecond', kind: 'positive', meta: '<n>', default: SCIM_DEFAULTS.requestsPerSecond, group: 'scim',
    help: 'requests per second one SCIM token may make, sustained; beyond it, 429 with Retry-After',
  },
  {
    flag: '--scim-burst', key: 'scim.burst', kind: 'positive', meta: '<n>', default: SCIM_DEFAULTS.burst, group: 'scim',
    help: 'requests a SCIM token may make at once before the rate applies',
  },
  {
    flag: '--webhook-private-addresses', key: 'webhooks.allowPrivateAddresses', kind: 'flag', default: false, group: 'webhooks',
    help: "deliver webhooks to private, loopback and link-local addresses too (by default they are refused: a tenant's webhook must not reach the server's own network)",
  },
  {
    flag: '--webhook-timeout', key: 'webhooks.timeoutSeconds', kind: 'positive', meta: '<s>', default: WEBHOOK_DEFAULTS.timeoutSeconds, group: 'webhooks',
    help: 'seconds a webhook delivery may take before it counts as failed and is retried; a delivery whose server died mid-attempt is attempted again this plus 5 s later',
  },
];

/** Options that exclude each other. */
const EXCLUSIVE: readonly (readonly [string, string])[] = [['--smtp-url', '--mail-outbox']];

const metaOf = (r: OptionRow) => (r.kind === 'flag' ? '' : ` ${typeof r.kind === 'object' ? r.kind.oneOf.join('|') : (r.meta ?? '<value>')}`);

/** The usage line(s): required options first, wrapped below 120 columns. */
export function serveUsage(): string {
  const head = 'usage: idforge serve';
  const parts = SERVE_OPTIONS.map((r) => (r.required ? `${r.flag}${metaOf(r)}` : `[${r.flag}${metaOf(r)}]`));
  const lines: string[] = [head];
  for (const p of parts) {
    if (lines.at(-1)!.length + p.length + 1 > 118) lines.push(' '.repeat(head.length));
    lines[lines.length - 1] += ` ${p}`;
  }
  return lines.join('\n');
}

/** The default as people read it. */
export function defaultText(r: OptionRow): string | undefined {
  if (r.defaultText !== undefined) return r.defaultText;
  if (r.default === undefined || r.default === false) return undefined;
  return String(r.default);
}

const GROUP_TITLES = { server: 'Server', database: 'Database (bounds of its work; see src/server/README.md, "Storage")', operations: 'Operations (processes, shutdown, logs, caches)', 'sign-in': 'Sign-in (see src/server/README.md, "Login methods")',
  scim: 'SCIM (<tenant host>/scim/v2, see src/server/README.md, "SCIM"; the sign-in\'s guessing defence guards its tokens too)',
  webhooks: 'Webhooks (see the README, "Events: who changed what, from which commit")',
} as const satisfies Record<OptionRow['group'], string>;

/** `idforge serve --help`. */
export function serveHelp(): string {
  const out = [serveUsage(), '', 'Runs the authorization server until SIGINT or SIGTERM.'];
  for (const group of Object.keys(GROUP_TITLES) as (keyof typeof GROUP_TITLES)[]) {
    out.push('', `${GROUP_TITLES[group]}:`);
    for (const r of SERVE_OPTIONS.filter((o) => o.group === group)) {
      const d = defaultText(r);
      const extra = [r.env === undefined ? undefined : `env ${r.env}`, d === undefined ? undefined : `default ${d}`].filter(Boolean).join('; ');
      out.push(`  ${r.flag}${metaOf(r)}`, ...wrap(`${r.help}${extra === '' ? '' : ` (${extra})`}`, 94).map((l) => `      ${l}`));
    }
  }
  return `${out.join('\n')}\n`;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [''];
  for (const word of text.split(' ')) {
    if (lines.at(-1)!.length > 0 && lines.at(-1)!.length + word.length + 1 > width) lines.push('');
    lines[lines.length - 1] += `${lines.at(-1)!.length > 0 ? ' ' : ''}${word}`;
  }
  return lines;
}

/** The README's option table (src/server/README.md, between the `serve-options` markers). */
export function serveOptionsMarkdown(): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const rows = SERVE_OPTIONS.map((r) => {
    const d = defaultText(r);
    return `| \`${`${r.flag}${metaOf(r)}`.replace(/\|/g, '\\|')}\` | ${r.env === undefined ? '' : `\`${r.env}\``} | ${r.required ? 'required' : d === undefined ? '' : esc(d)} | ${esc(r.help)} |`;
  });
  return ['| option | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** node:util parseArgs' option config for the table. */
export function parseArgsConfig(): Record<string, { type: 'string' | 'boolean'; short?: string }> {
  return Object.fromEntries(SERVE_OPTIONS.map((r) => [r.flag.slice(2), { type: r.kind === 'flag' ? ('boolean' as const) : ('string' as const), ...(r.flag === '--port' ? { short: 'p' } : {}) }]));
}

function parseValue(r: OptionRow, raw: string | boolean, cwd: string): unknown {
  const bad = (what: string) => new UsageError(`${r.flag} must be ${what}, got '${String(raw)}'\n${serveUsage()}`);
  if (r.kind === 'flag') return raw === true;
  const value = String(raw);
  if (typeof r.kind === 'object') {
    if (!r.kind.oneOf.includes(value)) throw new UsageError(`${r.flag} must be ${r.kind.oneOf.join(' or ')}\n${serveUsage()}`);
    return value;
  }
  switch (r.kind) {
    case 'path':
      return resolve(cwd, value);
    case 'text':
      return value;
    case 'port': {
      const n = Number(value);
      if (value === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw bad('a port number');
      return n;
    }
    case 'positive':
    case 'count': {
      const n = Number(value);
      if (value === '' || !Number.isFinite(n) || n < 0 || (r.kind === 'positive' && n === 0)) throw bad(`a ${r.kind === 'positive' ? 'positive' : 'non-negative'} number`);
      return n;
    }
  }
}

/**
 * Parsed `idforge serve` arguments: every given option, and the table's default for the rest (an
 * environment variable named by a row is read by the server itself, so in-process hosts get it too).
 */
export function parseServeValues(values: Readonly<Record<string, string | boolean | undefined>>, cwd: string): ServeSettings {
  for (const r of SERVE_OPTIONS) if (r.required && values[r.flag.slice(2)] === undefined) throw new UsageError(`${r.flag} is required\n${serveUsage()}`);
  for (const [a, b] of EXCLUSIVE) {
    if (values[a.slice(2)] !== undefined && values[b.slice(2)] !== undefined) throw new UsageError(`${a} and ${b} exclude each other\n${serveUsage()}`);
  }
  const top: Record<string, unknown> = {};
  const nested: { login: Record<string, unknown>; scim: Record<string, unknown>; webhooks: Record<string, unknown> } = { login: {}, scim: {}, webhooks: {} };
  for (const r of SERVE_OPTIONS) {
    const given = values[r.flag.slice(2)];
    const value = given !== undefined ? parseValue(r, given, cwd) : typeof r.default === 'function' ? r.default() : r.default;
    if (value === undefined) continue;
    const dot = r.key.indexOf('.');
    if (dot > 0) nested[r.key.slice(0, dot) as keyof typeof nested][r.key.slice(dot + 1)] = value;
    else top[r.key] = value;
  }
  return { ...(top as unknown as ServeSettings), login: nested.login as LoginOptions, scim: nested.scim as ScimOptions, webhooks: nested.webhooks as WebhookOptions };
}

/** The defaults of the table's server options (config.ts's DEFAULTS reads them from here). */
export function tableDefault<K extends Key>(key: K): unknown {
  const r = SERVE_OPTIONS.find((o) => o.key === key);
  return typeof r?.default === 'function' ? r.default() : r?.default;
}

/** In-process defaults: `idforge serve`'s (options.ts), except the port: in-process hosts (tests) want a free one. */
export const DEFAULTS = {
  baseDomain: tableDefault('baseDomain') as string,
  port: 0,
  host: tableDefault('host') as string,
  scheme: tableDefault('scheme') as 'http' | 'https',
  keyAlg: tableDefault('keyAlg') as SigningAlg,
  providerCacheSize: tableDefault('providerCacheSize') as number,
  shutdownTimeoutSeconds: tableDefault('shutdownTimeoutSeconds') as number,
  requestTimeoutSeconds: tableDefault('requestTimeoutSeconds') as number,
  statementTimeoutSeconds: tableDefault('statementTimeoutSeconds') as number,
  queryTimeoutSeconds: tableDefault('queryTimeoutSeconds') as number,
  busyTimeoutMs: tableDefault('busyTimeoutMs') as number,
};
