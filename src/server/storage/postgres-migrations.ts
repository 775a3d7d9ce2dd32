/**
 * The PostgreSQL schema as a versioned list of migrations, applied at start. Append only: a
 * released migration is never edited, a change is a new version.
 *
 * Columns mirror the SQLite schema (storage/sqlite.ts), with these choices:
 * - Every text key is `COLLATE "C"`: lists page in bytewise order, as SQLite's BINARY does,
 *   whatever locale the database was created with.
 * - Bodies and payloads are `text` holding the JSON as written, not `jsonb` (which reorders keys
 *   and normalizes numbers): a GET returns exactly what was PUT, as with SQLite.
 * - Times are `bigint` epoch seconds or milliseconds from the server's clock, as in SQLite.
 * - Throttle keys are `bytea`: they hold what a person typed, and PostgreSQL text cannot hold NUL.
 */
import type pg from 'pg';
import { SchemaTooNewError } from './_common.ts';

export interface Migration {
  readonly version: number;
  readonly name: string;
  /** SQL, or steps on the migration's connection (inside its transaction) that return notes for the log. */
  readonly sql: string | ((client: pg.ClientBase) => Promise<readonly string[]>);
}

const CASCADE = 'ON DELETE CASCADE ON UPDATE CASCADE';
const HAS_TENANT = 'x.tenant IN (SELECT name FROM tenants)';
const HAS_USER = 'EXISTS (SELECT 1 FROM users u WHERE u.tenant = x.tenant AND u.id = x.user_id)';
const HAS_APP = 'EXISTS (SELECT 1 FROM applications a WHERE a.tenant = x.tenant AND a.name = x.application)';
const HAS_GROUP = 'EXISTS (SELECT 1 FROM tenant_groups g WHERE g.tenant = x.tenant AND g.id = x.group_id)';
const TO_TENANT = `FOREIGN KEY (tenant) REFERENCES tenants (name) ${CASCADE}`;
const TO_USER = `FOREIGN KEY (tenant, user_id) REFERENCES users (tenant, id) ${CASCADE}`;

/**
 * Version 3's foreign keys, parents before children, with what a row must have to stay (alias x):
 * each table names the parents it dies with (ON DELETE CASCADE) and follows through renames (ON
 * UPDATE CASCADE: a tenant rename moves every row's tenant, an application rename its assignments).
 * Rows a release left behind without their parent are deleted first, and counted in the log.
 */
const V3_KEYS: readonly { readonly table: string; readonly keep: string; readonly keys: readonly string[] }[] = [
  { table: 'keys', keep: HAS_TENANT, keys: [TO_TENANT] },
  { table: 'applications', keep: HAS_TENANT, keys: [TO_TENANT] },
  { table: 'users', keep: HAS_TENANT, keys: [TO_TENANT] },
  { table: 'assignments', keep: `${HAS_APP} AND ${HAS_USER}`, keys: [`FOREIGN KEY (tenant, application) REFERENCES applications (tenant, name) ${CASCADE}`, TO_USER] },
  {
    table: 'artifacts',
    keep: `${HAS_TENANT} AND (x.account_id IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.tenant = x.tenant AND u.id = x.account_id))`,
    keys: [TO_TENANT, `FOREIGN KEY (tenant, account_id) REFERENCES users (tenant, id) ${CASCADE}`],
  },
  { table: 'totp_secrets', keep: HAS_USER, keys: [TO_USER] },
  { table: 'otp_codes', keep: HAS_USER, keys: [TO_USER] },
  { table: 'passkeys', keep: HAS_USER, keys: [TO_USER] },
  { table: 'login_throttle', keep: HAS_TENANT, keys: [TO_TENANT] },
  { table: 'tenant_groups', keep: HAS_TENANT, keys: [TO_TENANT] },
  { table: 'group_members', keep: `${HAS_GROUP} AND ${HAS_USER}`, keys: [`FOREIGN KEY (tenant, group_id) REFERENCES tenant_groups (tenant, id) ${CASCADE}`, TO_USER] },
  {
    table: 'group_assignments', keep: `${HAS_APP} AND ${HAS_GROUP}`,
    keys: [`FOREIGN KEY (tenant, application) REFERENCES applications (tenant, name) ${CASCADE}`, `FOREIGN KEY (tenant, group_id) REFERENCES tenant_groups (tenant, id) ${CASCADE}`],
  },
  { table: 'scim_users', keep: HAS_USER, keys: [TO_USER] },
  { table: 'scim_tokens', keep: HAS_TENANT, keys: [TO_TENANT] },
];

