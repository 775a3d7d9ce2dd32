/**
 * The SQLite schema as a versioned list of migrations, applied at start, numbered as PostgreSQL's
 * (postgres-migrations.ts): version N is the same schema on both backends. Append only: a released
 * migration is never edited, a change is a new version.
 *
 * The version is the file's `PRAGMA user_version`, and every migration is also a row of
 * `schema_migrations` (its history). Files made before versions were recorded (user_version 0)
 * are recognised by their tables: `tenant_groups` came with version 2, `tenants` with version 1.
 *
 * Migrating: a file that holds a schema is first copied (VACUUM INTO, a consistent snapshot, mode
 * 0600) to `<file>.schema-<from>.<UTC time>.bak`; then every pending migration runs in one IMMEDIATE
 * transaction (other processes on the file wait), foreign keys are checked, and the version is set,
 * all or nothing. A file whose version is newer than this code knows is refused (SchemaTooNewError).
 */
import type Database from 'better-sqlite3';
import { chmodSync } from 'node:fs';
import { SchemaTooNewError } from './_common.ts';

export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  /** Runs inside the migration's transaction (foreign keys off); returns notes for the log. */
  readonly up: (db: Database.Database) => readonly string[];
}

const sql = (text: string) => (db: Database.Database): readonly string[] => {
  db.exec(text);
  return [];
};

/** Version 1: as released, CREATE ... IF NOT EXISTS (files older than the change log get it). */
const V1 = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tenants (
  name TEXT PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS keys (
  tenant TEXT NOT NULL, kid TEXT NOT NULL, alg TEXT NOT NULL, state TEXT NOT NULL, sealed_jwk TEXT NOT NULL,
  created_at INTEGER NOT NULL, retired_at INTEGER, PRIMARY KEY (tenant, kid));
CREATE TABLE IF NOT EXISTS applications (
  tenant TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, client_id TEXT, identifier TEXT, body TEXT NOT NULL,
  secret_hash TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, name));
CREATE UNIQUE INDEX IF NOT EXISTS applications_client_id ON applications (tenant, client_id) WHERE client_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS applications_identifier ON applications (tenant, identifier) WHERE identifier IS NOT NULL;
CREATE TABLE IF NOT EXISTS users (
  tenant TEXT NOT NULL, id TEXT NOT NULL, email TEXT NOT NULL, body TEXT NOT NULL, password_hash TEXT,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, id));
CREATE INDEX IF NOT EXISTS users_email ON users (tenant, email);
CREATE TABLE IF NOT EXISTS assignments (
  tenant TEXT NOT NULL, application TEXT NOT NULL, user_id TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, application, user_id));
CREATE INDEX IF NOT EXISTS assignments_user ON assignments (tenant, user_id);
CREATE TABLE IF NOT EXISTS artifacts (
  tenant TEXT NOT NULL, model TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL,
  grant_id TEXT, uid TEXT, user_code TEXT, account_id TEXT, client_id TEXT, expires_at INTEGER,
  PRIMARY KEY (tenant, model, id));
CREATE INDEX IF NOT EXISTS artifacts_grant ON artifacts (tenant, grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS artifacts_uid ON artifacts (tenant, model, uid) WHERE uid IS NOT NULL;
CREATE INDEX IF NOT EXISTS artifacts_user_code ON artifacts (tenant, model, user_code) WHERE user_code IS NOT NULL;
CREATE INDEX IF NOT EXISTS artifacts_account ON artifacts (tenant, account_id, client_id) WHERE account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS artifacts_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS totp_secrets (
  tenant TEXT NOT NULL, user_id TEXT NOT NULL, sealed_secret TEXT NOT NULL, last_step INTEGER NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, user_id));
CREATE TABLE IF NOT EXISTS otp_codes (
  tenant TEXT NOT NULL, user_id TEXT NOT NULL, code_hash TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,
  PRIMARY KEY (tenant, user_id));
