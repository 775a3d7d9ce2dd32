/**
 * The storage interface. SQLite implements it today (storage/sqlite.ts); PostgreSQL can follow by
 * implementing the same methods. Every method is async for that reason, even though better-sqlite3
 * is synchronous. Records hold the admin API's bodies as given (minus secrets), so a GET returns
 * exactly what was PUT.
 */
import type { ApplicationBody, AssignmentBody, TenantBody, UserBody } from '../../contract/index.ts';

export interface TenantRecord {
  readonly name: string;
  readonly body: TenantBody;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** next: published, not yet signing. active: signs. retired: published until its tokens expired. */
export type KeyState = 'next' | 'active' | 'retired';

export interface KeyRecord {
  readonly tenant: string;
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly state: KeyState;
  /** The private JWK, sealed with the master key (AES-256-GCM, bound to tenant and kid). */
  readonly sealedJwk: string;
  readonly createdAt: number;
  readonly retiredAt: number | null;
}

/** Applications, with the secret replaced by its hash. `service` is internal (the bootstrap client). */
export type StoredApplicationBody =
  | Exclude<ApplicationBody, { kind: 'web' | 'proxy' }>
  | Omit<Extract<ApplicationBody, { kind: 'web' | 'proxy' }>, 'clientSecret'>
  | { readonly kind: 'service'; readonly clientId: string; readonly scopes: readonly string[]; readonly audience: readonly string[] };

export interface ApplicationRecord {
  readonly tenant: string;
  readonly name: string;
  readonly body: StoredApplicationBody;
  readonly secretHash: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface UserRecord {
  readonly tenant: string;
  readonly id: string;
  readonly body: Omit<UserBody, 'initialPassword'>;
  readonly passwordHash: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface AssignmentRecord {
  readonly tenant: string;
  readonly application: string;
  readonly userId: string;
  readonly body: AssignmentBody;
  readonly createdAt: number;
}

export interface Page<T> {
  readonly items: readonly T[];
  /** Opaque; pass back as `cursor` for the next page. null: this was the last page. */
  readonly nextCursor: string | null;
}

export interface PageRequest {
  readonly cursor?: string | undefined;
  readonly limit: number;
}

/** One oidc-provider artifact (session, grant, code, refresh token, interaction, ...). */
export interface ArtifactPayload {
  readonly [key: string]: unknown;
  readonly grantId?: string;
  readonly uid?: string;
  readonly userCode?: string;
  readonly accountId?: string;
  readonly clientId?: string;
  readonly consumed?: unknown;
}

/** A confirmed TOTP enrolment. */
export interface TotpRecord {
  /** The base32 secret, sealed with the master key (bound to tenant and user). */
  readonly sealedSecret: string;
  /** The last time step whose code was accepted: that step and earlier ones are refused (no replay). */
  readonly lastStep: number;
  readonly createdAt: number;
}

/** The one outstanding emailed code of a user; a new code replaces it. Times in milliseconds. */
export interface OtpRecord {
  /** HMAC of the code under a master-derived key: the database never holds a usable code. */
  readonly codeHash: string;
  readonly expiresAtMs: number;
  /** Wrong codes entered against it so far. */
  readonly attempts: number;
}

/** A WebAuthn credential (passkey) of a user. */
export interface PasskeyRecord {
  readonly credentialId: string;
  readonly userId: string;
  /** COSE public key, base64url. */
  readonly publicKey: string;
  readonly counter: number;
  readonly transports: readonly string[];
  readonly createdAt: number;
}

/** Failed sign-in attempts under one key (an account or an address). Times in milliseconds. */
export interface ThrottleRecord {
  readonly failures: number;
  readonly lastFailureMs: number;
  /** 0 when not locked. */
  readonly lockedUntilMs: number;
}

export interface Storage {
  getTenant(name: string): Promise<TenantRecord | undefined>;
  listTenants(page: PageRequest): Promise<Page<TenantRecord>>;
  countTenants(): Promise<number>;
  /** Creates or replaces. */
  /** Upsert; `initialKeys` (for a tenant that does not exist yet) are stored in the same transaction. */
  putTenant(name: string, body: TenantBody, initialKeys?: readonly KeyRecord[]): Promise<TenantRecord>;
  /** Deletes the tenant and everything in it (keys, applications, users, assignments, artifacts). */
  deleteTenant(name: string): Promise<boolean>;

  listKeys(tenant: string): Promise<readonly KeyRecord[]>;
  /**
   * Read-modify-write of the tenant's whole key set in one transaction: `update` gets the stored
   * keys and returns the new set, which replaces them. Overlapping rotations therefore each build on
   * the previous one's result and never write back a stale set. `update` must be synchronous.
   */
  updateKeys(tenant: string, update: (current: readonly KeyRecord[]) => readonly KeyRecord[]): Promise<readonly KeyRecord[]>;

  getApplication(tenant: string, name: string): Promise<ApplicationRecord | undefined>;
  getApplicationByClientId(tenant: string, clientId: string): Promise<ApplicationRecord | undefined>;
  /** api applications by their resource identifier (the token audience). */
  getApplicationByIdentifier(tenant: string, identifier: string): Promise<ApplicationRecord | undefined>;
  listApplications(tenant: string, page: PageRequest): Promise<Page<ApplicationRecord>>;
  putApplication(tenant: string, name: string, body: StoredApplicationBody, secretHash: string | null): Promise<ApplicationRecord>;
  /** Also removes its assignments and the grants, tokens and codes issued to it. */
  deleteApplication(tenant: string, name: string): Promise<boolean>;

  getUser(tenant: string, id: string): Promise<UserRecord | undefined>;
  getUserByEmail(tenant: string, email: string): Promise<UserRecord | undefined>;
  listUsers(tenant: string, page: PageRequest): Promise<Page<UserRecord>>;
  /**
   * Upsert. With `revokeArtifacts` the user's grants, sessions and tokens are deleted in the same
   * transaction: a scope removed or an account disabled must never be stored without its revocation
   * (a retry would see the user unchanged and never revoke).
   */
  putUser(tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null, options?: { readonly revokeArtifacts?: boolean }): Promise<UserRecord>;
  /** Also removes the user's assignments, grants, sessions and tokens. */
  deleteUser(tenant: string, id: string): Promise<boolean>;

  getAssignment(tenant: string, application: string, userId: string): Promise<AssignmentRecord | undefined>;
  listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<AssignmentRecord>>;
  putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody): Promise<AssignmentRecord>;
  deleteAssignment(tenant: string, application: string, userId: string): Promise<boolean>;

  /** Grants, refresh tokens, access tokens and codes of one user at one client: revoked together. */
  revokeUserClientArtifacts(tenant: string, accountId: string, clientId: string): Promise<void>;
  revokeUserArtifacts(tenant: string, accountId: string): Promise<void>;

  // oidc-provider adapter operations; `expiresIn` seconds, undefined = no expiry.
  upsertArtifact(tenant: string, model: string, id: string, payload: ArtifactPayload, expiresIn: number | undefined): Promise<void>;
  findArtifact(tenant: string, model: string, id: string): Promise<ArtifactPayload | undefined>;
  findArtifactByUid(tenant: string, model: string, uid: string): Promise<ArtifactPayload | undefined>;
  findArtifactByUserCode(tenant: string, model: string, userCode: string): Promise<ArtifactPayload | undefined>;
  consumeArtifact(tenant: string, model: string, id: string): Promise<void>;
  destroyArtifact(tenant: string, model: string, id: string): Promise<void>;
  revokeArtifactsByGrantId(tenant: string, grantId: string): Promise<void>;
  /** Deletes expired artifacts; returns how many. */
  purgeExpired(): Promise<number>;

  // Login factors (src/server/login). Deleting a user or tenant deletes these too.
  getTotp(tenant: string, userId: string): Promise<TotpRecord | undefined>;
  /** Creates or replaces the user's enrolment; `lastStep` is the step of the confirming code. */
  putTotp(tenant: string, userId: string, sealedSecret: string, lastStep: number): Promise<void>;
  /** Atomically accepts time step `step` if it is later than the last accepted one; false = replay. */
  claimTotpStep(tenant: string, userId: string, step: number): Promise<boolean>;

  putOtp(tenant: string, userId: string, codeHash: string, expiresAtMs: number): Promise<void>;
  getOtp(tenant: string, userId: string): Promise<OtpRecord | undefined>;
  /** Counts one wrong attempt; returns the new count. */
  countOtpAttempt(tenant: string, userId: string): Promise<number>;
  /** Deletes the code; true only for the caller that actually deleted it (single use under races). */
  deleteOtp(tenant: string, userId: string, codeHash?: string): Promise<boolean>;

  listPasskeys(tenant: string, userId: string): Promise<readonly PasskeyRecord[]>;
  getPasskey(tenant: string, credentialId: string): Promise<PasskeyRecord | undefined>;
  putPasskey(tenant: string, passkey: PasskeyRecord): Promise<void>;
  updatePasskeyCounter(tenant: string, credentialId: string, counter: number): Promise<void>;

  getThrottle(tenant: string, key: string): Promise<ThrottleRecord | undefined>;
  /**
   * Counts a failure under `key`: the count restarts when the previous failure is older than
   * `resetAfterMs`; when it reaches `lockAt` the key is locked until `nowMs + lockMs` and the count
   * restarts. Atomic, so concurrent guesses cannot slip past the limit.
   */
  recordFailure(tenant: string, key: string, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number): Promise<ThrottleRecord & { readonly locked: boolean }>;
  clearThrottle(tenant: string, key: string): Promise<void>;

  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;

  close(): Promise<void>;
}
