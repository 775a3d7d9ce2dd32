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
  ) {
    super(message);
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

/** The JSON body for an error: `{error, message, path}` (+ `problems` when there are several). */
export function errorBody(err: unknown): { status: number; body: Record<string, unknown> } {
  const e = err instanceof ServerError ? err : errors.internal();
  const body: Record<string, unknown> = {
    error: e.error,
    message: e.expose ? e.message : 'internal server error',
    path: e.path,
  };
  if (e.problems.length > 0) body.problems = e.problems;
  return { status: e.status, body };
}