CREATE TABLE IF NOT EXISTS passkeys (
  tenant TEXT NOT NULL, credential_id TEXT NOT NULL, user_id TEXT NOT NULL, public_key TEXT NOT NULL, counter INTEGER NOT NULL,
  transports TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (tenant, credential_id));
CREATE INDEX IF NOT EXISTS passkeys_user ON passkeys (tenant, user_id);
CREATE TABLE IF NOT EXISTS login_throttle (
  tenant TEXT NOT NULL, key TEXT NOT NULL, failures INTEGER NOT NULL, last_failure_ms INTEGER NOT NULL, locked_until_ms INTEGER NOT NULL,
  PRIMARY KEY (tenant, key));
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at_ms INTEGER NOT NULL);
`;

/** Version 2: groups, their members and assignments; SCIM users' own attributes and the tenants' SCIM tokens. */
const V2 = `
CREATE TABLE IF NOT EXISTS tenant_groups (
  tenant TEXT NOT NULL, id TEXT NOT NULL, display_key TEXT NOT NULL, body TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, id));
CREATE UNIQUE INDEX IF NOT EXISTS tenant_groups_display ON tenant_groups (tenant, display_key);
CREATE TABLE IF NOT EXISTS group_members (
  tenant TEXT NOT NULL, group_id TEXT NOT NULL, user_id TEXT NOT NULL, PRIMARY KEY (tenant, group_id, user_id));
CREATE INDEX IF NOT EXISTS group_members_user ON group_members (tenant, user_id);
CREATE TABLE IF NOT EXISTS group_assignments (
  tenant TEXT NOT NULL, application TEXT NOT NULL, group_id TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, application, group_id));
CREATE INDEX IF NOT EXISTS group_assignments_group ON group_assignments (tenant, group_id);
CREATE TABLE IF NOT EXISTS scim_users (
  tenant TEXT NOT NULL, user_id TEXT NOT NULL, user_name TEXT NOT NULL, user_name_key TEXT NOT NULL, external_id TEXT,
  resource TEXT NOT NULL, PRIMARY KEY (tenant, user_id));
CREATE UNIQUE INDEX IF NOT EXISTS scim_users_user_name ON scim_users (tenant, user_name_key);
CREATE INDEX IF NOT EXISTS scim_users_external_id ON scim_users (tenant, external_id) WHERE external_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS scim_tokens (
  tenant TEXT NOT NULL, id TEXT NOT NULL, token_hash TEXT NOT NULL, description TEXT, created_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, id));
