/**
 * SQLite storage (better-sqlite3, WAL), the default backend. One file, `<dataDir>/idforge.db`,
 * served by one process. Bodies are stored as JSON text next to the columns we query by; artifacts
 * keep oidc-provider's payload as-is plus the columns its adapter looks up (uid, userCode, grantId)
 * and the ones we revoke by (account, client). better-sqlite3 is synchronous, so each method's
 * statements run without interleaving; multi-statement changes still run in a transaction so a
 * failure half-way leaves nothing behind.
 */
import Database from 'better-sqlite3';
import { chmodSync, existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { AssignmentBody, GroupAssignmentBody, GroupBody, TenantBody, UserBody } from '../../contract/index.ts';
import {
  TENANT_TABLES, THROTTLE_IDLE_MS, USER_FACTOR_TABLES, accountArtifactRow, appRow, artifactColumns, artifactRow, assignmentRow, decodeCursor, keyRow,
  nextThrottle, nowSeconds as now, PURGE_RATES_SQL, rateArgs, rateWait, takeRateSql, otpRow, passkeyRow, tenantRow, throttleRow, toPage, totpRow, userRow, type Row,
  RENAME_DROPPED_TABLES, isForeignKeyViolation,
} from './_common.ts';
import { KeyedLocks, type NamedLocks } from './_keyed-locks.ts';
import { MissingUsersError, NameTakenError } from './types.ts';
import { migrateSqlite } from './sqlite-migrations.ts';
import { EVENT_COLUMNS, eventListSql, eventPage, eventRow, eventValues, eventWindow, isWriteSql, pendingOutbox, purgeEventsSql, revisionsOf, withOutbox } from './_events.ts';
import type { EventFilter, EventView } from '../../contract/index.ts';
import {
  SCIM_USER_SELECT, USER_LINK_TABLES, caseKey, groupAssignmentRow, groupIdsByUser, groupRow, scimTokenRow, userWithScimRow,
} from './_common.ts';
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

export const DATABASE_FILE = 'idforge.db';

const UPSERT_USER = `INSERT INTO users (tenant, id, email, body, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (tenant, id) DO UPDATE SET email = excluded.email, body = excluded.body,
    password_hash = excluded.password_hash, updated_at = excluded.updated_at`;

/** The connection and its prepared statements, shared by the stores. */
class Db {
  readonly db: Database.Database;
  readonly #stmts = new Map<string, Database.Statement>();

  constructor(readonly file: string, busyTimeoutMs: number, log: (line: string) => void) {
    this.db = new Database(file);
    try {
      // Password hashes and sealed keys: readable by the server's user only (WAL files inherit it).
      chmodSync(file, 0o600);
      // First: workers open the file together, and switching to WAL waits for the others' locks too.
      // Past it, a statement waiting for another process's write lock fails as SQLITE_BUSY (a 503).
      this.db.pragma(`busy_timeout = ${Math.max(0, Math.round(busyTimeoutMs))}`);
      // WAL: readers never block the writer; NORMAL sync is durable across process crashes in WAL mode.
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      migrateSqlite(this.db, file, log);
      // Per connection, and only outside a transaction: the schema's cascades hold from here on.
      this.db.pragma('foreign_keys = ON');
    } catch (err) {
      this.db.close();
      throw err;
    }
  }

  q(sql: string): Database.Statement {
    let s = this.#stmts.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    // A change's events (storage/_events.ts) ride on its transaction: a lone write statement gets one.
    if (!this.db.inTransaction && isWriteSql(sql) && pendingOutbox() !== undefined) return this.#inTx(s);
    return s;
  }

  #inTx(s: Database.Statement): Database.Statement {
    const run = <T>(f: () => T) => this.tx(f);
    return {
      run: (...a: unknown[]) => run(() => s.run(...a)),
      get: (...a: unknown[]) => run(() => s.get(...a)),
      all: (...a: unknown[]) => run(() => s.all(...a)),
    } as unknown as Database.Statement;
  }

  /**
   * A write transaction. IMMEDIATE: the write lock is taken before the first read. Other processes
   * (`serve --workers`) share the file: a deferred transaction that read and then writes after
   * another connection's commit would be refused at once ("database is locked"), busy timeout or not.
   */
  tx<T>(fn: () => T): T {
    const outbox = this.db.inTransaction ? undefined : pendingOutbox();
    if (outbox === undefined) return this.db.transaction(fn).immediate();
    outbox.claimed = true;
    try {
      return this.db.transaction(() => {
        const result = fn();
        this.insertEvents(outbox.events());
        return result;
      }).immediate();
    } catch (err) {
      outbox.claimed = false;
      throw err;
    }
  }

  /** The one place events are written, so also where each tenant's directory revision moves (EventStore.revisions). */
  insertEvents(events: readonly EventView[]): void {
    const insert = this.q(`INSERT INTO events (${EVENT_COLUMNS.join(', ')}) VALUES (${EVENT_COLUMNS.map(() => '?').join(', ')})`);
    for (const e of events) insert.run(...eventValues(e));
    const revise = this.q('INSERT INTO tenant_revisions (tenant, revision) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET revision = excluded.revision');
    for (const [tenant, revision] of revisionsOf(events)) revise.run(tenant, revision);
  }
}

/** The name the busiest writers (tenant batches, their announcements, the back-channel log's place) take turns by when other processes share the file. */
const BATCH_WRITER = 'sqlite:batch-writer';

/** Runs `write` in the writers' queue at the cluster primary when other processes share the file, else as it is. */
const queued = <T>(locks: NamedLocks | undefined, write: () => Promise<T>): Promise<T> => (locks === undefined ? write() : locks.hold([BATCH_WRITER], write));

class Tenants implements TenantStore {
  /** `locks`: the cluster primary's, when other processes (`serve --workers`) share the file. */
  constructor(private readonly d: Db, private readonly locks?: NamedLocks) {}

