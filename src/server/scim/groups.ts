/**
 * SCIM Groups over the tenant's groups (the ones the admin API also serves). `id` is the group id
 * (a UUID for groups SCIM makes); `displayName` is unique in the tenant without regard to case;
 * `members` are users of the tenant (`{"value": <user id>}`; groups cannot be members; `display`
 * and `$ref` are accepted and answered by the server, `display` as the member's current name). Members
 * are written as differences, and a member who leaves a group assigned to an application loses
 * their grants and refresh tokens there in the same transaction (storage GroupStore.put).
 *
 * Ownership as for users: SCIM writes only groups it made; the others are listed read-only.
 */
import { removeGroup, writeGroup } from '../directory/groups.ts';
import { randomUUID } from 'node:crypto';
import { excerpt, MAX_GROUP_MEMBERS, SCIM_MANAGED_BY, USER_ID, mayChange, ownedElsewhere } from '../../contract/index.ts';
import type { GroupRecord } from '../storage/types.ts';
import { scimErrors } from './errors.ts';
import { indexedTerm } from './filter.ts';
import { listResponse, matchesIfMatch, project, sortResources, withMeta, type ListParams, type Resource } from './list.ts';
import { applyPatch } from './patch.ts';
import { URN } from './_schema.ts';
import { userNames } from './_names.ts';
import { isUniqueViolation, oneAtATime, type ScimScope } from './_scope.ts';
import { resourceValue, type Attrs } from './_values.ts';

const MAX_ITEMS = { members: MAX_GROUP_MEMBERS } as const;

/**
 * A member as a client sends it, as it is kept: `{value}`, a user id; `type`, when given, must be
 * User; `$ref`, when given, must name that same user (`.../Users/<value>`): a member whose `$ref`
 * and `value` disagree is refused, never guessed. (`display` is read-only: dropped on the way in.)
 */
function member(_attr: string, item: Record<string, unknown>, at: string): Record<string, unknown> {
  const value = item.value;
  if (typeof value !== 'string' || !USER_ID.test(value)) throw scimErrors.invalidValue(`'${at}.value' must be the id of a user of this tenant`);
  if (item.type !== undefined && String(item.type).toLowerCase() !== 'user') {
    throw scimErrors.invalidValue(`'${at}': only users can be members here (type '${String(item.type)}'); groups cannot contain groups`);
  }
  const tail = `Users/${value}`;
  if (typeof item.$ref === 'string' && item.$ref !== tail && !item.$ref.endsWith(`/${tail}`)) {
    throw scimErrors.invalidValue(`'${at}.$ref' ${excerpt(item.$ref)} does not name the user of its value ${excerpt(value)}`);
  }
  return { value };
}

const members = (attrs: Attrs, at: string): Attrs => {
  const list = attrs.members as Record<string, unknown>[] | undefined;
  if (list === undefined) return attrs;
  const seen = new Set<string>();
  const kept = list.map((m, i) => member('members', m, `${at}[${i}]`)).filter((m) => !seen.has(m.value as string) && seen.add(m.value as string));
  return { ...attrs, members: kept };
};

/** The writable attributes of a group: displayName, externalId, members as `{value}`. */
function attributesOf(g: GroupRecord, memberIds: readonly string[]): Attrs {
  return {
    displayName: g.body.displayName,
    ...(g.body.externalId === undefined ? {} : { externalId: g.body.externalId }),
    ...(memberIds.length === 0 ? {} : { members: memberIds.map((value) => ({ value })) }),
  };
}

function representation(scope: ScimScope, g: GroupRecord, memberIds: readonly string[], names: ReadonlyMap<string, string>): Resource {
  const { members: plain, ...rest } = attributesOf(g, memberIds);
  const display = (value: string) => (names.has(value) ? { display: names.get(value) } : {});
  return withMeta({
    schemas: [URN.group], id: g.id, ...rest,
    ...(plain === undefined ? {} : { members: memberIds.map((value) => ({ value, $ref: `${scope.base}/Users/${value}`, type: 'User', ...display(value) })) }),
  }, 'Group', g.createdAt, g.updatedAt, `${scope.base}/Groups/${g.id}`);
}

/** The representation, with the members' names looked up. */
async function represent(scope: ScimScope, g: GroupRecord, memberIds: readonly string[]): Promise<Resource> {
  return representation(scope, g, memberIds, await userNames(scope, memberIds));
}