`;

const CASCADE = 'ON DELETE CASCADE ON UPDATE CASCADE';
const TENANT = `tenant TEXT NOT NULL REFERENCES tenants (name) ${CASCADE}`;
const OF_USER = `FOREIGN KEY (tenant, user_id) REFERENCES users (tenant, id) ${CASCADE}`;
const HAS_TENANT = 'x.tenant IN (SELECT name FROM tenants)';
const HAS_USER = 'EXISTS (SELECT 1 FROM users u WHERE u.tenant = x.tenant AND u.id = x.user_id)';
const HAS_APP = 'EXISTS (SELECT 1 FROM applications a WHERE a.tenant = x.tenant AND a.name = x.application)';
const HAS_GROUP = 'EXISTS (SELECT 1 FROM tenant_groups g WHERE g.tenant = x.tenant AND g.id = x.group_id)';

/**
 * Version 3's tables, parents before children: each says which parents it dies with (ON DELETE
 * CASCADE) and follows through renames (ON UPDATE CASCADE: a tenant rename moves every row's tenant,
 * an application rename its assignments). `keep` selects the rows whose parents exist (alias x):
 * rows left behind by a release that deleted less than it should are dropped, and counted.
 */
const V3_TABLES: readonly { readonly name: string; readonly columns: string; readonly indexes: readonly string[]; readonly keep: string }[] = [
  {
    name: 'keys', keep: HAS_TENANT, indexes: [],
    columns: `${TENANT}, kid TEXT NOT NULL, alg TEXT NOT NULL, state TEXT NOT NULL, sealed_jwk TEXT NOT NULL,
      created_at INTEGER NOT NULL, retired_at INTEGER, PRIMARY KEY (tenant, kid)`,
  },
  {
    name: 'applications', keep: HAS_TENANT,
    columns: `${TENANT}, name TEXT NOT NULL, kind TEXT NOT NULL, client_id TEXT, identifier TEXT, body TEXT NOT NULL,
      secret_hash TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, name)`,
    indexes: [
      'CREATE UNIQUE INDEX applications_client_id ON applications (tenant, client_id) WHERE client_id IS NOT NULL',
      'CREATE UNIQUE INDEX applications_identifier ON applications (tenant, identifier) WHERE identifier IS NOT NULL',
    ],
  },
  {
    name: 'users', keep: HAS_TENANT, indexes: ['CREATE INDEX users_email ON users (tenant, email)'],
    columns: `${TENANT}, id TEXT NOT NULL, email TEXT NOT NULL, body TEXT NOT NULL, password_hash TEXT,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, id)`,
  },
  {
    name: 'assignments', keep: `${HAS_APP} AND ${HAS_USER}`, indexes: ['CREATE INDEX assignments_user ON assignments (tenant, user_id)'],
    columns: `tenant TEXT NOT NULL, application TEXT NOT NULL, user_id TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, application, user_id),
      FOREIGN KEY (tenant, application) REFERENCES applications (tenant, name) ${CASCADE}, ${OF_USER}`,
  },
  {
    name: 'artifacts',
    keep: `${HAS_TENANT} AND (x.account_id IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.tenant = x.tenant AND u.id = x.account_id))`,
    columns: `${TENANT}, model TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL,
      grant_id TEXT, uid TEXT, user_code TEXT, account_id TEXT, client_id TEXT, expires_at INTEGER,
      PRIMARY KEY (tenant, model, id), FOREIGN KEY (tenant, account_id) REFERENCES users (tenant, id) ${CASCADE}`,
    indexes: [
      'CREATE INDEX artifacts_grant ON artifacts (tenant, grant_id) WHERE grant_id IS NOT NULL',
      'CREATE INDEX artifacts_uid ON artifacts (tenant, model, uid) WHERE uid IS NOT NULL',
      'CREATE INDEX artifacts_user_code ON artifacts (tenant, model, user_code) WHERE user_code IS NOT NULL',
      'CREATE INDEX artifacts_account ON artifacts (tenant, account_id, client_id) WHERE account_id IS NOT NULL',
      'CREATE INDEX artifacts_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL',
    ],
  },
  {
    name: 'totp_secrets', keep: HAS_USER, indexes: [],
    columns: `tenant TEXT NOT NULL, user_id TEXT NOT NULL, sealed_secret TEXT NOT NULL, last_step INTEGER NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, user_id), ${OF_USER}`,
  },
  {
    name: 'otp_codes', keep: HAS_USER, indexes: [],
    columns: `tenant TEXT NOT NULL, user_id TEXT NOT NULL, code_hash TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,
      PRIMARY KEY (tenant, user_id), ${OF_USER}`,
  },
  {
    name: 'passkeys', keep: HAS_USER, indexes: ['CREATE INDEX passkeys_user ON passkeys (tenant, user_id)'],
    columns: `tenant TEXT NOT NULL, credential_id TEXT NOT NULL, user_id TEXT NOT NULL, public_key TEXT NOT NULL, counter INTEGER NOT NULL,
      transports TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (tenant, credential_id), ${OF_USER}`,
  },
  {
    name: 'login_throttle', keep: HAS_TENANT, indexes: [],
    columns: `${TENANT}, key TEXT NOT NULL, failures INTEGER NOT NULL, last_failure_ms INTEGER NOT NULL, locked_until_ms INTEGER NOT NULL,
      PRIMARY KEY (tenant, key)`,
  },
  {
    name: 'tenant_groups', keep: HAS_TENANT, indexes: ['CREATE UNIQUE INDEX tenant_groups_display ON tenant_groups (tenant, display_key)'],
    columns: `${TENANT}, id TEXT NOT NULL, display_key TEXT NOT NULL, body TEXT NOT NULL,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, id)`,
  },
  {
    name: 'group_members', keep: `${HAS_GROUP} AND ${HAS_USER}`, indexes: ['CREATE INDEX group_members_user ON group_members (tenant, user_id)'],
    columns: `tenant TEXT NOT NULL, group_id TEXT NOT NULL, user_id TEXT NOT NULL, PRIMARY KEY (tenant, group_id, user_id),
      FOREIGN KEY (tenant, group_id) REFERENCES tenant_groups (tenant, id) ${CASCADE}, ${OF_USER}`,
  },
  {
    name: 'group_assignments', keep: `${HAS_APP} AND ${HAS_GROUP}`, indexes: ['CREATE INDEX group_assignments_group ON group_assignments (tenant, group_id)'],
    columns: `tenant TEXT NOT NULL, application TEXT NOT NULL, group_id TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, application, group_id),
      FOREIGN KEY (tenant, application) REFERENCES applications (tenant, name) ${CASCADE},
      FOREIGN KEY (tenant, group_id) REFERENCES tenant_groups (tenant, id) ${CASCADE}`,
  },
  {
    name: 'scim_users', keep: HAS_USER,
    columns: `tenant TEXT NOT NULL, user_id TEXT NOT NULL, user_name TEXT NOT NULL, user_name_key TEXT NOT NULL, external_id TEXT,
      resource TEXT NOT NULL, PRIMARY KEY (tenant, user_id), ${OF_USER}`,
    indexes: [
      'CREATE UNIQUE INDEX scim_users_user_name ON scim_users (tenant, user_name_key)',
      'CREATE INDEX scim_users_external_id ON scim_users (tenant, external_id) WHERE external_id IS NOT NULL',
    ],
  },
  {
    name: 'scim_tokens', keep: HAS_TENANT, indexes: [],
    columns: `${TENANT}, id TEXT NOT NULL, token_hash TEXT NOT NULL, description TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (tenant, id)`,
  },
];

/**
 * Version 3: SQLite can add a foreign key only by rebuilding the table (create the new one, copy,
 * drop the old, rename: https://sqlite.org/lang_altertable.html#otheralter), done here in dependency
 * order so that each copy reads parents already rebuilt. The change log becomes `change_log`, and
 * an index takes its old name `changes`: releases before this one run `CREATE TABLE IF NOT EXISTS
 * changes` at start, which now fails ("there is already an index named changes"), so an older
 * idforge stops at once instead of running on a schema whose cascades it does not know.
 */
function foreignKeys(db: Database.Database): readonly string[] {
  const dropped: string[] = [];
  const count = (table: string) => Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
  for (const t of V3_TABLES) {
    const next = `${t.name}__v3`;
    db.exec(`CREATE TABLE ${next} (${t.columns})`);
    const columns = (db.prepare(`SELECT name FROM pragma_table_info('${next}')`).all() as { name: string }[]).map((c) => c.name).join(', ');
    const before = count(t.name);
    db.exec(`INSERT INTO ${next} (${columns}) SELECT ${columns} FROM ${t.name} AS x WHERE ${t.keep}`);
    const after = count(next);
    if (after < before) dropped.push(`${t.name} ${before - after}`);
    db.exec(`DROP TABLE ${t.name}`);
    db.exec(`ALTER TABLE ${next} RENAME TO ${t.name}`);
    for (const index of t.indexes) db.exec(index);
  }
  db.exec(`CREATE TABLE change_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at_ms INTEGER NOT NULL);
    INSERT INTO change_log (seq, tenant, at_ms) SELECT seq, tenant, at_ms FROM changes;
    DROP TABLE changes;
    CREATE INDEX changes ON change_log (at_ms);`);
  return dropped.length === 0 ? [] : [`rows whose parent was gone, dropped: ${dropped.join(', ')}`];
}

/**
 * Version 4: the event log (storage/_events.ts), an outbox written in each change's transaction. No
 * foreign key: a tenant's events outlive it (its deletion is one of them) until retention purges them.
 * Webhooks (storage/_webhooks.ts) die with their tenant; their deliveries with them.
 */
const V4_EVENTS = `
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL, at_ms INTEGER NOT NULL, type TEXT NOT NULL,
  who TEXT, manager TEXT, git_commit TEXT, object_kind TEXT NOT NULL, object_name TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX events_tenant ON events (tenant, seq);
