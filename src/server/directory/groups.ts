/**
 * The one judge and writer of groups, for the admin API's PUT and SCIM's create, replace and PATCH:
 * the named-manager rule (a group SCIM keeps changes only through SCIM, whatever the writer forces),
 * a displayName unique in the tenant without regard to case, members that are users of the tenant,
 * and the write of the difference (members another door adds meanwhile are not lost to a stale list:
 * they go only when a write names the group without them).
 */
import { excerpt, jsonEqual, mayChange, ownedElsewhere, type GroupBody, type Outcome } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { isUniqueViolation } from '../storage/_common.ts';
import type { GroupRecord } from '../storage/types.ts';
import { judgeManaged } from './rules.ts';
import { managerOf } from '../../contract/index.ts';
import { deleteEvent, putEvent, recordWith } from '../events/make.ts';
import { applicationsOfGroup } from './access-lost.ts';

/** Bytewise sorted and without repeats: how members are kept and compared. */
export const memberSet = (ids: Iterable<string>): string[] => [...new Set(ids)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

export interface GroupWrite {
  readonly body: Omit<GroupBody, 'members'>;
  /** The members wanted, in the order the request listed them (for the paths of refusals). */
  readonly members: readonly string[];
  readonly force?: boolean;
  readonly dryRun?: boolean;
}

export interface GroupWritten {
  readonly outcome: Outcome;
  readonly changes: string[];
  readonly record: GroupRecord;
  readonly members: readonly string[];
}

export async function writeGroup(ctx: ServerContext, tenant: string, id: string, w: GroupWrite): Promise<GroupWritten> {
  const s = ctx.storage;
  const members = memberSet(w.members);
  const before = await s.groups.get(tenant, id);
  // Another door's group (SCIM's, the console's) is theirs: refused in the same words at every door.
  if (before !== undefined && !mayChange(before.body.managedBy, w.body.managedBy) && (before.body.managedBy === 'scim' || w.body.managedBy === 'scim' || w.force !== true)) {
    throw errors.conflict(ownedElsewhere('group', id, before.body.managedBy, w.body.managedBy), 'managedBy');
  }
  const same = await s.groups.getByDisplayName(tenant, w.body.displayName);
  if (same !== undefined && same.id !== id) throw errors.conflict(`displayName ${excerpt(w.body.displayName)} is taken by another group of this tenant`, 'displayName');
  const current = before === undefined ? [] : await s.groups.listMembers(tenant, id);
  const had = new Set(current);
  const problems: { path: string; message: string }[] = [];
  for (const m of members) {
    if (problems.length === 20) break;
    if (!had.has(m) && (await s.users.get(tenant, m)) === undefined) problems.push({ path: `members[${w.members.indexOf(m)}]`, message: `member ${excerpt(m)} is not a user of this tenant` });
  }
  if (problems.length > 0) throw errors.invalidRequest(problems[0]!.message, problems[0]!.path, problems);
  const judged = judgeManaged('group', id, w.body, before?.body, w.force === true);
  const changes = [...judged.changes];
  if (before === undefined ? members.length > 0 : !jsonEqual(current, members)) changes.push('members');
  changes.sort();
  const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
  const now = Math.floor(Date.now() / 1000);
  if (w.dryRun === true || outcome === 'unchanged') {
    return { outcome, changes, record: before ?? { tenant, id, body: judged.stored, createdAt: now, updatedAt: now }, members: before === undefined ? members : current };
  }
  const keep = new Set(members);
  try {
    const event = putEvent(tenant, 'group', id, before === undefined ? undefined : { ...before.body, members: current }, { ...judged.stored, members }, managerOf(w.body));
    const record = await recordWith(ctx, [event], () => s.groups.put(tenant, id, judged.stored, { add: members.filter((m) => !had.has(m)), remove: current.filter((m) => !keep.has(m)) }));
    return { outcome, changes, record, members: await s.groups.listMembers(tenant, id) };
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict(`displayName ${excerpt(w.body.displayName)} is taken by another group of this tenant`, 'displayName');
    throw err;
  }
}

/**
 * The one remover of groups (admin API DELETE, SCIM DELETE): members and assignments go with it, and
 * members left without access lose their grants there, in one transaction with its event.
 */
export async function removeGroup(ctx: ServerContext, tenant: string, before: GroupRecord): Promise<boolean> {
  // Its members and the applications it was assigned to go with it: the event keeps them, so the
  // revocations read from the log (SSF, back-channel logout) know whom it left without access where.
  const members = await ctx.storage.groups.listMembers(tenant, before.id);
  const applications = await applicationsOfGroup(ctx.storage, tenant, before.id);
  return recordWith(ctx, [deleteEvent(tenant, 'group', before.id, { ...before.body, members: [...members], applications })], () => ctx.storage.groups.delete(tenant, before.id));
}
