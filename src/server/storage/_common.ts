/**
 * What the backends share, so each fact is written once: the cursor format, rows → records, the
 * columns an artifact is looked up by, and the throttle's counting rule. Column names are the
 * same in every backend's schema.
 */
import type {
  AccountArtifact,
  ApplicationRecord,
  ArtifactPayload,
  AssignmentRecord,
  GroupAssignmentRecord,
  GroupRecord,
  ScimTokenRecord,
  ScimUserRecord,
  UserWithScim,
  KeyRecord,
  OtpRecord,
  Page,
  PasskeyRecord,
  TenantRecord,
  ThrottleRecord,
  TotpRecord,
  UserRecord,
} from './types.ts';

export type Row = Record<string, unknown>;

/** Epoch seconds from the server's clock (every backend uses it, never the database's clock). */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Failure counters idle this long, and not locked, are purged. */
export const THROTTLE_IDLE_MS = 24 * 60 * 60 * 1000;

/** Tables of per-user login factors: removed with their user. */
export const USER_FACTOR_TABLES = ['totp_secrets', 'otp_codes', 'passkeys'] as const;
/** Rows of other concerns that name a user (`user_id`): group memberships, SCIM attributes. Removed with their user. */
export const USER_LINK_TABLES = ['group_members', 'scim_users'] as const;
/** Groups, their members and assignments, SCIM users' attributes and tokens: a tenant's, removed with it. */
export const GROUP_AND_SCIM_TABLES = ['tenant_groups', 'group_members', 'group_assignments', 'scim_users', 'scim_tokens'] as const;
/** Everything a tenant owns besides its own row: removed with it. */
export const TENANT_TABLES = ['keys', 'applications', 'users', 'assignments', 'artifacts', ...USER_FACTOR_TABLES, 'login_throttle', ...GROUP_AND_SCIM_TABLES] as const;

/**
 * A tenant rename: what belongs to the old issuer or host (sessions, grants and tokens, emailed
 * codes, passkeys bound to the old host name) is dropped; keys and TOTP secrets are sealed anew;
 * every other row follows the tenant's new name in the database (ON UPDATE CASCADE, schema 3).
 */
export const RENAME_DROPPED_TABLES = ['artifacts', 'otp_codes', 'passkeys'] as const;

/** The database was migrated by a newer idforge than this one (either backend). */
export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
  constructor(readonly found: number, readonly known: number) {
    super(`its schema is version ${found}, newer than this idforge knows (${known}); run the newer idforge, or restore a backup`);
  }
}

/**
 * A row named a parent that does not exist (a foreign key refused it: PostgreSQL 23503, SQLite's
 * FOREIGN KEY constraint). Since schema 3 every tenant-scoped row names its parents in the database.
 */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** A unique index refused a write (PostgreSQL 23505, SQLite's constraint codes): the name was taken between a check and the write. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Group display names and SCIM userNames are unique without regard to case: the key they are unique by. */
export const caseKey = (s: string): string => s.toLowerCase();

export function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** A malformed cursor read as "from the start" would hide bugs: it is a RangeError('invalid cursor'). */
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

/** `rows` were fetched with `limit + 1`: the extra row only says there is a next page. */
export function toPage<T>(rows: readonly Row[], limit: number, map: (r: Row) => T, key: (r: Row) => string[]): Page<T> {
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(map);
  const last = more ? rows[limit - 1] : undefined;
  return { items, nextCursor: last === undefined ? null : encodeCursor(key(last)) };
}

/** The columns artifacts are found and revoked by, read from oidc-provider's payload. */
export function artifactColumns(payload: ArtifactPayload) {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    grantId: str(payload.grantId),
    uid: str(payload.uid),
    userCode: str(payload.userCode),
    // Sessions carry the account at `accountId` too; grants and tokens carry both fields.
    accountId: str(payload.accountId),
    clientId: str(payload.clientId),
  };
}