CREATE INDEX events_object ON events (tenant, object_kind, object_name, seq);
CREATE INDEX events_time ON events (at_ms);
CREATE TABLE webhooks (
  ${TENANT}, name TEXT NOT NULL, body TEXT NOT NULL, sealed_secret TEXT NOT NULL, cursor_seq INTEGER NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, name));
CREATE TABLE webhook_deliveries (
  tenant TEXT NOT NULL, webhook TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL, last_status INTEGER, last_error TEXT,
  delivered_at_ms INTEGER, created_at_ms INTEGER NOT NULL, PRIMARY KEY (tenant, webhook, seq),
  FOREIGN KEY (tenant, webhook) REFERENCES webhooks (tenant, name) ${CASCADE});
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms);
`;

/**
 * Version 5: the SSF transmitter (src/server/ssf): streams die with their tenant, their SETs with
 * them. A SET is queued from the event log like a webhook delivery; `n` orders a stream's SETs.
 */
const V5_SSF = `
CREATE TABLE ssf_streams (
  ${TENANT}, id TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, sealed_authorization TEXT, token_hash TEXT NOT NULL,
  cursor_seq INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (tenant, id));
CREATE TABLE ssf_sets (
  n INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, stream TEXT NOT NULL, jti TEXT NOT NULL, claims TEXT NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL, last_error TEXT, settled_at_ms INTEGER,
  created_at_ms INTEGER NOT NULL, UNIQUE (tenant, stream, jti),
  FOREIGN KEY (tenant, stream) REFERENCES ssf_streams (tenant, id) ${CASCADE});
