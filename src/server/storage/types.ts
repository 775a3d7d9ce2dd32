/**
 * Storage by concern: one small store per kind of state, composed into `Storage`, with one
 * backend behind all of them (chosen at start by `openStorage`, storage/index.ts). Every method is
 * async so a networked backend fits, even though better-sqlite3 is synchronous. Records hold the
 * admin API's bodies as given (minus secrets), so a GET returns exactly what was PUT. What every
 * backend must do, including the transactional guarantees written here, is proven by one contract
 * suite (test/server/storage/contract.ts) that runs against each backend.
 *
 * Times: `createdAt`, `updatedAt`, `retiredAt` and artifact expiry are epoch seconds; fields named
 * `...Ms` are epoch milliseconds. Both come from the server's clock, never the database's.
 *
 * Parents (schema 3): every row of a tenant names its tenant, and rows of a user, an application or
 * a group name it too, as foreign keys in the database: a row whose parent does not exist is refused
 * (an error, isForeignKeyViolation), and deleting a parent deletes its rows in the database itself
 * (ON DELETE CASCADE), whoever deletes it; renaming a tenant or an application carries its rows
 * (ON UPDATE CASCADE). The stores' deletes still delete and revoke explicitly, in one transaction.
 * What belongs to a user: assignments, group memberships, SCIM attributes, TOTP, emailed codes,
 * passkeys, and the artifacts (sessions, grants, tokens) that carry the account.
 *
 * Faults: a database that cannot do the work (no connection, a bound overrun, read-only, no space)
 * rejects with the server's DatabaseFault (errors.ts, storage/faults.ts), never its own error.
 */
import type { ApplicationBody, AssignmentBody, EventFilter, EventView, GroupAssignmentBody, GroupBody, TenantBody, UserBody } from '../../contract/index.ts';

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

/** Users named by a change that do not exist (UserStore.changeAssignments); nothing was changed. */
export class MissingUsersError extends Error {
  override readonly name = 'MissingUsersError';
  constructor(readonly userIds: readonly string[]) {
    super(`no such user: ${userIds.join(', ')}`);
  }
}

/** Everything the admin API manages in one tenant, as stored: what a batch is judged against. */
export interface TenantContents {
  readonly tenant: TenantRecord | undefined;
  /** Every application, the internal service client included, ordered by name (bytewise). */
  readonly applications: readonly ApplicationRecord[];
  /** Ordered by id (bytewise). */
  readonly users: readonly UserRecord[];
  /** Ordered by application, then user id (bytewise). */
  readonly assignments: readonly AssignmentRecord[];
  /** The tenant's directory revision (EventStore.revisions) read with the rest; undefined when it has none. */
  readonly revision?: string | undefined;
}

/**
 * The writes of one batch, made in this order in one transaction. Each write does what the
 * single-object store method it names does, cascades and revocations included.
 */
export interface TenantChanges {
  /** Upsert of the tenant (TenantStore.put): `initialKeys` only if this write creates it. */
  readonly tenant?: { readonly body: TenantBody; readonly initialKeys?: readonly KeyRecord[] };
  /** Upserts (ApplicationStore.put). */
  readonly applications: readonly { readonly name: string; readonly body: StoredApplicationBody; readonly secretHash: string | null }[];
  /**
   * Upserts (UserStore.put). `initialPasswordHash` is stored only where the user has no password
   * yet, so a password set meanwhile is never overwritten; a stored password is otherwise kept.
   */
  readonly users: readonly {
    readonly id: string;
    readonly body: Omit<UserBody, 'initialPassword'>;
    readonly initialPasswordHash: string | null;
    readonly revokeArtifacts: boolean;
  }[];
  /** Upserts (UserStore.putAssignment). */
  readonly assignments: readonly { readonly application: string; readonly userId: string; readonly body: AssignmentBody }[];
  /** Each also revokes the user's grants and everything issued under them at `clientId` (GrantStore.revokeUserClient). */
  readonly deleteAssignments: readonly { readonly application: string; readonly userId: string; readonly clientId: string }[];
  /** As UserStore.delete: assignments, artifacts and login factors go with each user. */
  readonly deleteUsers: readonly string[];
  /** As ApplicationStore.delete: assignments and artifacts issued to its client go with each application. */
  readonly deleteApplications: readonly string[];
}

/** Tenants and their signing keys. */
/** Seals anew, under the new tenant name, what was sealed under the old one. */
export interface TenantReseal {
  key(from: string, to: string, kid: string, sealedJwk: string): string;
  totp(from: string, to: string, userId: string, sealedSecret: string): string;
}

