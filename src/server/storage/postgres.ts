/**
 * PostgreSQL storage (node-postgres), for running several server replicas on one database. The
 * schema is versioned (postgres-migrations.ts) and migrated at start. Same rows and JSON text as
 * the SQLite backend, so the two behave alike down to key order (the contract suite proves it).
 *
 * Where SQLite relies on one process running each method without interleaving, this backend says
 * how each guarantee holds between replicas: multi-statement changes run in one transaction;
 * read-modify-writes (key rotation, failure counting, consume) first take a row lock or a
 * transaction-scoped advisory lock on what they change; single-use deletes and TOTP step claims
 * are single conditional statements, which PostgreSQL re-checks against the row's latest version.
 * Every statement is parameterized.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { AssignmentBody, GroupAssignmentBody, GroupBody, TenantBody, UserBody } from '../../contract/index.ts';
import {
  TENANT_TABLES, THROTTLE_IDLE_MS, USER_FACTOR_TABLES, accountArtifactRow, appRow, artifactColumns, artifactRow, assignmentRow, decodeCursor, keyRow,
  nextThrottle, nowSeconds as now, PURGE_RATES_SQL, rateArgs, rateWait, takeRateSql, otpRow, passkeyRow, tenantRow, throttleRow, toPage, totpRow, userRow, type Row,
  RENAME_DROPPED_TABLES, isForeignKeyViolation, isUniqueViolation,
} from './_common.ts';
import {
  SCIM_USER_SELECT, USER_LINK_TABLES, caseKey, groupAssignmentRow, groupIdsByUser, groupRow, scimTokenRow, userWithScimRow,
} from './_common.ts';
import { KeyedLocks } from './_keyed-locks.ts';
import { migrate } from './postgres-migrations.ts';
import { EVENT_COLUMNS, eventListSql, eventPage, eventRow, eventValues, eventWindow, isWriteSql, pendingOutbox, purgeEventsSql, revisionsOf, withOutbox } from './_events.ts';
import type { EventFilter, EventView } from '../../contract/index.ts';
import { faultKind } from './faults.ts';
import { outsideRequests } from '../ops/request-context.ts';
import { MissingUsersError, NameTakenError } from './types.ts';
import type {
  TenantReseal,
  ApplicationRecord,
  ApplicationStore,
  AccountArtifact,
  ArtifactPayload,
  AssignmentRecord,
  ChangeFeed,
  GrantStore,
  GroupAssignmentRecord,
  GroupRecord,
  GroupStore,
  MembershipChange,
  ScimStore,
  ScimTokenRecord,
  ScimUserRecord,
  UserWithScim,
  KeyRecord,
  MetaStore,
  OtpRecord,
  Page,
  PageRequest,
  PasskeyRecord,
  Storage,
  StoredApplicationBody,
  TenantChanges,
  TenantContents,
  TenantRecord,
  TenantStore,
  ThrottleRecord,
  ThrottleStore,
  TotpRecord,
  UserRecord,
  UserStore,
  EventRecord,
  EventWindow,
  EventStore,
  DeliveryRecord,
  DueDelivery,
  WebhookRecord,
  WebhookStore,
  SsfSetDraft,
  SsfSetRecord,
  SsfStore,
  BackchannelStore,
  LogoutDraft,
  LogoutRecord,
  SsfStreamRecord,
} from './types.ts';
import { eventBody, ssfSetRow, ssfStreamRow, ssfStreamValues } from './_ssf.ts';
import { BACKCHANNEL_PLACE_KEY, LOGOUT_COLUMNS, logoutRow, logoutValues, settledStatus } from './_backchannel.ts';
import { DELIVERY_COLUMNS, deliveryRow, eventOf, takesType, webhookRow } from './_webhooks.ts';

/**
 * Connections per replica for queries. A request makes a handful of short queries one after the
 * other, so 10 connections serve many concurrent requests; PostgreSQL's default limit is 100.
 */
const POOL_SIZE = 10;
/**
 * Connections per replica that hold the guessing defence's advisory locks while an attempt runs
 * (ThrottleStore.serialize). Separate from the query pool, so attempts holding locks can never
 * starve the queries they are waiting for; more concurrent sign-ins than this queue for a turn.
 */
const LOCK_POOL_SIZE = 10;
/** An unreachable database fails the start (or a request) after this long instead of hanging. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * An error after which the connection cannot be trusted with another statement: it is lost, or the
 * query timeout gave up on it (its statement may still be running). A statement timeout leaves the
 * connection usable: the server cancelled the statement itself.
 */
function lostConnection(err: unknown): boolean {
  const kind = faultKind(err);
  return kind === 'unavailable' || (kind === 'timeout' && (err as Error)?.message === 'Query read timeout');
}

/** A 64-bit advisory lock id for a name (sha-256, first 8 bytes): collisions only cost extra waiting. */
export function lockId(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}
const MIGRATION_LOCK = lockId('idforge:migrations');

type Queryable = pg.Pool | pg.PoolClient;
type Param = string | number | null | Buffer | readonly (string | null)[];

/**
 * PostgreSQL text cannot hold NUL (SQLite's can), so no stored key contains one. A lookup, update
 * or delete keyed by such a value (a hostile client_id, interaction uid or typed email) therefore
 * matches nothing, as in SQLite, instead of failing the request with an encoding error. The string
 * parameters of our SELECT, UPDATE and DELETE statements are all keys.
 */
const matchesNothing = (sql: string, params: readonly Param[]) =>
  !/^\s*INSERT/i.test(sql) && params.some((p) => typeof p === 'string' && p.includes('\u0000'));

/** In an array of keys (`= ANY($n::text[])`), a value with NUL is one that no row holds: it is left out, the others still match. */
const storableKeys = (params: readonly Param[]): Param[] =>
  params.map((p) => (Array.isArray(p) ? (p as unknown[]).filter((x) => !(typeof x === 'string' && x.includes('\u0000'))) as unknown as Param : p));

async function query(db: Queryable, sql: string, params: readonly Param[] = []): Promise<{ rows: Row[]; rowCount: number }> {
  if (matchesNothing(sql, params)) return { rows: [], rowCount: 0 };
  const r = await db.query(sql, storableKeys(params));
  return { rows: r.rows as Row[], rowCount: r.rowCount ?? 0 };
}

/**
 * Taken before a transaction inserts events, held to its COMMIT: event-writing transactions commit
 * one at a time, so `seq` (drawn after the lock) grows in commit order and no reader that has seen
 * seq n later finds a smaller one (types.ts, EventStore).
 */
const EVENTS_LOCK = lockId('idforge:events');
/** Rows per INSERT of events (a batch of 100,000 users writes 200,000 events). */
const EVENT_CHUNK = 2000;

async function insertEvents(q: (sql: string, params?: readonly Param[]) => ReturnType<typeof query>, events: readonly EventView[]): Promise<void> {
  if (events.length === 0) return;
  await q('SELECT pg_advisory_xact_lock($1::bigint)', [EVENTS_LOCK]);
  for (let i = 0; i < events.length; i += EVENT_CHUNK) {
    const chunk = events.slice(i, i + EVENT_CHUNK).map(eventValues);
    // One array per column, unnested into rows: one statement per chunk, whatever its size.
    const columns = EVENT_COLUMNS.map((_, c) => chunk.map((row) => (row[c] === null ? null : String(row[c]))));
    const types = EVENT_COLUMNS.map((c) => (c === 'at_ms' ? 'bigint[]' : 'text[]'));
    await q(`INSERT INTO events (${EVENT_COLUMNS.join(', ')}) SELECT * FROM unnest(${types.map((t, n) => `$${n + 1}::${t}`).join(', ')})`, columns);
  }
  // The one place events are written, so also where each tenant's directory revision moves (EventStore.revisions).
  const revised = revisionsOf(events);
  if (revised.size > 0) {
    await q(`INSERT INTO tenant_revisions (tenant, revision) SELECT * FROM unnest($1::text[], $2::text[])
      ON CONFLICT (tenant) DO UPDATE SET revision = excluded.revision`, [[...revised.keys()], [...revised.values()]]);
  }
}

class Db {
  constructor(readonly pool: pg.Pool) {}

  q(sql: string, params: readonly Param[] = []) {
    // A change's events (storage/_events.ts) ride on its transaction: a lone write statement gets one.
    if (isWriteSql(sql) && pendingOutbox() !== undefined) return this.tx((q) => q(sql, params));
    return query(this.pool, sql, params);
  }
  async one(sql: string, params: readonly Param[] = []): Promise<Row | undefined> {
    return (await this.q(sql, params)).rows[0];
  }

  /** Runs `fn` in one transaction on one connection; rolls back when it throws. */
  async tx<T>(fn: (q: (sql: string, params?: readonly Param[]) => ReturnType<typeof query>) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const outbox = /READ ONLY/i.test(begin) ? undefined : pendingOutbox();
    if (outbox !== undefined) outbox.claimed = true;
    const held = await checkout(this.pool).catch((err: unknown) => {
      if (outbox !== undefined) outbox.claimed = false;
      throw err;
    });
    const client = held.client;
    let broken: Error | undefined;
    try {
      await client.query(begin);
      const q = (sql: string, params: readonly Param[] = []) => query(client, sql, params);
      const result = await fn(q);
      if (outbox !== undefined) await insertEvents(q, outbox.events());
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (outbox !== undefined) outbox.claimed = false;
      if (lostConnection(err)) {
        // Gone, or not answering (the query timeout): a ROLLBACK would wait as long again. The
        // connection is closed instead, which ends the transaction on the server.
        broken = err as Error;
      } else {
        await client.query('ROLLBACK').catch((e: Error) => {
          broken = e;
        });
      }
      throw err;
    } finally {
      // A connection whose ROLLBACK failed is in an unknown state: drop it rather than reuse it.
      held.release(broken);
    }
  }
}

class Tenants implements TenantStore {
  constructor(private readonly d: Db) {}

