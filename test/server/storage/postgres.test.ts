/**
 * The storage contract against a real PostgreSQL (a cluster this file starts: test/support/
 * postgres.ts), a fresh database per test; then what only this backend has: versioned
 * migrations applied once when replicas start together, and one-line errors for a database that
 * cannot be used.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartupError } from '../../../src/server/errors.ts';
import { openStorage, type Storage } from '../../../src/server/storage/index.ts';
import { LATEST_VERSION, MIGRATIONS } from '../../../src/server/storage/postgres-migrations.ts';
import { freePort } from '../../support/processes.ts';
import { postgresBin, startPostgres, type TestPostgres } from '../../support/postgres.ts';

const SCHEMA_2_DUMP = join(import.meta.dirname, '..', '..', 'upgrade', 'fixtures', 'schema-2', 'postgres', 'postgres.sql');
import { storageContract } from './contract.ts';
import { groupsAndScimContract } from './contract-groups.ts';
import { eventsContract } from './contract-events.ts';
import { ssfContract } from './contract-ssf.ts';
import { backchannelContract } from './contract-backchannel.ts';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const postgresBackend = async () => {
  const db = await server.createDatabase();
  return {
    open: () => openStorage({ dataDir: '/nonexistent', database: db.url }),
    async failArtifactDeletes() {
      await server.sql(db.name, `CREATE FUNCTION fail_artifact_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected failure'; END $$`);
      await server.sql(db.name, 'CREATE TRIGGER fail_artifact_delete BEFORE DELETE ON artifacts FOR EACH ROW EXECUTE FUNCTION fail_artifact_delete()');
      return async () => {
        await server.sql(db.name, 'DROP TRIGGER fail_artifact_delete ON artifacts');
        await server.sql(db.name, 'DROP FUNCTION fail_artifact_delete()');
      };
    },
    async sql(text: string) {
      await server.sql(db.name, text);
    },
    dispose: () => server.dropDatabase(db.name),
  };
};
storageContract('postgres', postgresBackend);
groupsAndScimContract('postgres', postgresBackend);
eventsContract('postgres', postgresBackend);
ssfContract('postgres', postgresBackend);
backchannelContract('postgres', postgresBackend);

describe('postgres migrations', () => {
  it('replicas starting together on a fresh database all succeed, and each migration is applied once', async () => {
    const db = await server.createDatabase('migrate');
    const lines: string[] = [];
    const opened: Storage[] = await Promise.all(Array.from({ length: 4 }, () =>
      openStorage({ dataDir: '/nonexistent', database: db.url, log: (l) => lines.push(l) })));
    try {
      expect(lines).toEqual(MIGRATIONS.map((m) => `database: applied migration ${m.version} (${m.name})`));
      const { rows } = await server.sql(db.name, 'SELECT version, name FROM schema_migrations ORDER BY version');
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      // Every replica works on the one schema.
      await Promise.all(opened.map((s, i) => s.tenants.put(`t${i}`, { displayName: `T${i}`, scopes: [] })));
      expect(await opened[0]!.tenants.count()).toBe(opened.length);
    } finally {
      for (const s of opened) await s.close();
    }
    // A later start finds nothing to do.
    const again = await openStorage({ dataDir: '/nonexistent', database: db.url, log: (l) => lines.push(l) });
    await again.close();
    expect(lines).toHaveLength(MIGRATIONS.length);
    await server.dropDatabase(db.name);
  });

  it('refuses a database migrated by a newer idforge, in one line', async () => {
    const db = await server.createDatabase('newer');
    await (await openStorage({ dataDir: '/nonexistent', database: db.url })).close();
    await server.sql(db.name, 'INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [LATEST_VERSION + 1, 'from the future']);
    const err = await openStorage({ dataDir: '/nonexistent', database: db.url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe(
      `cannot use the database at 127.0.0.1:${server.port}/${db.name}: its schema is version ${LATEST_VERSION + 1}, newer than this idforge knows (${LATEST_VERSION}); run the newer idforge, or restore a backup`,
    );
    await server.dropDatabase(db.name);
  });
});

describe('postgres: upgrading a database of schema 2 (made by that release: test/upgrade/fixtures)', () => {
  const restore = async (prefix: string) => {
    const db = await server.createDatabase(prefix);
    execFileSync(join(postgresBin(), 'psql'), ['-v', 'ON_ERROR_STOP=1', '-q', '-X', '-d', db.url, '-f', SCHEMA_2_DUMP], { stdio: 'pipe' });
    // What a release before schema 2 did on a schema 2 database: it deleted a user and left her rows.
    const group = (await server.sql(db.name, 'SELECT tenant, id FROM tenant_groups LIMIT 1')).rows[0] as { tenant: string; id: string };
    await server.sql(db.name, 'INSERT INTO group_members (tenant, group_id, user_id) VALUES ($1, $2, $3)', [group.tenant, group.id, 'u-deleted']);
    await server.sql(db.name, `INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES ('acme', 'portal', 'u-deleted', '{}', 1)`);
    return db;
  };

  it('adds the foreign keys in one transaction, dropping and counting the rows a release left without their parent', async () => {
    const db = await restore('orphans');
    const lines: string[] = [];
    await (await openStorage({ dataDir: '/nonexistent', database: db.url, log: (l) => lines.push(l) })).close();
    expect(lines).toEqual([
      ...MIGRATIONS.filter((m) => m.version > 2).map((m) => `database: applied migration ${m.version} (${m.name})`),
      'database: migration 3: rows whose parent was gone, dropped: assignments 1, group_members 1',
    ]);
    expect((await server.sql(db.name, `SELECT count(*)::int AS n FROM group_members WHERE user_id = 'u-deleted'`)).rows).toEqual([{ n: 0 }]);
    // The database itself now takes a deleted user's rows with her.
    await server.sql(db.name, `DELETE FROM users WHERE tenant = 'acme' AND id = 'u-alice'`);
    expect((await server.sql(db.name, `SELECT count(*)::int AS n FROM assignments WHERE user_id = 'u-alice'`)).rows).toEqual([{ n: 0 }]);
    await server.dropDatabase(db.name);
  });

  it('a migration that fails changes nothing, and says why in one line', async () => {
    const db = await restore('failing');
    await server.sql(db.name, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`);
    await server.sql(db.name, 'CREATE TRIGGER refuse BEFORE DELETE ON group_members FOR EACH ROW EXECUTE FUNCTION refuse()');
    const err = await openStorage({ dataDir: '/nonexistent', database: db.url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe(`cannot use the database at 127.0.0.1:${server.port}/${db.name}: injected failure`);
    expect((await server.sql(db.name, 'SELECT max(version) AS v FROM schema_migrations')).rows).toEqual([{ v: 2 }]);
    expect((await server.sql(db.name, `SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'f'`)).rows).toEqual([{ n: 0 }]);
    expect((await server.sql(db.name, `SELECT count(*)::int AS n FROM assignments WHERE user_id = 'u-deleted'`)).rows).toEqual([{ n: 1 }]);
    await server.dropDatabase(db.name);
  });
});

describe('postgres: a database that cannot be used is a one-line StartupError naming it, never its password', () => {
  const refused = async (database: string) => {
    const err = await openStorage({ dataDir: '/nonexistent', database }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    expect(message).not.toContain('s3cret');
    return message;
  };

  it('nothing listens on the port', async () => {
    const port = await freePort();
    expect(await refused(`postgres://idforge:s3cret@127.0.0.1:${port}/idforge`)).toBe(
      `cannot use the database at 127.0.0.1:${port}/idforge: connection refused (is PostgreSQL running there, and listening on that port?)`,
    );
  });

  it('the database does not exist', async () => {
    expect(await refused(`postgres://postgres:s3cret@127.0.0.1:${server.port}/no_such_db`)).toBe(
      `cannot use the database at 127.0.0.1:${server.port}/no_such_db: database "no_such_db" does not exist (create it first, e.g. createdb)`,
    );
  });

  it('not a PostgreSQL URL, or not a URL', async () => {
    expect(await refused('mysql://u:s3cret@db/x')).toBe(
      "unsupported database URL scheme 'mysql:': give a postgres://user:password@host:port/database URL, or none for SQLite in the data dir",
    );
    expect(await refused('postgres://u:s3cret@[nope/x')).toBe('the database URL is not a valid URL: expected postgres://user:password@host:port/database');
  });
});

describe('postgres: a connection lost while work holds it out of the pool', () => {
  // node-postgres emits a lost connection's error on the client; a checked-out client has no pool
  // listener, so without one of ours the process dies (seen in CI: a restart under load).
  it('a lock connection ended during the attempt is no uncaught error, and the storage goes on', async () => {
    const db = await server.createDatabase();
    const storage = await openStorage({ dataDir: '/nonexistent', database: db.url });
    try {
      const ended = await storage.throttle.serialize('acme', ['k'], async () => {
        const killed = await server.sql(db.name, `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'idforge' AND pid <> pg_backend_pid()`);
        // The FATAL reaches the idle lock connection while the attempt still holds it.
        await new Promise((r) => setTimeout(r, 500));
        return killed.rows[0].n as number;
      });
      expect(ended).toBeGreaterThan(0);
      // A later attempt on the same keys gets a fresh connection and its lock.
      expect(await storage.throttle.serialize('acme', ['k'], async () => 'again')).toBe('again');
      expect(await storage.tenants.get('nobody')).toBeUndefined();
    } finally {
      await storage.close();
      await server.dropDatabase(db.name);
    }
  });
});