export interface TenantStore {
  get(name: string): Promise<TenantRecord | undefined>;
  /** Ordered by name (bytewise). */
  list(page: PageRequest): Promise<Page<TenantRecord>>;
  count(): Promise<number>;
  /**
   * Upsert (createdAt kept on update). `initialKeys` are stored in the same transaction, and only
   * when this call created the tenant: a tenant is never visible without its signing keys, and two
   * concurrent creations never leave two key sets.
   */
  put(name: string, body: TenantBody, initialKeys?: readonly KeyRecord[]): Promise<TenantRecord>;
  /** Deletes the tenant and everything in it (keys, applications, users, assignments, artifacts, factors, throttle counters), all or nothing. */
  delete(name: string): Promise<boolean>;
  /**
   * Moves the tenant and everything in it to a new name, all or nothing. Sealed values whose
   * associated data names the tenant (signing keys, TOTP secrets) are sealed anew by `reseal`
   * (synchronous, called inside the transaction); what belongs to the old issuer or host (sessions,
   * grants, tokens, emailed codes, passkeys) is deleted. False when `from` does not exist;
   * NameTakenError when `to` does.
   */
  rename(from: string, to: string, reseal: TenantReseal): Promise<boolean>;

  /** Ordered by createdAt, then kid. */
  listKeys(tenant: string): Promise<readonly KeyRecord[]>;
  /**
   * Read-modify-write of the tenant's whole key set in one transaction: `update` gets the stored
   * keys and returns the new set, which replaces them. Overlapping rotations (in this process or
   * another one on the same database) therefore each build on the previous one's result and never
   * write back a stale set. `update` must be synchronous.
   */
  updateKeys(tenant: string, update: (current: readonly KeyRecord[]) => readonly KeyRecord[]): Promise<readonly KeyRecord[]>;

  /** The tenant with all its applications, users and assignments, read at once. */
  contents(name: string): Promise<TenantContents>;
  /**
   * Read-decide-write of one tenant in one transaction (the admin API's tenant batch): `decide`
   * gets the tenant's contents and returns the changes to write and a result; the changes are
   * written in the same transaction, all or nothing, and the result returned. Batches of one tenant
   * (in this process or another one on the same database) take turns, each deciding on what the
   * previous one wrote. `decide` must be synchronous; what it throws is thrown, with nothing written.
   */
  batch<T>(name: string, decide: (contents: TenantContents) => { readonly changes: TenantChanges; readonly result: T }): Promise<T>;
}

/** Applications: OAuth clients (web, proxy, spa, the internal service client) and apis. */
export interface ApplicationStore {
  get(tenant: string, name: string): Promise<ApplicationRecord | undefined>;
  getByClientId(tenant: string, clientId: string): Promise<ApplicationRecord | undefined>;
  /** api applications by their resource identifier (the token audience). */
  getByIdentifier(tenant: string, identifier: string): Promise<ApplicationRecord | undefined>;
  /** Ordered by name (bytewise); never lists the internal `service` kind. */
  list(tenant: string, page: PageRequest): Promise<Page<ApplicationRecord>>;
  /** Upsert (createdAt kept on update). Client ids and api identifiers are unique per tenant. */
  put(tenant: string, name: string, body: StoredApplicationBody, secretHash: string | null): Promise<ApplicationRecord>;
  /** Also removes its assignments and the grants, tokens and codes issued to it, all or nothing. */
  delete(tenant: string, name: string): Promise<boolean>;
  /**
   * Gives an application a new name with everything it has (client id, secret, assignments; its
   * grants and tokens name the client id, so they stay valid), all or nothing. False when `from` does
   * not exist; throws NameTakenError when `to` does.
   */
  rename(tenant: string, from: string, to: string): Promise<boolean>;
}

/** A rename whose new name another object already has. */
export class NameTakenError extends Error {
  override readonly name = 'NameTakenError';
}

/** Users, their assignments to applications, and their login factors (TOTP, emailed codes, passkeys). */
export interface UserStore {
  get(tenant: string, id: string): Promise<UserRecord | undefined>;
  /** Case-insensitive; the lowest id when several users share the address. */
  getByEmail(tenant: string, email: string): Promise<UserRecord | undefined>;
  /** Ordered by id (bytewise). */
  /** By id; `search` (lower case) keeps the users whose id, email or display name holds it, ignoring case. */
  list(tenant: string, page: PageRequest, search?: string): Promise<Page<UserRecord>>;
  /**
   * Upsert (createdAt kept on update). With `revokeArtifacts` the user's grants, sessions and
   * tokens are deleted in the same transaction: a scope removed or an account disabled must never
   * be stored without its revocation (a retry would see the user unchanged and never revoke).
   */
  put(tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null, options?: { readonly revokeArtifacts?: boolean }): Promise<UserRecord>;
  /** Also removes the user's assignments, grants, sessions, tokens and login factors, all or nothing. */
  delete(tenant: string, id: string): Promise<boolean>;

