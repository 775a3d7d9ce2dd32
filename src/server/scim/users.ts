/**
 * SCIM Users over the tenant's users.
 *
 * Mapping: SCIM `id` is the user id (the token's `sub`; made by the server on POST, a UUID, never
 * changed). `userName` is kept as the client gives it, unique in the tenant without regard to case;
 * the user signs in with their email, the primary (or first) entry of `emails`, which the User
 * schema here therefore requires; it is unique in the tenant, as everywhere. `displayName` is the name in ID
 * tokens; `active: false` disables the user and ends their sessions and tokens at once. Every other
 * attribute is kept as SCIM wrote it. Users that another door made (the model in Git, the console,
 * the admin API) are listed read-only, their userName being their email.
 *
 * Ownership: SCIM writes only users it made (`managedBy: scim`); anything else is a 409 naming the
 * owner. A user SCIM made is written only by SCIM (the admin API refuses the others, the model too).
 */
import { randomUUID } from 'node:crypto';
import { excerpt, SCIM_MANAGED_BY, UserBody, mayChange, ownedElsewhere } from '../../contract/index.ts';
import { removeUser, writeUser } from '../directory/users.ts';
import type { UserWithScim } from '../storage/types.ts';
import { scimErrors } from './errors.ts';
import { indexedTerm } from './filter.ts';
import { listResponse, matchesIfMatch, project, sortResources, withMeta, type ListParams, type Resource } from './list.ts';
import { applyPatch } from './patch.ts';
import { URN } from './_schema.ts';
import { referencedUserIds, userNames, withReferencedNames } from './_names.ts';
import { isUniqueViolation, oneAtATime, type ScimScope } from './_scope.ts';
import { resourceValue, type Attrs } from './_values.ts';

/** Users read per storage query while scanning a tenant for a filter or a sort. */
const SCAN_BATCH = 1000;

/** The writable attributes of a user: as SCIM wrote them, or derived from a user another door made. */
function attributesOf(u: UserWithScim): Attrs {
  if (u.scim !== undefined) return structuredClone(u.scim.resource) as Attrs;
  const b = u.user.body;
  return {
    userName: b.email,
    ...(b.displayName === undefined ? {} : { displayName: b.displayName }),
    active: !b.disabled,
    emails: [{ value: b.email, primary: true }],
  };
}

/** Per user id, the groups it is in, as SCIM's `groups` attribute. */
async function groupsOf(scope: ScimScope, ids: readonly string[]): Promise<Map<string, Record<string, unknown>[]>> {
  const { storage } = scope.ctx;
  const byUser = await storage.groups.groupsOf(scope.tenant, ids);
  const names = new Map<string, string>();
  for (const g of new Set([...byUser.values()].flat())) names.set(g, (await storage.groups.get(scope.tenant, g))?.body.displayName ?? g);
  return new Map([...byUser].map(([u, gs]) => [u, gs.map((g) => ({ value: g, $ref: `${scope.base}/Groups/${g}`, display: names.get(g), type: 'direct' }))]));
}

function representation(scope: ScimScope, u: UserWithScim, groups: readonly Record<string, unknown>[], names: ReadonlyMap<string, string>): Resource {
  const location = `${scope.base}/Users/${u.user.id}`;
  const attrs = withReferencedNames('User', attributesOf(u), names);
  return withMeta({ schemas: [URN.user], id: u.user.id, ...attrs, ...(groups.length > 0 ? { groups } : {}) }, 'User', u.user.createdAt, u.user.updatedAt, location);
}

async function representations(scope: ScimScope, users: readonly UserWithScim[]): Promise<Resource[]> {
  const groups = await groupsOf(scope, users.map((u) => u.user.id));
  // The users their references (the enterprise manager) name, for the references' displayName.
  const names = await userNames(scope, referencedUserIds('User', users.map(attributesOf)));
  return users.map((u) => representation(scope, u, groups.get(u.user.id) ?? [], names));
}

async function load(scope: ScimScope, id: string): Promise<UserWithScim> {
  const u = await scope.ctx.storage.scim.getUser(scope.tenant, id);
  if (u === undefined) throw scimErrors.notFound(`no user with id ${excerpt(id)} in this tenant`);
  return u;
}

export async function getUser(scope: ScimScope, id: string): Promise<Resource> {
  return (await representations(scope, [await load(scope, id)]))[0]!;
}

/** The address the user signs in with: the primary email, or the first (`emails` is required). */
function signInEmail(attrs: Attrs): string {
  const emails = attrs.emails as { value: unknown; primary?: unknown }[];
  const checked = UserBody.shape.email.safeParse((emails.find((e) => e.primary === true) ?? emails[0])?.value);
  if (!checked.success) {
    throw scimErrors.invalidValue(`the ${emails.some((e) => e.primary === true) ? 'primary' : 'first'} value of 'emails' must be an email address: the user signs in with it`);
  }
  return checked.data;
}

/**
 * Writes a user SCIM manages through the directory core (writeUser): the rules every door runs
 * (one email per tenant, the named-manager rule), the password hashed in the pool. SCIM's own rule
 * is its own attribute's: a userName unique in the tenant.
 */
