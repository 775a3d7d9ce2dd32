/**
 * The admin API's rules for changing one object, as pure functions: what a PUT or DELETE of a
 * tenant, application, user or assignment would do to the stored state (outcome, changed fields,
 * what to write) or why it is refused (a ServerError with status, code, message and path). The
 * single-object operations (service.ts) and the tenant batch (batch.ts) both judge with these, so
 * the two doors cannot disagree. Lookups are synchronous: the caller fetched what they read.
 */
import {
  BUILTIN_SCOPES, MANAGER_FIELDS, RESERVED_TENANTS, checkPassword, excerpt, tenantNameProblem, bodyChanges, checkRequestedScopes, formatPath, managerConflict, managerOf, mayChange,
  ownedElsewhere, withManager,
  type ApplicationBody, type AssignmentBody, type ManagedKind, type Outcome, type TenantBody, type UserBody,
} from '../../contract/index.ts';
import { timingSafeEqual } from 'node:crypto';
import type { MasterKey } from '../_crypto.ts';
import { newClientSecret } from '../_crypto.ts';
import { errors, type ServerError } from '../errors.ts';
import type { ApplicationRecord, AssignmentRecord, TenantRecord, UserRecord } from '../storage/types.ts';

const outcomeOf = (before: unknown, changes: readonly string[]): Outcome =>
  before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';

/**
 * The named-manager rule (src/contract/managers.ts) on one write: the body to store, with the
 * manager it keeps, and the changed fields (`manager` among them for an adoption or a takeover), or
 * a 409 naming the owner and the fields. Writing what the object already is takes nothing; an
 * object without a manager is adopted by the one that writes it; another manager's object changes
 * only when forced. Every kind of object, at every door, through this one function.
 */
export function judgeManaged<B extends object>(
  kind: ManagedKind, name: string, body: B, before: B | undefined, force: boolean,
): { stored: B; changes: string[]; foreign?: string } {
  const writer = managerOf(body as never);
  if (before === undefined) return { stored: withManager(body as never, writer) as B, changes: bodyChanges(undefined, body) };
  const owner = managerOf(before as never);
  const all = bodyChanges(before, body).filter((f) => !MANAGER_FIELDS.has(f));
  // Recording the entry a model declares (lastApplied) is bookkeeping, not a change of the object.
  const content = all.filter((f) => f !== 'lastApplied');
  const conflict = managerConflict(kind, name, owner, writer, content, force);
  if (conflict !== undefined) throw errors.conflict(conflict, 'manager');
  const manager = owner === writer || owner === undefined || force ? writer : owner;
  // Another manager's object that the write would leave as it is: nothing is written, it stays theirs.
  if (manager !== writer) return { stored: before, changes: [], foreign: owner };
  return { stored: withManager(body as never, manager) as B, changes: manager === owner ? all : [...all, 'manager'] };
}
/** The owner a stored object had (its door and its manager), answered with a batch's updated and deleted entries. */
export function ownedBy(before: { readonly body: object } | undefined): { managedBy?: string; manager?: string } {
  const owner = before !== undefined && 'managedBy' in before.body ? before.body.managedBy : undefined;
  const manager = before === undefined ? undefined : managerOf(before.body);
  return { ...(typeof owner === 'string' ? { managedBy: owner } : {}), ...(manager === undefined ? {} : { manager }) };
}

/** A rule's problems as the one 400 the admin API answers: the first in `message`, all in `problems`. */
export function refusal(problems: readonly { code: string; path: readonly (string | number)[]; message: string }[]): ServerError {
  const list = problems.map((p) => ({ path: formatPath(p.path), message: p.message, code: p.code }));
  return errors.invalidRequest(list[0]!.message, list[0]!.path, list);
}

export const reserved = (name: string): ServerError => errors.forbidden(`tenant '${name}' is reserved for the server itself`);

/** A tenant that does not exist yet takes a name the contract's one rule allows (at creation and at rename). */
export function judgeNewTenantName(name: string, path: string): void {
  if (RESERVED_TENANTS.includes(name)) throw reserved(name);
  const bad = tenantNameProblem(name);
  if (bad !== undefined) throw refusal([{ code: bad.code, path: [path], message: bad.message }]);
}