  getAssignment(tenant: string, application: string, userId: string): Promise<AssignmentRecord | undefined>;
  /** One application's assignments, ordered by user id (bytewise). */
  listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<AssignmentRecord>>;
  /** One user's direct assignments, ordered by application (bytewise): at most one per application of the tenant. */
  listUserAssignments(tenant: string, userId: string): Promise<AssignmentRecord[]>;
  /** Upsert (createdAt kept on update). */
  putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody): Promise<AssignmentRecord>;
  deleteAssignment(tenant: string, application: string, userId: string): Promise<boolean>;
  /**
   * Adds and removes assignments of one application in one transaction, all or nothing. An add
   * whose user does not exist fails the whole change with MissingUsersError (naming every such
   * user); an add of an existing assignment leaves it as it is (body and createdAt). A removed
   * user's grants and everything issued under them at `clientId` go in the same transaction (as
   * GrantStore.revokeUserClient; sessions stay). Returns the adds that created an assignment and
   * the removes that deleted one.
   */
  changeAssignments(
    tenant: string, application: string, clientId: string,
    change: { readonly add: readonly string[]; readonly remove: readonly string[]; readonly body: AssignmentBody },
  ): Promise<{ readonly added: readonly string[]; readonly removed: readonly string[] }>;

  getTotp(tenant: string, userId: string): Promise<TotpRecord | undefined>;
  /** Creates or replaces the user's enrolment; `lastStep` is the step of the confirming code. */
  putTotp(tenant: string, userId: string, sealedSecret: string, lastStep: number): Promise<void>;
  /** Atomically accepts time step `step` if it is later than the last accepted one; false = replay (or no enrolment). */
  claimTotpStep(tenant: string, userId: string, step: number): Promise<boolean>;
  /** Removes the user's enrolment (the next sign-in that needs TOTP enrols anew); false when there was none. */
  deleteTotp(tenant: string, userId: string): Promise<boolean>;

  /** Replaces the user's outstanding code (attempts restart at 0). */
  putOtp(tenant: string, userId: string, codeHash: string, expiresAtMs: number): Promise<void>;
  getOtp(tenant: string, userId: string): Promise<OtpRecord | undefined>;
  /** Counts one wrong attempt atomically; returns the new count (Number.MAX_SAFE_INTEGER when no code is outstanding). */
  countOtpAttempt(tenant: string, userId: string): Promise<number>;
  /** Deletes the code (only if it is still `codeHash`, when given); true only for the caller that actually deleted it (single use under races). */
  deleteOtp(tenant: string, userId: string, codeHash?: string): Promise<boolean>;
  /** Deletes codes whose expiry has passed. */
  purgeExpiredOtps(): Promise<void>;

  /** Ordered by createdAt, then credential id. */
  listPasskeys(tenant: string, userId: string): Promise<readonly PasskeyRecord[]>;
  getPasskey(tenant: string, credentialId: string): Promise<PasskeyRecord | undefined>;
  /** Inserts; a credential id already stored in the tenant is an error. */
  putPasskey(tenant: string, passkey: PasskeyRecord): Promise<void>;
  updatePasskeyCounter(tenant: string, credentialId: string, counter: number): Promise<void>;
  /** Removes one passkey of the user; false when the user has no passkey of that id. */
  deletePasskey(tenant: string, userId: string, credentialId: string): Promise<boolean>;
}

/** An artifact as listed for its account (GrantStore.listByAccount). */
export interface AccountArtifact {
  readonly model: string;
  readonly id: string;
  readonly payload: ArtifactPayload;
  /** Epoch seconds; null: no expiry. */
  readonly expiresAt: number | null;
}

/**
 * oidc-provider's artifacts (sessions, grants, codes, tokens, interactions) and our own short-lived
 * ones (login progress, challenges), and their revocation. `expiresIn` is in seconds, undefined =
 * no expiry; an expired artifact is never found, even before the purge removes it.
 */
