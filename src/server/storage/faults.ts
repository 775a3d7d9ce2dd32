/**
 * Database faults: the backends' errors that mean "the database cannot do this now" (no connection,
 * a bound overrun, no writes accepted, no space), told apart from everything else (a constraint, a
 * bug), and turned into the server's DatabaseFault (errors.ts) at the storage seam, so every door
 * (admin API, SCIM, login pages, oidc-provider's endpoints) answers 503 with Retry-After, or 507,
 * instead of a 500. What the database said is logged (at most one line per kind every 10 s), never
 * shown. Other errors pass through unchanged.
 */
import { DatabaseFault, type DatabaseFaultKind } from '../errors.ts';
import { noteFault } from '../ops/request-context.ts';
import type { EventStore, Storage } from './types.ts';

/** Socket errors of a connection to PostgreSQL: the database cannot be reached. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** node-postgres's own words for a connection it lost, never had, or gave up on. */
const PG_CONNECTION_MESSAGES = [
  /^Connection terminated/, // unexpectedly, or due to connection timeout
  /timeout exceeded when trying to connect/, // waiting for a connection of the pool
  /is not queryable/, // a client that lost its connection, or was closed
  /Cannot use a pool after calling end on the pool/,
];

/** Which fault an error is, or undefined when it is no fault of the database's availability. */
export function faultKind(err: unknown): DatabaseFaultKind | undefined {
  if (err instanceof DatabaseFault) return err.kind;
  if (err === null || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  // SQLite (better-sqlite3's SqliteError codes, extended ones included).
  if (code.startsWith('SQLITE_')) {
    if (code.startsWith('SQLITE_FULL')) return 'disk_full';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'timeout';
    if (code.startsWith('SQLITE_READONLY')) return 'read_only';
    if (code.startsWith('SQLITE_IOERR')) return 'io_error';
    if (code.startsWith('SQLITE_CANTOPEN')) return 'unavailable';
    return undefined;
  }
  if (err instanceof TypeError && message === 'The database connection is not open') return 'unavailable';
  // PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html).
  if (/^[0-9A-Z]{5}$/.test(code)) {
    if (code.startsWith('08')) return 'unavailable'; // connection exception
    if (code === '57P01' || code === '57P02' || code === '57P03') return 'unavailable'; // shutdown, crash, cannot connect now
    if (code === '53200' || code === '53300') return 'unavailable'; // out of memory, too many connections
    if (code === '57014' || code === '55P03') return 'timeout'; // statement timeout (or cancel), lock not available
    if (code === '53100') return 'disk_full';
    if (code === '25006') return 'read_only'; // read-only transaction: a standby, or default_transaction_read_only
    if (code === '58030') return 'io_error';
    return undefined;
  }
  if (SOCKET_CODES.has(code)) return 'unavailable';
  // Several addresses (localhost: ::1 and 127.0.0.1) fail together as an AggregateError.
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => faultKind(x) === 'unavailable')) return 'unavailable';
  if (message === 'Query read timeout') return 'timeout';
  if (PG_CONNECTION_MESSAGES.some((m) => m.test(message))) return 'unavailable';
  return undefined;
}

/** The first line of what the database said, for the log. */
const detailOf = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 300);

/** A backend's error as a DatabaseFault when it is one; anything else unchanged. */
export function asFault(err: unknown): unknown {
  if (err instanceof DatabaseFault) return err;
  const kind = faultKind(err);
  return kind === undefined ? err : new DatabaseFault(kind, detailOf(err));
}

/** Kinds after which writes are known to fail: readiness reports not ready for a while after one. */
export const WRITE_FAULTS: ReadonlySet<DatabaseFaultKind> = new Set(['disk_full', 'read_only', 'io_error']);

export interface FaultWatch {
  /** Every fault met, once (metrics: idforge_db_errors_total{kind}). */
  readonly onFault?: (fault: DatabaseFault) => void;
  /** Where the database's own words go; at most one line per kind every LOG_EVERY_MS. */
  readonly log?: (line: string) => void;
}

const LOG_EVERY_MS = 10_000;

/**
 * `storage` whose every method answers a database fault as a DatabaseFault (counted, logged,
 * noted on the request for the doors that answer after the fact, such as oidc-provider's error
 * handler). Plain properties (description, listening) read through.
 */
export function guardStorage(storage: Storage, watch: FaultWatch): Storage & { readonly lastWriteFault: () => { readonly fault: DatabaseFault; readonly atMs: number } | undefined } {
  const lastLogged = new Map<DatabaseFaultKind, { atMs: number; suppressed: number }>();
  let lastWrite: { fault: DatabaseFault; atMs: number } | undefined;
  const convert = (err: unknown): unknown => {
    if (err instanceof DatabaseFault) {
      noteFault(err);
      return err;
    }
    const out = asFault(err);
    if (!(out instanceof DatabaseFault)) return out;
    noteFault(out);
    if (WRITE_FAULTS.has(out.kind)) lastWrite = { fault: out, atMs: Date.now() };
    watch.onFault?.(out);
    if (watch.log !== undefined) {
      const seen = lastLogged.get(out.kind);
      const now = Date.now();
      if (seen === undefined || now - seen.atMs >= LOG_EVERY_MS) {
        const more = seen !== undefined && seen.suppressed > 0 ? ` (and ${seen.suppressed} more like it since the last line)` : '';
        watch.log(JSON.stringify({ level: 'error', msg: `database ${storage.description.replace(/^\w+ /, '')}: ${out.kind.replace('_', ' ')}: ${out.detail}${more}`, dbFault: out.kind }));
        lastLogged.set(out.kind, { atMs: now, suppressed: 0 });
      } else {
        seen.suppressed++;
      }
    }
    return out;
  };
  const guard = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, prop) {
        const value = Reflect.get(t, prop, t) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          try {
            const result = (value as (...a: unknown[]) => unknown).apply(t, args);
            return result instanceof Promise ? result.catch((err: unknown) => { throw convert(err); }) : result;
          } catch (err) {
            throw convert(err);
          }
        };
      },
    });
  return {
    tenants: guard(storage.tenants),
    applications: guard(storage.applications),
    users: guard(storage.users),
    groups: guard(storage.groups),
    scim: guard(storage.scim),
    grants: guard(storage.grants),
    throttle: guard(storage.throttle),
    meta: guard(storage.meta),
    // `within` only runs the caller's writes, whose faults their own stores convert (and count) already.
    events: ((g: EventStore): EventStore => ({
      within: (events, write) => storage.events.within(events, write),
      append: (events) => g.append(events), list: (tenant, filter, page) => g.list(tenant, filter, page),
      after: (seq, limit) => g.after(seq, limit), window: (seq, limit, types) => g.window(seq, limit, types),
      lastSeq: () => g.lastSeq(), revisions: (tenant) => g.revisions(tenant), purge: (nowMs, days) => g.purge(nowMs, days),
    }))(guard(storage.events)),
    webhooks: guard(storage.webhooks),
    ssf: guard(storage.ssf),
    backchannel: guard(storage.backchannel),
    changes: guard(storage.changes),
    ping: () => storage.ping().catch((err: unknown) => { throw convert(err); }),
    pingWrite: () => storage.pingWrite().catch((err: unknown) => { throw convert(err); }),
    description: storage.description,
    close: () => storage.close(),
    lastWriteFault: () => lastWrite,
  };
}