export function judgeTenant(name: string, body: TenantBody, before: TenantRecord | undefined, force = false): { outcome: Outcome; changes: string[]; stored: TenantBody; foreign?: string } {
  // Scope definitions and the login policy were checked with the body (the contract's TenantBody).
  if (RESERVED_TENANTS.includes(name)) throw reserved(name);
  if (before === undefined) judgeNewTenantName(name, 'name');
  const { stored, changes, foreign } = judgeManaged('tenant', name, body, before?.body, force);
  return { outcome: outcomeOf(before, changes), changes, stored, ...(foreign === undefined ? {} : { foreign }) };
}

/** What the application rules read besides the application itself. */
export interface ApplicationLookup {
  byClientId(clientId: string): ApplicationRecord | undefined;
  byIdentifier(identifier: string): ApplicationRecord | undefined;
  /** Client applications (not the internal service client) whose audience names `identifier`, by name. */
  clientsWithAudience(identifier: string): string[];
}

/** A lookup over every application of a tenant, held in memory (a tenant has few). */
export function applicationLookup(apps: Iterable<ApplicationRecord>): ApplicationLookup {
  const list = [...apps];
  return {
    byClientId: (id) => list.find((a) => a.body.kind !== 'api' && a.body.clientId === id),
    byIdentifier: (id) => list.find((a) => a.body.kind === 'api' && a.body.identifier === id),
    clientsWithAudience: (id) =>
      list.filter((a) => a.body.kind !== 'api' && a.body.kind !== 'service' && a.body.audience.includes(id)).map((a) => a.name).sort(),
  };
}

function checkApplication(tenant: TenantRecord, name: string, body: ApplicationBody, lookup: ApplicationLookup): void {
  if (body.kind === 'api') {
    const other = lookup.byIdentifier(body.identifier);
    if (other !== undefined && other.name !== name) {
      throw errors.conflict(`identifier '${body.identifier}' is already used by application '${other.name}'`, 'identifier');
    }
    return;
  }
  const other = lookup.byClientId(body.clientId);
  if (other !== undefined && other.name !== name) {
    throw errors.conflict(`clientId '${body.clientId}' is already used by application '${other.name}'`, 'clientId');
  }
  const known = new Set([...BUILTIN_SCOPES, ...tenant.body.scopes.map((s) => s.name)]);
  for (const [i, aud] of body.audience.entries()) {
    const api = lookup.byIdentifier(aud);
    if (api === undefined || api.body.kind !== 'api') {
      throw errors.invalidRequest(`audience '${aud}' is not the identifier of an api application in tenant '${tenant.name}'`, formatPath(['audience', i]));
    }
    for (const sc of api.body.scopes) known.add(sc);
  }
  // The model's scope rule: each known (built in, defined by the tenant, or offered by an api of
  // the audience), none twice, openid among them.
  const scopeProblems = checkRequestedScopes(body.scopes, known, ['scopes'], `tenant '${tenant.name}' or the apis of its audience`);
  if (scopeProblems.length > 0) throw refusal(scopeProblems);
}

/**
 * An api whose identifier is some client's audience must stay: without it every code and refresh
 * request of those clients fails with invalid_target. The caller is told which clients to change
 * (or delete) first.
 */
export function refuseIfAudience(api: ApplicationRecord, lookup: ApplicationLookup, doing: string): void {
  if (api.body.kind !== 'api') return;
  const clients = lookup.clientsWithAudience(api.body.identifier);
  if (clients.length === 0) return;
  throw errors.conflict(
    `cannot ${doing} api application '${api.name}': its identifier '${api.body.identifier}' is the audience of ` +
      `${clients.length === 1 ? 'application' : 'applications'} ${clients.map((c) => `'${c}'`).join(', ')}; ` +
      'remove it from their audience (or delete them) first',
    'identifier',
  );
}