CREATE INDEX ssf_sets_due ON ssf_sets (status, next_attempt_ms);
CREATE INDEX ssf_sets_stream ON ssf_sets (tenant, stream, status, n);
`;

/**
 * Version 6: the back-channel logout outbox (src/server/backchannel): logout tokens owed to clients,
 * queued from the event log (its place in the log is a meta row) and from sign-outs. No foreign
 * key: a deleted application's sessions are still ended.
 */
const V6_BACKCHANNEL = `
CREATE TABLE backchannel_logouts (
  n INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, jti TEXT NOT NULL UNIQUE, client_id TEXT NOT NULL, uri TEXT NOT NULL, sub TEXT NOT NULL,
  sid TEXT, status TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL, last_status INTEGER,
  last_error TEXT, settled_at_ms INTEGER, created_at_ms INTEGER NOT NULL);
CREATE INDEX backchannel_logouts_due ON backchannel_logouts (status, next_attempt_ms);
`;

/**
 * Version 7: each tenant's directory revision (EventStore.revisions), set where events are inserted.
 * No foreign key: a tenant's revision outlives a delete and a rename, so a reader that kept one never
 * meets it again for a different directory. The tenants there are start with one (no event id is
 * ever `migration-7`), so a reader can keep theirs before their next change.
 */
const V7_REVISIONS = `
CREATE TABLE tenant_revisions (tenant TEXT PRIMARY KEY, revision TEXT NOT NULL);
INSERT INTO tenant_revisions (tenant, revision) SELECT name, 'migration-7' FROM tenants;
`;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  { version: 1, name: 'initial schema', up: sql(V1) },
  { version: 2, name: 'groups, group assignments, SCIM users and tokens', up: sql(V2) },
  { version: 3, name: 'foreign keys: rows die with their parents and follow renames in the database', up: foreignKeys },
  { version: 4, name: 'the event log and webhooks', up: sql(V4_EVENTS) },
  { version: 5, name: 'SSF streams and their security event tokens', up: sql(V5_SSF) },
  { version: 6, name: 'back-channel logout tokens owed to clients', up: sql(V6_BACKCHANNEL) },
  { version: 7, name: "each tenant's directory revision", up: sql(V7_REVISIONS) },
];

export const SQLITE_LATEST_VERSION = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;

/** The file's schema version; `recorded` false for a file made before versions were recorded. */
export function sqliteSchemaVersion(db: Database.Database): { readonly version: number; readonly recorded: boolean } {
  const v = Number(db.pragma('user_version', { simple: true }));
  if (v > 0) return { version: v, recorded: true };
  const tables = new Set((db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((r) => r.name));
  if (!tables.has('tenants')) return { version: 0, recorded: false };
  return { version: tables.has('tenant_groups') ? 2 : 1, recorded: false };
}

/** `20261126T001502Z`: sorts by time, no characters a shell or another OS minds. */
const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

/** What migrateSqlite did. */
export interface SqliteMigrationResult {
  readonly applied: readonly number[];
  /** The copy made before migrating a file that held a schema. */
  readonly backup?: string;
}

/**
 * Brings the file to SQLITE_LATEST_VERSION (see the top of this file). Must run with foreign keys
 * off (the connection's default); the caller turns them on afterwards.
 */
export function migrateSqlite(db: Database.Database, file: string, log: (line: string) => void): SqliteMigrationResult {
  const found = sqliteSchemaVersion(db);
  if (found.version > SQLITE_LATEST_VERSION) throw new SchemaTooNewError(found.version, SQLITE_LATEST_VERSION);
  if (found.version === SQLITE_LATEST_VERSION) return { applied: [] };
  let backup: string | undefined;
  if (found.version > 0) {
    backup = `${file}.schema-${found.version}.${stamp(new Date())}.bak`;
    try {
      db.prepare('VACUUM INTO ?').run(backup);
      chmodSync(backup, 0o600);
    } catch (err) {
      throw new Error(`cannot back up the database to ${backup} before migrating it (${(err as Error).message}); nothing was changed`);
    }
    log(`database: copied ${file} (schema version ${found.version}) to ${backup} before migrating it`);
  }
  const notes: string[] = [];
  const applied = db.transaction(() => {
    // Read again under the write lock: another process may have migrated meanwhile.
    const now = sqliteSchemaVersion(db);
    if (now.version > SQLITE_LATEST_VERSION) throw new SchemaTooNewError(now.version, SQLITE_LATEST_VERSION);
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    const record = db.prepare('INSERT OR IGNORE INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const at = new Date().toISOString();
    if (!now.recorded) {
      // Made before versions were recorded: its CREATE ... IF NOT EXISTS again fill what an early file lacks.
      for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= now.version)) {
        m.up(db);
        record.run(m.version, `${m.name} (found: the file predates recorded versions)`, at);
      }
    }
    const done: number[] = [];
    for (const m of SQLITE_MIGRATIONS.filter((m) => m.version > now.version)) {
      for (const n of m.up(db)) notes.push(`database: migration ${m.version}: ${n}`);
      record.run(m.version, m.name, at);
      done.push(m.version);
    }
    const broken = db.pragma('foreign_key_check') as unknown[];
    if (broken.length > 0) throw new Error(`migrating left ${broken.length} row(s) whose parent is missing (${JSON.stringify(broken[0])}); nothing was changed`);
    db.pragma(`user_version = ${SQLITE_LATEST_VERSION}`);
    return done;
  }).immediate();
  // A file made just now held nothing to migrate: only the migration of a schema that held data is told.
  if (found.version > 0) for (const v of applied) log(`database: applied migration ${v} (${SQLITE_MIGRATIONS.find((m) => m.version === v)!.name})`);
  for (const n of notes) log(n);
  return { applied, ...(backup === undefined ? {} : { backup }) };
}