  async get(name: string): Promise<TenantRecord | undefined> {
    const r = await this.d.one('SELECT * FROM tenants WHERE name = $1', [name]);
    return r && tenantRow(r);
  }
  async list(page: PageRequest): Promise<Page<TenantRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q('SELECT * FROM tenants WHERE name > $1 ORDER BY name LIMIT $2', [after, page.limit + 1]);
    return toPage(rows, page.limit, tenantRow, (r) => [String(r.name)]);
  }
  async count(): Promise<number> {
    return Number((await this.d.one('SELECT count(*) AS n FROM tenants'))!.n);
  }
  async put(name: string, body: TenantBody, initialKeys?: readonly KeyRecord[]): Promise<TenantRecord> {
    const t = now();
    return this.d.tx(async (q) => {
      // xmax = 0 only on a row this statement inserted. A concurrent creation waits on the row
      // lock and then updates, so exactly one caller stores its initial keys.
      const { rows } = await q(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES ($1, $2, $3, $3)
        ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
        RETURNING *, (xmax = 0) AS inserted`, [name, JSON.stringify(body), t]);
      const row = rows[0]!;
      if (row.inserted === true && initialKeys !== undefined) await insertKeys(q, name, initialKeys);
      return tenantRow(row);
    });
  }
  async delete(name: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      for (const table of TENANT_TABLES) await q(`DELETE FROM ${table} WHERE tenant = $1`, [name]);
      return (await q('DELETE FROM tenants WHERE name = $1', [name])).rowCount > 0;
    });
  }

  async rename(from: string, to: string, reseal: TenantReseal): Promise<boolean> {
    try {
      return await this.d.tx(async (q) => {
        // Batches and key rotations of the tenant wait for the move (and the move for them).
        await q('SELECT pg_advisory_xact_lock($1::bigint)', [lockId(`batch:${from}`)]);
        await q('SELECT pg_advisory_xact_lock($1::bigint)', [lockId(`keys:${from}`)]);
        if ((await q('SELECT 1 FROM tenants WHERE name = $1 FOR UPDATE', [from])).rowCount === 0) return false;
        if ((await q('SELECT 1 FROM tenants WHERE name = $1', [to])).rowCount! > 0) throw new NameTakenError(`tenant '${to}' exists`);
        // What belongs to the old issuer or host goes first; the rename then carries every other row
        // to the new name in the database (ON UPDATE CASCADE), and what is sealed under the name is sealed anew.
        for (const table of RENAME_DROPPED_TABLES) await q(`DELETE FROM ${table} WHERE tenant = $1`, [from]);
        await q('UPDATE tenants SET name = $1, updated_at = $2 WHERE name = $3', [to, now(), from]);
        for (const k of (await q('SELECT kid, sealed_jwk FROM keys WHERE tenant = $1', [to])).rows) {
          await q('UPDATE keys SET sealed_jwk = $1 WHERE tenant = $2 AND kid = $3', [reseal.key(from, to, String(k.kid), String(k.sealed_jwk)), to, String(k.kid)]);
        }
        for (const t of (await q('SELECT user_id, sealed_secret FROM totp_secrets WHERE tenant = $1', [to])).rows) {
          await q('UPDATE totp_secrets SET sealed_secret = $1 WHERE tenant = $2 AND user_id = $3', [reseal.totp(from, to, String(t.user_id), String(t.sealed_secret)), to, String(t.user_id)]);
        }
        return true;
      });
    } catch (err) {
      // A tenant of the new name created meanwhile by another replica.
      if (isUniqueViolation(err)) throw new NameTakenError(`tenant '${to}' exists`);
      throw err;
    }
  }

  async listKeys(tenant: string): Promise<readonly KeyRecord[]> {
    return (await this.d.q('SELECT * FROM keys WHERE tenant = $1 ORDER BY created_at, kid', [tenant])).rows.map(keyRow);
  }
  async updateKeys(tenant: string, update: (current: readonly KeyRecord[]) => readonly KeyRecord[]): Promise<readonly KeyRecord[]> {
    return this.d.tx(async (q) => {
      // The lock is on the tenant's key set, not a row: it holds even when the set is empty.
      await q('SELECT pg_advisory_xact_lock($1::bigint)', [lockId(`keys:${tenant}`)]);
      const keys = update((await q('SELECT * FROM keys WHERE tenant = $1 ORDER BY created_at, kid', [tenant])).rows.map(keyRow));
      await q('DELETE FROM keys WHERE tenant = $1', [tenant]);
      await insertKeys(q, tenant, keys);
      return keys;
    });
  }

  async contents(name: string): Promise<TenantContents> {
    // One snapshot for the four reads: a concurrent change is seen entirely or not at all.
    return this.d.tx((q) => readContents(q, name), 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  }
  async batch<T>(name: string, decide: (contents: TenantContents) => { readonly changes: TenantChanges; readonly result: T }): Promise<T> {
    return this.d.tx(async (q) => {
      // Batches of one tenant take turns across replicas: each reads what the previous one wrote.
      // (Read committed: single-object writes may still land between, as they may between two of
      // them; the writes below are upserts and keyed deletes that stay correct if they do.)
      await q('SELECT pg_advisory_xact_lock($1::bigint)', [lockId(`batch:${name}`)]);
      const { changes, result } = decide(await readContents(q, name));
      await writeChanges(q, name, changes);
      return result;
    });
  }
}

type Query = (sql: string, params?: readonly Param[]) => ReturnType<typeof query>;

async function readContents(q: Query, name: string): Promise<TenantContents> {
  const tenant = (await q('SELECT * FROM tenants WHERE name = $1', [name])).rows[0];
  return {
    tenant: tenant && tenantRow(tenant),
    applications: (await q('SELECT * FROM applications WHERE tenant = $1 ORDER BY name', [name])).rows.map(appRow),
    users: (await q('SELECT * FROM users WHERE tenant = $1 ORDER BY id', [name])).rows.map(userRow),
    assignments: (await q('SELECT * FROM assignments WHERE tenant = $1 ORDER BY application, user_id', [name])).rows.map(assignmentRow),
    revision: (await q('SELECT revision FROM tenant_revisions WHERE tenant = $1', [name])).rows[0]?.revision as string | undefined,
  };
}

/**
 * The writes of TenantChanges, each kind in one statement over arrays (unnest), so a batch of
 * thousands of rows is a handful of round trips; each statement does what the single-object
 * method it names does.
 */
async function writeChanges(q: Query, tenant: string, c: TenantChanges): Promise<void> {
  const t = now();
  if (c.tenant !== undefined) {
    // xmax = 0 only on a row this statement inserted: keys only with the creation.
    const row = (await q(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES ($1, $2, $3, $3)
      ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
      RETURNING (xmax = 0) AS inserted`, [tenant, JSON.stringify(c.tenant.body), t])).rows[0]!;
    if (row.inserted === true && c.tenant.initialKeys !== undefined) await insertKeys(q, tenant, c.tenant.initialKeys);
  }
  if (c.applications.length > 0) {
    const col = <K>(f: (a: TenantChanges['applications'][number]) => K) => c.applications.map(f);
    await q(`INSERT INTO applications (tenant, name, kind, client_id, identifier, body, secret_hash, created_at, updated_at)
      SELECT $1, n, k, c, i, b, s, $8, $8 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS x(n, k, c, i, b, s)
      ON CONFLICT (tenant, name) DO UPDATE SET kind = excluded.kind, client_id = excluded.client_id,
        identifier = excluded.identifier, body = excluded.body, secret_hash = excluded.secret_hash, updated_at = excluded.updated_at`, [
      tenant, col((a) => a.name), col((a) => a.body.kind), col((a) => (a.body.kind === 'api' ? null : a.body.clientId)),
      col((a) => (a.body.kind === 'api' ? a.body.identifier : null)), col((a) => JSON.stringify(a.body)), col((a) => a.secretHash), t,
    ]);
  }
  if (c.users.length > 0) {
    await q(`INSERT INTO users (tenant, id, email, body, password_hash, created_at, updated_at)
      SELECT $1, i, e, b, h, $6, $6 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(i, e, b, h)
      ON CONFLICT (tenant, id) DO UPDATE SET email = excluded.email, body = excluded.body,
        password_hash = coalesce(users.password_hash, excluded.password_hash), updated_at = excluded.updated_at`, [
      tenant, c.users.map((u) => u.id), c.users.map((u) => u.body.email.toLowerCase()), c.users.map((u) => JSON.stringify(u.body)),
      c.users.map((u) => u.initialPasswordHash), t,
    ]);
    const revoked = c.users.filter((u) => u.revokeArtifacts).map((u) => u.id);
    if (revoked.length > 0) await q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = ANY($2::text[])', [tenant, revoked]);
  }
  if (c.assignments.length > 0) {
    await q(`INSERT INTO assignments (tenant, application, user_id, body, created_at)
      SELECT $1, a, u, b, $5 FROM unnest($2::text[], $3::text[], $4::text[]) AS x(a, u, b)
      ON CONFLICT (tenant, application, user_id) DO UPDATE SET body = excluded.body`, [
      tenant, c.assignments.map((a) => a.application), c.assignments.map((a) => a.userId), c.assignments.map((a) => JSON.stringify(a.body)), t,
    ]);
  }
  if (c.deleteAssignments.length > 0) {
    const d = c.deleteAssignments;
    await q(`DELETE FROM assignments WHERE tenant = $1 AND (application, user_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
      [tenant, d.map((a) => a.application), d.map((a) => a.userId)]);
    // As revokeUserClient, per pair: the grants and everything issued under them go together.
    await q(`WITH pairs AS (SELECT * FROM unnest($2::text[], $3::text[]) AS p(account, client))
      DELETE FROM artifacts WHERE tenant = $1 AND (
        ((account_id, client_id) IN (SELECT account, client FROM pairs) AND model <> 'Session')
        OR grant_id IN (SELECT id FROM artifacts WHERE tenant = $1 AND model = 'Grant' AND (account_id, client_id) IN (SELECT account, client FROM pairs)))`,
    [tenant, d.map((a) => a.userId), d.map((a) => a.clientId)]);
  }
  if (c.deleteUsers.length > 0) {
    const ids = c.deleteUsers;
    await q('DELETE FROM assignments WHERE tenant = $1 AND user_id = ANY($2::text[])', [tenant, ids]);
    await q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = ANY($2::text[])', [tenant, ids]);
    for (const table of [...USER_FACTOR_TABLES, ...USER_LINK_TABLES]) await q(`DELETE FROM ${table} WHERE tenant = $1 AND user_id = ANY($2::text[])`, [tenant, ids]);
    await q('DELETE FROM users WHERE tenant = $1 AND id = ANY($2::text[])', [tenant, ids]);
  }
  if (c.deleteApplications.length > 0) {
    const gone = (await q('DELETE FROM applications WHERE tenant = $1 AND name = ANY($2::text[]) RETURNING name, client_id', [tenant, c.deleteApplications])).rows;
    await q('DELETE FROM assignments WHERE tenant = $1 AND application = ANY($2::text[])', [tenant, gone.map((r) => String(r.name))]);
    await q('DELETE FROM group_assignments WHERE tenant = $1 AND application = ANY($2::text[])', [tenant, gone.map((r) => String(r.name))]);
    const clients = gone.filter((r) => r.client_id !== null).map((r) => String(r.client_id));
    if (clients.length > 0) await q('DELETE FROM artifacts WHERE tenant = $1 AND client_id = ANY($2::text[])', [tenant, clients]);
  }
}

async function insertKeys(q: (sql: string, params?: readonly Param[]) => Promise<unknown>, tenant: string, keys: readonly KeyRecord[]): Promise<void> {
  for (const k of keys) {
    await q('INSERT INTO keys (tenant, kid, alg, state, sealed_jwk, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [tenant, k.kid, k.alg, k.state, k.sealedJwk, k.createdAt, k.retiredAt]);
  }
}

class Applications implements ApplicationStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, name: string): Promise<ApplicationRecord | undefined> {
    const r = await this.d.one('SELECT * FROM applications WHERE tenant = $1 AND name = $2', [tenant, name]);
    return r && appRow(r);
  }
  async getByClientId(tenant: string, clientId: string): Promise<ApplicationRecord | undefined> {
    const r = await this.d.one('SELECT * FROM applications WHERE tenant = $1 AND client_id = $2', [tenant, clientId]);
    return r && appRow(r);
  }
  async getByIdentifier(tenant: string, identifier: string): Promise<ApplicationRecord | undefined> {
    const r = await this.d.one('SELECT * FROM applications WHERE tenant = $1 AND identifier = $2', [tenant, identifier]);
    return r && appRow(r);
  }
  async list(tenant: string, page: PageRequest): Promise<Page<ApplicationRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q(`SELECT * FROM applications WHERE tenant = $1 AND name > $2 AND kind <> 'service' ORDER BY name LIMIT $3`,
      [tenant, after, page.limit + 1]);
    return toPage(rows, page.limit, appRow, (r) => [String(r.name)]);
  }
  async put(tenant: string, name: string, body: StoredApplicationBody, secretHash: string | null): Promise<ApplicationRecord> {
    const clientId = body.kind === 'api' ? null : body.clientId;
    const identifier = body.kind === 'api' ? body.identifier : null;
    const r = await this.d.one(`INSERT INTO applications (tenant, name, kind, client_id, identifier, body, secret_hash, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
      ON CONFLICT (tenant, name) DO UPDATE SET kind = excluded.kind, client_id = excluded.client_id,
        identifier = excluded.identifier, body = excluded.body, secret_hash = excluded.secret_hash, updated_at = excluded.updated_at
      RETURNING *`, [tenant, name, body.kind, clientId, identifier, JSON.stringify(body), secretHash, now()]);
    return appRow(r!);
  }
  async delete(tenant: string, name: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      const app = (await q('DELETE FROM applications WHERE tenant = $1 AND name = $2 RETURNING client_id', [tenant, name])).rows[0];
      if (app === undefined) return false;
      await q('DELETE FROM assignments WHERE tenant = $1 AND application = $2', [tenant, name]);
      await q('DELETE FROM group_assignments WHERE tenant = $1 AND application = $2', [tenant, name]);
      if (app.client_id !== null) await q('DELETE FROM artifacts WHERE tenant = $1 AND client_id = $2', [tenant, String(app.client_id)]);
      return true;
    });
  }
  async rename(tenant: string, from: string, to: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      // Both rows locked in name order: two renames crossing each other wait instead of deadlocking.
      const rows = (await q('SELECT name FROM applications WHERE tenant = $1 AND name IN ($2, $3) ORDER BY name COLLATE "C" FOR UPDATE', [tenant, from, to])).rows;
      if (!rows.some((r) => r.name === from)) return false;
      if (rows.some((r) => r.name === to)) throw new NameTakenError(`application '${to}' exists`);
      // Its assignments and group assignments follow in the database (ON UPDATE CASCADE).
      await q('UPDATE applications SET name = $1, updated_at = $2 WHERE tenant = $3 AND name = $4', [to, now(), tenant, from]);
      return true;
    });
  }
}

const UPSERT_USER = `INSERT INTO users (tenant, id, email, body, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
  ON CONFLICT (tenant, id) DO UPDATE SET email = excluded.email, body = excluded.body,
    password_hash = excluded.password_hash, updated_at = excluded.updated_at
  RETURNING *`;

class Users implements UserStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<UserRecord | undefined> {
    const r = await this.d.one('SELECT * FROM users WHERE tenant = $1 AND id = $2', [tenant, id]);
    return r && userRow(r);
  }
  async getByEmail(tenant: string, email: string): Promise<UserRecord | undefined> {
    // Emails compare case-insensitively (as people type them); ids are the identity.
    const r = await this.d.one('SELECT * FROM users WHERE tenant = $1 AND email = $2 ORDER BY id LIMIT 1', [tenant, email.toLowerCase()]);
    return r && userRow(r);
  }
  async list(tenant: string, page: PageRequest, search?: string): Promise<Page<UserRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = search === undefined
      ? await this.d.q('SELECT * FROM users WHERE tenant = $1 AND id > $2 ORDER BY id LIMIT $3', [tenant, after, page.limit + 1])
      : await this.d.q(`SELECT * FROM users WHERE tenant = $1 AND id > $2 AND (strpos(lower(id), $4) > 0 OR strpos(email, $4) > 0
          OR strpos(lower(coalesce(body::json->>'displayName', '')), $4) > 0) ORDER BY id LIMIT $3`, [tenant, after, page.limit + 1, search]);
    return toPage(rows, page.limit, userRow, (r) => [String(r.id)]);
  }
  async put(tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null, options: { readonly revokeArtifacts?: boolean } = {}): Promise<UserRecord> {
    const params = [tenant, id, body.email.toLowerCase(), JSON.stringify(body), passwordHash, now()];
    if (options.revokeArtifacts !== true) return userRow((await this.d.one(UPSERT_USER, params))!);
    return this.d.tx(async (q) => {
      const row = (await q(UPSERT_USER, params)).rows[0]!;
      await q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = $2', [tenant, id]);
      return userRow(row);
    });
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      await q('DELETE FROM assignments WHERE tenant = $1 AND user_id = $2', [tenant, id]);
      await q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = $2', [tenant, id]);
      for (const table of USER_FACTOR_TABLES) await q(`DELETE FROM ${table} WHERE tenant = $1 AND user_id = $2`, [tenant, id]);
      for (const table of USER_LINK_TABLES) await q(`DELETE FROM ${table} WHERE tenant = $1 AND user_id = $2`, [tenant, id]);
      return (await q('DELETE FROM users WHERE tenant = $1 AND id = $2', [tenant, id])).rowCount > 0;
    });
  }

  async getAssignment(tenant: string, application: string, userId: string): Promise<AssignmentRecord | undefined> {
    const r = await this.d.one('SELECT * FROM assignments WHERE tenant = $1 AND application = $2 AND user_id = $3', [tenant, application, userId]);
    return r && assignmentRow(r);
  }
  async listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<AssignmentRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q('SELECT * FROM assignments WHERE tenant = $1 AND application = $2 AND user_id > $3 ORDER BY user_id LIMIT $4',
      [tenant, application, after, page.limit + 1]);
    return toPage(rows, page.limit, assignmentRow, (r) => [String(r.user_id)]);
  }
  async listUserAssignments(tenant: string, userId: string): Promise<AssignmentRecord[]> {
    const { rows } = await this.d.q('SELECT * FROM assignments WHERE tenant = $1 AND user_id = $2 ORDER BY application COLLATE "C"', [tenant, userId]);
    return rows.map(assignmentRow);
  }
  async putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody): Promise<AssignmentRecord> {
    const r = await this.d.one(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (tenant, application, user_id) DO UPDATE SET body = excluded.body RETURNING *`,
    [tenant, application, userId, JSON.stringify(body), now()]);
    return assignmentRow(r!);
  }
  async deleteAssignment(tenant: string, application: string, userId: string): Promise<boolean> {
    return (await this.d.q('DELETE FROM assignments WHERE tenant = $1 AND application = $2 AND user_id = $3', [tenant, application, userId])).rowCount > 0;
  }
  async changeAssignments(
    tenant: string, application: string, clientId: string,
    change: { readonly add: readonly string[]; readonly remove: readonly string[]; readonly body: AssignmentBody },
  ): Promise<{ readonly added: readonly string[]; readonly removed: readonly string[] }> {
    return this.d.tx(async (q) => {
      // FOR SHARE: a user found here cannot be deleted by another replica before this commits.
      const missing: string[] = [];
      for (const id of change.add) {
        if ((await q('SELECT 1 FROM users WHERE tenant = $1 AND id = $2 FOR SHARE', [tenant, id])).rowCount === 0) missing.push(id);
      }
      if (missing.length > 0) throw new MissingUsersError(missing);
      const t = now();
      const body = JSON.stringify(change.body);
      const added: string[] = [];
      for (const id of change.add) {
        const r = await q(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES ($1, $2, $3, $4, $5)
          ON CONFLICT (tenant, application, user_id) DO NOTHING`, [tenant, application, id, body, t]);
        if (r.rowCount > 0) added.push(id);
      }
      const removed: string[] = [];
      for (const id of change.remove) {
        if ((await q('DELETE FROM assignments WHERE tenant = $1 AND application = $2 AND user_id = $3', [tenant, application, id])).rowCount > 0) removed.push(id);
        // As GrantStore.revokeUserClient: the grants and everything issued under them.
        await q(`DELETE FROM artifacts WHERE tenant = $1 AND (
            (account_id = $2 AND client_id = $3 AND model <> 'Session')
            OR grant_id IN (SELECT id FROM artifacts WHERE tenant = $1 AND account_id = $2 AND client_id = $3 AND model = 'Grant'))`,
        [tenant, id, clientId]);
      }
      return { added, removed };
    });
  }

  async getTotp(tenant: string, userId: string): Promise<TotpRecord | undefined> {
    const r = await this.d.one('SELECT * FROM totp_secrets WHERE tenant = $1 AND user_id = $2', [tenant, userId]);
    return r && totpRow(r);
  }
  async putTotp(tenant: string, userId: string, sealedSecret: string, lastStep: number): Promise<void> {
    await this.d.q(`INSERT INTO totp_secrets (tenant, user_id, sealed_secret, last_step, created_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (tenant, user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, last_step = excluded.last_step, created_at = excluded.created_at`,
    [tenant, userId, sealedSecret, lastStep, now()]);
  }
  async claimTotpStep(tenant: string, userId: string, step: number): Promise<boolean> {
    // A concurrent claim waits on the row and re-checks `last_step < $3` against the winner's write.
    return (await this.d.q('UPDATE totp_secrets SET last_step = $3 WHERE tenant = $1 AND user_id = $2 AND last_step < $3', [tenant, userId, step])).rowCount > 0;
  }
  async deleteTotp(tenant: string, userId: string): Promise<boolean> {
    return (await this.d.q('DELETE FROM totp_secrets WHERE tenant = $1 AND user_id = $2', [tenant, userId])).rowCount > 0;
  }

  async putOtp(tenant: string, userId: string, codeHash: string, expiresAtMs: number): Promise<void> {
    await this.d.q(`INSERT INTO otp_codes (tenant, user_id, code_hash, expires_at_ms, attempts) VALUES ($1, $2, $3, $4, 0)
      ON CONFLICT (tenant, user_id) DO UPDATE SET code_hash = excluded.code_hash, expires_at_ms = excluded.expires_at_ms, attempts = 0`,
    [tenant, userId, codeHash, expiresAtMs]);
  }
  async getOtp(tenant: string, userId: string): Promise<OtpRecord | undefined> {
    const r = await this.d.one('SELECT * FROM otp_codes WHERE tenant = $1 AND user_id = $2', [tenant, userId]);
    return r && otpRow(r);
  }
  async countOtpAttempt(tenant: string, userId: string): Promise<number> {
    const r = await this.d.one('UPDATE otp_codes SET attempts = attempts + 1 WHERE tenant = $1 AND user_id = $2 RETURNING attempts', [tenant, userId]);
    return r === undefined ? Number.MAX_SAFE_INTEGER : Number(r.attempts);
  }
  async deleteOtp(tenant: string, userId: string, codeHash?: string): Promise<boolean> {
    const r = codeHash === undefined
      ? await this.d.q('DELETE FROM otp_codes WHERE tenant = $1 AND user_id = $2', [tenant, userId])
      : await this.d.q('DELETE FROM otp_codes WHERE tenant = $1 AND user_id = $2 AND code_hash = $3', [tenant, userId, codeHash]);
    return r.rowCount > 0;
  }
  async purgeExpiredOtps(): Promise<void> {
    await this.d.q('DELETE FROM otp_codes WHERE expires_at_ms <= $1', [Date.now()]);
  }

  async listPasskeys(tenant: string, userId: string): Promise<readonly PasskeyRecord[]> {
    return (await this.d.q('SELECT * FROM passkeys WHERE tenant = $1 AND user_id = $2 ORDER BY created_at, credential_id', [tenant, userId])).rows.map(passkeyRow);
  }
  async getPasskey(tenant: string, credentialId: string): Promise<PasskeyRecord | undefined> {
    const r = await this.d.one('SELECT * FROM passkeys WHERE tenant = $1 AND credential_id = $2', [tenant, credentialId]);
    return r && passkeyRow(r);
  }
  async putPasskey(tenant: string, p: PasskeyRecord): Promise<void> {
    await this.d.q('INSERT INTO passkeys (tenant, credential_id, user_id, public_key, counter, transports, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [tenant, p.credentialId, p.userId, p.publicKey, p.counter, JSON.stringify(p.transports), p.createdAt]);
  }
  async updatePasskeyCounter(tenant: string, credentialId: string, counter: number): Promise<void> {
    await this.d.q('UPDATE passkeys SET counter = $3 WHERE tenant = $1 AND credential_id = $2', [tenant, credentialId, counter]);
  }
  async deletePasskey(tenant: string, userId: string, credentialId: string): Promise<boolean> {
    return (await this.d.q('DELETE FROM passkeys WHERE tenant = $1 AND user_id = $2 AND credential_id = $3', [tenant, userId, credentialId])).rowCount > 0;
  }
}

/**
 * Grants, refresh tokens, access tokens and codes of some users ($2, an array) at one client ($3):
 * one statement, so the grants and everything issued under them go together.
 */
const REVOKE_USERS_AT_CLIENT = `DELETE FROM artifacts WHERE tenant = $1 AND (
    (account_id = ANY($2::text[]) AND client_id = $3 AND model <> 'Session')
    OR grant_id IN (SELECT id FROM artifacts WHERE tenant = $1 AND account_id = ANY($2::text[]) AND client_id = $3 AND model = 'Grant'))`;

class Grants implements GrantStore {
  constructor(private readonly d: Db) {}

  async upsert(tenant: string, model: string, id: string, payload: ArtifactPayload, expiresIn: number | undefined): Promise<void> {
    const c = artifactColumns(payload);
    try {
      await this.d.q(`INSERT INTO artifacts (tenant, model, id, payload, grant_id, uid, user_code, account_id, client_id, expires_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        ON CONFLICT (tenant, model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
          user_code = excluded.user_code, account_id = excluded.account_id, client_id = excluded.client_id, expires_at = excluded.expires_at`,
      [tenant, model, id, JSON.stringify(payload), c.grantId, c.uid, c.userCode, c.accountId, c.clientId, expiresIn === undefined ? null : now() + expiresIn]);
    } catch (err) {
      // Its tenant or account was deleted meanwhile: such an artifact could only outlive them (GrantStore.upsert).
      if (!isForeignKeyViolation(err)) throw err;
    }
  }
  async find(tenant: string, model: string, id: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(await this.d.one('SELECT payload, expires_at FROM artifacts WHERE tenant = $1 AND model = $2 AND id = $3', [tenant, model, id]));
  }
  async findByUid(tenant: string, model: string, uid: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(await this.d.one('SELECT payload, expires_at FROM artifacts WHERE tenant = $1 AND model = $2 AND uid = $3', [tenant, model, uid]));
  }
  async findByUserCode(tenant: string, model: string, userCode: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(await this.d.one('SELECT payload, expires_at FROM artifacts WHERE tenant = $1 AND model = $2 AND user_code = $3', [tenant, model, userCode]));
  }
  async consume(tenant: string, model: string, id: string): Promise<void> {
    // In JavaScript rather than jsonb_set, which would reorder the payload's keys; the row lock
    // keeps a concurrent change from being overwritten with the copy read here.
    await this.d.tx(async (q) => {
      const r = (await q('SELECT payload FROM artifacts WHERE tenant = $1 AND model = $2 AND id = $3 FOR UPDATE', [tenant, model, id])).rows[0];
      if (r === undefined) return;
      const payload = JSON.parse(String(r.payload)) as Record<string, unknown>;
      payload.consumed = now();
      await q('UPDATE artifacts SET payload = $4 WHERE tenant = $1 AND model = $2 AND id = $3', [tenant, model, id, JSON.stringify(payload)]);
    });
  }
  async destroy(tenant: string, model: string, id: string): Promise<void> {
    await this.d.q('DELETE FROM artifacts WHERE tenant = $1 AND model = $2 AND id = $3', [tenant, model, id]);
  }
  async revokeByGrantId(tenant: string, grantId: string): Promise<void> {
    await this.d.q('DELETE FROM artifacts WHERE tenant = $1 AND grant_id = $2', [tenant, grantId]);
  }
  async revokeUserClient(tenant: string, accountId: string, clientId: string): Promise<void> {
    await this.d.q(REVOKE_USERS_AT_CLIENT, [tenant, [accountId] as never, clientId]);
  }
  async revokeUser(tenant: string, accountId: string): Promise<void> {
    await this.d.q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = $2', [tenant, accountId]);
  }
  async listByAccount(tenant: string, accountId: string, models: readonly string[]): Promise<readonly AccountArtifact[]> {
    if (models.length === 0) return [];
    const rows = (await this.d.q(`SELECT model, id, payload, expires_at FROM artifacts WHERE tenant = $1 AND account_id = $2 AND model = ANY($3::text[])
      AND (expires_at IS NULL OR expires_at > $4) ORDER BY model COLLATE "C", id COLLATE "C"`, [tenant, accountId, models as never, now()])).rows;
    return rows.map(accountArtifactRow);
  }
  async purgeExpired(): Promise<number> {
    return (await this.d.q('DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= $1', [now()])).rowCount;
  }
}

type Tx = (sql: string, params?: readonly Param[]) => ReturnType<typeof query>;
const texts = (a: readonly string[]) => a as unknown as Param;

class Groups implements GroupStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<GroupRecord | undefined> {
    const r = await this.d.one('SELECT * FROM tenant_groups WHERE tenant = $1 AND id = $2', [tenant, id]);
    return r && groupRow(r);
  }
  async getByDisplayName(tenant: string, displayName: string): Promise<GroupRecord | undefined> {
    const r = await this.d.one('SELECT * FROM tenant_groups WHERE tenant = $1 AND display_key = $2', [tenant, caseKey(displayName)]);
    return r && groupRow(r);
  }
  async list(tenant: string, page: PageRequest): Promise<Page<GroupRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q('SELECT * FROM tenant_groups WHERE tenant = $1 AND id > $2 ORDER BY id LIMIT $3', [tenant, after, page.limit + 1]);
    return toPage(rows, page.limit, groupRow, (r) => [String(r.id)]);
  }
  async put(tenant: string, id: string, body: Omit<GroupBody, 'members'>, members: MembershipChange = {}): Promise<GroupRecord> {
    return this.d.tx(async (q) => {
      const row = (await q(`INSERT INTO tenant_groups (tenant, id, display_key, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
        ON CONFLICT (tenant, id) DO UPDATE SET display_key = excluded.display_key, body = excluded.body, updated_at = excluded.updated_at
        RETURNING *`, [tenant, id, caseKey(body.displayName), JSON.stringify(body), now()])).rows[0]!;
      // Only users of the tenant become members, decided in the same statement as the insert.
      if ((members.add ?? []).length > 0) {
        await q(`INSERT INTO group_members (tenant, group_id, user_id) SELECT tenant, $2, id FROM users WHERE tenant = $1 AND id = ANY($3::text[])
          ON CONFLICT DO NOTHING`, [tenant, id, texts(members.add!)]);
      }
      if ((members.remove ?? []).length > 0) {
        const removed = (await q('DELETE FROM group_members WHERE tenant = $1 AND group_id = $2 AND user_id = ANY($3::text[]) RETURNING user_id',
          [tenant, id, texts(members.remove!)])).rows.map((r) => String(r.user_id));
        await revokeLostAccess(q, tenant, removed, await assignedClients(q, tenant, id));
      }
      return groupRow(row);
    });
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      const clients = await assignedClients(q, tenant, id);
      await q('DELETE FROM group_assignments WHERE tenant = $1 AND group_id = $2', [tenant, id]);
      const members = (await q('DELETE FROM group_members WHERE tenant = $1 AND group_id = $2 RETURNING user_id', [tenant, id])).rows.map((r) => String(r.user_id));
      await revokeLostAccess(q, tenant, members, clients);
      return (await q('DELETE FROM tenant_groups WHERE tenant = $1 AND id = $2', [tenant, id])).rowCount > 0;
    });
  }
  async listMembers(tenant: string, id: string): Promise<readonly string[]> {
    return (await this.d.q('SELECT user_id FROM group_members WHERE tenant = $1 AND group_id = $2 ORDER BY user_id', [tenant, id])).rows.map((r) => String(r.user_id));
  }
  async countMembers(tenant: string, ids: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const { rows } = await this.d.q('SELECT group_id, count(*) AS n FROM group_members WHERE tenant = $1 AND group_id = ANY($2::text[]) GROUP BY group_id', [tenant, texts(ids)]);
    return new Map(rows.map((r) => [String(r.group_id), Number(r.n)]));
  }
  async groupsOf(tenant: string, userIds: readonly string[]): Promise<ReadonlyMap<string, readonly string[]>> {
    const { rows } = await this.d.q('SELECT user_id, group_id FROM group_members WHERE tenant = $1 AND user_id = ANY($2::text[]) ORDER BY user_id, group_id',
      [tenant, texts(userIds)]);
    return groupIdsByUser(rows);
  }

  async getAssignment(tenant: string, application: string, group: string): Promise<GroupAssignmentRecord | undefined> {
    const r = await this.d.one('SELECT * FROM group_assignments WHERE tenant = $1 AND application = $2 AND group_id = $3', [tenant, application, group]);
    return r && groupAssignmentRow(r);
  }
  async listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<GroupAssignmentRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q('SELECT * FROM group_assignments WHERE tenant = $1 AND application = $2 AND group_id > $3 ORDER BY group_id LIMIT $4',
      [tenant, application, after, page.limit + 1]);
    return toPage(rows, page.limit, groupAssignmentRow, (r) => [String(r.group_id)]);
  }
  async putAssignment(tenant: string, application: string, group: string, body: GroupAssignmentBody): Promise<GroupAssignmentRecord> {
    const r = await this.d.one(`INSERT INTO group_assignments (tenant, application, group_id, body, created_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (tenant, application, group_id) DO UPDATE SET body = excluded.body RETURNING *`,
    [tenant, application, group, JSON.stringify(body), now()]);
    return groupAssignmentRow(r!);
  }
  async deleteAssignment(tenant: string, application: string, group: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      if ((await q('DELETE FROM group_assignments WHERE tenant = $1 AND application = $2 AND group_id = $3', [tenant, application, group])).rowCount === 0) return false;
      const app = (await q('SELECT name, client_id FROM applications WHERE tenant = $1 AND name = $2', [tenant, application])).rows[0];
      const members = (await q('SELECT user_id FROM group_members WHERE tenant = $1 AND group_id = $2', [tenant, group])).rows.map((r) => String(r.user_id));
      await revokeLostAccess(q, tenant, members, app === undefined || app.client_id === null ? [] : [{ name: String(app.name), clientId: String(app.client_id) }]);
      return true;
    });
  }
  async grantsAccess(tenant: string, application: string, userId: string): Promise<boolean> {
    return (await this.d.one(`SELECT 1 FROM group_assignments ga JOIN group_members gm ON gm.tenant = ga.tenant AND gm.group_id = ga.group_id
      WHERE ga.tenant = $1 AND ga.application = $2 AND gm.user_id = $3 LIMIT 1`, [tenant, application, userId])) !== undefined;
  }
}

/** The client applications a group is assigned to. */
async function assignedClients(q: Tx, tenant: string, group: string): Promise<{ name: string; clientId: string }[]> {
  return (await q(`SELECT a.name, a.client_id FROM group_assignments ga JOIN applications a ON a.tenant = ga.tenant AND a.name = ga.application
    WHERE ga.tenant = $1 AND ga.group_id = $2 AND a.client_id IS NOT NULL ORDER BY a.name`, [tenant, group])).rows
    .map((r) => ({ name: String(r.name), clientId: String(r.client_id) }));
}

/**
 * Inside the caller's transaction, after the change: of `users`, those left without access to an
 * application (no assignment of their own, in no other group assigned to it) lose what they hold
 * there. One query and one delete per application, whatever the number of users.
 */
async function revokeLostAccess(q: Tx, tenant: string, users: readonly string[], clients: readonly { name: string; clientId: string }[]): Promise<void> {
  if (users.length === 0) return;
  for (const app of clients) {
    const lost = (await q(`SELECT u FROM unnest($3::text[]) AS u
      WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.tenant = $1 AND a.application = $2 AND a.user_id = u)
        AND NOT EXISTS (SELECT 1 FROM group_assignments ga JOIN group_members gm ON gm.tenant = ga.tenant AND gm.group_id = ga.group_id
          WHERE ga.tenant = $1 AND ga.application = $2 AND gm.user_id = u)`, [tenant, app.name, texts(users)])).rows.map((r) => String(r.u));
    if (lost.length > 0) await q(REVOKE_USERS_AT_CLIENT, [tenant, texts(lost), app.clientId]);
  }
}

const SCIM_UPSERT = `INSERT INTO scim_users (tenant, user_id, user_name, user_name_key, external_id, resource) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (tenant, user_id) DO UPDATE SET user_name = excluded.user_name, user_name_key = excluded.user_name_key,
    external_id = excluded.external_id, resource = excluded.resource`;

class Scim implements ScimStore {
  constructor(private readonly d: Db) {}

  async getUser(tenant: string, id: string): Promise<UserWithScim | undefined> {
    const r = await this.d.one(`${SCIM_USER_SELECT} WHERE u.tenant = $1 AND u.id = $2`, [tenant, id]);
    return r && userWithScimRow(r);
  }
  async getUserByUserName(tenant: string, userName: string): Promise<UserWithScim | undefined> {
    const r = await this.d.one(`${SCIM_USER_SELECT} WHERE s.tenant = $1 AND s.user_name_key = $2`, [tenant, caseKey(userName)]);
    return r && userWithScimRow(r);
  }
  async getUsersByExternalId(tenant: string, externalId: string): Promise<readonly UserWithScim[]> {
    return (await this.d.q(`${SCIM_USER_SELECT} WHERE s.tenant = $1 AND s.external_id = $2 ORDER BY u.id`, [tenant, externalId])).rows.map(userWithScimRow);
  }
  async listUsers(tenant: string, offset: number, limit: number): Promise<readonly UserWithScim[]> {
    return (await this.d.q(`${SCIM_USER_SELECT} WHERE u.tenant = $1 ORDER BY u.id LIMIT $2 OFFSET $3`, [tenant, limit, offset])).rows.map(userWithScimRow);
  }
  async countUsers(tenant: string): Promise<number> {
    return Number((await this.d.one('SELECT count(*) AS n FROM users WHERE tenant = $1', [tenant]))!.n);
  }
  async putUser(
    tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null,
    scim: Omit<ScimUserRecord, 'tenant' | 'userId'>, options: { readonly revokeArtifacts?: boolean } = {},
  ): Promise<UserWithScim> {
    await this.d.tx(async (q) => {
      await q(UPSERT_USER, [tenant, id, body.email.toLowerCase(), JSON.stringify(body), passwordHash, now()]);
      await q(SCIM_UPSERT, [tenant, id, scim.userName, caseKey(scim.userName), scim.externalId, JSON.stringify(scim.resource)]);
      if (options.revokeArtifacts === true) await q('DELETE FROM artifacts WHERE tenant = $1 AND account_id = $2', [tenant, id]);
    });
    return (await this.getUser(tenant, id))!;
  }

  async putToken(token: ScimTokenRecord): Promise<void> {
    await this.d.q('INSERT INTO scim_tokens (tenant, id, token_hash, description, created_at) VALUES ($1, $2, $3, $4, $5)',
      [token.tenant, token.id, token.hash, token.description, token.createdAt]);
  }
  async getToken(tenant: string, id: string): Promise<ScimTokenRecord | undefined> {
    const r = await this.d.one('SELECT * FROM scim_tokens WHERE tenant = $1 AND id = $2', [tenant, id]);
    return r && scimTokenRow(r);
  }
  async listTokens(tenant: string): Promise<readonly ScimTokenRecord[]> {
    return (await this.d.q('SELECT * FROM scim_tokens WHERE tenant = $1 ORDER BY created_at, id', [tenant])).rows.map(scimTokenRow);
  }
  async deleteToken(tenant: string, id: string): Promise<boolean> {
    return (await this.d.q('DELETE FROM scim_tokens WHERE tenant = $1 AND id = $2', [tenant, id])).rowCount > 0;
  }
}

class Webhooks implements WebhookStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, name: string): Promise<WebhookRecord | undefined> {
    const r = await this.d.one('SELECT * FROM webhooks WHERE tenant = $1 AND name = $2', [tenant, name]);
    return r && webhookRow(r);
  }
  async list(tenant: string): Promise<readonly WebhookRecord[]> {
    return (await this.d.q('SELECT * FROM webhooks WHERE tenant = $1 ORDER BY name', [tenant])).rows.map(webhookRow);
  }
  async put(tenant: string, name: string, body: WebhookRecord['body'], sealedSecret: string): Promise<WebhookRecord> {
    return this.d.tx(async (q) => webhookRow((await q(`INSERT INTO webhooks (tenant, name, body, sealed_secret, cursor_seq, created_at, updated_at)
      VALUES ($1, $2, $3, $4, (SELECT coalesce(max(seq), 0) FROM events), $5, $5)
      ON CONFLICT (tenant, name) DO UPDATE SET body = excluded.body, sealed_secret = excluded.sealed_secret, updated_at = excluded.updated_at
      RETURNING *`, [tenant, name, JSON.stringify(body), sealedSecret, now()])).rows[0]!));
  }
  async delete(tenant: string, name: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      await q('DELETE FROM webhook_deliveries WHERE tenant = $1 AND webhook = $2', [tenant, name]);
      return (await q('DELETE FROM webhooks WHERE tenant = $1 AND name = $2', [tenant, name])).rowCount > 0;
    });
  }
  async enqueue(nowMs: number, limit: number): Promise<number> {
    // No webhook, nothing to queue: no transaction.
    if ((await this.d.one('SELECT 1 AS x FROM webhooks LIMIT 1')) === undefined) return 0;
    return this.d.tx(async (q) => {
      let queued = 0;
      // Row locks: replicas enqueueing together take turns per webhook (SKIP LOCKED: the other one's turn is its own).
      for (const w of (await q('SELECT * FROM webhooks ORDER BY tenant, name FOR UPDATE SKIP LOCKED')).rows) {
        const hook = webhookRow(w);
        if (!hook.body.enabled) continue;
        const events = (await q('SELECT seq, id, type FROM events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3', [hook.tenant, Number(w.cursor_seq), limit])).rows;
        if (events.length === 0) continue;
        const taken = events.filter((e) => takesType(hook.body.types, String(e.type)));
        if (taken.length > 0) {
          const r = await q(`INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS.join(', ')})
            SELECT $1, $2, s, i, t, 'pending', 0, $6, 0, $6 FROM unnest($3::bigint[], $4::text[], $5::text[]) AS x(s, i, t)
            ON CONFLICT (tenant, webhook, seq) DO NOTHING`,
          [hook.tenant, hook.name, taken.map((e) => String(e.seq)), taken.map((e) => String(e.id)), taken.map((e) => String(e.type)), nowMs]);
          queued += r.rowCount;
        }
        await q('UPDATE webhooks SET cursor_seq = $1 WHERE tenant = $2 AND name = $3', [Number(events[events.length - 1]!.seq), hook.tenant, hook.name]);
      }
      return queued;
    });
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly DueDelivery[]> {
    if ((await this.d.one(`SELECT 1 AS x FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= $1 AND lease_until_ms <= $1 LIMIT 1`, [nowMs])) === undefined) return [];
    return this.d.tx(async (q) => {
      // SKIP LOCKED: replicas claiming together each take other deliveries.
      const rows = (await q(`UPDATE webhook_deliveries d SET lease_until_ms = $2, attempts = attempts + 1
        FROM (SELECT tenant, webhook, seq FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= $1 AND lease_until_ms <= $1
              ORDER BY next_attempt_ms, seq LIMIT $3 FOR UPDATE SKIP LOCKED) due
        WHERE d.tenant = due.tenant AND d.webhook = due.webhook AND d.seq = due.seq
        RETURNING d.*`, [nowMs, nowMs + leaseMs, limit])).rows;
      const out: DueDelivery[] = [];
      for (const r of rows) {
        const w = (await q('SELECT * FROM webhooks WHERE tenant = $1 AND name = $2', [String(r.tenant), String(r.webhook)])).rows[0]!;
        const event = eventOf((await q('SELECT body FROM events WHERE seq = $1', [Number(r.seq)])).rows[0]?.body);
        if (event === null) {
          await q(`UPDATE webhook_deliveries SET status = 'failed', last_error = 'the event was purged (retention) before it could be delivered'
            WHERE tenant = $1 AND webhook = $2 AND seq = $3`, [String(r.tenant), String(r.webhook), Number(r.seq)]);
          continue;
        }
        out.push({ delivery: deliveryRow(r), webhook: webhookRow(w), event });
      }
      return out;
    });
  }
  async settle(d: Pick<DeliveryRecord, 'tenant' | 'webhook' | 'seq'>, o: { readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    const status = o.delivered ? 'delivered' : o.nextAttemptMs === null ? 'failed' : 'pending';
    await this.d.q(`UPDATE webhook_deliveries SET status = $1, last_status = $2, last_error = $3, next_attempt_ms = $4, lease_until_ms = 0, delivered_at_ms = $5
      WHERE tenant = $6 AND webhook = $7 AND seq = $8`, [status, o.status, o.error, o.nextAttemptMs ?? o.nowMs, o.delivered ? o.nowMs : null, d.tenant, d.webhook, d.seq]);
  }
  async deliveries(tenant: string, name: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    const [before] = decodeCursor(page.cursor, 1) ?? [];
    const { rows } = await this.d.q('SELECT * FROM webhook_deliveries WHERE tenant = $1 AND webhook = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4',
      [tenant, name, before === undefined ? Number.MAX_SAFE_INTEGER : Number(before), page.limit + 1]);
    return toPage(rows, page.limit, deliveryRow, (r) => [String(r.seq)]);
  }
  async purgeDeliveries(beforeMs: number): Promise<number> {
    return (await this.d.q(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at_ms < $1`, [beforeMs])).rowCount;
  }
}

class Events implements EventStore {
  constructor(private readonly d: Db) {}

  within<T>(events: () => readonly EventView[], write: () => Promise<T>): Promise<T> {
    return withOutbox(events, write);
  }
  async append(events: readonly EventView[]): Promise<void> {
    if (events.length > 0) await this.d.tx((q) => insertEvents(q, events));
  }
  async list(tenant: string, filter: EventFilter, page: PageRequest) {
    const { sql, params } = eventListSql(tenant, filter, page, (n) => `$${n}`);
    return eventPage((await this.d.q(sql, params)).rows, page);
  }
  async after(seq: number, limit: number): Promise<readonly EventRecord[]> {
    return (await this.d.q('SELECT seq, body FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [seq, limit])).rows.map(eventRow);
  }
  async window(seq: number, limit: number, types: ReadonlySet<string>): Promise<EventWindow> {
    const { rows } = await this.d.q('SELECT seq, CASE WHEN type = ANY($3::text[]) THEN body END AS body FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [seq, limit, [...types]]);
    return eventWindow(rows);
  }
  async lastSeq(): Promise<number> {
    return Number((await this.d.one('SELECT coalesce(max(seq), 0) AS s FROM events'))!.s);
  }
  async revisions(tenant?: string): Promise<Record<string, string>> {
    const { rows } = tenant === undefined ? await this.d.q('SELECT tenant, revision FROM tenant_revisions') : await this.d.q('SELECT tenant, revision FROM tenant_revisions WHERE tenant = $1', [tenant]);
    return Object.fromEntries(rows.map((r) => [String(r.tenant), String(r.revision)]));
  }
  async purge(nowMs: number, defaultDays: number): Promise<number> {
    const sql = purgeEventsSql((n) => `$${n}::bigint`, `(t.body::json #>> '{events,retentionDays}')::bigint`);
    return (await this.d.q(sql, [nowMs, defaultDays])).rowCount;
  }
}

const TAKE_RATE = takeRateSql('GREATEST', (n) => `$${n}`);

class Throttle implements ThrottleStore {
  /** In front of the advisory locks: a burst in this process holds one lock connection per key. */
  readonly #local = new KeyedLocks();

  constructor(private readonly d: Db, private readonly lockPool: pg.Pool) {}

  async get(tenant: string, key: string): Promise<ThrottleRecord | undefined> {
    const r = await this.d.one('SELECT * FROM login_throttle WHERE tenant = $1 AND key = $2', [tenant, Buffer.from(key)]);
    return r && throttleRow(r);
  }
  async recordFailure(tenant: string, key: string, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number) {
    return this.d.tx(async (q) => {
      // An advisory lock, not FOR UPDATE: the first failure under a key has no row to lock yet.
      await q('SELECT pg_advisory_xact_lock($1::bigint)', [lockId(`throttle:${tenant}\u0000${key}`)]);
      const r = (await q('SELECT * FROM login_throttle WHERE tenant = $1 AND key = $2', [tenant, Buffer.from(key)])).rows[0];
      const next = nextThrottle(r && throttleRow(r), nowMs, resetAfterMs, lockAt, lockMs);
      await q(`INSERT INTO login_throttle (tenant, key, failures, last_failure_ms, locked_until_ms) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (tenant, key) DO UPDATE SET failures = excluded.failures, last_failure_ms = excluded.last_failure_ms, locked_until_ms = excluded.locked_until_ms`,
      [tenant, Buffer.from(key), next.failures, next.lastFailureMs, next.lockedUntilMs]);
      return next;
    });
  }
  async clear(tenant: string, key: string): Promise<void> {
    await this.d.q('DELETE FROM login_throttle WHERE tenant = $1 AND key = $2', [tenant, Buffer.from(key)]);
  }
  serialize<T>(tenant: string, keys: readonly string[], attempt: () => Promise<T>): Promise<T> {
    const names = keys.map((k) => `${tenant}\u0000${k}`);
    return this.#local.hold(names, async () => {
      // Session-level advisory locks on one connection held for the attempt, taken in the order of
      // their ids in every replica, so two attempts sharing keys never wait on each other.
      const ids = [...new Set(names.map((n) => lockId(`serialize:${n}`)))].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
      const held = await checkout(this.lockPool);
      const client = held.client;
      let broken: Error | undefined;
      try {
        for (const id of ids) {
          await client.query('SELECT pg_advisory_lock($1::bigint)', [id]).catch((e: Error) => {
            if (lostConnection(e)) broken = e;
            throw e;
          });
        }
        return await attempt();
      } finally {
        if (broken === undefined) {
          await client.query('SELECT pg_advisory_unlock_all()').catch((e: Error) => {
            broken = e;
          });
        }
        // Closing a connection whose unlock failed (or that is lost) releases its locks on the server.
        held.release(broken);
      }
    });
  }
  async takeRate(tenant: string, key: string, nowMs: number, intervalMs: number, burst: number): Promise<number> {
    const a = rateArgs(nowMs, intervalMs, burst);
    const r = await this.d.one(TAKE_RATE, [tenant, Buffer.from(key), a.now, a.interval, a.tolerance]);
    return rateWait(r!, a);
  }
  async purgeIdle(): Promise<void> {
    const ms = Date.now();
    await this.d.q('DELETE FROM login_throttle WHERE last_failure_ms < $1 AND locked_until_ms < $2 AND locked_until_ms <> -1', [ms - THROTTLE_IDLE_MS, ms]);
    await this.d.q(PURGE_RATES_SQL((n) => `$${n}`), [(ms - THROTTLE_IDLE_MS) * 1000]);
  }
}

class Meta implements MetaStore {
  constructor(private readonly d: Db) {}

  async get(key: string): Promise<string | undefined> {
    const r = await this.d.one('SELECT value FROM meta WHERE key = $1', [key]);
    return r === undefined ? undefined : String(r.value);
  }
  async set(key: string, value: string): Promise<void> {
    await this.d.q('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
  }
  async setIfAbsent(key: string, value: string): Promise<string> {
    // A concurrent insert of the same key waits on it, then does nothing; the SELECT after sees the winner.
    await this.d.q('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, value]);
    return String((await this.d.one('SELECT value FROM meta WHERE key = $1', [key]))!.value);
  }
}

/** NOTIFY channel of tenant changes; the payload is the tenant's name. */
const CHANGE_CHANNEL = 'idforge_tenant_changed';
/** After the listening connection is lost: wait this long before connecting again. */
const RELISTEN_MS = 1_000;

/**
 * The change feed between replicas: NOTIFY after a change commits, LISTEN on one connection of
 * its own. A lost connection is reconnected; since notifications sent meanwhile are gone,
 * listeners are told to forget everything ('*') once it is back.
 */
class Changes implements ChangeFeed {
  readonly #listeners = new Set<(tenant: string) => void>();
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  listening = false;

  constructor(private readonly d: Db, private readonly config: pg.ClientConfig, private readonly log: (line: string) => void, private readonly label: string) {}

  async publish(tenant: string): Promise<void> {
    await this.d.q('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, tenant]);
  }

  subscribe(listener: (tenant: string) => void): () => void {
    this.#listeners.add(listener);
    if (this.#client === undefined && this.#connecting === undefined) this.#connecting = this.#listen();
    return () => this.#listeners.delete(listener);
  }

  async #listen(): Promise<void> {
    const client = new pg.Client(this.config);
    const lost = (why: string) => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.listening = false;
      client.end().catch(() => {});
      if (this.#closed) return;
      this.log(`database ${this.label}: change feed lost (${why}); listening again in ${RELISTEN_MS / 1000} s`);
      this.#timer = setTimeout(() => { this.#connecting = this.#listen(); }, RELISTEN_MS);
      this.#timer.unref();
    };
    // Listening before connecting: an error emitted at any moment is never uncaught (lost()
    // ignores a connection that is not yet the feed's; a failed connect is the catch's).
    client.on('error', (err) => lost(err.message));
    try {
      await client.connect();
      client.on('notification', (n) => {
        if (n.channel !== CHANGE_CHANNEL || n.payload === undefined) return;
        for (const l of this.#listeners) l(n.payload);
      });
      client.on('end', () => lost('connection closed'));
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      if (this.#closed) {
        await client.end();
        return;
      }
      this.#client = client;
      this.listening = true;
      // Whatever changed before this connection listened was not heard (at start: while caches
      // may already have been filled): start afresh.
      for (const l of this.#listeners) l('*');
    } catch (err) {
      client.end().catch(() => {});
      if (this.#closed) return;
      this.log(`database ${this.label}: cannot listen for changes (${(err as Error).message}); trying again in ${RELISTEN_MS / 1000} s`);
      this.#timer = setTimeout(() => { this.#connecting = this.#listen(); }, RELISTEN_MS);
      this.#timer.unref();
    } finally {
      this.#connecting = undefined;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#connecting;
    const c = this.#client;
    this.#client = undefined;
    this.listening = false;
    await c?.end().catch(() => {});
  }
}

/**
 * A connection taken out of a pool for a while (a transaction, a session lock held across other
 * work). The pool listens for a lost connection's error only while the connection is idle in it, and
 * node-postgres emits that error on the client whenever the server ends the connection (a restart,
 * an administrator): with no listener while it is out, the process would die. Ours notes it; the
 * holder's next statement fails anyway, and release drops a lost connection instead of reusing it.
 */
async function checkout(pool: pg.Pool): Promise<{ client: pg.PoolClient; release(broken?: Error): void }> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost ??= err;
  };
  client.on('error', onError);
  return {
    client,
    release(broken) {
      client.removeListener('error', onError);
      client.release(broken ?? lost);
    },
  };
}

/** `host:port/database` of a connection URL, for messages: never the user's password. */
export function databaseLabel(url: string): string {
  const u = new URL(url);
  const host = u.searchParams.get('host') ?? (u.hostname === '' ? 'localhost' : decodeURIComponent(u.hostname));
  const db = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres';
  return `${host}:${u.port === '' ? '5432' : u.port}/${db}`;
}

/**
 * Connects, migrates the schema (postgres-migrations.ts) and returns the stores. Throws the
 * connection's or the migration's error; openStorage turns it into one line for the operator.
 */
export interface PostgresOptions {
  /** Notices: migrations applied, connections lost. */
  readonly log: (line: string) => void;
  /**
   * PostgreSQL's `statement_timeout` for every connection, in ms: a statement running (or waiting
   * for a lock) longer is cancelled by the server, and the connection stays usable. Default 10,000.
   */
  readonly statementTimeoutMs?: number | undefined;
  /**
   * How long this process waits for any answer of PostgreSQL, in ms (node-postgres `query_timeout`):
   * past it the query fails and its connection is closed, for when the server cannot even cancel
   * (a paused server, a partition that keeps connections open). Default 15,000.
   */
  readonly queryTimeoutMs?: number | undefined;
}

export async function openPostgresStorage(url: string, options: PostgresOptions): Promise<Storage> {
  const label = databaseLabel(url);
  // Pool and change-feed events fire long after, in the context of whatever request made the
  // connection: their lines are no request's.
  const log = outsideRequests(options.log);
  const base = { connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, application_name: 'idforge' };
  const config = { ...base, statement_timeout: options.statementTimeoutMs ?? 10_000, query_timeout: options.queryTimeoutMs ?? 15_000 };
  const pool = new pg.Pool({ ...config, max: POOL_SIZE });
  const lockPool = new pg.Pool({ ...config, max: LOCK_POOL_SIZE });
  // An idle connection that breaks (database restart, network) is dropped and replaced on demand;
  // without a listener the pool's error event would end the process.
  for (const p of [pool, lockPool]) p.on('error', (err) => log(`database ${label}: idle connection lost: ${err.message}`));
  let closed: Promise<void> | undefined;
  const d = new Db(pool);
  const changes = new Changes(d, config, log, label);
  const close = () => (closed ??= changes.close().then(() => Promise.all([pool.end(), lockPool.end()])).then(() => {}));
  try {
    // Its own connection, without the timeouts: a migration may rightly run long, or wait for
    // another replica's.
    const client = new pg.Client(base);
    client.on('error', () => {}); // a connection lost mid-migration fails the migration's query instead
    await client.connect();
    try {
      await migrate(client, MIGRATION_LOCK, log);
    } finally {
      await client.end().catch(() => {});
    }
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
  return {
    tenants: new Tenants(d),
    applications: new Applications(d),
    users: new Users(d),
    groups: new Groups(d),
    scim: new Scim(d),
    grants: new Grants(d),
    throttle: new Throttle(d, lockPool),
    meta: new Meta(d),
    events: new Events(d),
    webhooks: new Webhooks(d),
    ssf: new Ssf(d),
    backchannel: new Backchannel(d),
    changes,
    ping: async () => {
      await d.q('SELECT 1');
    },
    pingWrite: async () => {
      const r = (await d.q(`SELECT pg_is_in_recovery() AS recovery, current_setting('default_transaction_read_only') AS read_only`)).rows[0]!;
      if (r.recovery === true) throw new Error(`writes fail: the database at ${label} is in recovery (a standby, or starting up)`);
      if (r.read_only === 'on') throw new Error(`writes fail: the database at ${label} is read-only (default_transaction_read_only)`);
    },
    description: `postgres ${label}`,
    close,
  };
}

class Ssf implements SsfStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<SsfStreamRecord | undefined> {
    const r = await this.d.one('SELECT * FROM ssf_streams WHERE tenant = $1 AND id = $2', [tenant, id]);
    return r && ssfStreamRow(r);
  }
  async list(tenant: string): Promise<readonly SsfStreamRecord[]> {
    return (await this.d.q('SELECT * FROM ssf_streams WHERE tenant = $1 ORDER BY created_at, id', [tenant])).rows.map(ssfStreamRow);
  }
  async put(s: Omit<SsfStreamRecord, 'createdAt' | 'updatedAt'>): Promise<SsfStreamRecord> {
    return this.d.tx(async (q) => ssfStreamRow((await q(`INSERT INTO ssf_streams (tenant, id, body, status, reason, sealed_authorization, token_hash, cursor_seq, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT coalesce(max(seq), 0) FROM events), $8, $8)
      ON CONFLICT (tenant, id) DO UPDATE SET body = excluded.body, status = excluded.status, reason = excluded.reason,
        sealed_authorization = excluded.sealed_authorization, token_hash = excluded.token_hash, updated_at = excluded.updated_at
      RETURNING *`, [...ssfStreamValues(s), now()])).rows[0]!));
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(async (q) => {
      await q('DELETE FROM ssf_sets WHERE tenant = $1 AND stream = $2', [tenant, id]);
      return (await q('DELETE FROM ssf_streams WHERE tenant = $1 AND id = $2', [tenant, id])).rowCount > 0;
    });
  }
  async enqueue(nowMs: number, limit: number, translate: (stream: SsfStreamRecord, event: EventView) => readonly SsfSetDraft[], types?: ReadonlySet<string>): Promise<number> {
    // No stream, nothing to queue: no transaction.
    if ((await this.d.one('SELECT 1 AS x FROM ssf_streams LIMIT 1')) === undefined) return 0;
    const body = types === undefined ? 'body' : 'CASE WHEN type = ANY($4::text[]) THEN body END';
    return this.d.tx(async (q) => {
      let queued = 0;
      // Row locks: replicas enqueueing together take turns per stream (SKIP LOCKED: the other one's turn is its own).
      for (const r of (await q('SELECT * FROM ssf_streams ORDER BY tenant, id FOR UPDATE SKIP LOCKED')).rows) {
        const stream = ssfStreamRow(r);
        const events = (await q(`SELECT seq, ${body} AS body FROM events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
          [stream.tenant, Number(r.cursor_seq), limit, ...(types === undefined ? [] : [[...types]])])).rows;
        if (events.length === 0) continue;
        const sets = stream.status === 'disabled' ? [] : events.flatMap((e) => (e.body === null ? [] : translate(stream, eventBody(e))));
        if (sets.length > 0) {
          queued += (await q(`INSERT INTO ssf_sets (tenant, stream, jti, claims, status, attempts, next_attempt_ms, lease_until_ms, created_at_ms)
            SELECT $1, $2, j, c, 'pending', 0, $5, 0, $5 FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS x(j, c, o) ORDER BY o
            ON CONFLICT (tenant, stream, jti) DO NOTHING`, [stream.tenant, stream.id, sets.map((s) => s.jti), sets.map((s) => JSON.stringify(s.claims)), nowMs])).rowCount;
        }
        await q('UPDATE ssf_streams SET cursor_seq = $1 WHERE tenant = $2 AND id = $3', [Number(events[events.length - 1]!.seq), stream.tenant, stream.id]);
      }
      return queued;
    });
  }
  async add(tenant: string, stream: string, sets: readonly SsfSetDraft[], nowMs: number): Promise<void> {
    await this.d.tx(async (q) => {
      for (const set of sets) {
        await q(`INSERT INTO ssf_sets (tenant, stream, jti, claims, status, attempts, next_attempt_ms, lease_until_ms, created_at_ms)
          VALUES ($1, $2, $3, $4, 'pending', 0, $5, 0, $5) ON CONFLICT (tenant, stream, jti) DO NOTHING`, [tenant, stream, set.jti, JSON.stringify(set.claims), nowMs]);
      }
    });
  }
  async pending(tenant: string, stream: string, limit: number): Promise<{ readonly sets: readonly SsfSetRecord[]; readonly more: boolean }> {
    const { rows } = await this.d.q(`SELECT * FROM ssf_sets WHERE tenant = $1 AND stream = $2 AND status = 'pending' ORDER BY n LIMIT $3`, [tenant, stream, limit + 1]);
    return { sets: rows.slice(0, limit).map(ssfSetRow), more: rows.length > limit };
  }
  async acknowledge(tenant: string, stream: string, jtis: readonly string[], nowMs: number, error?: (jti: string) => string | undefined): Promise<void> {
    if (jtis.length === 0) return;
    await this.d.tx(async (q) => {
      for (const jti of jtis) {
        const e = error?.(jti);
        await q(`UPDATE ssf_sets SET status = $1, last_error = $2, settled_at_ms = $3 WHERE tenant = $4 AND stream = $5 AND jti = $6 AND status = 'pending'`,
          [e === undefined ? 'delivered' : 'failed', e ?? null, nowMs, tenant, stream, jti]);
      }
    });
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly (SsfSetRecord & { readonly streamRecord: SsfStreamRecord })[]> {
    if ((await this.d.one(`SELECT 1 AS x FROM ssf_sets WHERE status = 'pending' AND next_attempt_ms <= $1 AND lease_until_ms <= $1 LIMIT 1`, [nowMs])) === undefined) return [];
    return this.d.tx(async (q) => {
      // SKIP LOCKED: replicas claiming together each take other SETs.
      const rows = (await q(`UPDATE ssf_sets x SET lease_until_ms = $2, attempts = attempts + 1
        FROM (SELECT d.n FROM ssf_sets d JOIN ssf_streams s ON s.tenant = d.tenant AND s.id = d.stream
              WHERE d.status = 'pending' AND d.next_attempt_ms <= $1 AND d.lease_until_ms <= $1 AND s.status = 'enabled' AND (s.body::jsonb ->> 'method') = 'push'
              ORDER BY d.next_attempt_ms, d.n LIMIT $3 FOR UPDATE OF d SKIP LOCKED) due
        WHERE x.n = due.n RETURNING x.*`, [nowMs, nowMs + leaseMs, limit])).rows;
      const out: (SsfSetRecord & { readonly streamRecord: SsfStreamRecord })[] = [];
      for (const r of rows) {
        const s = (await q('SELECT * FROM ssf_streams WHERE tenant = $1 AND id = $2', [String(r.tenant), String(r.stream)])).rows[0]!;
        out.push({ ...ssfSetRow(r), streamRecord: ssfStreamRow(s) });
      }
      return out;
    });
  }
  async settle(tenant: string, stream: string, jti: string, o: { readonly delivered: boolean; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    const status = o.delivered ? 'delivered' : o.nextAttemptMs === null ? 'failed' : 'pending';
    await this.d.q(`UPDATE ssf_sets SET status = $1, last_error = $2, next_attempt_ms = $3, lease_until_ms = 0, settled_at_ms = $4 WHERE tenant = $5 AND stream = $6 AND jti = $7`,
      [status, o.error, o.nextAttemptMs ?? o.nowMs, status === 'pending' ? null : o.nowMs, tenant, stream, jti]);
  }
  async purge(settledBeforeMs: number, pendingBeforeMs: number): Promise<number> {
    return (await this.d.q(`DELETE FROM ssf_sets WHERE (status <> 'pending' AND settled_at_ms < $1) OR (status = 'pending' AND created_at_ms < $2)`,
      [settledBeforeMs, pendingBeforeMs])).rowCount;
  }
}

class Backchannel implements BackchannelStore {
  constructor(private readonly d: Db) {}

  async place(): Promise<number | undefined> {
    const r = await this.d.one('SELECT value FROM meta WHERE key = $1', [BACKCHANNEL_PLACE_KEY]);
    return r === undefined ? undefined : Number(r.value);
  }
  async start(seq: number): Promise<number> {
    await this.d.q('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [BACKCHANNEL_PLACE_KEY, String(seq)]);
    return Number((await this.d.one('SELECT value FROM meta WHERE key = $1', [BACKCHANNEL_PLACE_KEY]))!.value);
  }
  async queue(fromSeq: number, toSeq: number, logouts: readonly LogoutDraft[], nowMs: number): Promise<boolean> {
    return this.d.tx(async (q) => {
      // The row's lock makes a replica queueing the same events at once wait, then find the place moved.
      const moved = (await q('UPDATE meta SET value = $1 WHERE key = $2 AND value = $3', [String(toSeq), BACKCHANNEL_PLACE_KEY, String(fromSeq)])).rowCount;
      if (moved === 0) return false;
      await insertLogouts(q, logouts, nowMs);
      return true;
    });
  }
  async add(logouts: readonly LogoutDraft[], nowMs: number): Promise<void> {
    if (logouts.length > 0) await this.d.tx((q) => insertLogouts(q, logouts, nowMs));
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly LogoutRecord[]> {
    // SKIP LOCKED: replicas claiming together each take other logouts.
    const { rows } = await this.d.q(`UPDATE backchannel_logouts b SET lease_until_ms = $2, attempts = attempts + 1
      FROM (SELECT n FROM backchannel_logouts WHERE status = 'pending' AND next_attempt_ms <= $1 AND lease_until_ms <= $1
            ORDER BY next_attempt_ms, n LIMIT $3 FOR UPDATE SKIP LOCKED) due
      WHERE b.n = due.n RETURNING b.*`, [nowMs, nowMs + leaseMs, limit]);
    return rows.map(logoutRow);
  }
  async settle(jti: string, o: { readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    await this.d.q(`UPDATE backchannel_logouts SET status = $1, last_status = $2, last_error = $3, next_attempt_ms = $4, lease_until_ms = 0, settled_at_ms = $5 WHERE jti = $6`,
      [settledStatus(o), o.status, o.error, o.nextAttemptMs ?? o.nowMs, o.nextAttemptMs === null || o.delivered ? o.nowMs : null, jti]);
  }
  async purge(beforeMs: number): Promise<number> {
    return (await this.d.q(`DELETE FROM backchannel_logouts WHERE status <> 'pending' AND settled_at_ms < $1`, [beforeMs])).rowCount;
  }
}

async function insertLogouts(q: (sql: string, params?: readonly Param[]) => ReturnType<typeof query>, logouts: readonly LogoutDraft[], nowMs: number): Promise<void> {
  for (const l of logouts) {
    await q(`INSERT INTO backchannel_logouts (${LOGOUT_COLUMNS.join(', ')}) VALUES (${LOGOUT_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT (jti) DO NOTHING`, logoutValues(l, nowMs));
  }
}
