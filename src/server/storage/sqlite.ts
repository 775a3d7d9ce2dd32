/**
 * SQLite storage (better-sqlite3, WAL). One file, `<dataDir>/idforge.db`. Bodies are stored as JSON
 * text next to the columns we query by; artifacts keep oidc-provider's payload as-is plus the
 * columns its adapter looks up (uid, userCode, grantId) and the ones we revoke by (account, client).
 */
import Database from 'better-sqlite3';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import type {
  ApplicationRecord,
  ArtifactPayload,
  AssignmentRecord,
  KeyRecord,
  OtpRecord,
  Page,
  PasskeyRecord,
  PageRequest,
  Storage,
  StoredApplicationBody,
  TenantRecord,
  ThrottleRecord,
  TotpRecord,
  UserRecord,
} from './types.ts';
import type { AssignmentBody, TenantBody, UserBody } from '../../contract/index.ts';

export const DATABASE_FILE = 'idforge.db';

const SCHEMA = `
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
`;

/** Tables of per-user login factors: removed with their user. */
const USER_FACTOR_TABLES = ['totp_secrets', 'otp_codes', 'passkeys'] as const;

const now = () => Math.floor(Date.now() / 1000);

function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** A malformed cursor reads as "from the start" would hide bugs; callers validate with this. */
export function decodeCursor(cursor: string | undefined, parts: number): string[] | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === parts && v.every((s) => typeof s === 'string')) return v as string[];
  } catch {
    /* fall through */
  }
  throw new RangeError('invalid cursor');
}

type Row = Record<string, unknown>;

export class SqliteStorage implements Storage {
  readonly #db: Database.Database;

  constructor(dataDir: string) {
    const file = join(dataDir, DATABASE_FILE);
    this.#db = new Database(file);
    // Password hashes and sealed keys: readable by the server's user only (WAL files inherit it).
    chmodSync(file, 0o600);
    // WAL: readers never block the writer; NORMAL sync is durable across process crashes in WAL mode.
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(SCHEMA);
  }

  #stmts = new Map<string, Database.Statement>();
  #q(sql: string): Database.Statement {
    let s = this.#stmts.get(sql);
    if (s === undefined) {
      s = this.#db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  #page<T>(rows: Row[], limit: number, map: (r: Row) => T, key: (r: Row) => string[]): Page<T> {
    const more = rows.length > limit;
    const items = (more ? rows.slice(0, limit) : rows).map(map);
    const last = more ? rows[limit - 1] : undefined;
    return { items, nextCursor: last === undefined ? null : encodeCursor(key(last)) };
  }

