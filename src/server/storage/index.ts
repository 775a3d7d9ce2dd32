/**
 * The one place the backend is chosen: `openStorage` at start. Everything else sees `Storage`.
 */
import { openSqliteStorage } from './sqlite.ts';
import type { Storage } from './types.ts';

export type * from './types.ts';
export { MissingUsersError } from './types.ts';

export interface StorageOptions {
  /** Where the SQLite database lives when no `database` is given. Must exist. */
  readonly dataDir: string;
  /** A database URL; absent or empty: SQLite in `dataDir`. */
  readonly database?: string | undefined;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  return openSqliteStorage(options.dataDir);
}

/** Sweeps what has expired: artifacts, emailed codes, idle failure counters. Returns the artifacts removed. */
export async function purgeExpired(storage: Storage): Promise<number> {
  // Expired emailed codes go with the artifacts, and failure counters idle for a day (a spray of
  // made-up emails must not grow the table forever); running lockouts stay until they end.
  await storage.users.purgeExpiredOtps();
  await storage.throttle.purgeIdle();
  return storage.grants.purgeExpired();
}