/** Constant-time equality of two stored hashes. */
function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface ApplicationDecision {
  readonly outcome: Outcome;
  readonly changes: string[];
  readonly stored: VisibleApplicationRecord['body'];
  readonly secretHash: string | null;
  /** Made by the server: answered once, never stored in the clear. */
  readonly clientSecret: string | undefined;
  /** The manager that keeps the object, when another one's write left it as it was. */
  readonly foreign?: string;
}

export function judgeApplication(
  tenant: TenantRecord, name: string, body: ApplicationBody, before: ApplicationRecord | undefined, lookup: ApplicationLookup, master: MasterKey, force = false,
): ApplicationDecision {
  checkApplication(tenant, name, body, lookup);
  if (before?.body.kind === 'api' && (body.kind !== 'api' || body.identifier !== before.body.identifier)) {
    refuseIfAudience(before, lookup, 'change the identifier of');
  }
  // A client id is fixed when the application is made: a new name (a rename) never recomputes it.
  const fixedId = before !== undefined && before.body.kind !== 'api' && before.body.kind !== 'service' ? before.body.clientId : undefined;
  if (fixedId !== undefined && body.kind !== 'api' && body.clientId !== fixedId) {
    throw errors.conflict(
      `application '${name}' has the client id '${fixedId}', fixed when it was made (its clients and tokens use it); ` +
        `declare clientId: ${fixedId} in the model (a renamed application keeps its client id), or delete the application and make it again`,
      'clientId',
    );
  }
  let stored: VisibleApplicationRecord['body'];
  let secretHash: string | null = null;
  let clientSecret: string | undefined;
  let secretChanged = false;
  if (body.kind === 'web' || body.kind === 'proxy') {
    // A confidential kind (KINDS[kind].confidential): the secret is kept as a hash.
    const { clientSecret: given, ...rest } = body;
    stored = rest;
    if (given !== undefined) {
      // One HMAC, compared with the stored one (a batch judges thousands of these).
      secretHash = master.hashClientSecret(given);
      secretChanged = before?.secretHash == null || !sameText(before.secretHash, secretHash);
    } else if (before?.secretHash != null) {
      secretHash = before.secretHash;
    } else {
      clientSecret = newClientSecret();
      secretHash = master.hashClientSecret(clientSecret);
      secretChanged = true;
    }
  } else {
    stored = body;
  }
  const managed = judgeManaged('application', name, stored, before?.body as typeof stored | undefined, force);
  const changes = managed.changes;
  if (secretChanged && before !== undefined) {
    // A new secret is a change too: another manager's client keeps its secret unless forced.
    const conflict = managerConflict('application', name, managerOf(before.body as typeof stored), managerOf(stored), ['clientSecret'], force);
    if (conflict !== undefined) throw errors.conflict(conflict, 'manager');
    changes.push('clientSecret');
  }
  return { outcome: outcomeOf(before, changes), changes, stored: managed.stored, secretHash, clientSecret, ...(managed.foreign === undefined ? {} : { foreign: managed.foreign }) };
}

/** An application the admin API shows: every kind but the internal `service` (the bootstrap client). */
export type VisibleApplicationRecord = ApplicationRecord & { readonly body: Exclude<ApplicationRecord['body'], { readonly kind: 'service' }> };
export const isVisibleApplication = (app: ApplicationRecord): app is VisibleApplicationRecord => app.body.kind !== 'service';

/** The application as the admin API knows it: absent, or the internal service client, is "no such application". */
export function requireApplication(tenant: string, name: string, app: ApplicationRecord | undefined): VisibleApplicationRecord {
  if (app === undefined || !isVisibleApplication(app)) throw errors.notFound(`application '${name}' does not exist in tenant '${tenant}'`);
  return app;
}

/** Before deleting an application: an api that clients name as their audience stays. */
export function judgeApplicationDelete(tenant: string, name: string, app: ApplicationRecord | undefined, lookup: ApplicationLookup): ApplicationRecord {
  const a = requireApplication(tenant, name, app);
  refuseIfAudience(a, lookup, 'delete');
  return a;
}