async function foreignKeys(client: pg.ClientBase): Promise<readonly string[]> {
  const dropped: string[] = [];
  for (const t of V3_KEYS) {
    const r = await client.query(`DELETE FROM ${t.table} AS x WHERE NOT (${t.keep})`);
    if ((r.rowCount ?? 0) > 0) dropped.push(`${t.table} ${r.rowCount}`);
    for (const k of t.keys) await client.query(`ALTER TABLE ${t.table} ADD ${k}`);
  }
  return dropped.length === 0 ? [] : [`rows whose parent was gone, dropped: ${dropped.join(', ')}`];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
CREATE TABLE tenants (
  name text COLLATE "C" PRIMARY KEY, body text NOT NULL, created_at bigint NOT NULL, updated_at bigint NOT NULL);
CREATE TABLE keys (
  tenant text COLLATE "C" NOT NULL, kid text COLLATE "C" NOT NULL, alg text NOT NULL, state text NOT NULL, sealed_jwk text NOT NULL,
  created_at bigint NOT NULL, retired_at bigint, PRIMARY KEY (tenant, kid));
CREATE TABLE applications (
  tenant text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL, kind text NOT NULL, client_id text COLLATE "C", identifier text COLLATE "C",
  body text NOT NULL, secret_hash text, created_at bigint NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (tenant, name));
CREATE UNIQUE INDEX applications_client_id ON applications (tenant, client_id) WHERE client_id IS NOT NULL;
CREATE UNIQUE INDEX applications_identifier ON applications (tenant, identifier) WHERE identifier IS NOT NULL;
CREATE TABLE users (
  tenant text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, email text COLLATE "C" NOT NULL, body text NOT NULL, password_hash text,
  created_at bigint NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (tenant, id));
CREATE INDEX users_email ON users (tenant, email);
CREATE TABLE assignments (
  tenant text COLLATE "C" NOT NULL, application text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, body text NOT NULL,
  created_at bigint NOT NULL, PRIMARY KEY (tenant, application, user_id));
CREATE INDEX assignments_user ON assignments (tenant, user_id);
CREATE TABLE artifacts (
  tenant text COLLATE "C" NOT NULL, model text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, payload text NOT NULL,
  grant_id text COLLATE "C", uid text COLLATE "C", user_code text COLLATE "C", account_id text COLLATE "C", client_id text COLLATE "C",
  expires_at bigint, PRIMARY KEY (tenant, model, id));
CREATE INDEX artifacts_grant ON artifacts (tenant, grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX artifacts_uid ON artifacts (tenant, model, uid) WHERE uid IS NOT NULL;
CREATE INDEX artifacts_user_code ON artifacts (tenant, model, user_code) WHERE user_code IS NOT NULL;
CREATE INDEX artifacts_account ON artifacts (tenant, account_id, client_id) WHERE account_id IS NOT NULL;
CREATE INDEX artifacts_client ON artifacts (tenant, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX artifacts_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE totp_secrets (
  tenant text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, sealed_secret text NOT NULL, last_step bigint NOT NULL,
  created_at bigint NOT NULL, PRIMARY KEY (tenant, user_id));
CREATE TABLE otp_codes (
  tenant text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, code_hash text NOT NULL, expires_at_ms bigint NOT NULL,
  attempts integer NOT NULL, PRIMARY KEY (tenant, user_id));
CREATE TABLE passkeys (
  tenant text COLLATE "C" NOT NULL, credential_id text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, public_key text NOT NULL,
  counter bigint NOT NULL, transports text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (tenant, credential_id));
CREATE INDEX passkeys_user ON passkeys (tenant, user_id);
CREATE TABLE login_throttle (
  tenant text COLLATE "C" NOT NULL, key bytea NOT NULL, failures integer NOT NULL, last_failure_ms bigint NOT NULL,
  locked_until_ms bigint NOT NULL, PRIMARY KEY (tenant, key));
`,
  },
  {
    version: 2,
    name: 'groups, group assignments, SCIM users and tokens',
    sql: `
CREATE TABLE tenant_groups (
  tenant text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, display_key text COLLATE "C" NOT NULL, body text NOT NULL,
  created_at bigint NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (tenant, id));
CREATE UNIQUE INDEX tenant_groups_display ON tenant_groups (tenant, display_key);
CREATE TABLE group_members (
  tenant text COLLATE "C" NOT NULL, group_id text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, PRIMARY KEY (tenant, group_id, user_id));
CREATE INDEX group_members_user ON group_members (tenant, user_id);
CREATE TABLE group_assignments (
  tenant text COLLATE "C" NOT NULL, application text COLLATE "C" NOT NULL, group_id text COLLATE "C" NOT NULL, body text NOT NULL,
  created_at bigint NOT NULL, PRIMARY KEY (tenant, application, group_id));
CREATE INDEX group_assignments_group ON group_assignments (tenant, group_id);
CREATE TABLE scim_users (
  tenant text COLLATE "C" NOT NULL, user_id text COLLATE "C" NOT NULL, user_name text NOT NULL, user_name_key text COLLATE "C" NOT NULL,
  external_id text COLLATE "C", resource text NOT NULL, PRIMARY KEY (tenant, user_id));
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (tenant, user_name_key);
CREATE INDEX scim_users_external_id ON scim_users (tenant, external_id) WHERE external_id IS NOT NULL;
CREATE TABLE scim_tokens (
  tenant text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, token_hash text NOT NULL, description text, created_at bigint NOT NULL,
  PRIMARY KEY (tenant, id));
`,
  },
  {
    version: 3,
    name: 'foreign keys: rows die with their parents and follow renames in the database',
    sql: foreignKeys,
  },
  {
    // The event log (storage/_events.ts), an outbox written in each change's transaction. No foreign
    // key: a tenant's events outlive it (its deletion is one of them) until retention purges them.
    version: 4,
    name: 'the event log and webhooks',
    sql: `
CREATE TABLE events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text COLLATE "C" NOT NULL UNIQUE, tenant text COLLATE "C" NOT NULL,
  at_ms bigint NOT NULL, type text COLLATE "C" NOT NULL, who text COLLATE "C", manager text COLLATE "C", git_commit text COLLATE "C",
  object_kind text COLLATE "C" NOT NULL, object_name text COLLATE "C" NOT NULL, body text NOT NULL);
CREATE INDEX events_tenant ON events (tenant, seq);
CREATE INDEX events_object ON events (tenant, object_kind, object_name, seq);
CREATE INDEX events_time ON events (at_ms);
CREATE TABLE webhooks (
  tenant text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL, body text NOT NULL, sealed_secret text NOT NULL, cursor_seq bigint NOT NULL,
  created_at bigint NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (tenant, name), ${TO_TENANT});
CREATE TABLE webhook_deliveries (
  tenant text COLLATE "C" NOT NULL, webhook text COLLATE "C" NOT NULL, seq bigint NOT NULL, event_id text COLLATE "C" NOT NULL, type text COLLATE "C" NOT NULL,
  status text NOT NULL, attempts integer NOT NULL, next_attempt_ms bigint NOT NULL, lease_until_ms bigint NOT NULL, last_status integer, last_error text,
  delivered_at_ms bigint, created_at_ms bigint NOT NULL, PRIMARY KEY (tenant, webhook, seq),
  FOREIGN KEY (tenant, webhook) REFERENCES webhooks (tenant, name) ${CASCADE});
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms);
`,
  },
  {
    // The SSF transmitter (src/server/ssf): streams die with their tenant, their SETs with them.
    version: 5,
    name: 'SSF streams and their security event tokens',
    sql: `
CREATE TABLE ssf_streams (
  tenant text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, body text NOT NULL, status text NOT NULL, reason text, sealed_authorization text,
  token_hash text NOT NULL, cursor_seq bigint NOT NULL, created_at bigint NOT NULL, updated_at bigint NOT NULL, PRIMARY KEY (tenant, id), ${TO_TENANT});
CREATE TABLE ssf_sets (
  n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tenant text COLLATE "C" NOT NULL, stream text COLLATE "C" NOT NULL, jti text COLLATE "C" NOT NULL,
  claims text NOT NULL, status text NOT NULL, attempts integer NOT NULL, next_attempt_ms bigint NOT NULL, lease_until_ms bigint NOT NULL, last_error text,
  settled_at_ms bigint, created_at_ms bigint NOT NULL, UNIQUE (tenant, stream, jti),
  FOREIGN KEY (tenant, stream) REFERENCES ssf_streams (tenant, id) ${CASCADE});
CREATE INDEX ssf_sets_due ON ssf_sets (status, next_attempt_ms);
CREATE INDEX ssf_sets_stream ON ssf_sets (tenant, stream, status, n);
`,
  },
  {
    // The back-channel logout outbox (src/server/backchannel): no foreign key, a deleted
    // application's sessions are still ended; its place in the event log is a meta row.
    version: 6,
    name: 'back-channel logout tokens owed to clients',
    sql: `
CREATE TABLE backchannel_logouts (
  n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tenant text COLLATE "C" NOT NULL, jti text COLLATE "C" NOT NULL UNIQUE, client_id text NOT NULL,
  uri text NOT NULL, sub text NOT NULL, sid text, status text NOT NULL, attempts integer NOT NULL, next_attempt_ms bigint NOT NULL,
  lease_until_ms bigint NOT NULL, last_status integer, last_error text, settled_at_ms bigint, created_at_ms bigint NOT NULL);
CREATE INDEX backchannel_logouts_due ON backchannel_logouts (status, next_attempt_ms);
`,
  },
  {
    // Each tenant's directory revision (EventStore.revisions), set where events are inserted. No
    // foreign key: it outlives a delete and a rename, so a kept revision never names another directory.
    // The tenants there are start with one (no event id is ever `migration-7`).
    version: 7,
    name: "each tenant's directory revision",
    sql: `
CREATE TABLE tenant_revisions (tenant text COLLATE "C" PRIMARY KEY, revision text NOT NULL);
INSERT INTO tenant_revisions (tenant, revision) SELECT name, 'migration-7' FROM tenants;
`,
  },
];

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

export { SchemaTooNewError } from './_common.ts';

/**
 * Applies the migrations this database lacks, in order, in one transaction. The transaction first
 * takes a transaction-scoped advisory lock, so replicas starting together take turns: the first
 * applies, the others then find nothing left to do (without the lock, two concurrent CREATE TABLE
 * IF NOT EXISTS can both fail or both apply). Returns the versions this call applied.
 */
export async function migrate(client: pg.ClientBase, lockId: string, log: (line: string) => void): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockId]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    const current = rows[0]?.v ?? 0;
    if (current > LATEST_VERSION) throw new SchemaTooNewError(current, LATEST_VERSION);
    const applied: number[] = [];
    const notes: string[] = [];
    for (const m of MIGRATIONS.filter((m) => m.version > current)) {
      if (typeof m.sql === 'string') await client.query(m.sql);
      else for (const n of await m.sql(client)) notes.push(`database: migration ${m.version}: ${n}`);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    for (const v of applied) log(`database: applied migration ${v} (${MIGRATIONS.find((m) => m.version === v)!.name})`);
    for (const n of notes) log(n);
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}