/** An artifact row (`payload`, `expires_at`) as found: expired ones are not found. */
/** A row of GrantStore.listByAccount (model, id, payload, expires_at). */
export function accountArtifactRow(r: Row): AccountArtifact {
  return { model: String(r.model), id: String(r.id), payload: JSON.parse(String(r.payload)) as ArtifactPayload, expiresAt: r.expires_at === null ? null : Number(r.expires_at) };
}

export function artifactRow(r: Row | undefined): ArtifactPayload | undefined {
  if (r === undefined) return undefined;
  if (r.expires_at !== null && Number(r.expires_at) <= nowSeconds()) return undefined;
  return JSON.parse(String(r.payload)) as ArtifactPayload;
}

/** The counting rule of ThrottleStore.recordFailure, applied to the stored row (if any) inside the backend's transaction. */
export function nextThrottle(prev: ThrottleRecord | undefined, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number): ThrottleRecord & { locked: boolean } {
  const fresh = prev === undefined || nowMs - prev.lastFailureMs > resetAfterMs;
  let failures = fresh ? 1 : prev.failures + 1;
  let lockedUntilMs = prev === undefined ? 0 : prev.lockedUntilMs;
  const locked = failures >= lockAt;
  if (locked) {
    lockedUntilMs = nowMs + lockMs;
    failures = 0;
  }
  return { failures, lastFailureMs: nowMs, lockedUntilMs, locked };
}

/**
 * The one statement of ThrottleStore.takeRate (GCRA), for both backends: every SET expression reads
 * the row as it was, so the decision and the new arrival time come from one atomic upsert. Times are
 * microseconds (a rate above 1,000 a second has a sub-millisecond interval); the row's
 * `locked_until_ms` is -1, which marks it a rate row for purgeIdleRates. `greatest` is PostgreSQL's
 * GREATEST or SQLite's max; `p(n)` names parameter n: 1 tenant, 2 key, 3 now, 4 interval,
 * 5 tolerance ((burst - 1) × interval).
 */
export function takeRateSql(greatest: 'GREATEST' | 'max', p: (n: number) => string): string {
  const now = `CAST(${p(3)} AS BIGINT)`;
  const interval = `CAST(${p(4)} AS BIGINT)`;
  const allowed = `${greatest}(login_throttle.last_failure_ms, ${now}) - ${now} <= CAST(${p(5)} AS BIGINT)`;
  return `INSERT INTO login_throttle (tenant, key, failures, last_failure_ms, locked_until_ms) VALUES (${p(1)}, ${p(2)}, 1, ${now} + ${interval}, -1)
  ON CONFLICT (tenant, key) DO UPDATE SET
    failures = CASE WHEN ${allowed} THEN 1 ELSE 0 END,
    last_failure_ms = CASE WHEN ${allowed} THEN ${greatest}(login_throttle.last_failure_ms, ${now}) + ${interval} ELSE login_throttle.last_failure_ms END
  RETURNING failures, last_failure_ms`;
}

/** takeRate's arguments in the statement's units: now, interval and tolerance in whole microseconds. */
export function rateArgs(nowMs: number, intervalMs: number, burst: number): { now: number; interval: number; tolerance: number } {
  const interval = Math.max(1, Math.round(intervalMs * 1000));
  return { now: Math.round(nowMs * 1000), interval, tolerance: Math.min(Number.MAX_SAFE_INTEGER / 4, Math.max(0, Math.floor(burst) - 1) * interval) };
}

/** What takeRate answers from the row the statement returned: 0, or the milliseconds to wait. */
export const rateWait = (r: Row, a: { now: number; tolerance: number }): number =>
  Number(r.failures) === 1 ? 0 : Math.max(1, Math.ceil((Number(r.last_failure_ms) - a.now - a.tolerance) / 1000));

/** Rate rows (takeRate) idle for a day: their arrival time, in microseconds, is a day past. */
export const PURGE_RATES_SQL = (p: (n: number) => string) => `DELETE FROM login_throttle WHERE locked_until_ms = -1 AND last_failure_ms < CAST(${p(1)} AS BIGINT)`;

