/**
 * The one place the backend is chosen: `openStorage` at start. Everything else sees `Storage`.
 *
 *   openStorage({ dataDir })                                   SQLite, <dataDir>/idforge.db (default)
 *   openStorage({ dataDir, database: 'postgres://u:p@h/db' })  PostgreSQL, migrated at start
 */
import { resolve } from 'node:path';
import { StartupError, type DatabaseFault } from '../errors.ts';
import { DEFAULT_EVENT_RETENTION_DAYS } from '../../contract/index.ts';
import { SchemaTooNewError } from './_common.ts';
import { guardStorage } from './faults.ts';
import { databaseLabel, openPostgresStorage } from './postgres.ts';
import { DATABASE_FILE, openSqliteStorage } from './sqlite.ts';
import type { Storage } from './types.ts';
import type { NamedLocks } from './_keyed-locks.ts';

export type * from './types.ts';
export { MissingUsersError } from './types.ts';
export { MIN_FREE_BYTES, foldWriteAheadLog } from './sqlite.ts';
export type { NamedLocks } from './_keyed-locks.ts';

/** Environment variable naming the database when `--database` is not given. */
export const DATABASE_URL_ENV = 'IDFORGE_DATABASE_URL';

export interface StorageOptions {
  /** Where the SQLite database lives when no `database` is given. Must exist. */
  readonly dataDir: string;
  /** `postgres://` or `postgresql://` URL (libpq style, e.g. `?sslmode=require`); absent or empty: SQLite in `dataDir`. */
  readonly database?: string | undefined;
  /** One-line notices: migrations applied, connections lost. Default: none. */
  readonly log?: (line: string) => void;
  /**
   * SQLite only: what serializes sign-in attempts when other processes share the file (the
   * cluster primary's locks under `idforge serve --workers`). Default: this process's own.
   */
  readonly locks?: NamedLocks;
  /** PostgreSQL's statement timeout, in ms (postgres.ts). */
  readonly statementTimeoutMs?: number | undefined;
  /** How long to wait for any answer of PostgreSQL, in ms (postgres.ts). */
  readonly queryTimeoutMs?: number | undefined;
  /** SQLite's busy timeout, in ms (sqlite.ts). */
  readonly busyTimeoutMs?: number | undefined;
  /** Every database fault met once opened (storage/faults.ts), e.g. to count it. */
  readonly onFault?: (fault: DatabaseFault) => void;
}

/** What openStorage returns: the stores, and the last fault that showed writes failing (readiness). */
export type GuardedStorage = ReturnType<typeof guardStorage>;

/**
 * Opens the backend the options name. An operator's mistake (a URL that is not PostgreSQL's, a
 * database that cannot be reached or refuses us, a schema from a newer idforge) is a StartupError
 * of one line naming the database, never its password.
 */
export async function openStorage(options: StorageOptions): Promise<GuardedStorage> {
  const log = options.log ?? (() => {});
  const guarded = (s: Storage) => guardStorage(s, { log, ...(options.onFault === undefined ? {} : { onFault: options.onFault }) });
  const url = options.database ?? '';
  if (url === '') {
    const file = resolve(options.dataDir, DATABASE_FILE);
    try {
      return guarded(openSqliteStorage(options.dataDir, { locks: options.locks, busyTimeoutMs: options.busyTimeoutMs, log }));
    } catch (err) {
      throw new StartupError(`cannot use the database at ${file}: ${reason(err)}`);
    }
  }
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0];
    throw new StartupError(`unsupported database ${scheme === undefined ? 'URL' : `URL scheme '${scheme}'`}: give a postgres://user:password@host:port/database URL, or none for SQLite in the data dir`);
  }
  let label: string;
  try {
    label = databaseLabel(url);
  } catch {
    throw new StartupError('the database URL is not a valid URL: expected postgres://user:password@host:port/database');
  }
  try {
    return guarded(await openPostgresStorage(url, { log, statementTimeoutMs: options.statementTimeoutMs, queryTimeoutMs: options.queryTimeoutMs }));
  } catch (err) {
    throw new StartupError(`cannot use the database at ${label}: ${reason(err)}`);
  }
}

/** Why a connection or migration failed, in the operator's words. */
function reason(err: unknown): string {
  if (err instanceof SchemaTooNewError) return err.message;
  const e = err as Error & { code?: string; errors?: (Error & { code?: string })[] };
  // Several addresses (localhost: ::1 and 127.0.0.1) fail together as an AggregateError.
  const code = e.code ?? e.errors?.[0]?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused (is PostgreSQL running there, and listening on that port?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case '28P01':
    case '28000':
      return `authentication failed (${e.message})`;
    case '3D000':
      return `${e.message} (create it first, e.g. createdb)`;
    case '42501':
      return `permission denied while migrating the schema (${e.message}); the user needs CREATE on the database`;
    default:
      if (typeof code === 'string' && code.startsWith('SQLITE_')) return `${e.message} (${code})`;
      if (/timeout/i.test(e.message)) return 'connection timed out';
      return (e.message || String(err)).split('\n')[0]!;
  }
}

/** Sweeps what has expired: artifacts, emailed codes, idle failure counters, events past their tenant's retention. Returns the artifacts removed. */
export async function purgeExpired(storage: Storage): Promise<number> {
  // Expired emailed codes go with the artifacts, and failure counters idle for a day (a spray of
  // made-up emails must not grow the table forever); running lockouts stay until they end.
  await storage.users.purgeExpiredOtps();
  await storage.throttle.purgeIdle();
  await storage.events.purge(Date.now(), DEFAULT_EVENT_RETENTION_DAYS);
  // The delivery log keeps what was delivered or failed for the default retention too.
  await storage.webhooks.purgeDeliveries(Date.now() - DEFAULT_EVENT_RETENTION_DAYS * 86_400_000);
  return storage.grants.purgeExpired();
}