  // Tenants
  async getTenant(name: string): Promise<TenantRecord | undefined> {
    const r = this.#q('SELECT * FROM tenants WHERE name = ?').get(name) as Row | undefined;
    return r && tenantRow(r);
  }
  async listTenants(page: PageRequest): Promise<Page<TenantRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.#q('SELECT * FROM tenants WHERE name > ? ORDER BY name LIMIT ?').all(after, page.limit + 1) as Row[];
    return this.#page(rows, page.limit, tenantRow, (r) => [String(r.name)]);
  }
  async countTenants(): Promise<number> {
    return (this.#q('SELECT count(*) AS n FROM tenants').get() as { n: number }).n;
  }
  async putTenant(name: string, body: TenantBody, initialKeys?: readonly KeyRecord[]): Promise<TenantRecord> {
    const t = now();
    this.#db.transaction(() => {
      const existed = this.#q('SELECT 1 FROM tenants WHERE name = ?').get(name) !== undefined;
      this.#q(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES (?, ?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`).run(name, JSON.stringify(body), t, t);
      if (!existed && initialKeys !== undefined) this.#insertKeys(name, initialKeys);
    })();
    return (await this.getTenant(name))!;
  }
  async deleteTenant(name: string): Promise<boolean> {
    return this.#db.transaction(() => {
      for (const table of ['keys', 'applications', 'users', 'assignments', 'artifacts', ...USER_FACTOR_TABLES, 'login_throttle']) {
        this.#q(`DELETE FROM ${table} WHERE tenant = ?`).run(name);
      }
      return this.#q('DELETE FROM tenants WHERE name = ?').run(name).changes > 0;
    })();
  }

  // Keys
  async listKeys(tenant: string): Promise<readonly KeyRecord[]> {
    return (this.#q('SELECT * FROM keys WHERE tenant = ? ORDER BY created_at, kid').all(tenant) as Row[]).map(keyRow);
  }
  async updateKeys(tenant: string, update: (current: readonly KeyRecord[]) => readonly KeyRecord[]): Promise<readonly KeyRecord[]> {
    // IMMEDIATE: take the write lock before reading, so no other connection's write slips between.
    return this.#db.transaction(() => {
      const keys = update((this.#q('SELECT * FROM keys WHERE tenant = ? ORDER BY created_at, kid').all(tenant) as Row[]).map(keyRow));
      this.#q('DELETE FROM keys WHERE tenant = ?').run(tenant);
      this.#insertKeys(tenant, keys);
      return keys;
    }).immediate();
  }
  #insertKeys(tenant: string, keys: readonly KeyRecord[]): void {
    for (const k of keys) {
      this.#q('INSERT INTO keys (tenant, kid, alg, state, sealed_jwk, created_at, retired_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
        tenant, k.kid, k.alg, k.state, k.sealedJwk, k.createdAt, k.retiredAt,
      );
    }
  }

  // Applications
  async getApplication(tenant: string, name: string): Promise<ApplicationRecord | undefined> {
    const r = this.#q('SELECT * FROM applications WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
    return r && appRow(r);
  }
  async getApplicationByClientId(tenant: string, clientId: string): Promise<ApplicationRecord | undefined> {
    const r = this.#q('SELECT * FROM applications WHERE tenant = ? AND client_id = ?').get(tenant, clientId) as Row | undefined;
    return r && appRow(r);
  }
  async getApplicationByIdentifier(tenant: string, identifier: string): Promise<ApplicationRecord | undefined> {
    const r = this.#q('SELECT * FROM applications WHERE tenant = ? AND identifier = ?').get(tenant, identifier) as Row | undefined;
    return r && appRow(r);
  }
  async listApplications(tenant: string, page: PageRequest): Promise<Page<ApplicationRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.#q(`SELECT * FROM applications WHERE tenant = ? AND name > ? AND kind != 'service' ORDER BY name LIMIT ?`)
      .all(tenant, after, page.limit + 1) as Row[];
    return this.#page(rows, page.limit, appRow, (r) => [String(r.name)]);
  }
  async putApplication(tenant: string, name: string, body: StoredApplicationBody, secretHash: string | null): Promise<ApplicationRecord> {
    const t = now();
    const clientId = body.kind === 'api' ? null : body.clientId;
    const identifier = body.kind === 'api' ? body.identifier : null;
    this.#q(`INSERT INTO applications (tenant, name, kind, client_id, identifier, body, secret_hash, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, name) DO UPDATE SET kind = excluded.kind, client_id = excluded.client_id,
        identifier = excluded.identifier, body = excluded.body, secret_hash = excluded.secret_hash, updated_at = excluded.updated_at`)
      .run(tenant, name, body.kind, clientId, identifier, JSON.stringify(body), secretHash, t, t);
    return (await this.getApplication(tenant, name))!;
  }
  async deleteApplication(tenant: string, name: string): Promise<boolean> {
    return this.#db.transaction(() => {
      const app = this.#q('SELECT client_id FROM applications WHERE tenant = ? AND name = ?').get(tenant, name) as Row | undefined;
      if (app === undefined) return false;
      this.#q('DELETE FROM assignments WHERE tenant = ? AND application = ?').run(tenant, name);
      if (app.client_id !== null) this.#q('DELETE FROM artifacts WHERE tenant = ? AND client_id = ?').run(tenant, app.client_id);
      return this.#q('DELETE FROM applications WHERE tenant = ? AND name = ?').run(tenant, name).changes > 0;
    })();
  }

  // Users
  async getUser(tenant: string, id: string): Promise<UserRecord | undefined> {
    const r = this.#q('SELECT * FROM users WHERE tenant = ? AND id = ?').get(tenant, id) as Row | undefined;
    return r && userRow(r);
  }
  async getUserByEmail(tenant: string, email: string): Promise<UserRecord | undefined> {
    // Emails compare case-insensitively (as people type them); ids are the identity.
    const r = this.#q('SELECT * FROM users WHERE tenant = ? AND email = ? ORDER BY id LIMIT 1').get(tenant, email.toLowerCase()) as Row | undefined;
    return r && userRow(r);
  }
  async listUsers(tenant: string, page: PageRequest): Promise<Page<UserRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.#q('SELECT * FROM users WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?').all(tenant, after, page.limit + 1) as Row[];
    return this.#page(rows, page.limit, userRow, (r) => [String(r.id)]);
  }
  async putUser(tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null, options: { readonly revokeArtifacts?: boolean } = {}): Promise<UserRecord> {
    const t = now();
    this.#db.transaction(() => {
      this.#q(`INSERT INTO users (tenant, id, email, body, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (tenant, id) DO UPDATE SET email = excluded.email, body = excluded.body,
          password_hash = excluded.password_hash, updated_at = excluded.updated_at`)
        .run(tenant, id, body.email.toLowerCase(), JSON.stringify(body), passwordHash, t, t);
      if (options.revokeArtifacts === true) this.#q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, id);
    })();
    return (await this.getUser(tenant, id))!;
  }
  async deleteUser(tenant: string, id: string): Promise<boolean> {
    return this.#db.transaction(() => {
      this.#q('DELETE FROM assignments WHERE tenant = ? AND user_id = ?').run(tenant, id);
      this.#q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, id);
      for (const table of USER_FACTOR_TABLES) this.#q(`DELETE FROM ${table} WHERE tenant = ? AND user_id = ?`).run(tenant, id);
      return this.#q('DELETE FROM users WHERE tenant = ? AND id = ?').run(tenant, id).changes > 0;
    })();
  }

  // Assignments
  async getAssignment(tenant: string, application: string, userId: string): Promise<AssignmentRecord | undefined> {
    const r = this.#q('SELECT * FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').get(tenant, application, userId) as Row | undefined;
    return r && assignmentRow(r);
  }
  async listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<AssignmentRecord>> {
    const [after = ''] = decodeCursor(page.cursor, 1) ?? [];
    const rows = this.#q('SELECT * FROM assignments WHERE tenant = ? AND application = ? AND user_id > ? ORDER BY user_id LIMIT ?')
      .all(tenant, application, after, page.limit + 1) as Row[];
    return this.#page(rows, page.limit, assignmentRow, (r) => [String(r.user_id)]);
  }
  async putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody): Promise<AssignmentRecord> {
    this.#q(`INSERT INTO assignments (tenant, application, user_id, body, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, application, user_id) DO UPDATE SET body = excluded.body`)
      .run(tenant, application, userId, JSON.stringify(body), now());
    return (await this.getAssignment(tenant, application, userId))!;
  }
  async deleteAssignment(tenant: string, application: string, userId: string): Promise<boolean> {
    return this.#q('DELETE FROM assignments WHERE tenant = ? AND application = ? AND user_id = ?').run(tenant, application, userId).changes > 0;
  }

  async revokeUserClientArtifacts(tenant: string, accountId: string, clientId: string): Promise<void> {
    this.#db.transaction(() => {
      const grants = this.#q(`SELECT id FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model = 'Grant'`)
        .all(tenant, accountId, clientId) as { id: string }[];
      for (const g of grants) this.#q('DELETE FROM artifacts WHERE tenant = ? AND grant_id = ?').run(tenant, g.id);
      this.#q(`DELETE FROM artifacts WHERE tenant = ? AND account_id = ? AND client_id = ? AND model != 'Session'`).run(tenant, accountId, clientId);
    })();
  }
  async revokeUserArtifacts(tenant: string, accountId: string): Promise<void> {
    this.#q('DELETE FROM artifacts WHERE tenant = ? AND account_id = ?').run(tenant, accountId);
  }

  // oidc-provider artifacts
  async upsertArtifact(tenant: string, model: string, id: string, payload: ArtifactPayload, expiresIn: number | undefined): Promise<void> {
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    this.#q(`INSERT INTO artifacts (tenant, model, id, payload, grant_id, uid, user_code, account_id, client_id, expires_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
        user_code = excluded.user_code, account_id = excluded.account_id, client_id = excluded.client_id, expires_at = excluded.expires_at`)
      .run(
        tenant, model, id, JSON.stringify(payload), str(payload.grantId), str(payload.uid), str(payload.userCode),
        // Sessions carry the account at `accountId` too; grants and tokens carry both fields.
        str(payload.accountId), str(payload.clientId), expiresIn === undefined ? null : now() + expiresIn,
      );
  }
  #artifact(r: Row | undefined): ArtifactPayload | undefined {
    if (r === undefined) return undefined;
    if (r.expires_at !== null && Number(r.expires_at) <= now()) return undefined;
    return JSON.parse(String(r.payload)) as ArtifactPayload;
  }
  async findArtifact(tenant: string, model: string, id: string): Promise<ArtifactPayload | undefined> {
    return this.#artifact(this.#q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND id = ?').get(tenant, model, id) as Row | undefined);
  }
  async findArtifactByUid(tenant: string, model: string, uid: string): Promise<ArtifactPayload | undefined> {
    return this.#artifact(this.#q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND uid = ?').get(tenant, model, uid) as Row | undefined);
  }
  async findArtifactByUserCode(tenant: string, model: string, userCode: string): Promise<ArtifactPayload | undefined> {
    return this.#artifact(this.#q('SELECT payload, expires_at FROM artifacts WHERE tenant = ? AND model = ? AND user_code = ?').get(tenant, model, userCode) as Row | undefined);
  }
  async consumeArtifact(tenant: string, model: string, id: string): Promise<void> {
    this.#q(`UPDATE artifacts SET payload = json_set(payload, '$.consumed', ?) WHERE tenant = ? AND model = ? AND id = ?`).run(now(), tenant, model, id);
  }
  async destroyArtifact(tenant: string, model: string, id: string): Promise<void> {
    this.#q('DELETE FROM artifacts WHERE tenant = ? AND model = ? AND id = ?').run(tenant, model, id);
  }
  async revokeArtifactsByGrantId(tenant: string, grantId: string): Promise<void> {
    this.#q('DELETE FROM artifacts WHERE tenant = ? AND grant_id = ?').run(tenant, grantId);
  }
  async purgeExpired(): Promise<number> {
    // Expired emailed codes go with the artifacts, and failure counters idle for a day (a spray of
    // made-up emails must not grow the table forever); running lockouts stay until they end.
    const ms = Date.now();
    this.#q('DELETE FROM otp_codes WHERE expires_at_ms <= ?').run(ms);
    this.#q('DELETE FROM login_throttle WHERE last_failure_ms < ? AND locked_until_ms < ?').run(ms - 86_400_000, ms);
    return this.#q('DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now()).changes;
  }

  // Login factors
  async getTotp(tenant: string, userId: string): Promise<TotpRecord | undefined> {
    const r = this.#q('SELECT * FROM totp_secrets WHERE tenant = ? AND user_id = ?').get(tenant, userId) as Row | undefined;
    return r && { sealedSecret: String(r.sealed_secret), lastStep: Number(r.last_step), createdAt: Number(r.created_at) };
  }
  async putTotp(tenant: string, userId: string, sealedSecret: string, lastStep: number): Promise<void> {
    this.#q(`INSERT INTO totp_secrets (tenant, user_id, sealed_secret, last_step, created_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (tenant, user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, last_step = excluded.last_step, created_at = excluded.created_at`)
      .run(tenant, userId, sealedSecret, lastStep, now());
  }
  async claimTotpStep(tenant: string, userId: string, step: number): Promise<boolean> {
    return this.#q('UPDATE totp_secrets SET last_step = ? WHERE tenant = ? AND user_id = ? AND last_step < ?').run(step, tenant, userId, step).changes > 0;
  }

  async putOtp(tenant: string, userId: string, codeHash: string, expiresAtMs: number): Promise<void> {
    this.#q(`INSERT INTO otp_codes (tenant, user_id, code_hash, expires_at_ms, attempts) VALUES (?, ?, ?, ?, 0)
      ON CONFLICT (tenant, user_id) DO UPDATE SET code_hash = excluded.code_hash, expires_at_ms = excluded.expires_at_ms, attempts = 0`)
      .run(tenant, userId, codeHash, expiresAtMs);
  }
  async getOtp(tenant: string, userId: string): Promise<OtpRecord | undefined> {
    const r = this.#q('SELECT * FROM otp_codes WHERE tenant = ? AND user_id = ?').get(tenant, userId) as Row | undefined;
    return r && { codeHash: String(r.code_hash), expiresAtMs: Number(r.expires_at_ms), attempts: Number(r.attempts) };
  }
  async countOtpAttempt(tenant: string, userId: string): Promise<number> {
    const r = this.#q('UPDATE otp_codes SET attempts = attempts + 1 WHERE tenant = ? AND user_id = ? RETURNING attempts').get(tenant, userId) as Row | undefined;
    return r === undefined ? Number.MAX_SAFE_INTEGER : Number(r.attempts);
  }
  async deleteOtp(tenant: string, userId: string, codeHash?: string): Promise<boolean> {
    return codeHash === undefined
      ? this.#q('DELETE FROM otp_codes WHERE tenant = ? AND user_id = ?').run(tenant, userId).changes > 0
      : this.#q('DELETE FROM otp_codes WHERE tenant = ? AND user_id = ? AND code_hash = ?').run(tenant, userId, codeHash).changes > 0;
  }

  async listPasskeys(tenant: string, userId: string): Promise<readonly PasskeyRecord[]> {
    return (this.#q('SELECT * FROM passkeys WHERE tenant = ? AND user_id = ? ORDER BY created_at, credential_id').all(tenant, userId) as Row[]).map(passkeyRow);
  }
  async getPasskey(tenant: string, credentialId: string): Promise<PasskeyRecord | undefined> {
    const r = this.#q('SELECT * FROM passkeys WHERE tenant = ? AND credential_id = ?').get(tenant, credentialId) as Row | undefined;
    return r && passkeyRow(r);
  }
  async putPasskey(tenant: string, p: PasskeyRecord): Promise<void> {
    this.#q(`INSERT INTO passkeys (tenant, credential_id, user_id, public_key, counter, transports, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
      .run(tenant, p.credentialId, p.userId, p.publicKey, p.counter, JSON.stringify(p.transports), p.createdAt);
  }
  async updatePasskeyCounter(tenant: string, credentialId: string, counter: number): Promise<void> {
    this.#q('UPDATE passkeys SET counter = ? WHERE tenant = ? AND credential_id = ?').run(counter, tenant, credentialId);
  }

  async getThrottle(tenant: string, key: string): Promise<ThrottleRecord | undefined> {
    const r = this.#q('SELECT * FROM login_throttle WHERE tenant = ? AND key = ?').get(tenant, key) as Row | undefined;
    return r && { failures: Number(r.failures), lastFailureMs: Number(r.last_failure_ms), lockedUntilMs: Number(r.locked_until_ms) };
  }
  async recordFailure(tenant: string, key: string, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number) {
    return this.#db.transaction(() => {
      const r = this.#q('SELECT * FROM login_throttle WHERE tenant = ? AND key = ?').get(tenant, key) as Row | undefined;
      const fresh = r === undefined || nowMs - Number(r.last_failure_ms) > resetAfterMs;
      let failures = fresh ? 1 : Number(r.failures) + 1;
      let lockedUntilMs = r === undefined ? 0 : Number(r.locked_until_ms);
      const locked = failures >= lockAt;
      if (locked) {
        lockedUntilMs = nowMs + lockMs;
        failures = 0;
      }
      this.#q(`INSERT INTO login_throttle (tenant, key, failures, last_failure_ms, locked_until_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tenant, key) DO UPDATE SET failures = excluded.failures, last_failure_ms = excluded.last_failure_ms, locked_until_ms = excluded.locked_until_ms`)
        .run(tenant, key, failures, nowMs, lockedUntilMs);
      return { failures, lastFailureMs: nowMs, lockedUntilMs, locked };
    })();
  }
  async clearThrottle(tenant: string, key: string): Promise<void> {
    this.#q('DELETE FROM login_throttle WHERE tenant = ? AND key = ?').run(tenant, key);
  }

  async getMeta(key: string): Promise<string | undefined> {
    const r = this.#q('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return r?.value;
  }
  async setMeta(key: string, value: string): Promise<void> {
    this.#q('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}

const tenantRow = (r: Row): TenantRecord => ({
  name: String(r.name), body: JSON.parse(String(r.body)), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const keyRow = (r: Row): KeyRecord => ({
  tenant: String(r.tenant), kid: String(r.kid), alg: r.alg as KeyRecord['alg'], state: r.state as KeyRecord['state'],
  sealedJwk: String(r.sealed_jwk), createdAt: Number(r.created_at), retiredAt: r.retired_at === null ? null : Number(r.retired_at),
});
const appRow = (r: Row): ApplicationRecord => ({
  tenant: String(r.tenant), name: String(r.name), body: JSON.parse(String(r.body)),
  secretHash: r.secret_hash === null ? null : String(r.secret_hash), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const userRow = (r: Row): UserRecord => ({
  tenant: String(r.tenant), id: String(r.id), body: JSON.parse(String(r.body)),
  passwordHash: r.password_hash === null ? null : String(r.password_hash), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const passkeyRow = (r: Row): PasskeyRecord => ({
  credentialId: String(r.credential_id), userId: String(r.user_id), publicKey: String(r.public_key), counter: Number(r.counter),
  transports: JSON.parse(String(r.transports)) as string[], createdAt: Number(r.created_at),
});
const assignmentRow = (r: Row): AssignmentRecord => ({
  tenant: String(r.tenant), application: String(r.application), userId: String(r.user_id),
  body: JSON.parse(String(r.body)), createdAt: Number(r.created_at),
});