export interface UserDecision {
  readonly outcome: Outcome;
  readonly changes: string[];
  readonly stored: Omit<UserBody, 'initialPassword'>;
  /** The initial password is to be hashed and stored: given, and the user has none yet. */
  readonly setsPassword: boolean;
  /** A scope was lost or the account disabled: grants and tokens end with this write. */
  readonly revokeArtifacts: boolean;
  /** The manager that keeps the user, when another one's write left it as it was. */
  readonly foreign?: string;
}

/** `emailOwner`: the user the tenant finds by this email (the lowest id when several share it). */
export function judgeUser(id: string, body: UserBody, before: UserRecord | undefined, emailOwner: UserRecord | undefined, force = false): UserDecision {
  const { initialPassword, ...given } = body;
  // One owner per object: what SCIM manages, nobody else changes (a model naming it, too; not even forced).
  if (before !== undefined && !mayChange(before.body.managedBy, given.managedBy) && (before.body.managedBy === 'scim' || given.managedBy === 'scim' || !force)) {
    throw errors.conflict(ownedElsewhere('user', id, before.body.managedBy, given.managedBy), 'managedBy');
  }
  if (emailOwner !== undefined && emailOwner.id !== id) throw errors.conflict(`email ${excerpt(given.email)} belongs to another user of this tenant`, 'email');
  const { stored, changes, foreign } = judgeManaged('user', id, given, before?.body, force);
  // The initial password only counts when there is no password yet, so re-applying is a no-op.
  const setsPassword = initialPassword !== undefined && (before?.passwordHash ?? null) === null;
  if (setsPassword && foreign !== undefined) {
    throw errors.conflict(managerConflict('user', id, foreign, managerOf(given), ['password'], force)!, 'manager');
  }
  if (setsPassword && before !== undefined) changes.push('password');
  // Losing a scope or being disabled must not survive in existing grants and refresh tokens; both
  // are written in one transaction, so a failure leaves the user as before and a retry revokes.
  const lostScope = before !== undefined && before.body.scopes.some((s) => !stored.scopes.includes(s));
  const revokeArtifacts = lostScope || (stored.disabled && before?.body.disabled !== true);
  return { outcome: outcomeOf(before, changes), changes, stored, setsPassword, revokeArtifacts, ...(foreign === undefined ? {} : { foreign }) };
}

/**
 * A new password under the tenant's policy (the contract's checkPassword, the one rule every door
 * runs), refused as a 400 at `path` (`initialPassword`, `password`): the same words whether it came
 * from the model, SCIM, a recovery link or the account page.
 */
export function judgePassword(tenant: TenantRecord | undefined, email: string, password: string, path: string): void {
  const names = tenant === undefined ? [] : [tenant.name, tenant.body.displayName];
  const problems = checkPassword(password, tenant?.body.passwordPolicy, { email, tenantNames: names }, [path]);
  if (problems.length > 0) throw refusal(problems.map((p) => ({ ...p, message: `${path} ${p.message}` })));
}

/** The client application users are assigned to. */
export function requireClientApplication(tenant: string, name: string, app: ApplicationRecord | undefined): ApplicationRecord & { body: { clientId: string } } {
  const a = requireApplication(tenant, name, app);
  if (a.body.kind === 'api') throw errors.invalidRequest(`application '${name}' is an api; users are assigned to client applications`);
  return a as ApplicationRecord & { body: { clientId: string } };
}

export function requireUser(tenant: string, id: string, user: UserRecord | undefined): UserRecord {
  if (user === undefined) throw errors.notFound(`user '${id}' does not exist in tenant '${tenant}'`);
  return user;
}

export function judgeAssignment(
  tenant: string, application: string, userId: string, body: AssignmentBody,
  app: ApplicationRecord | undefined, user: UserRecord | undefined, before: AssignmentRecord | undefined, force = false,
): { outcome: Outcome; changes: string[]; stored: AssignmentBody; foreign?: string } {
  requireClientApplication(tenant, application, app);
  requireUser(tenant, userId, user);
  const { stored, changes, foreign } = judgeManaged('assignment', `${application}/${userId}`, body, before?.body, force);
  return { outcome: outcomeOf(before, changes), changes, stored, ...(foreign === undefined ? {} : { foreign }) };
}