// Rows → records. Numbers may arrive as strings (PostgreSQL bigint), hence Number().
const json = (v: unknown) => JSON.parse(String(v));
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

/** `user_id, group_id` rows, ordered by user: each user's group ids. */
export function groupIdsByUser(rows: readonly Row[]): ReadonlyMap<string, readonly string[]> {
  const out = new Map<string, string[]>();
  for (const r of rows) {
    const list = out.get(String(r.user_id)) ?? [];
    list.push(String(r.group_id));
    out.set(String(r.user_id), list);
  }
  return out;
}

export const tenantRow = (r: Row): TenantRecord => ({
  name: String(r.name), body: json(r.body), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
export const keyRow = (r: Row): KeyRecord => ({
  tenant: String(r.tenant), kid: String(r.kid), alg: r.alg as KeyRecord['alg'], state: r.state as KeyRecord['state'],
  sealedJwk: String(r.sealed_jwk), createdAt: Number(r.created_at), retiredAt: numOrNull(r.retired_at),
});
export const appRow = (r: Row): ApplicationRecord => ({
  tenant: String(r.tenant), name: String(r.name), body: json(r.body),
  secretHash: strOrNull(r.secret_hash), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
export const userRow = (r: Row): UserRecord => ({
  tenant: String(r.tenant), id: String(r.id), body: json(r.body),
  passwordHash: strOrNull(r.password_hash), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
export const assignmentRow = (r: Row): AssignmentRecord => ({
  tenant: String(r.tenant), application: String(r.application), userId: String(r.user_id),
  body: json(r.body), createdAt: Number(r.created_at),
});
export const totpRow = (r: Row): TotpRecord => ({
  sealedSecret: String(r.sealed_secret), lastStep: Number(r.last_step), createdAt: Number(r.created_at),
});
export const otpRow = (r: Row): OtpRecord => ({
  codeHash: String(r.code_hash), expiresAtMs: Number(r.expires_at_ms), attempts: Number(r.attempts),
});
export const passkeyRow = (r: Row): PasskeyRecord => ({
  credentialId: String(r.credential_id), userId: String(r.user_id), publicKey: String(r.public_key), counter: Number(r.counter),
  transports: json(r.transports) as string[], createdAt: Number(r.created_at),
});
export const throttleRow = (r: Row): ThrottleRecord => ({
  failures: Number(r.failures), lastFailureMs: Number(r.last_failure_ms), lockedUntilMs: Number(r.locked_until_ms),
});

export const groupRow = (r: Row): GroupRecord => ({
  tenant: String(r.tenant), id: String(r.id), body: json(r.body), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
export const groupAssignmentRow = (r: Row): GroupAssignmentRecord => ({
  tenant: String(r.tenant), application: String(r.application), group: String(r.group_id), body: json(r.body), createdAt: Number(r.created_at),
});
export const scimTokenRow = (r: Row): ScimTokenRecord => ({
  tenant: String(r.tenant), id: String(r.id), hash: String(r.token_hash), description: strOrNull(r.description), createdAt: Number(r.created_at),
});

/**
 * A user row joined with its SCIM attributes (`SCIM_USER_COLUMNS`, NULL when SCIM never wrote
 * the user): one query for both, in every backend.
 */
export const SCIM_USER_SELECT = `SELECT u.*, s.user_name AS scim_user_name, s.external_id AS scim_external_id, s.resource AS scim_resource
  FROM users u LEFT JOIN scim_users s ON s.tenant = u.tenant AND s.user_id = u.id`;
export const userWithScimRow = (r: Row): UserWithScim => {
  const user = userRow(r);
  const scim: ScimUserRecord | undefined = r.scim_user_name === null || r.scim_user_name === undefined ? undefined : {
    tenant: user.tenant, userId: user.id, userName: String(r.scim_user_name), externalId: strOrNull(r.scim_external_id), resource: json(r.scim_resource),
  };
  return { user, scim };
};