async function load(scope: ScimScope, id: string): Promise<{ group: GroupRecord; members: readonly string[] }> {
  const group = await scope.ctx.storage.groups.get(scope.tenant, id);
  if (group === undefined) throw scimErrors.notFound(`no group with id ${excerpt(id)} in this tenant`);
  return { group, members: await scope.ctx.storage.groups.listMembers(scope.tenant, id) };
}

export async function getGroup(scope: ScimScope, id: string): Promise<Resource> {
  const { group, members: m } = await load(scope, id);
  return represent(scope, group, m);
}

/** Writes a group SCIM manages through the directory core (writeGroup), the admin API's own judge and writer. */
async function write(scope: ScimScope, id: string, attrs: Attrs, _before: readonly string[]): Promise<Resource> {
  const displayName = attrs.displayName as string;
  const wanted = ((attrs.members ?? []) as { value: string }[]).map((m) => m.value);
  const body = { displayName, ...(typeof attrs.externalId === 'string' ? { externalId: attrs.externalId } : {}), managedBy: SCIM_MANAGED_BY, manager: SCIM_MANAGED_BY };
  const { record, members: now } = await writeGroup(scope.ctx, scope.tenant, id, { body, members: wanted });
  return represent(scope, record, now);
}

async function changeable(scope: ScimScope, id: string, ifMatch: string | undefined) {
  const { group, members: m } = await load(scope, id);
  if (!mayChange(group.body.managedBy, SCIM_MANAGED_BY)) throw scimErrors.ownedElsewhere(ownedElsewhere('group', id, group.body.managedBy, SCIM_MANAGED_BY));
  const version = ((await represent(scope, group, m)).meta as { version: string }).version;
  if (!matchesIfMatch(ifMatch, version)) throw scimErrors.preconditionFailed(`group ${excerpt(id)} has changed since version ${excerpt(ifMatch ?? "")}`);
  return { group, members: m };
}

export async function createGroup(scope: ScimScope, body: unknown): Promise<Resource> {
  return write(scope, randomUUID(), members(resourceValue('Group', body, { maxItems: MAX_ITEMS }), 'members'), []);
}

export function replaceGroup(scope: ScimScope, id: string, body: unknown, ifMatch: string | undefined): Promise<Resource> {
  return oneAtATime(scope, 'Group', id, async () => {
    const attrs = members(resourceValue('Group', body, { maxItems: MAX_ITEMS }), 'members');
    const { members: before } = await changeable(scope, id, ifMatch);
    return write(scope, id, attrs, before);
  });
}

export function patchGroup(scope: ScimScope, id: string, message: unknown, ifMatch: string | undefined): Promise<Resource> {
  return oneAtATime(scope, 'Group', id, async () => {
    const { group, members: before } = await changeable(scope, id, ifMatch);
    const attrs = applyPatch('Group', attributesOf(group, before), message, { id, maxItems: MAX_ITEMS, item: member });
    return write(scope, id, members(attrs, 'members'), before);
  });
}

export function deleteGroup(scope: ScimScope, id: string, ifMatch: string | undefined): Promise<void> {
  return oneAtATime(scope, 'Group', id, async () => {
    const { group } = await changeable(scope, id, ifMatch);
    // Its members and assignments go with it; members left without access lose their grants there.
    await removeGroup(scope.ctx, scope.tenant, group);
  });
}

/** GET /Groups and POST /Groups/.search. A tenant's groups are few: they are read whole, then filtered. */
export async function queryGroups(scope: ScimScope, p: ListParams): Promise<Record<string, unknown>> {
  const { storage } = scope.ctx;
  const term = p.filter === undefined ? undefined : indexedTerm(p.filter.ast);
  const groups: GroupRecord[] = [];
  if (term?.attr === 'id') {
    const g = await storage.groups.get(scope.tenant, term.value);
    if (g !== undefined) groups.push(g);
  } else {
    for (let cursor: string | undefined, more = true; more;) {
      const page = await storage.groups.list(scope.tenant, { cursor, limit: 500 });
      groups.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      more = page.nextCursor !== null;
    }
  }
  const members = new Map<string, readonly string[]>();
  for (const g of groups) members.set(g.id, await storage.groups.listMembers(scope.tenant, g.id));
  const names = await userNames(scope, [...members.values()].flat());
  const matching: Resource[] = [];
  for (const g of groups) {
    const r = representation(scope, g, members.get(g.id)!, names);
    if (p.filter === undefined || p.filter.matches(r)) matching.push(r);
  }
  const sorted = sortResources('Group', matching, p);
  const from = p.startIndex - 1;
  return listResponse(sorted.slice(from, from + p.count).map((r) => project('Group', r, p)), sorted.length, p.startIndex);
}