export interface GrantStore {
  /** Stores the payload as given: found again with the same keys, in the same order, same values. */
  upsert(tenant: string, model: string, id: string, payload: ArtifactPayload, expiresIn: number | undefined): Promise<void>;
  find(tenant: string, model: string, id: string): Promise<ArtifactPayload | undefined>;
  findByUid(tenant: string, model: string, uid: string): Promise<ArtifactPayload | undefined>;
  findByUserCode(tenant: string, model: string, userCode: string): Promise<ArtifactPayload | undefined>;
  /** Sets `consumed` (epoch seconds) in the payload, keeping the rest as it was. */
  consume(tenant: string, model: string, id: string): Promise<void>;
  destroy(tenant: string, model: string, id: string): Promise<void>;
  revokeByGrantId(tenant: string, grantId: string): Promise<void>;
  /** Grants, refresh tokens, access tokens and codes of one user at one client, revoked together; sessions stay. */
  revokeUserClient(tenant: string, accountId: string, clientId: string): Promise<void>;
  /** Everything carrying the account: sessions, grants, tokens, codes. */
  revokeUser(tenant: string, accountId: string): Promise<void>;
  /** The account's unexpired artifacts of the given models (sessions, grants: what a person sees of their sign-ins), ordered by model, then id. */
  listByAccount(tenant: string, accountId: string, models: readonly string[]): Promise<readonly AccountArtifact[]>;
  /** Deletes expired artifacts; returns how many. */
  purgeExpired(): Promise<number>;
}

/** Failed sign-in attempts and lockouts, per tenant and key (`account:<email>`, `address:<ip>`). */
export interface ThrottleStore {
  get(tenant: string, key: string): Promise<ThrottleRecord | undefined>;
  /**
   * Counts a failure under `key`: the count restarts when the previous failure is older than
   * `resetAfterMs`; when it reaches `lockAt` the key is locked until `nowMs + lockMs` and the count
   * restarts. Atomic, so concurrent guesses cannot slip past the limit.
   */
  recordFailure(tenant: string, key: string, nowMs: number, resetAfterMs: number, lockAt: number, lockMs: number): Promise<ThrottleRecord & { readonly locked: boolean }>;
  clear(tenant: string, key: string): Promise<void>;
  /**
   * Runs `attempt` while holding every one of `keys`, against every process that uses the same
   * database: the guessing defence checks, verifies (slowly) and records one attempt per key at a
   * time, so a burst gets no more guesses than the threshold. Keys are taken in one global order,
   * so two attempts sharing keys never wait on each other.
   */
  serialize<T>(tenant: string, keys: readonly string[], attempt: () => Promise<T>): Promise<T>;
  /**
   * Takes one request from the rate of `key` (a GCRA token bucket: one request every `intervalMs`
   * sustained, up to `burst` at once), atomically against every process and replica on the same
   * database, so workers and replicas share one budget per key. Returns 0 when allowed, else the
   * milliseconds until a request will be. Kept in the throttle table under the caller's key: its
   * `last_failure_ms` is the bucket's theoretical arrival time in microseconds, `failures` whether
   * the last take was allowed, `locked_until_ms` -1 (a rate row, never a lock). Purged idle after a day.
   */
  takeRate(tenant: string, key: string, nowMs: number, intervalMs: number, burst: number): Promise<number>;
  /** Deletes counters idle for a day whose lockout (if any) is over. */
  purgeIdle(): Promise<void>;
}

/** Server-wide settings (the master key's check value, the sealed bootstrap secret). */
export interface MetaStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  /**
   * Stores `value` unless the key holds one already, atomically (between processes too), and
   * returns what the key holds afterwards: replicas starting together agree on the first value.
   */
  setIfAbsent(key: string, value: string): Promise<string>;
}

/**
 * Which tenants changed, between every process on one database: a process that caches a tenant's
 * runtime (keys, scopes, clients) publishes after each change it commits, and every process,
 * itself included, hears it within a second (PostgreSQL: LISTEN/NOTIFY; SQLite: a change log
 * polled four times a second).
 */
export interface ChangeFeed {
  /** Call after the change has committed. */
  publish(tenant: string): Promise<void>;
  /**
   * `listener(tenant)` for every change published from now on, by any process; `listener('*')`
   * when changes may have been missed (the feed's connection was lost and is back): forget all.
   * Returns the function that unsubscribes.
   */
  subscribe(listener: (tenant: string) => void): () => void;
  /** False while changes cannot be heard (the feed's connection is down): caches may be stale. */
  readonly listening: boolean;
}

