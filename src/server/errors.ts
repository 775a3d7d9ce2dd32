/**
 * The server's one error type. Every failure a caller can see is a ServerError: HTTP status, an
 * OAuth-style error code, a description, and whether that description may be shown. Anything else
 * thrown is a bug and is answered as a generic 500 without detail (never a stack trace).
 * Modelled on oidc-provider's helpers/errors.js so admin API and protocol errors read alike.
 */
export class ServerError extends Error {
  override readonly name = 'ServerError';
  constructor(
    readonly status: number,
    /** Machine-readable code, OAuth style (`invalid_request`, `not_found`, `access_denied`, ...). */
    readonly error: string,
    /** Human-readable description. */
    message: string,
    /** Whether `message` may be shown to the caller; 5xx details are hidden by default. */
    readonly expose: boolean = status < 500,
    /** Where in the request the problem is (a body path like `redirectUris.0`), if anywhere. */
    readonly path: string = '',
    /** Every problem when there are several (validation), each with its own path. */
    readonly problems: readonly { readonly path: string; readonly message: string; readonly code?: string }[] = [],
    /** Response headers that go with it (Retry-After). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/**
 * What went wrong with the database, as the metric `idforge_db_errors_total{kind}` counts it:
 * - unavailable: no connection (refused, reset, closed by a restart, "the database system is shutting down")
 * - timeout: the work overran its bound (PostgreSQL's statement timeout or the query timeout, SQLite's busy timeout)
 * - read_only: the database takes no writes (a PostgreSQL standby in recovery, a read-only file or file system)
 * - io_error: the disk failed a read or write
 * - disk_full: no space left to store the change (507)
 */
export type DatabaseFaultKind = 'unavailable' | 'timeout' | 'read_only' | 'io_error' | 'disk_full';

const FAULTS: Readonly<Record<DatabaseFaultKind, { readonly status: number; readonly error: string; readonly retryAfter: number; readonly message: string }>> = {
  unavailable: { status: 503, error: 'temporarily_unavailable', retryAfter: 5, message: 'the database is unavailable at the moment; nothing was changed, try again in a few seconds' },
  timeout: { status: 503, error: 'temporarily_unavailable', retryAfter: 5, message: 'the database did not answer in time; try again in a few seconds' },
  read_only: { status: 503, error: 'temporarily_unavailable', retryAfter: 30, message: 'the database takes no changes at the moment (read-only); nothing was changed, try again later' },
  io_error: { status: 503, error: 'temporarily_unavailable', retryAfter: 30, message: 'the database could not read or write its disk; try again later' },
  disk_full: { status: 507, error: 'insufficient_storage', retryAfter: 60, message: "the server's storage is full: nothing was saved; try again once space has been freed" },
};

/**
 * The database could not do the work (see DatabaseFaultKind): a 503 with Retry-After, or a 507 for
 * a full disk, whose message says so without the database's own text (that is logged, not shown).
 * Storage turns the backend's errors into these (storage/faults.ts), so every door answers alike.
 */
export class DatabaseFault extends ServerError {
  constructor(readonly kind: DatabaseFaultKind, readonly detail: string) {
    const f = FAULTS[kind];
    super(f.status, f.error, f.message, true, '', [], { 'retry-after': String(f.retryAfter) });
  }

  get retryAfterSeconds(): number {
    return FAULTS[this.kind].retryAfter;
  }
}

/**
 * The server cannot start as configured (wrong master key, port taken, unreadable data dir). The
 * message is written for the operator and says what to do; `idforge serve` prints it as it is.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export const errors = {
  invalidRequest: (message: string, path = '', problems: readonly { path: string; message: string; code?: string }[] = []) =>
    new ServerError(400, 'invalid_request', message, true, path, problems),
  unauthorized: (message = 'a bearer access token is required') => new ServerError(401, 'invalid_token', message),
  forbidden: (message: string) => new ServerError(403, 'insufficient_scope', message),
  notFound: (message: string, path = '') => new ServerError(404, 'not_found', message, true, path),
  conflict: (message: string, path = '') => new ServerError(409, 'conflict', message, true, path),
  unknownTenant: (tenant: string) => new ServerError(404, 'unknown_tenant', `no tenant named '${tenant}' exists on this server`),
  unknownHost: (host: string) =>
    new ServerError(404, 'unknown_host', `host '${host}' is neither the server's base domain nor a tenant subdomain of it`),
  accessDenied: (message: string) => new ServerError(403, 'access_denied', message),
  internal: () => new ServerError(500, 'server_error', 'internal server error', false),
} as const;

/** The JSON body for an error: `{error, message, path}` (+ `problems` when there are several), and its headers. */
export function errorBody(err: unknown): { status: number; body: Record<string, unknown>; headers: Readonly<Record<string, string>> } {
  const e = err instanceof ServerError ? err : errors.internal();
  const body: Record<string, unknown> = {
    error: e.error,
    message: e.expose ? e.message : 'internal server error',
    path: e.path,
  };
  if (e.problems.length > 0) body.problems = e.problems;
  return { status: e.status, body, headers: e.headers };
}
