/**
 * The one place the backend is chosen: `openStorage` at start. Everything else sees `Storage`.
 *
 *   openStorage({ dataDir })                                   SQLite, <dataDir>/idforge.db (default)
 *   openStorage({ dataDir, database: 'postgres://u:p@h/db' })  PostgreSQL, migrated at start
 */
import { StartupError } from '../errors.ts';
import { SchemaTooNewError } from './postgres-migrations.ts';
import { databaseLabel, openPostgresStorage } from './postgres.ts';
import { openSqliteStorage } from './sqlite.ts';
import type { Storage } from './types.ts';
import type { NamedLocks } from './_keyed-locks.ts';

export type * from './types.ts';
export { MissingUsersError } from './types.ts';
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
}

/**
 * Opens the backend the options name. An operator's mistake (a URL that is not PostgreSQL's, a
 * database that cannot be reached or refuses us, a schema from a newer idforge) is a StartupError
 * of one line naming the database, never its password.
 */
export async function openStorage(options: StorageOptions): Promise<Storage> {
  const url = options.database ?? '';
  if (url === '') return openSqliteStorage(options.dataDir, options.locks);
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
    return await openPostgresStorage(url, options.log ?? (() => {}));
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
      if (/timeout/i.test(e.message)) return 'connection timed out';
      return (e.message || String(err)).split('\n')[0]!;
  }
}

/** Sweeps what has expired: artifacts, emailed codes, idle failure counters. Returns the artifacts removed. */
export async function purgeExpired(storage: Storage): Promise<number> {
  // Expired emailed codes go with the artifacts, and failure counters idle for a day (a spray of
  // made-up emails must not grow the table forever); running lockouts stay until they end.
  await storage.users.purgeExpiredOtps();
  await storage.throttle.purgeIdle();
  return storage.grants.purgeExpired();
}