export interface Storage {
  readonly tenants: TenantStore;
  readonly applications: ApplicationStore;
  readonly users: UserStore;
  readonly groups: GroupStore;
  readonly scim: ScimStore;
  readonly grants: GrantStore;
  readonly throttle: ThrottleStore;
  readonly meta: MetaStore;
  readonly events: EventStore;
  readonly webhooks: WebhookStore;
  readonly ssf: SsfStore;
  readonly backchannel: BackchannelStore;
  readonly changes: ChangeFeed;
  /** Resolves when the database answers a trivial query; rejects otherwise (readiness checks). */
  ping(): Promise<void>;
  /**
   * Resolves when the database takes writes; rejects saying why not (readiness checks): SQLite
   * writes a row and checks the free space of the file's disk (at least MIN_FREE_BYTES: a write
   * can fit in space the file already holds while a larger one fails); PostgreSQL asks whether it
   * is in recovery (a standby, or still starting) or read-only.
   */
  pingWrite(): Promise<void>;
  /** Which backend and where, for log lines: `sqlite <file>`, `postgres <host>:<port>/<db>` (never a password). */
  readonly description: string;
  close(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------
// Groups (any door: SCIM, the admin API) and what SCIM keeps of its own.

/** A group as stored: its members live beside it (GroupStore.listMembers), not in the body. */
export interface GroupRecord {
  readonly tenant: string;
  readonly id: string;
  readonly body: Omit<GroupBody, 'members'>;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface GroupAssignmentRecord {
  readonly tenant: string;
  readonly application: string;
  readonly group: string;
  readonly body: GroupAssignmentBody;
  readonly createdAt: number;
}

/**
 * Members to add and to remove, as a difference: two concurrent changes of one group (SCIM PATCH
 * adds from two requests) both take effect, instead of the later one writing back a stale list.
 * Ids of users that do not exist in the tenant are not added.
 */
export interface MembershipChange {
  readonly add?: readonly string[];
  readonly remove?: readonly string[];
}

/** Groups, their members, and their assignments to applications. */
export interface GroupStore {
  get(tenant: string, id: string): Promise<GroupRecord | undefined>;
  /** Case-insensitive: display names are unique in a tenant without regard to case. */
  getByDisplayName(tenant: string, displayName: string): Promise<GroupRecord | undefined>;
  /** Ordered by id (bytewise). */
  list(tenant: string, page: PageRequest): Promise<Page<GroupRecord>>;
  /**
   * Upsert (createdAt kept on update) and the membership change, in one transaction. A member
   * removed from a group assigned to an application loses their grants, tokens and codes there
   * in the same transaction, unless another assignment (their own, or another group's) still
   * lets them in: a retry can never find the membership gone and the access still alive.
   */
  put(tenant: string, id: string, body: Omit<GroupBody, 'members'>, members?: MembershipChange): Promise<GroupRecord>;
  /** Also removes its members and assignments, revoking as `put` does for removed members; all or nothing. */
  delete(tenant: string, id: string): Promise<boolean>;
  /** Member user ids, ordered bytewise. */
  listMembers(tenant: string, id: string): Promise<readonly string[]>;
  /** Member counts of these groups (absent groups count 0). */
  countMembers(tenant: string, ids: readonly string[]): Promise<ReadonlyMap<string, number>>;
  /** Per user id, the ids of the groups it is a member of, ordered bytewise (users in no group are absent). */
  groupsOf(tenant: string, userIds: readonly string[]): Promise<ReadonlyMap<string, readonly string[]>>;

  getAssignment(tenant: string, application: string, group: string): Promise<GroupAssignmentRecord | undefined>;
  /** One application's group assignments, ordered by group id (bytewise). */
  listAssignments(tenant: string, application: string, page: PageRequest): Promise<Page<GroupAssignmentRecord>>;
  /** Upsert (createdAt kept on update). */
  putAssignment(tenant: string, application: string, group: string, body: GroupAssignmentBody): Promise<GroupAssignmentRecord>;
  /** Removes it, revoking for members left without access as `put` does; all or nothing. */
  deleteAssignment(tenant: string, application: string, group: string): Promise<boolean>;
  /** Whether a group assigned to the application has this user as a member. */
  grantsAccess(tenant: string, application: string, userId: string): Promise<boolean>;
}

/**
 * A SCIM user's own attributes, beside the user record: the userName (unique in the tenant,
 * case-insensitively), the externalId, and the resource as SCIM last wrote it (name, emails,
 * phone numbers, ...). The user record keeps the facts every door shares (email, displayName,
 * disabled), derived from it when SCIM writes.
 */
export interface ScimUserRecord {
  readonly tenant: string;
  readonly userId: string;
  readonly userName: string;
  readonly externalId: string | null;
  readonly resource: Readonly<Record<string, unknown>>;
}

/** A SCIM bearer token: only its hash is stored. */
export interface ScimTokenRecord {
  readonly tenant: string;
  readonly id: string;
  readonly hash: string;
  readonly description: string | null;
  readonly createdAt: number;
}

/** A user with SCIM's attributes, when SCIM wrote it. */
export interface UserWithScim {
  readonly user: UserRecord;
  readonly scim: ScimUserRecord | undefined;
}

/** What the SCIM endpoint keeps of its own: users' SCIM attributes, and the tenants' SCIM tokens. */
export interface ScimStore {
  getUser(tenant: string, id: string): Promise<UserWithScim | undefined>;
  /** Case-insensitive. */
  getUserByUserName(tenant: string, userName: string): Promise<UserWithScim | undefined>;
  /** Users whose SCIM externalId is this one (case-sensitive, as RFC 7643 has it), ordered by id. */
  getUsersByExternalId(tenant: string, externalId: string): Promise<readonly UserWithScim[]>;
  /** Every user of the tenant, ordered by id (bytewise), `offset` users skipped. */
  listUsers(tenant: string, offset: number, limit: number): Promise<readonly UserWithScim[]>;
  countUsers(tenant: string): Promise<number>;
  /**
   * Writes the user record and its SCIM attributes together (upserts; createdAt kept), with the
   * revocation of the user's artifacts in the same transaction when asked (as UserStore.put).
   */
  putUser(
    tenant: string, id: string, body: Omit<UserBody, 'initialPassword'>, passwordHash: string | null,
    scim: Omit<ScimUserRecord, 'tenant' | 'userId'>, options?: { readonly revokeArtifacts?: boolean },
  ): Promise<UserWithScim>;

  putToken(token: ScimTokenRecord): Promise<void>;
  getToken(tenant: string, id: string): Promise<ScimTokenRecord | undefined>;
  /** Ordered by createdAt, then id. */
  listTokens(tenant: string): Promise<readonly ScimTokenRecord[]>;
  deleteToken(tenant: string, id: string): Promise<boolean>;
}

// ------------------------------------------------------------------------------------------------
// The event log (src/contract/events.ts): an outbox written in the transaction of each change.

/** An event as stored: the contract's view, and its place in the log. */
export interface EventRecord {
  /** Ascending in commit order across the database: what cursors and deliveries count by. */
  readonly seq: number;
  readonly event: EventView;
}

/** A stretch of the event log (EventStore.window): where it ends, and the events of the types asked for in it. */
export interface EventWindow {
  readonly last: number | undefined;
  readonly records: readonly EventRecord[];
}

/**
 * The event log. Events of a change ride on its transaction: `within(events, write)` runs `write`,
 * and the first write transaction it commits on this storage (a store method's own transaction, or
 * a single write statement, which then runs in one) also inserts `events()`, all or nothing; they
 * are not written if `write` writes nothing or fails. So a crash loses no event of a change that
 * committed, and no event tells of a change that did not. `events` is called inside that
 * transaction, after the write's statements (a batch decides its events while it runs).
 *
 * `seq` grows in commit order: SQLite has one writer at a time; PostgreSQL takes a transaction-scoped
 * advisory lock before inserting events, so a reader that has seen seq n never later finds a smaller
 * one committed (cursors and webhook delivery read by seq without missing any).
 */
export interface EventStore {
  within<T>(events: () => readonly EventView[], write: () => Promise<T>): Promise<T>;
  /** Events that are no change (sign-in outcomes), in a transaction of their own. */
  append(events: readonly EventView[]): Promise<void>;
  /** One tenant's events in `filter`'s order, after the cursor (opaque: a page's nextCursor or follow; `follow` is where the page ends, also on the last). */
  list(tenant: string, filter: EventFilter, page: PageRequest): Promise<Page<EventRecord> & { readonly follow: string }>;
  /** Events of every tenant after `seq`, oldest first (delivery). */
  after(seq: number, limit: number): Promise<readonly EventRecord[]>;
  /**
   * The next `limit` events of every tenant after `seq` (delivery): the seq of the last of them
   * (undefined when there are none), and those of them whose type is in `types`, oldest first. The
   * others are skipped in the database, their bodies never read.
   */
  window(seq: number, limit: number, types: ReadonlySet<string>): Promise<EventWindow>;
  /** The highest seq stored (0 when none). */
  lastSeq(): Promise<number>;
  /**
   * Every tenant's directory revision: the id of its last event of a directory change
   * (revisesDirectory), set by the transaction that inserts that event, whatever door made it (the
   * insert of events is the one place every change passes). Sign-in events leave it. A tenant without
   * such an event since the revisions were kept is not listed. With `tenant`, only that tenant's.
   */
  revisions(tenant?: string): Promise<Record<string, string>>;
  /**
   * Deletes events older than their tenant's `events.retentionDays` (the tenant body), or
   * `defaultDays` for tenants without it and events of tenants deleted since. Returns how many.
   */
  purge(nowMs: number, defaultDays: number): Promise<number>;
}

// ------------------------------------------------------------------------------------------------
// Webhooks (src/contract/webhooks.ts): endpoints per tenant, and their deliveries from the event log.

/** A webhook as stored: its body without the secret, which is sealed (the server signs with it). */
export interface WebhookRecord {
  readonly tenant: string;
  readonly name: string;
  readonly body: {
    readonly url: string; readonly types: readonly string[]; readonly enabled: boolean;
    /** Who manages it (src/contract/managers.ts), as every object's body says it. */
    readonly manager?: string; readonly managedBy?: string; readonly stack?: string;
  };
  /** The `whsec_...` secret, sealed with the master key (bound to tenant and name). */
  readonly sealedSecret: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event's delivery to one webhook. Times in milliseconds. */
export interface DeliveryRecord {
  readonly tenant: string;
  readonly webhook: string;
  readonly seq: number;
  readonly eventId: string;
  readonly type: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly nextAttemptMs: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly deliveredAtMs: number | null;
  readonly createdAtMs: number;
}

/** A delivery claimed for an attempt, with what the attempt needs. */
export interface DueDelivery {
  readonly delivery: DeliveryRecord;
  readonly webhook: WebhookRecord;
  readonly event: EventView;
}

/**
 * Webhooks and their deliveries. Deliveries are queued from the event log (`enqueue`), so an event
 * committed is an event queued, whatever happens to the process; an attempt first claims its
 * delivery for a lease (`claim`), so two processes never send it at once, and a process that dies
 * mid-attempt leaves it to be claimed again when the lease lapses: at least once.
 */
export interface WebhookStore {
  get(tenant: string, name: string): Promise<WebhookRecord | undefined>;
  /** Ordered by name (bytewise). */
  list(tenant: string): Promise<readonly WebhookRecord[]>;
  /**
   * Upsert (createdAt kept). A new webhook starts after the log's last event: it is sent what is
   * recorded from its creation on.
   */
  put(tenant: string, name: string, body: WebhookRecord['body'], sealedSecret: string): Promise<WebhookRecord>;
  /** With its delivery log. */
  delete(tenant: string, name: string): Promise<boolean>;
  /**
   * Queues a pending delivery, due now, for each event after each enabled webhook's place in the
   * log that its types take, and moves the places on, in one transaction (between processes too);
   * at most `limit` events read per webhook. Returns how many deliveries were queued.
   */
  enqueue(nowMs: number, limit: number): Promise<number>;
  /** Claims up to `limit` pending deliveries due by `nowMs`, oldest first, for `leaseMs`: each attempt counted. */
  claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly DueDelivery[]>;
  /** Records an attempt's outcome: delivered; or pending again at `nextAttemptMs`; or failed (`nextAttemptMs` null). */
  settle(d: Pick<DeliveryRecord, 'tenant' | 'webhook' | 'seq'>, outcome: {
    readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number;
  }): Promise<void>;
  /** One webhook's deliveries, newest first. */
  deliveries(tenant: string, name: string, page: PageRequest): Promise<Page<DeliveryRecord>>;
  /** Deletes settled deliveries (delivered or failed) created before `beforeMs`. */
  purgeDeliveries(beforeMs: number): Promise<number>;
}

// ------------------------------------------------------------------------------------------------
// The SSF transmitter (src/contract/ssf.ts): streams per tenant, and their SETs from the event log.

/** A stream as stored. `body` is what the receiver configured; the receiver token is kept as a hash. */
export interface SsfStreamRecord {
  readonly tenant: string;
  readonly id: string;
  readonly body: {
    readonly method: 'push' | 'poll';
    readonly endpointUrl?: string;
    readonly eventsRequested: readonly string[];
    readonly description?: string;
    readonly aud: string | readonly string[];
  };
  readonly status: 'enabled' | 'paused' | 'disabled';
  readonly reason?: string;
  /** The push Authorization header, sealed with the master key; null: none. */
  readonly sealedAuthorization: string | null;
  /** SHA-256 (hex) of the stream's receiver token's secret part. */
  readonly tokenHash: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A SET to deliver: its claims (signed when sent, so a key rotation between is harmless). */
export interface SsfSetDraft {
  readonly jti: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface SsfSetRecord extends SsfSetDraft {
  readonly tenant: string;
  readonly stream: string;
  readonly attempts: number;
}

/**
 * Streams and the SETs queued for them. SETs are queued from the event log (`enqueue`, the same
 * outbox webhooks read), so a committed change is a queued SET whatever happens to the process; a
 * push attempt claims its SET for a lease; a poll answers pending SETs until the receiver
 * acknowledges them. At least once: a SET keeps its `jti` however often it goes.
 */
export interface SsfStore {
  get(tenant: string, id: string): Promise<SsfStreamRecord | undefined>;
  /** Ordered by creation. */
  list(tenant: string): Promise<readonly SsfStreamRecord[]>;
  /** Upsert; a new stream starts after the log's last event. */
  put(s: Omit<SsfStreamRecord, 'createdAt' | 'updatedAt'>): Promise<SsfStreamRecord>;
  /** With its queued SETs. */
  delete(tenant: string, id: string): Promise<boolean>;
  /**
   * For each stream that is not disabled: the SETs `translate` makes of the tenant's events after
   * the stream's place in the log, queued pending (due now); the places moved on; in one
   * transaction. Disabled streams move on without queueing. At most `limit` events per stream.
   * `types`: the only event types `translate` makes SETs of (the others are passed over unread).
   * No transaction is opened when there is no stream.
   */
  enqueue(nowMs: number, limit: number, translate: (stream: SsfStreamRecord, event: EventView) => readonly SsfSetDraft[], types?: ReadonlySet<string>): Promise<number>;
  /** Queues SETs made outside the log (verification). */
  add(tenant: string, stream: string, sets: readonly SsfSetDraft[], nowMs: number): Promise<void>;
  /** Up to `limit` pending SETs of a stream, oldest first, and whether more are pending. */
  pending(tenant: string, stream: string, limit: number): Promise<{ readonly sets: readonly SsfSetRecord[]; readonly more: boolean }>;
  /** Marks SETs of a stream acknowledged (`error` undefined) or refused by the receiver. */
  acknowledge(tenant: string, stream: string, jtis: readonly string[], nowMs: number, error?: (jti: string) => string | undefined): Promise<void>;
  /** Claims up to `limit` pending SETs of enabled push streams, due by `nowMs`, for `leaseMs` (each attempt counted). */
  claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly (SsfSetRecord & { readonly streamRecord: SsfStreamRecord })[]>;
  /** An attempt's outcome: delivered; pending again at `nextAttemptMs`; or failed (null). */
  settle(tenant: string, stream: string, jti: string, o: { readonly delivered: boolean; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void>;
  /**
   * Deletes SETs settled before `settledBeforeMs`, and pending ones queued before
   * `pendingBeforeMs` (a poll receiver that never came for them, a stream paused and forgotten):
   * the queue of a stream nobody reads stays bounded.
   */
  purge(settledBeforeMs: number, pendingBeforeMs: number): Promise<number>;
}

// ------------------------------------------------------------------------------------------------
// Back-channel logout (src/server/backchannel): logout tokens owed to clients, from the event log
// (revocations) and from sign-outs at the server.

/** A logout token to send: to whom, about whom (the token is signed when sent). */
export interface LogoutDraft {
  readonly tenant: string;
  /** The token's `jti`: kept across attempts, so a receiver can tell a repeat. */
  readonly jti: string;
  /** The token's `aud`. */
  readonly clientId: string;
  /** The client's backchannel_logout_uri when queued (the client may be gone by the attempt). */
  readonly uri: string;
  readonly sub: string;
  /** The session at the client (a sign-out names it); absent: every session of `sub` (a revocation). */
  readonly sid?: string;
}

export interface LogoutRecord extends LogoutDraft {
  readonly attempts: number;
}

/**
 * The outbox of back-channel logouts. `queue` takes the logouts of the event log's events in
 * (fromSeq, toSeq] and moves the store's place in the log from fromSeq to toSeq, in one
 * transaction, only if the place is still fromSeq (another process took those events otherwise:
 * false, nothing queued). So a committed revocation is a queued logout whatever happens to the
 * process, and none is queued twice by replicas. Attempts hold a lease, as webhook deliveries do.
 */
export interface BackchannelStore {
  /** Where in the event log the store is; undefined before the first `start`. */
  place(): Promise<number | undefined>;
  /** Sets the place unless one is set (the first start: from the log's end); returns the place. */
  start(seq: number): Promise<number>;
  queue(fromSeq: number, toSeq: number, logouts: readonly LogoutDraft[], nowMs: number): Promise<boolean>;
  /** Queues logouts made outside the log (a sign-out at the server). */
  add(logouts: readonly LogoutDraft[], nowMs: number): Promise<void>;
  /** Claims up to `limit` pending logouts due by `nowMs` for `leaseMs`, each attempt counted. */
  claim(nowMs: number, leaseMs: number, limit: number): Promise<readonly LogoutRecord[]>;
  /** An attempt's outcome: delivered; pending again at `nextAttemptMs`; or failed (null). */
  settle(jti: string, o: { readonly delivered: boolean; readonly status: number | null; readonly error: string | null; readonly nextAttemptMs: number | null; readonly nowMs: number }): Promise<void>;
  /** Deletes settled logouts settled before `beforeMs`. */
  purge(beforeMs: number): Promise<number>;
}
