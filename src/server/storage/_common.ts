/**
 * What the backends share, so each fact is written once: the cursor format, rows → records, the
 * columns an artifact is looked up by, and the throttle's counting rule. Column names are the
 * same in every backend's schema.
 */
import type {
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
 * every other table moves as it is.
 */
export const RENAME_DROPPED_TABLES = ['artifacts', 'otp_codes', 'passkeys'] as const;
export const RENAME_RESEALED_TABLES = ['keys', 'totp_secrets'] as const;
export const RENAME_MOVED_TABLES = TENANT_TABLES.filter(
  (t) => !(RENAME_DROPPED_TABLES as readonly string[]).includes(t) && !(RENAME_RESEALED_TABLES as readonly string[]).includes(t),
);

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