  async get(name: string): Promise<TenantRecord | undefined> {
    const r = this.d.q('SELECT * FROM tenants WHERE name = ?').get(name) as Row | undefined;
    return r && tenantRow(r);
  }
  async list(page: PageRequest): Promise<Page<TenantRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q('SELECT * FROM tenants WHERE name > ? ORDER BY name LIMIT ?').all(after, page.limit + 1) as Row[];
    return toPage(rows, page.limit, tenantRow, (r) => [String(r.name)]);
  }
  async count(): Promise<number> {
    return (this.d.q('SELECT count(*) AS n FROM tenants').get() as { n: number }).n;
  }
  async put(name: string, body: TenantBody, initialKeys?: readonly KeyRecord[]): Promise<TenantRecord> {
    const t = now();
    this.d.tx(() => {
      const existed = this.d.q('SELECT 1 FROM tenants WHERE name = ?').get(name) !== undefined;
      this.d.q(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`).run(name, JSON.stringify(body), t, t);
      if (!existed && initialKeys !== undefined) this.#insertKeys(name, initialKeys);
    });
    return (await this.get(name))!;
  }
  async delete(name: string): Promise<boolean> {
    return this.d.tx(() => {
      for (const table of TENANT_TABLES) this.d.q(`DELETE FROM ${table} WHERE tenant = ?`).run(name);
      return this.d.q('DELETE FROM tenants WHERE name = ?').run(name).changes > 0;
    });
  }

  async rename(from: string, to: string, reseal: TenantReseal): Promise<boolean> {
    return this.d.tx(() => {
      if (this.d.q('SELECT 1 FROM tenants WHERE name = ?').get(from) === undefined) return false;
      if (this.d.q('SELECT 1 FROM tenants WHERE name = ?').get(to) !== undefined) throw new NameTakenError(`tenant '${to}' exists`);
      // What belongs to the old issuer or host goes first; the rename then carries every other row
      // to the new name in the database (ON UPDATE CASCADE), and what is sealed under the name is sealed anew.
      for (const table of RENAME_DROPPED_TABLES) this.d.q(`DELETE FROM ${table} WHERE tenant = ?`).run(from);
      this.d.q('UPDATE tenants SET name = ?, updated_at = ? WHERE name = ?').run(to, now(), from);
      for (const k of this.d.q('SELECT kid, sealed_jwk FROM keys WHERE tenant = ?').all(to) as Row[]) {
        this.d.q('UPDATE keys SET sealed_jwk = ? WHERE tenant = ? AND kid = ?').run(reseal.key(from, to, String(k.kid), String(k.sealed_jwk)), to, k.kid);
      }
      for (const t of this.d.q('SELECT user_id, sealed_secret FROM totp_secrets WHERE tenant = ?').all(to) as Row[]) {
        this.d.q('UPDATE totp_secrets SET sealed_secret = ? WHERE tenant = ? AND user_id = ?').run(reseal.totp(from, to, String(t.user_id), String(t.sealed_secret)), to, t.user_id);
      }
      return true;
    });
  }

  async listKeys(tenant: string): Promise<readonly KeyRecord[]> {
    return (this.d.q('SELECT * FROM keys WHERE tenant = ? ORDER BY created_at, kid').all(tenant) as Row[]).map(keyRow);
  }
  async updateKeys(tenant: string, update: (current: readonly KeyRecord[]) => readonly KeyRecord[]): Promise<readonly KeyRecord[]> {
    // IMMEDIATE: take the write lock before reading, so no other connection's write slips between.
    return this.d.tx(() => {
      const keys = update((this.d.q('SELECT * FROM keys WHERE tenant = ? ORDER BY created_at, kid').all(tenant) as Row[]).map(keyRow));
      this.d.q('DELETE FROM keys WHERE tenant = ?').run(tenant);
      this.#insertKeys(tenant, keys);
      return keys;
    });
  }

  async contents(name: string): Promise<TenantContents> {
    return this.d.db.transaction(() => this.#contents(name))();
  }
  async batch<T>(name: string, decide: (contents: TenantContents) => { readonly changes: TenantChanges; readonly result: T }): Promise<T> {
    // IMMEDIATE: the write lock is taken before the read, so what `decide` saw is what it changes.
    const write = () => this.d.tx(() => {
      const { changes, result } = decide(this.#contents(name));
      this.#write(name, changes);
      return result;
    });
    // In one process this runs without yielding, so batches take turns. Workers sharing the file
    // queue for it at the cluster primary first: a worker waiting in SQLite's busy handler polls
    // with sleeps of up to 100 ms, so two workers' batches spent much of an apply asleep (the
    // 100-tenant bench apply: 15.1 s with 2 workers against 9.2 s with 1); a queue wakes the next at once.
    return queued(this.locks, async () => write());
  }
  #contents(name: string): TenantContents {
    const t = this.d.q('SELECT * FROM tenants WHERE name = ?').get(name) as Row | undefined;
    return {
      tenant: t && tenantRow(t),
      applications: (this.d.q('SELECT * FROM applications WHERE tenant = ? ORDER BY name').all(name) as Row[]).map(appRow),
      users: (this.d.q('SELECT * FROM users WHERE tenant = ? ORDER BY id').all(name) as Row[]).map(userRow),
      assignments: (this.d.q('SELECT * FROM assignments WHERE tenant = ? ORDER BY application, user_id').all(name) as Row[]).map(assignmentRow),
      revision: (this.d.q('SELECT revision FROM tenant_revisions WHERE tenant = ?').get(name) as Row | undefined)?.revision as string | undefined,
    };
  }
  /** The writes of TenantChanges, each the SQL of the single-object method it names. */
  #write(tenant: string, c: TenantChanges): void {
    const t = now();
    if (c.tenant !== undefined) {
      const existed = this.d.q('SELECT 1 FROM tenants WHERE name = ?').get(tenant) !== undefined;
      this.d.q(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`).run(tenant, JSON.stringify(c.tenant.body), t, t);
      if (!existed && c.tenant.initialKeys !== undefined) this.#insertKeys(tenant, c.tenant.initialKeys);
    }
    const putApp = this.d.q(`INSERT INTO applications (tenant, name, kind, client_id, identifier, body, secret_hash, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, name) DO UPDATE SET kind = excluded.kind, client_id = excluded.client_id,
        identifier = excluded.identifier, body = excluded.body, secret_hash = excluded.secret_hash, updated_at = excluded.updated_at`);
    for (const a of c.applications) {
      const b = a.body;
      putApp.run(tenant, a.name, b.kind, b.kind === 'api' ? null : b.clientId, b.kind === 'api' ? b.identifier : null, JSON.stringify(b), a.secretHash, t, t);
    }
    const putUser = this.d.q(`INSERT INTO users (tenant, id, email, body, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, id) DO UPDATE SET email = excluded.email, body = excluded.body,
        password_hash = coalesce(users.password_hash, excluded.password_hash), updated_at = excluded.updated_at`);
    const revokeUser = this.d.q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?');
    for (const u of c.users) {
      putUser.run(tenant, u.id, u.body.email.toLowerCase(), JSON.stringify(u.body), u.initialPasswordHash, t, t);
      if (u.revokeArtifacts) revokeUser.run(tenant, u.id);
    }
    const putAssignment = this.d.q(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, application, user_id) DO UPDATE SET body = excluded.body`);
    for (const a of c.assignments) putAssignment.run(tenant, a.application, a.userId, JSON.stringify(a.body), t);
    const grantsOf = this.d.q(`SELECT id FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model = 'Grant'`);
    const revokeGrant = this.d.q('DELETE FROM artifacts WHERE tenant = ? AND grant_id = ?');
    const revokeAtClient = this.d.q(`DELETE FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model != 'Session'`);
    for (const a of c.deleteAssignments) {
      this.d.q('DELETE FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').run(tenant, a.application, a.userId);
      for (const g of grantsOf.all(tenant, a.userId, a.clientId) as { id: string }[]) revokeGrant.run(tenant, g.id);
      revokeAtClient.run(tenant, a.userId, a.clientId);
    }
    for (const id of c.deleteUsers) {
      this.d.q('DELETE FROM assignments WHERE tenant = ? AND user_id = ?').run(tenant, id);
      revokeUser.run(tenant, id);
      for (const table of [...USER_FACTOR_TABLES, ...USER_LINK_TABLES]) this.d.q(`DELETE FROM ${table} WHERE tenant = ? AND user_id = ?`).run(tenant, id);
      this.d.q('DELETE FROM users WHERE tenant = ? AND id = ?').run(tenant, id);
    }
    for (const name of c.deleteApplications) {
      const app = this.d.q('SELECT client_id FROM applications WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
      if (app === undefined) continue;
      this.d.q('DELETE FROM assignments WHERE tenant = ? AND application = ?').run(tenant, name);
      this.d.q('DELETE FROM group_assignments WHERE tenant = ? AND application = ?').run(tenant, name);
      if (app.client_id !== null) this.d.q('DELETE FROM artifacts WHERE tenant = ? AND client_id = ?').run(tenant, app.client_id);
      this.d.q('DELETE FROM applications WHERE tenant = ? AND name = ?').run(tenant, name);
    }
  }
  #insertKeys(tenant: string, keys: readonly KeyRecord[]): void {
    for (const k of keys) {
      this.d.q('INSERT INTO keys (tenant, kid, alg, state, sealed_jwk, created_at, retired_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
        tenant, k.kid, k.alg, k.state, k.sealedJwk, k.createdAt, k.retiredAt,
      );
    }
  }
}

class Applications implements ApplicationStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, name: string): Promise<ApplicationRecord | undefined> {
    const r = this.d.q('SELECT * FROM applications WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
    return r && appRow(r);
  }
  async getByClientId(tenant: string, clientId: string): Promise<ApplicationRecord | undefined> {
    const r = this.d.q('SELECT * FROM applications WHERE tenant = ? AND client_id = ?').get(tenant, clientId) as Row | undefined;
    return r && appRow(r);
  }
  async getByIdentifier(tenant: string, identifier: string): Promise<ApplicationRecord | undefined> {
    const r = this.d.q('SELECT * FROM applications WHERE tenant = ? AND identifier = ?').get(tenant, identifier) as Row | undefined;
    return r && appRow(r);
  }
  async list(tenant: string, page: PageRequest): Promise<Page<ApplicationRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q(`SELECT * FROM applications WHERE tenant = ? AND name > ? AND kind != 'service' ORDER BY name LIMIT ?`)
      .all(tenant, after, page.limit + 1) as Row[];
    return toPage(rows, page.limit, appRow, (r) => [String(r.name)]);
  }
  async put(tenant: string, name: string, body: StoredApplicationBody, secretHash: string | null): Promise<ApplicationRecord> {
    const t = now();
    const clientId = body.kind === 'api' ? null : body.clientId;
    const identifier = body.kind === 'api' ? body.identifier : null;
    this.d.q(`INSERT INTO applications (tenant, name, kind, client_id, identifier, body, secret_hash, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, name) DO UPDATE SET kind = excluded.kind, client_id = excluded.client_id,
        identifier = excluded.identifier, body = excluded.body, secret_hash = excluded.secret_hash, updated_at = excluded.updated_at`)
      .run(tenant, name, body.kind, clientId, identifier, JSON.stringify(body), secretHash, t, t);
    return (await this.get(tenant, name))!;
  }
  async delete(tenant: string, name: string): Promise<boolean> {
    return this.d.tx(() => {
      const app = this.d.q('SELECT client_id FROM applications WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
      if (app === undefined) return false;
      this.d.q('DELETE FROM assignments WHERE tenant = ? AND application = ?').run(tenant, name);
      this.d.q('DELETE FROM group_assignments WHERE tenant = ? AND application = ?').run(tenant, name);
      if (app.client_id !== null) this.d.q('DELETE FROM artifacts WHERE tenant = ? AND client_id = ?').run(tenant, app.client_id);
      return this.d.q('DELETE FROM applications WHERE tenant = ? AND name = ?').run(tenant, name).changes > 0;
    });
  }
  async rename(tenant: string, from: string, to: string): Promise<boolean> {
    return this.d.tx(() => {
      if (this.d.q('SELECT 1 FROM applications WHERE tenant = ? AND name = ?').get(tenant, from) === undefined) return false;
      if (this.d.q('SELECT 1 FROM applications WHERE tenant = ? AND name = ?').get(tenant, to) !== undefined) throw new NameTakenError(`application '${to}' exists`);
      // Its assignments and group assignments follow in the database (ON UPDATE CASCADE).
      this.d.q('UPDATE applications SET name = ?, updated_at = ? WHERE tenant = ? AND name = ?').run(to, now(), tenant, from);
      return true;
    });
  }
}

class Users implements UserStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<UserRecord | undefined> {
    const r = this.d.q('SELECT * FROM users WHERE tenant = ? AND id = ?').get(tenant, id) as Row | undefined;
    return r && userRow(r);
  }
  async getByEmail(tenant: string, email: string): Promise<UserRecord | undefined> {
    // Emails compare case-insensitively (as people type them); ids are the identity.
    const r = this.d.q('SELECT * FROM users WHERE tenant = ? AND email = ? ORDER BY id LIMIT 1').get(tenant, email.toLowerCase()) as Row | undefined;
    return r && userRow(r);
  }
  async list(tenant: string, page: PageRequest, search?: string): Promise<Page<UserRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = (search === undefined
      ? this.d.q('SELECT * FROM users WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?').all(tenant, after, page.limit + 1)
      : this.d.q(`SELECT * FROM users WHERE tenant = ? AND id > ? AND (instr(lower(id), @s) > 0 OR instr(email, @s) > 0
          OR instr(lower(coalesce(json_extract(body, '$.displayName'), '')), @s) > 0) ORDER BY id LIMIT ?`)
        .all({ s: search }, tenant, after, page.limit + 1)) as Row[];
    return toPage(rows, page.limit, userRow, (r) => [String(r.id)]);
  }
  async put(tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null, options: { readonly revokeArtifacts?: boolean } = {}): Promise<UserRecord> {
    const t = now();
    this.d.tx(() => {
      this.d.q(UPSERT_USER)
        .run(tenant, id, body.email.toLowerCase(), JSON.stringify(body), passwordHash, t, t);
      if (options.revokeArtifacts === true) this.d.q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, id);
    });
    return (await this.get(tenant, id))!;
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(() => {
      this.d.q('DELETE FROM assignments WHERE tenant = ? AND user_id = ?').run(tenant, id);
      this.d.q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, id);
      for (const table of USER_FACTOR_TABLES) this.d.q(`DELETE FROM ${table} WHERE tenant = ? AND user_id = ?`).run(tenant, id);
      for (const table of USER_LINK_TABLES) this.d.q(`DELETE FROM ${table} WHERE tenant = ? AND user_id = ?`).run(tenant, id);
      return this.d.q('DELETE FROM users WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
    });
  }

  async getAssignment(tenant: string, application: string, userId: string): Promise<AssignmentRecord | undefined> {
    const r = this.d.q('SELECT * FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').get(tenant, application, userId) as Row | undefined;
    return r && assignmentRow(r);
  }
  async listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<AssignmentRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q('SELECT * FROM assignments WHERE tenant = ? AND application = ? AND user_id > ? ORDER BY user_id LIMIT ?')
      .all(tenant, application, after, page.limit + 1) as Row[];
    return toPage(rows, page.limit, assignmentRow, (r) => [String(r.user_id)]);
  }
  async listUserAssignments(tenant: string, userId: string): Promise<AssignmentRecord[]> {
    return (this.d.q('SELECT * FROM assignments WHERE tenant = ? AND user_id = ? ORDER BY application').all(tenant, userId) as Row[]).map(assignmentRow);
  }
  async putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody): Promise<AssignmentRecord> {
    this.d.q(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, application, user_id) DO UPDATE SET body = excluded.body`)
      .run(tenant, application, userId, JSON.stringify(body), now());
    return (await this.getAssignment(tenant, application, userId))!;
  }
  async deleteAssignment(tenant: string, application: string, userId: string): Promise<boolean> {
    return this.d.q('DELETE FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').run(tenant, application, userId).changes > 0;
  }
  async changeAssignments(
    tenant: string, application: string, clientId: string,
    change: { readonly add: readonly string[]; readonly remove: readonly string[]; readonly body: AssignmentBody },
  ): Promise<{ readonly added: readonly string[]; readonly removed: readonly string[] }> {
    // IMMEDIATE: the users checked are the users written against, whatever another connection does.
    return this.d.tx(() => {
      const missing = change.add.filter((id) => this.d.q('SELECT 1 FROM users WHERE tenant = ? AND id = ?').get(tenant, id) === undefined);
      if (missing.length > 0) throw new MissingUsersError(missing);
      const t = now();
      const body = JSON.stringify(change.body);
      const added = change.add.filter((id) => this.d.q(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tenant, application, user_id) DO NOTHING`).run(tenant, application, id, body, t).changes > 0);
      const removed = change.remove.filter((id) => {
        const gone = this.d.q('DELETE FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').run(tenant, application, id).changes > 0;
        revokeUserClient(this.d, tenant, id, clientId);
        return gone;
      });
      return { added, removed };
    });
  }

  async getTotp(tenant: string, userId: string): Promise<TotpRecord | undefined> {
    const r = this.d.q('SELECT * FROM totp_secrets WHERE tenant = ? AND user_id = ?').get(tenant, userId) as Row | undefined;
    return r && totpRow(r);
  }
  async putTotp(tenant: string, userId: string, sealedSecret: string, lastStep: number): Promise<void> {
    this.d.q(`INSERT INTO totp_secrets (tenant, user_id, sealed_secret, last_step, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, last_step = excluded.last_step, created_at = excluded.created_at`)
      .run(tenant, userId, sealedSecret, lastStep, now());
  }
  async claimTotpStep(tenant: string, userId: string, step: number): Promise<boolean> {
    return this.d.q('UPDATE totp_secrets SET last_step = ? WHERE tenant = ? AND user_id = ? AND last_step < ?').run(step, tenant, userId, step).changes > 0;
  }
  async deleteTotp(tenant: string, userId: string): Promise<boolean> {
    return this.d.q('DELETE FROM totp_secrets WHERE tenant = ? AND user_id = ?').run(tenant, userId).changes > 0;
  }

  async putOtp(tenant: string, userId: string, codeHash: string, expiresAtMs: number): Promise<void> {
    this.d.q(`INSERT INTO otp_codes (tenant, user_id, code_hash, expires_at_ms, attempts) VALUES (?, ?, ?, ?, 0)
      ON CONFLICT (tenant, user_id) DO UPDATE SET code_hash = excluded.code_hash, expires_at_ms = excluded.expires_at_ms, attempts = 0`)
      .run(tenant, userId, codeHash, expiresAtMs);
  }
  async getOtp(tenant: string, userId: string): Promise<OtpRecord | undefined> {
    const r = this.d.q('SELECT * FROM otp_codes WHERE tenant = ? AND user_id = ?').get(tenant, userId) as Row | undefined;
    return r && otpRow(r);
  }
  async countOtpAttempt(tenant: string, userId: string): Promise<number> {
    const r = this.d.q('UPDATE otp_codes SET attempts = attempts + 1 WHERE tenant = ? AND user_id = ? RETURNING attempts').get(tenant, userId) as Row | undefined;
    return r === undefined ? Number.MAX_SAFE_INTEGER : Number(r.attempts);
  }
  async deleteOtp(tenant: string, userId: string, codeHash?: string): Promise<boolean> {
    return codeHash === undefined
      ? this.d.q('DELETE FROM otp_codes WHERE tenant = ? AND user_id = ?').run(tenant, userId).changes > 0
      : this.d.q('DELETE FROM otp_codes WHERE tenant = ? AND user_id = ? AND code_hash = ?').run(tenant, userId, codeHash).changes > 0;
  }
  async purgeExpiredOtps(): Promise<void> {
    this.d.q('DELETE FROM otp_codes WHERE expires_at_ms <= ?').run(Date.now());
  }

  async listPasskeys(tenant: string, userId: string): Promise<readonly PasskeyRecord[]> {
    return (this.d.q('SELECT * FROM passkeys WHERE tenant = ? AND user_id = ? ORDER BY created_at, credential_id').all(tenant, userId) as Row[]).map(passkeyRow);
  }
  async getPasskey(tenant: string, credentialId: string): Promise<PasskeyRecord | undefined> {
    const r = this.d.q('SELECT * FROM passkeys WHERE tenant = ? AND credential_id = ?').get(tenant, credentialId) as Row | undefined;
    return r && passkeyRow(r);
  }
  async putPasskey(tenant: string, p: PasskeyRecord): Promise<void> {
    this.d.q(`INSERT INTO passkeys (tenant, credential_id, user_id, public_key, counter, transports, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
      .run(tenant, p.credentialId, p.userId, p.publicKey, p.counter, JSON.stringify(p.transports), p.createdAt);
  }
  async updatePasskeyCounter(tenant: string, credentialId: string, counter: number): Promise<void> {
    this.d.q('UPDATE passkeys SET counter = ? WHERE tenant = ? AND credential_id = ?').run(counter, tenant, credentialId);
  }
  async deletePasskey(tenant: string, userId: string, credentialId: string): Promise<boolean> {
    return this.d.q('DELETE FROM passkeys WHERE tenant = ? AND user_id = ? AND credential_id = ?').run(tenant, userId, credentialId).changes > 0;
  }
}

/** Grants, refresh tokens, access tokens and codes of one user at one client; run inside the caller's transaction. */
function revokeUserClient(d: Db, tenant: string, accountId: string, clientId: string): void {
  const grants = d.q(`SELECT id FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model = 'Grant'`)
    .all(tenant, accountId, clientId) as { id: string }[];
  for (const g of grants) d.q('DELETE FROM artifacts WHERE tenant = ? AND grant_id = ?').run(tenant, g.id);
  d.q(`DELETE FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model != 'Session'`).run(tenant, accountId, clientId);
}

class Grants implements GrantStore {
  constructor(private readonly d: Db) {}

  async upsert(tenant: string, model: string, id: string, payload: ArtifactPayload, expiresIn: number | undefined): Promise<void> {
    const c = artifactColumns(payload);
    try {
      this.d.q(`INSERT INTO artifacts (tenant, model, id, payload, grant_id, uid, user_code, account_id, client_id, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (tenant, model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
          user_code = excluded.user_code, account_id = excluded.account_id, client_id = excluded.client_id, expires_at = excluded.expires_at`)
        .run(tenant, model, id, JSON.stringify(payload), c.grantId, c.uid, c.userCode, c.accountId, c.clientId, expiresIn === undefined ? null : now() + expiresIn);
    } catch (err) {
      // Its tenant or account was deleted meanwhile: such an artifact could only outlive them (GrantStore.upsert).
      if (!isForeignKeyViolation(err)) throw err;
    }
  }
  async find(tenant: string, model: string, id: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(this.d.q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND id = ?').get(tenant, model, id) as Row | undefined);
  }
  async findByUid(tenant: string, model: string, uid: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(this.d.q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND uid = ?').get(tenant, model, uid) as Row | undefined);
  }
  async findByUserCode(tenant: string, model: string, userCode: string): Promise<ArtifactPayload | undefined> {
    return artifactRow(this.d.q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND user_code = ?').get(tenant, model, userCode) as Row | undefined);
  }
  async consume(tenant: string, model: string, id: string): Promise<void> {
    this.d.q(`UPDATE artifacts SET payload = json_set(payload, '$.consumed', ?) WHERE tenant = ? AND model = ? AND id = ?`).run(now(), tenant, model, id);
  }
  async destroy(tenant: string, model: string, id: string): Promise<void> {
    this.d.q('DELETE FROM artifacts WHERE tenant = ? AND model = ? AND id = ?').run(tenant, model, id);
  }
  async revokeByGrantId(tenant: string, grantId: string): Promise<void> {
    this.d.q('DELETE FROM artifacts WHERE tenant = ? AND grant_id = ?').run(tenant, grantId);
  }
  async revokeUserClient(tenant: string, accountId: string, clientId: string): Promise<void> {
    this.d.tx(() => revokeUserClient(this.d, tenant, accountId, clientId));
  }
  async revokeUser(tenant: string, accountId: string): Promise<void> {
    this.d.q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, accountId);
  }
  async listByAccount(tenant: string, accountId: string, models: readonly string[]): Promise<readonly AccountArtifact[]> {
    if (models.length === 0) return [];
    const rows = this.d.q(`SELECT model, id, payload, expires_at FROM artifacts WHERE tenant = ? AND account_id = ? AND model IN (${models.map(() => '?').join(', ')})
      AND (expires_at IS NULL OR expires_at > ?) ORDER BY model, id`).all(tenant, accountId, ...models, now()) as Row[];
    return rows.map(accountArtifactRow);
  }
  async purgeExpired(): Promise<number> {
    return this.d.q('DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now()).changes;
  }
}

/** Whether the user may use the application: assigned, or a member of a group assigned to it. */
const HAS_ACCESS = `SELECT 1 FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?
  UNION ALL SELECT 1 FROM group_assignments ga JOIN group_members gm ON gm.tenant = ga.tenant AND gm.group_id = ga.group_id
    WHERE ga.tenant = ? AND ga.application = ? AND gm.user_id = ? LIMIT 1`;

class Groups implements GroupStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<GroupRecord | undefined> {
    const r = this.d.q('SELECT * FROM tenant_groups WHERE tenant = ? AND id = ?').get(tenant, id) as Row | undefined;
    return r && groupRow(r);
  }
  async getByDisplayName(tenant: string, displayName: string): Promise<GroupRecord | undefined> {
    const r = this.d.q('SELECT * FROM tenant_groups WHERE tenant = ? AND display_key = ?').get(tenant, caseKey(displayName)) as Row | undefined;
    return r && groupRow(r);
  }
  async list(tenant: string, page: PageRequest): Promise<Page<GroupRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q('SELECT * FROM tenant_groups WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?').all(tenant, after, page.limit + 1) as Row[];
    return toPage(rows, page.limit, groupRow, (r) => [String(r.id)]);
  }
  async put(tenant: string, id: string, body: Omit<GroupBody, 'members'>, members: MembershipChange = {}): Promise<GroupRecord> {
    const t = now();
    this.d.tx(() => {
      this.d.q(`INSERT INTO tenant_groups (tenant, id, display_key, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (tenant, id) DO UPDATE SET display_key = excluded.display_key, body = excluded.body, updated_at = excluded.updated_at`)
        .run(tenant, id, caseKey(body.displayName), JSON.stringify(body), t, t);
      // Only users of the tenant become members, decided in the same transaction as the insert.
      for (const u of members.add ?? []) {
        this.d.q('INSERT OR IGNORE INTO group_members (tenant, group_id, user_id) SELECT tenant, ?, id FROM users WHERE tenant = ? AND id = ?').run(id, tenant, u);
      }
      const removed = (members.remove ?? []).filter((u) =>
        this.d.q('DELETE FROM group_members WHERE tenant = ? AND group_id = ? AND user_id = ?').run(tenant, id, u).changes > 0);
      this.#revokeLostAccess(tenant, removed, this.#assignedClients(tenant, id));
    });
    return (await this.get(tenant, id))!;
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(() => {
      const clients = this.#assignedClients(tenant, id);
      const members = (this.d.q('SELECT user_id FROM group_members WHERE tenant = ? AND group_id = ?').all(tenant, id) as Row[]).map((r) => String(r.user_id));
      this.d.q('DELETE FROM group_assignments WHERE tenant = ? AND group_id = ?').run(tenant, id);
      this.d.q('DELETE FROM group_members WHERE tenant = ? AND group_id = ?').run(tenant, id);
      this.#revokeLostAccess(tenant, members, clients);
      return this.d.q('DELETE FROM tenant_groups WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
    });
  }
  async listMembers(tenant: string, id: string): Promise<readonly string[]> {
    return (this.d.q('SELECT user_id FROM group_members WHERE tenant = ? AND group_id = ? ORDER BY user_id').all(tenant, id) as Row[]).map((r) => String(r.user_id));
  }
  async countMembers(tenant: string, ids: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const rows = this.d.q(`SELECT group_id, count(*) AS n FROM group_members WHERE tenant = ? AND group_id IN (SELECT value FROM json_each(?)) GROUP BY group_id`)
      .all(tenant, JSON.stringify(ids)) as Row[];
    return new Map(rows.map((r) => [String(r.group_id), Number(r.n)]));
  }
  async groupsOf(tenant: string, userIds: readonly string[]): Promise<ReadonlyMap<string, readonly string[]>> {
    const rows = this.d.q(`SELECT user_id, group_id FROM group_members WHERE tenant = ? AND user_id IN (SELECT value FROM json_each(?)) ORDER BY user_id, group_id`)
      .all(tenant, JSON.stringify(userIds)) as Row[];
    return groupIdsByUser(rows);
  }

  async getAssignment(tenant: string, application: string, group: string): Promise<GroupAssignmentRecord | undefined> {
    const r = this.d.q('SELECT * FROM group_assignments WHERE tenant = ? AND application = ? AND group_id = ?').get(tenant, application, group) as Row | undefined;
    return r && groupAssignmentRow(r);
  }
  async listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<GroupAssignmentRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q('SELECT * FROM group_assignments WHERE tenant = ? AND application = ? AND group_id > ? ORDER BY group_id LIMIT ?')
      .all(tenant, application, after, page.limit + 1) as Row[];
    return toPage(rows, page.limit, groupAssignmentRow, (r) => [String(r.group_id)]);
  }
  async putAssignment(tenant: string, application: string, group: string, body: GroupAssignmentBody): Promise<GroupAssignmentRecord> {
    this.d.q(`INSERT INTO group_assignments (tenant, application, group_id, body, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, application, group_id) DO UPDATE SET body = excluded.body`)
      .run(tenant, application, group, JSON.stringify(body), now());
    return (await this.getAssignment(tenant, application, group))!;
  }
  async deleteAssignment(tenant: string, application: string, group: string): Promise<boolean> {
    return this.d.tx(() => {
      if (this.d.q('DELETE FROM group_assignments WHERE tenant = ? AND application = ? AND group_id = ?').run(tenant, application, group).changes === 0) return false;
      const app = this.d.q('SELECT name, client_id FROM applications WHERE tenant = ? AND name = ?').get(tenant, application) as Row | undefined;
      const members = (this.d.q('SELECT user_id FROM group_members WHERE tenant = ? AND group_id = ?').all(tenant, group) as Row[]).map((r) => String(r.user_id));
      this.#revokeLostAccess(tenant, members, app === undefined || app.client_id === null ? [] : [{ name: String(app.name), clientId: String(app.client_id) }]);
      return true;
    });
  }
  async grantsAccess(tenant: string, application: string, userId: string): Promise<boolean> {
    return this.d.q(`SELECT 1 FROM group_assignments ga JOIN group_members gm ON gm.tenant = ga.tenant AND gm.group_id = ga.group_id
      WHERE ga.tenant = ? AND ga.application = ? AND gm.user_id = ? LIMIT 1`).get(tenant, application, userId) !== undefined;
  }

  /** The client applications a group is assigned to. */
  #assignedClients(tenant: string, group: string): { name: string; clientId: string }[] {
    return (this.d.q(`SELECT a.name, a.client_id FROM group_assignments ga JOIN applications a ON a.tenant = ga.tenant AND a.name = ga.application
      WHERE ga.tenant = ? AND ga.group_id = ? AND a.client_id IS NOT NULL ORDER BY a.name`).all(tenant, group) as Row[])
      .map((r) => ({ name: String(r.name), clientId: String(r.client_id) }));
  }
  /** Inside the caller's transaction, after the change: users left without access to an application lose what they hold there. */
  #revokeLostAccess(tenant: string, users: readonly string[], clients: readonly { name: string; clientId: string }[]): void {
    for (const app of clients) {
      for (const u of users) {
        if (this.d.q(HAS_ACCESS).get(tenant, app.name, u, tenant, app.name, u) === undefined) revokeUserClient(this.d, tenant, u, app.clientId);
      }
    }
  }
}

class Scim implements ScimStore {
  constructor(private readonly d: Db) {}

  async getUser(tenant: string, id: string): Promise<UserWithScim | undefined> {
    const r = this.d.q(`${SCIM_USER_SELECT} WHERE u.tenant = ? AND u.id = ?`).get(tenant, id) as Row | undefined;
    return r && userWithScimRow(r);
  }
  async getUserByUserName(tenant: string, userName: string): Promise<UserWithScim | undefined> {
    const r = this.d.q(`${SCIM_USER_SELECT} WHERE s.tenant = ? AND s.user_name_key = ?`).get(tenant, caseKey(userName)) as Row | undefined;
    return r && userWithScimRow(r);
  }
  async getUsersByExternalId(tenant: string, externalId: string): Promise<readonly UserWithScim[]> {
    return (this.d.q(`${SCIM_USER_SELECT} WHERE s.tenant = ? AND s.external_id = ? ORDER BY u.id`).all(tenant, externalId) as Row[]).map(userWithScimRow);
  }
  async listUsers(tenant: string, offset: number, limit: number): Promise<readonly UserWithScim[]> {
    return (this.d.q(`${SCIM_USER_SELECT} WHERE u.tenant = ? ORDER BY u.id LIMIT ? OFFSET ?`).all(tenant, limit, offset) as Row[]).map(userWithScimRow);
  }
  async countUsers(tenant: string): Promise<number> {
    return Number((this.d.q('SELECT count(*) AS n FROM users WHERE tenant = ?').get(tenant) as Row).n);
  }
  async putUser(
    tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null,
    scim: Omit<ScimUserRecord, 'tenant' | 'userId'>, options: { readonly revokeArtifacts?: boolean } = {},
  ): Promise<UserWithScim> {
    const t = now();
    this.d.tx(() => {
      this.d.q(UPSERT_USER).run(tenant, id, body.email.toLowerCase(), JSON.stringify(body), passwordHash, t, t);
      this.d.q(`INSERT INTO scim_users (tenant, user_id, user_name, user_name_key, external_id, resource) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (tenant, user_id) DO UPDATE SET user_name = excluded.user_name, user_name_key = excluded.user_name_key,
          external_id = excluded.external_id, resource = excluded.resource`)
        .run(tenant, id, scim.userName, caseKey(scim.userName), scim.externalId, JSON.stringify(scim.resource));
      if (options.revokeArtifacts === true) this.d.q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, id);
    });
    return (await this.getUser(tenant, id))!;
  }

  async putToken(token: ScimTokenRecord): Promise<void> {
    this.d.q('INSERT INTO scim_tokens (tenant, id, token_hash, description, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(token.tenant, token.id, token.hash, token.description, token.createdAt);
  }
  async getToken(tenant: string, id: string): Promise<ScimTokenRecord | undefined> {
    const r = this.d.q('SELECT * FROM scim_tokens WHERE tenant = ? AND id = ?').get(tenant, id) as Row | undefined;
    return r && scimTokenRow(r);
  }
  async listTokens(tenant: string): Promise<readonly ScimTokenRecord[]> {
    return (this.d.q('SELECT * FROM scim_tokens WHERE tenant = ? ORDER BY created_at, id').all(tenant) as Row[]).map(scimTokenRow);
  }
  async deleteToken(tenant: string, id: string): Promise<boolean> {
    return this.d.q('DELETE FROM scim_tokens WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
  }
}

class Webhooks implements WebhookStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, name: string): Promise<WebhookRecord | undefined> {
    const r = this.d.q('SELECT * FROM webhooks WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
    return r && webhookRow(r);
  }
  async list(tenant: string): Promise<readonly WebhookRecord[]> {
    return (this.d.q('SELECT * FROM webhooks WHERE tenant = ? ORDER BY name').all(tenant) as Row[]).map(webhookRow);
  }
  async put(tenant: string, name: string, body: WebhookRecord['body'], sealedSecret: string): Promise<WebhookRecord> {
    const t = now();
    this.d.tx(() => {
      this.d.q(`INSERT INTO webhooks (tenant, name, body, sealed_secret, cursor_seq, created_at, updated_at)
        VALUES (?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM events), ?, ?)
        ON CONFLICT (tenant, name) DO UPDATE SET body = excluded.body, sealed_secret = excluded.sealed_secret, updated_at = excluded.updated_at`)
        .run(tenant, name, JSON.stringify(body), sealedSecret, t, t);
    });
    return (await this.get(tenant, name))!;
  }
  async delete(tenant: string, name: string): Promise<boolean> {
    return this.d.tx(() => {
      this.d.q('DELETE FROM webhook_deliveries WHERE tenant = ? AND webhook = ?').run(tenant, name);
      return this.d.q('DELETE FROM webhooks WHERE tenant = ? AND name = ?').run(tenant, name).changes > 0;
    });
  }
  async enqueue(nowMs: number, limit: number): Promise<number> {
    // No webhook, nothing to queue: no write lock taken (it would wait for a batch's commit, holding this process still).
    if (this.d.q('SELECT 1 FROM webhooks LIMIT 1').get() === undefined) return 0;
    return this.d.tx(() => {
      let queued = 0;
      const insert = this.d.q(`INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS.join(', ')}) VALUES (${DELIVERY_COLUMNS.map(() => '?').join(', ')})
        ON CONFLICT (tenant, webhook, seq) DO NOTHING`);
      for (const w of (this.d.q('SELECT * FROM webhooks').all() as Row[])) {
        const hook = webhookRow(w);
        if (!hook.body.enabled) continue;
        const events = this.d.q('SELECT seq, id, type FROM events WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?').all(hook.tenant, w.cursor_seq, limit) as Row[];
        if (events.length === 0) continue;
        for (const e of events) {
          if (takesType(hook.body.types, String(e.type))) queued += insert.run(hook.tenant, hook.name, e.seq, e.id, e.type, 'pending', 0, nowMs, 0, nowMs).changes;
        }
        this.d.q('UPDATE webhooks SET cursor_seq = ? WHERE tenant = ? AND name = ?').run(events[events.length - 1]!.seq, hook.tenant, hook.name);
      }
      return queued;
    });
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly DueDelivery[]> {
    if (this.d.q(`SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ? LIMIT 1`).get(nowMs, nowMs) === undefined) return [];
    return this.d.tx(() => {
      const rows = this.d.q(`SELECT d.*, e.body AS event_body FROM webhook_deliveries d LEFT JOIN events e ON e.seq = d.seq
        WHERE d.status = 'pending' AND d.next_attempt_ms <= ? AND d.lease_until_ms <= ? ORDER BY d.next_attempt_ms, d.seq LIMIT ?`).all(nowMs, nowMs, limit) as Row[];
      const out: DueDelivery[] = [];
      for (const r of rows) {
        this.d.q('UPDATE webhook_deliveries SET lease_until_ms = ?, attempts = attempts + 1 WHERE tenant = ? AND webhook = ? AND seq = ?').run(nowMs + leaseMs, r.tenant, r.webhook, r.seq);
        const w = this.d.q('SELECT * FROM webhooks WHERE tenant = ? AND name = ?').get(r.tenant, r.webhook) as Row;
        const event = eventOf(r.event_body);
        if (event === null) {
          this.d.q(`UPDATE webhook_deliveries SET status = 'failed', last_error = 'the event was purged (retention) before it could be delivered' WHERE tenant = ? AND webhook = ? AND seq = ?`).run(r.tenant, r.webhook, r.seq);
          continue;
        }
        out.push({ delivery: { ...deliveryRow(r), attempts: Number(r.attempts) + 1 }, webhook: webhookRow(w), event });
      }
      return out;
    });
  }
  async settle(d: Pick<DeliveryRecord, 'tenant' | 'webhook' | 'seq'>, o: { readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    const status = o.delivered ? 'delivered' : o.nextAttemptMs === null ? 'failed' : 'pending';
    this.d.q(`UPDATE webhook_deliveries SET status = ?, last_status = ?, last_error = ?, next_attempt_ms = ?, lease_until_ms = 0, delivered_at_ms = ?
      WHERE tenant = ? AND webhook = ? AND seq = ?`).run(status, o.status, o.error, o.nextAttemptMs ?? o.nowMs, o.delivered ? o.nowMs : null, d.tenant, d.webhook, d.seq);
  }
  async deliveries(tenant: string, name: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    const [before] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.d.q(`SELECT * FROM webhook_deliveries WHERE tenant = ? AND webhook = ? AND seq < ? ORDER BY seq DESC LIMIT ?`)
      .all(tenant, name, before === undefined ? Number.MAX_SAFE_INTEGER : Number(before), page.limit + 1) as Row[];
    return toPage(rows, page.limit, deliveryRow, (r) => [String(r.seq)]);
  }
  async purgeDeliveries(beforeMs: number): Promise<number> {
    return this.d.q(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at_ms < ?`).run(beforeMs).changes;
  }
}

class Events implements EventStore {
  constructor(private readonly d: Db) {}

  within<T>(events: () => readonly EventView[], write: () => Promise<T>): Promise<T> {
    return withOutbox(events, write);
  }
  async append(events: readonly EventView[]): Promise<void> {
    if (events.length > 0) this.d.tx(() => this.d.insertEvents(events));
  }
  async list(tenant: string, filter: EventFilter, page: PageRequest) {
    const { sql, params } = eventListSql(tenant, filter, page, () => '?');
    return eventPage(this.d.q(sql).all(...params) as Row[], page);
  }
  async after(seq: number, limit: number): Promise<readonly EventRecord[]> {
    return (this.d.q('SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(seq, limit) as Row[]).map(eventRow);
  }
  async window(seq: number, limit: number, types: ReadonlySet<string>): Promise<EventWindow> {
    const t = [...types];
    const body = t.length === 0 ? 'NULL' : `CASE WHEN type IN (${t.map(() => '?').join(', ')}) THEN body END`;
    return eventWindow(this.d.q(`SELECT seq, ${body} AS body FROM events WHERE seq > ? ORDER BY seq LIMIT ?`).all(...t, seq, limit) as Row[]);
  }
  async lastSeq(): Promise<number> {
    return Number((this.d.q('SELECT coalesce(max(seq), 0) AS s FROM events').get() as Row).s);
  }
  async revisions(tenant?: string): Promise<Record<string, string>> {
    const rows = (tenant === undefined ? this.d.q('SELECT tenant, revision FROM tenant_revisions').all() : this.d.q('SELECT tenant, revision FROM tenant_revisions WHERE tenant = ?').all(tenant)) as Row[];
    return Object.fromEntries(rows.map((r) => [String(r.tenant), String(r.revision)]));
  }
  async purge(nowMs: number, defaultDays: number): Promise<number> {
    const sql = purgeEventsSql((n) => `@p${n}`, `json_extract(t.body, '$.events.retentionDays')`);
    return this.d.q(sql).run({ p1: nowMs, p2: defaultDays }).changes;
  }
}

const TAKE_RATE = takeRateSql('max', (n) => `@p${n}`);

/** One process serves a SQLite file, so in-process locks per file serialize every attempt on it. */
const FILE_LOCKS = new Map<string, KeyedLocks>();

class Throttle implements ThrottleStore {
  readonly #locks: NamedLocks;
  /** `locks`: given when other processes share the file (the cluster primary's); else this process's own. */
  constructor(private readonly d: Db, locks?: NamedLocks) {
    this.#locks = locks ?? FILE_LOCKS.get(d.file) ?? new KeyedLocks();
    if (locks === undefined) FILE_LOCKS.set(d.file, this.#locks as KeyedLocks);
  }

  async get(tenant: string, key: string): Promise<ThrottleRecord | undefined> {
    const r = this.d.q('SELECT * FROM login_throttle WHERE tenant = ? AND key = ?').get(tenant, key) as Row | undefined;
    return r && throttleRow(r);
  }
  async recordFailure(tenant: string, key: string, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number) {
    return this.d.tx(() => {
      const r = this.d.q('SELECT * FROM login_throttle WHERE tenant = ? AND key = ?').get(tenant, key) as Row | undefined;
      const next = nextThrottle(r && throttleRow(r), nowMs, resetAfterMs, lockAt, lockMs);
      this.d.q(`INSERT INTO login_throttle (tenant, key, failures, last_failure_ms, locked_until_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tenant, key) DO UPDATE SET failures = excluded.failures, last_failure_ms = excluded.last_failure_ms, locked_until_ms = excluded.locked_until_ms`)
        .run(tenant, key, next.failures, next.lastFailureMs, next.lockedUntilMs);
      return next;
    });
  }
  async clear(tenant: string, key: string): Promise<void> {
    this.d.q('DELETE FROM login_throttle WHERE tenant = ? AND key = ?').run(tenant, key);
  }
  serialize<T>(tenant: string, keys: readonly string[], attempt: () => Promise<T>): Promise<T> {
    return this.#locks.hold(keys.map((k) => `${tenant}\u0000${k}`), attempt);
  }
  async takeRate(tenant: string, key: string, nowMs: number, intervalMs: number, burst: number): Promise<number> {
    const a = rateArgs(nowMs, intervalMs, burst);
    const r = this.d.q(TAKE_RATE).get({ p1: tenant, p2: key, p3: a.now, p4: a.interval, p5: a.tolerance }) as Row;
    return rateWait(r, a);
  }
  async purgeIdle(): Promise<void> {
    const ms = Date.now();
    this.d.q('DELETE FROM login_throttle WHERE last_failure_ms < ? AND locked_until_ms < ? AND locked_until_ms <> -1').run(ms - THROTTLE_IDLE_MS, ms);
    this.d.q(PURGE_RATES_SQL((n) => `@p${n}`)).run({ p1: (ms - THROTTLE_IDLE_MS) * 1000 });
  }
}

class Meta implements MetaStore {
  constructor(private readonly d: Db) {}

  async get(key: string): Promise<string | undefined> {
    const r = this.d.q('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return r?.value;
  }
  async set(key: string, value: string): Promise<void> {
    this.d.q('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }
  async setIfAbsent(key: string, value: string): Promise<string> {
    return this.d.tx(() => {
      this.d.q('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING').run(key, value);
      return (this.d.q('SELECT value FROM meta WHERE key = ?').get(key) as { value: string }).value;
    });
  }
}

/** How often the change log is read; a change reaches every process within this (plus a query). */
const CHANGE_POLL_MS = 250;
/** Log rows older than this are deleted: every live process has read them long before. */
const CHANGE_RETENTION_MS = 60_000;

/**
 * The change feed of processes sharing one SQLite file (`idforge serve --workers`): a log table
 * read four times a second by every process that listens. A process hears only what was logged
 * after it opened the file; nothing is missed while it runs (the log outlives every reader's poll).
 */
class Changes implements ChangeFeed {
  readonly #listeners = new Set<(tenant: string) => void>();
  #seen: number;
  #timer: NodeJS.Timeout | undefined;
  readonly listening = true;

  /** `locks`: the cluster primary's, when other processes share the file. */
  constructor(private readonly d: Db, private readonly locks?: NamedLocks) {
    this.#seen = (this.d.q('SELECT coalesce(max(seq), 0) AS s FROM change_log').get() as { s: number }).s;
  }

  async publish(tenant: string): Promise<void> {
    const write = async () => {
      const now = Date.now();
      this.d.tx(() => {
        this.d.q('INSERT INTO change_log (tenant, at_ms) VALUES (?, ?)').run(tenant, now);
        this.d.q('DELETE FROM change_log WHERE at_ms < ?').run(now - CHANGE_RETENTION_MS);
      });
    };
    // Announced right after a batch: in the batches' queue, not in SQLite's busy handler beside the next one.
    return queued(this.locks, write);
  }

  subscribe(listener: (tenant: string) => void): () => void {
    this.#listeners.add(listener);
    this.#timer ??= setInterval(() => this.#poll(), CHANGE_POLL_MS).unref();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stop();
    };
  }

  #poll(): void {
    if (!this.d.db.open) return;
    const rows = this.d.q('SELECT seq, tenant FROM change_log WHERE seq > ? ORDER BY seq').all(this.#seen) as { seq: number; tenant: string }[];
    for (const r of rows) {
      this.#seen = r.seq;
      for (const l of this.#listeners) l(r.tenant);
    }
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Below this much free space on the file's disk, readiness reports that writes fail: SQLite reuses
 * space the file and its WAL already hold, so a small probe write can succeed on a full disk while
 * a sign-in or a batch, which need new pages, fail.
 */
export const MIN_FREE_BYTES = 1024 * 1024;

export interface SqliteOptions {
  /** What serializes sign-in attempts when other processes share the file (the cluster primary's locks). */
  readonly locks?: NamedLocks | undefined;
  /** How long a statement waits for another process's lock before failing as SQLITE_BUSY. Default 5000. */
  readonly busyTimeoutMs?: number | undefined;
  /** Migration notices. */
  readonly log?: (line: string) => void;
}

/**
 * After every process that shared `<dataDir>/idforge.db` has closed it (`idforge serve --workers`):
 * open and close it once, alone, so its write-ahead log is folded into it and removed. SQLite does
 * that at the last close that gets the file to itself, and two workers closing at the same moment
 * can each see the other and both leave it: harmless (the next open replays it), but a clean stop
 * should leave the data dir as one file. Best effort: a failure leaves the log, never loses data.
 */
export function foldWriteAheadLog(dataDir: string): void {
  const file = resolve(dataDir, DATABASE_FILE);
  if (!existsSync(`${file}-wal`)) return;
  try {
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
  } catch {
    // Left as it is: the next open replays it.
  }
}

/**
 * Opens (creating if missing) `<dataDir>/idforge.db`, migrating it to the latest schema (a copy of
 * a file that held an older one is made first: sqlite-migrations.ts); the data dir must exist.
 */
export function openSqliteStorage(dataDir: string, options: SqliteOptions = {}): Storage {
  const d = new Db(resolve(dataDir, DATABASE_FILE), options.busyTimeoutMs ?? 5000, options.log ?? (() => {}));
  const locks = options.locks;
  const changes = new Changes(d, locks);
  return {
    tenants: new Tenants(d, locks),
    applications: new Applications(d),
    users: new Users(d),
    groups: new Groups(d),
    scim: new Scim(d),
    grants: new Grants(d),
    throttle: new Throttle(d, locks),
    meta: new Meta(d),
    events: new Events(d),
    webhooks: new Webhooks(d),
    ssf: new Ssf(d),
    backchannel: new Backchannel(d, locks),
    changes,
    ping: async () => {
      d.q('SELECT 1').get();
    },
    pingWrite: async () => {
      const fs = await statfs(dirname(d.file));
      const free = Number(fs.bavail) * Number(fs.bsize);
      if (free < MIN_FREE_BYTES) throw new Error(`writes fail: the disk holding ${d.file} has ${Math.floor(free / 1024)} KiB free`);
      d.tx(() => d.q(`INSERT INTO meta (key, value) VALUES ('ready-probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(String(Date.now())));
    },
    description: `sqlite ${d.file}`,
    close: async () => {
      changes.stop();
      d.db.close();
    },
  };
}

class Ssf implements SsfStore {
  constructor(private readonly d: Db) {}

  async get(tenant: string, id: string): Promise<SsfStreamRecord | undefined> {
    const r = this.d.q('SELECT * FROM ssf_streams WHERE tenant = ? AND id = ?').get(tenant, id) as Row | undefined;
    return r && ssfStreamRow(r);
  }
  async list(tenant: string): Promise<readonly SsfStreamRecord[]> {
    return (this.d.q('SELECT * FROM ssf_streams WHERE tenant = ? ORDER BY created_at, id').all(tenant) as Row[]).map(ssfStreamRow);
  }
  async put(s: Omit<SsfStreamRecord, 'createdAt' | 'updatedAt'>): Promise<SsfStreamRecord> {
    const t = now();
    this.d.tx(() => {
      this.d.q(`INSERT INTO ssf_streams (tenant, id, body, status, reason, sealed_authorization, token_hash, cursor_seq, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM events), ?, ?)
        ON CONFLICT (tenant, id) DO UPDATE SET body = excluded.body, status = excluded.status, reason = excluded.reason,
          sealed_authorization = excluded.sealed_authorization, token_hash = excluded.token_hash, updated_at = excluded.updated_at`)
        .run(...ssfStreamValues(s), t, t);
    });
    return (await this.get(s.tenant, s.id))!;
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.d.tx(() => {
      this.d.q('DELETE FROM ssf_sets WHERE tenant = ? AND stream = ?').run(tenant, id);
      return this.d.q('DELETE FROM ssf_streams WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
    });
  }
  async enqueue(nowMs: number, limit: number, translate: (stream: SsfStreamRecord, event: EventView) => readonly SsfSetDraft[], types?: ReadonlySet<string>): Promise<number> {
    // No stream, nothing to queue: no write lock taken (it would wait for a batch's commit, holding this process still).
    if (this.d.q('SELECT 1 FROM ssf_streams LIMIT 1').get() === undefined) return 0;
    const t = types === undefined ? undefined : [...types];
    const body = t === undefined ? 'body' : t.length === 0 ? 'NULL' : `CASE WHEN type IN (${t.map(() => '?').join(', ')}) THEN body END`;
    return this.d.tx(() => {
      let queued = 0;
      const insert = this.d.q(`INSERT INTO ssf_sets (tenant, stream, jti, claims, status, attempts, next_attempt_ms, lease_until_ms, created_at_ms)
        VALUES (?, ?, ?, ?, 'pending', 0, ?, 0, ?) ON CONFLICT (tenant, stream, jti) DO NOTHING`);
      const read = this.d.q(`SELECT seq, ${body} AS body FROM events WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?`);
      for (const r of (this.d.q('SELECT * FROM ssf_streams').all() as Row[])) {
        const stream = ssfStreamRow(r);
        const events = read.all(...(t ?? []), stream.tenant, r.cursor_seq, limit) as Row[];
        if (events.length === 0) continue;
        if (stream.status !== 'disabled') {
          for (const e of events) {
            if (e.body === null) continue;
            for (const set of translate(stream, eventBody(e))) queued += insert.run(stream.tenant, stream.id, set.jti, JSON.stringify(set.claims), nowMs, nowMs).changes;
          }
        }
        this.d.q('UPDATE ssf_streams SET cursor_seq = ? WHERE tenant = ? AND id = ?').run(events[events.length - 1]!.seq, stream.tenant, stream.id);
      }
      return queued;
    });
  }
  async add(tenant: string, stream: string, sets: readonly SsfSetDraft[], nowMs: number): Promise<void> {
    this.d.tx(() => {
      for (const set of sets) {
        this.d.q(`INSERT INTO ssf_sets (tenant, stream, jti, claims, status, attempts, next_attempt_ms, lease_until_ms, created_at_ms)
          VALUES (?, ?, ?, ?, 'pending', 0, ?, 0, ?) ON CONFLICT (tenant, stream, jti) DO NOTHING`).run(tenant, stream, set.jti, JSON.stringify(set.claims), nowMs, nowMs);
      }
    });
  }
  async pending(tenant: string, stream: string, limit: number): Promise<{ readonly sets: readonly SsfSetRecord[]; readonly more: boolean }> {
    const rows = this.d.q(`SELECT * FROM ssf_sets WHERE tenant = ? AND stream = ? AND status = 'pending' ORDER BY n LIMIT ?`).all(tenant, stream, limit + 1) as Row[];
    return { sets: rows.slice(0, limit).map(ssfSetRow), more: rows.length > limit };
  }
  async acknowledge(tenant: string, stream: string, jtis: readonly string[], nowMs: number, error?: (jti: string) => string | undefined): Promise<void> {
    if (jtis.length === 0) return;
    this.d.tx(() => {
      for (const jti of jtis) {
        const e = error?.(jti);
        this.d.q(`UPDATE ssf_sets SET status = ?, last_error = ?, settled_at_ms = ? WHERE tenant = ? AND stream = ? AND jti = ? AND status = 'pending'`)
          .run(e === undefined ? 'delivered' : 'failed', e ?? null, nowMs, tenant, stream, jti);
      }
    });
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly (SsfSetRecord & { readonly streamRecord: SsfStreamRecord })[]> {
    if (this.d.q(`SELECT 1 FROM ssf_sets WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ? LIMIT 1`).get(nowMs, nowMs) === undefined) return [];
    return this.d.tx(() => {
      const rows = this.d.q(`SELECT x.* FROM ssf_sets x JOIN ssf_streams s ON s.tenant = x.tenant AND s.id = x.stream
        WHERE x.status = 'pending' AND x.next_attempt_ms <= ? AND x.lease_until_ms <= ? AND s.status = 'enabled' AND json_extract(s.body, '$.method') = 'push'
        ORDER BY x.next_attempt_ms, x.n LIMIT ?`).all(nowMs, nowMs, limit) as Row[];
      return rows.map((r) => {
        this.d.q('UPDATE ssf_sets SET lease_until_ms = ?, attempts = attempts + 1 WHERE n = ?').run(nowMs + leaseMs, r.n);
        const s = this.d.q('SELECT * FROM ssf_streams WHERE tenant = ? AND id = ?').get(r.tenant, r.stream) as Row;
        return { ...ssfSetRow(r), attempts: Number(r.attempts) + 1, streamRecord: ssfStreamRow(s) };
      });
    });
  }
  async settle(tenant: string, stream: string, jti: string, o: { readonly delivered: boolean; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    const status = o.delivered ? 'delivered' : o.nextAttemptMs === null ? 'failed' : 'pending';
    this.d.q(`UPDATE ssf_sets SET status = ?, last_error = ?, next_attempt_ms = ?, lease_until_ms = 0, settled_at_ms = ? WHERE tenant = ? AND stream = ? AND jti = ?`)
      .run(status, o.error, o.nextAttemptMs ?? o.nowMs, status === 'pending' ? null : o.nowMs, tenant, stream, jti);
  }
  async purge(settledBeforeMs: number, pendingBeforeMs: number): Promise<number> {
    return this.d.q(`DELETE FROM ssf_sets WHERE (status <> 'pending' AND settled_at_ms < ?) OR (status = 'pending' AND created_at_ms < ?)`)
      .run(settledBeforeMs, pendingBeforeMs).changes;
  }
}

class Backchannel implements BackchannelStore {
  /** `locks`: the cluster primary's, when other processes share the file. */
  constructor(private readonly d: Db, private readonly locks?: NamedLocks) {}

  async place(): Promise<number | undefined> {
    const r = this.d.q('SELECT value FROM meta WHERE key = ?').get(BACKCHANNEL_PLACE_KEY) as { value: string } | undefined;
    return r === undefined ? undefined : Number(r.value);
  }
  async start(seq: number): Promise<number> {
    return this.d.tx(() => {
      this.d.q('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING').run(BACKCHANNEL_PLACE_KEY, String(seq));
      return Number((this.d.q('SELECT value FROM meta WHERE key = ?').get(BACKCHANNEL_PLACE_KEY) as { value: string }).value);
    });
  }
  async queue(fromSeq: number, toSeq: number, logouts: readonly LogoutDraft[], nowMs: number): Promise<boolean> {
    const write = async () => this.d.tx(() => {
      const moved = this.d.q('UPDATE meta SET value = ? WHERE key = ? AND value = ?').run(String(toSeq), BACKCHANNEL_PLACE_KEY, String(fromSeq)).changes;
      if (moved === 0) return false;
      this.#insert(logouts, nowMs);
      return true;
    });
    // Every worker moves the place each poll while a large apply writes events: in the batches'
    // queue, so neither waits in SQLite's busy handler for the other.
    return queued(this.locks, write);
  }
  async add(logouts: readonly LogoutDraft[], nowMs: number): Promise<void> {
    if (logouts.length > 0) this.d.tx(() => this.#insert(logouts, nowMs));
  }
  #insert(logouts: readonly LogoutDraft[], nowMs: number): void {
    const insert = this.d.q(`INSERT INTO backchannel_logouts (${LOGOUT_COLUMNS.join(', ')}) VALUES (${LOGOUT_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT (jti) DO NOTHING`);
    for (const l of logouts) insert.run(...logoutValues(l, nowMs));
  }
  async claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly LogoutRecord[]> {
    if (this.d.q(`SELECT 1 FROM backchannel_logouts WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ? LIMIT 1`).get(nowMs, nowMs) === undefined) return [];
    return this.d.tx(() => {
      const rows = this.d.q(`SELECT * FROM backchannel_logouts WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ? ORDER BY next_attempt_ms, n LIMIT ?`)
        .all(nowMs, nowMs, limit) as Row[];
      const lease = this.d.q('UPDATE backchannel_logouts SET lease_until_ms = ?, attempts = attempts + 1 WHERE n = ?');
      for (const r of rows) lease.run(nowMs + leaseMs, r.n);
      return rows.map((r) => ({ ...logoutRow(r), attempts: Number(r.attempts) + 1 }));
    });
  }
  async settle(jti: string, o: { readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void> {
    this.d.q(`UPDATE backchannel_logouts SET status = ?, last_status = ?, last_error = ?, next_attempt_ms = ?, lease_until_ms = 0, settled_at_ms = ? WHERE jti = ?`)
      .run(settledStatus(o), o.status, o.error, o.nextAttemptMs ?? o.nowMs, o.nextAttemptMs === null || o.delivered ? o.nowMs : null, jti);
  }
  async purge(beforeMs: number): Promise<number> {
    return this.d.q(`DELETE FROM backchannel_logouts WHERE status <> 'pending' AND settled_at_ms < ?`).run(beforeMs).changes;
  }
}
