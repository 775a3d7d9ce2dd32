/**
 * SQLite's schema versions (storage/sqlite-migrations.ts): a new file starts at the latest version
 * with its history; a file made by a newer idforge is refused in one line and left as it is; an
 * older file is copied, then migrated in one transaction, rows a release left without their parent
 * dropped and counted; a migration that fails changes nothing; and the releases before versioning,
 * whose start-up creates the change log under its old name, stop on a migrated file instead of
 * running on it. Upgrades of real databases of each release: test/upgrade/upgrade.test.ts.
 */
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { StartupError } from '../../../src/server/errors.ts';
import { openStorage } from '../../../src/server/storage/index.ts';
import { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS } from '../../../src/server/storage/sqlite-migrations.ts';
import { DATABASE_FILE } from '../../../src/server/storage/sqlite.ts';
import { tempDir } from '../_support.ts';

const SCHEMA_2 = join(import.meta.dirname, '..', '..', 'upgrade', 'fixtures', 'schema-2', 'sqlite', 'idforge.db');
/** What every release before schema versions ran at start (sqlite-migrations.ts keeps it verbatim as migration 1). */
const RELEASED_START_UP = `CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at_ms INTEGER NOT NULL);`;

const dirs: { remove: () => void }[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});
function dataDir(): string {
  const d = tempDir('idforge-sqlite-migrations-');
  dirs.push(d);
  return d.path;
}
const raw = (file: string, fn: (db: Database.Database) => void) => {
  const db = new Database(file);
  try {
    fn(db);
  } finally {
    db.close();
  }
};
const version = (file: string) => {
  let v = 0;
  raw(file, (db) => { v = Number(db.pragma('user_version', { simple: true })); });
  return v;
};

describe('sqlite schema versions', () => {
  it('a new file gets the latest version and the whole history, silently, and no backup', async () => {
    const dir = dataDir();
    const lines: string[] = [];
    await (await openStorage({ dataDir: dir, log: (l) => lines.push(l) })).close();
    const file = join(dir, DATABASE_FILE);
    expect(version(file)).toBe(SQLITE_LATEST_VERSION);
    raw(file, (db) => {
      expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    });
    expect(lines).toEqual([]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.bak'))).toEqual([]);
    // A later start finds nothing to do.
    await (await openStorage({ dataDir: dir, log: (l) => lines.push(l) })).close();
    expect(lines).toEqual([]);
  });

  it('refuses a file migrated by a newer idforge, in one line, and leaves it as it is', async () => {
    const dir = dataDir();
    await (await openStorage({ dataDir: dir })).close();
    const file = join(dir, DATABASE_FILE);
    raw(file, (db) => db.pragma(`user_version = ${SQLITE_LATEST_VERSION + 1}`));
    const err = await openStorage({ dataDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe(
      `cannot use the database at ${file}: its schema is version ${SQLITE_LATEST_VERSION + 1}, newer than this idforge knows (${SQLITE_LATEST_VERSION}); run the newer idforge, or restore a backup`,
    );
    expect(version(file)).toBe(SQLITE_LATEST_VERSION + 1);
    expect(readdirSync(dir).filter((f) => f.endsWith('.bak'))).toEqual([]);
  });

  it('copies an older file, then migrates it; rows a release left without their parent are dropped, counted, and kept in the copy', async () => {
    const dir = dataDir();
    const file = join(dir, DATABASE_FILE);
    copyFileSync(SCHEMA_2, file);
    // What a release before schema 2 did, run on a schema 2 file: it deleted a user and left her membership.
    raw(file, (db) => {
      const group = db.prepare('SELECT tenant, id FROM tenant_groups LIMIT 1').get() as { tenant: string; id: string };
      db.prepare('INSERT INTO group_members (tenant, group_id, user_id) VALUES (?, ?, ?)').run(group.tenant, group.id, 'u-deleted');
      db.prepare(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES ('acme', 'portal', 'u-deleted', '{}', 1)`).run();
    });
    const lines: string[] = [];
    const s = await openStorage({ dataDir: dir, log: (l) => lines.push(l) });
    await s.close();
    const backup = readdirSync(dir).find((f) => /^idforge\.db\.schema-2\.\d{8}T\d{6}Z\.bak$/.test(f));
    expect(backup).toBeDefined();
    expect(lines).toEqual([
      `database: copied ${file} (schema version 2) to ${join(dir, backup!)} before migrating it`,
      ...SQLITE_MIGRATIONS.filter((m) => m.version > 2).map((m) => `database: applied migration ${m.version} (${m.name})`),
      'database: migration 3: rows whose parent was gone, dropped: assignments 1, group_members 1',
    ]);
    raw(file, (db) => {
      expect(db.prepare(`SELECT count(*) AS n FROM group_members WHERE user_id = 'u-deleted'`).get()).toEqual({ n: 0 });
      expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version })));
      expect(db.pragma('foreign_key_check')).toEqual([]);
    });
    raw(join(dir, backup!), (db) => {
      expect(db.prepare(`SELECT count(*) AS n FROM group_members WHERE user_id = 'u-deleted'`).get()).toEqual({ n: 1 });
      expect(db.pragma('user_version', { simple: true })).toBe(0);
    });
  });

  it('a migration that fails changes nothing, and says why in one line', async () => {
    const dir = dataDir();
    const file = join(dir, DATABASE_FILE);
    copyFileSync(SCHEMA_2, file);
    // Half-way through migration 3, a table it makes exists already.
    raw(file, (db) => db.exec('CREATE TABLE users__v3 (x)'));
    const err = await openStorage({ dataDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toMatch(new RegExp(`^cannot use the database at ${file}: table users__v3 already exists`));
    raw(file, (db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(0);
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((t) => t.name);
      expect(tables).toContain('changes');
      expect(tables).not.toContain('schema_migrations');
      expect(tables).not.toContain('keys__v3');
    });
  });

  it('an older idforge stops on a migrated file at its first statement, instead of running on a schema it does not know', async () => {
    const dir = dataDir();
    await (await openStorage({ dataDir: dir })).close();
    const file = join(dir, DATABASE_FILE);
    raw(file, (db) => {
      expect(() => db.exec(RELEASED_START_UP)).toThrow('there is already an index named changes');
      expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_LATEST_VERSION);
    });
  });
});