async function write(scope: ScimScope, id: string, attrs: Attrs, before: UserWithScim | undefined): Promise<Resource> {
  const { storage } = scope.ctx;
  const t = scope.tenant;
  const { password, ...resource } = attrs;
  const userName = resource.userName as string;
  const email = signInEmail(resource);
  const named = await storage.scim.getUserByUserName(t, userName);
  if (named !== undefined && named.user.id !== id) throw scimErrors.uniqueness(`userName ${excerpt(userName)} is taken by another user of this tenant`);
  const mailed = await storage.users.getByEmail(t, userName);
  if (mailed !== undefined && mailed.id !== id && (await storage.scim.getUser(t, mailed.id))?.scim === undefined) {
    throw scimErrors.uniqueness(`userName ${excerpt(userName)} is the sign-in email, and so the userName, of another user of this tenant`);
  }
  const body = {
    email,
    ...(typeof resource.displayName === 'string' ? { displayName: resource.displayName } : {}),
    scopes: [...(before?.user.body.scopes ?? [])],
    disabled: resource.active === false,
    managedBy: SCIM_MANAGED_BY,
    manager: SCIM_MANAGED_BY,
  };
  try {
    await writeUser(scope.ctx, t, id, {
      body,
      ...(password === undefined ? {} : { password: password as string }),
      scim: { userName, externalId: typeof resource.externalId === 'string' ? resource.externalId : null, resource },
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw scimErrors.uniqueness(`userName ${excerpt(userName)} is taken by another user of this tenant`);
    throw err;
  }
  return (await representations(scope, [await load(scope, id)]))[0]!;
}

/** The user, if SCIM may change it and the client's If-Match holds. */
async function changeable(scope: ScimScope, id: string, ifMatch: string | undefined): Promise<{ user: UserWithScim; current: Resource }> {
  const user = await load(scope, id);
  if (!mayChange(user.user.body.managedBy, SCIM_MANAGED_BY)) throw scimErrors.ownedElsewhere(ownedElsewhere('user', id, user.user.body.managedBy, SCIM_MANAGED_BY));
  const current = (await representations(scope, [user]))[0]!;
  if (!matchesIfMatch(ifMatch, (current.meta as { version: string }).version)) throw scimErrors.preconditionFailed(`user ${excerpt(id)} has changed since version ${excerpt(ifMatch ?? "")}`);
  return { user, current };
}

export async function createUser(scope: ScimScope, body: unknown): Promise<Resource> {
  return write(scope, randomUUID(), resourceValue('User', body), undefined);
}

export function replaceUser(scope: ScimScope, id: string, body: unknown, ifMatch: string | undefined): Promise<Resource> {
  return oneAtATime(scope, 'User', id, async () => {
    const attrs = resourceValue('User', body);
    const { user } = await changeable(scope, id, ifMatch);
    return write(scope, id, attrs, user);
  });
}

export function patchUser(scope: ScimScope, id: string, message: unknown, ifMatch: string | undefined): Promise<Resource> {
  return oneAtATime(scope, 'User', id, async () => {
    const { user } = await changeable(scope, id, ifMatch);
    return write(scope, id, applyPatch('User', attributesOf(user), message, { id }), user);
  });
}

export function deleteUser(scope: ScimScope, id: string, ifMatch: string | undefined): Promise<void> {
  return oneAtATime(scope, 'User', id, async () => {
    const { user } = await changeable(scope, id, ifMatch);
    // With the user go its assignments, memberships, sessions, tokens and factors, in one transaction.
    await removeUser(scope.ctx, scope.tenant, user.user);
  });
}

/** Every user of the tenant, a batch at a time. */
async function* everyUser(scope: ScimScope): AsyncGenerator<UserWithScim[]> {
  for (let offset = 0; ; offset += SCAN_BATCH) {
    const batch = await scope.ctx.storage.scim.listUsers(scope.tenant, offset, SCAN_BATCH);
    if (batch.length > 0) yield [...batch];
    if (batch.length < SCAN_BATCH) return;
  }
}

/** The users an indexed `eq` names: the candidates a filter is then run on. */
async function candidates(scope: ScimScope, term: NonNullable<ReturnType<typeof indexedTerm>>): Promise<UserWithScim[]> {
  const { storage } = scope.ctx;
  const t = scope.tenant;
  switch (term.attr) {
    case 'id': {
      const u = await storage.scim.getUser(t, term.value);
      return u === undefined ? [] : [u];
    }
    case 'externalId':
      return [...(await storage.scim.getUsersByExternalId(t, term.value))];
    case 'userName': {
      // SCIM users by their userName; users of other doors by their email, which is their userName.
      const out: UserWithScim[] = [];
      const named = await storage.scim.getUserByUserName(t, term.value);
      if (named !== undefined) out.push(named);
      const mailed = await storage.users.getByEmail(t, term.value);
      if (mailed !== undefined && mailed.id !== named?.user.id) {
        const u = await storage.scim.getUser(t, mailed.id);
        if (u !== undefined && u.scim === undefined) out.push(u);
      }
      return out;
    }
  }
}

/** GET /Users and POST /Users/.search: one page of the matching users, projected. */
export async function queryUsers(scope: ScimScope, p: ListParams): Promise<Record<string, unknown>> {
  const from = p.startIndex - 1;
  let total: number;
  let page: Resource[];
  if (p.filter === undefined && p.sortBy === undefined) {
    // The storage order is SCIM's order here (by id): one page read, nothing scanned.
    total = await scope.ctx.storage.scim.countUsers(scope.tenant);
    page = p.count === 0 ? [] : await representations(scope, await scope.ctx.storage.scim.listUsers(scope.tenant, from, p.count));
  } else {
    const term = p.filter === undefined ? undefined : indexedTerm(p.filter.ast);
    const matching: Resource[] = [];
    const take = async (users: UserWithScim[]) => {
      for (const r of await representations(scope, users)) if (p.filter === undefined || p.filter.matches(r)) matching.push(r);
    };
    if (term !== undefined) await take(await candidates(scope, term));
    else for await (const batch of everyUser(scope)) await take(batch);
    const sorted = sortResources('User', matching, p);
    total = sorted.length;
    page = sorted.slice(from, from + p.count);
  }
  return listResponse(page.map((r) => project('User', r, p)), total, p.startIndex);
}
