/**
 * The admin API's operations on groups and group assignments. PUT is declarative as elsewhere: a
 * group's PUT carries its full desired state, members included, and the server stores the
 * difference (so members SCIM adds meanwhile are not lost to a stale list in flight: they are only
 * removed when this PUT names the group without them).
 *
 * Ownership is the contract's one rule (`mayChange`): a group SCIM or the console manages is
 * changed only by them.
 */
import {
  RESERVED_TENANTS, changedFields, jsonEqual, mayChange, ownedElsewhere,
  type GroupAssignmentBody, type GroupBody, type Outcome, type PutResult,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { isUniqueViolation } from '../storage/_common.ts';
import type { ApplicationRecord, GroupAssignmentRecord, GroupRecord, Page, PageRequest } from '../storage/types.ts';

const iso = (epoch: number) => new Date(epoch * 1000).toISOString();
const now = () => Math.floor(Date.now() / 1000);

export const groupView = (r: GroupRecord, members: readonly string[]) => ({
  id: r.id, ...r.body, members: [...members], createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt),
});
export const groupSummaryView = (r: GroupRecord, memberCount: number) => ({
  id: r.id, ...r.body, memberCount, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt),
});
export const groupAssignmentView = (r: GroupAssignmentRecord) => ({ application: r.application, group: r.group, ...r.body, createdAt: iso(r.createdAt) });

/** Bytewise sorted and without repeats: how members are kept and compared. */
export const memberSet = (ids: Iterable<string>): string[] => [...new Set(ids)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

export class GroupAdmin {
  constructor(private readonly ctx: ServerContext) {}

  get #s() {
    return this.ctx.storage;
  }

  async #tenant(name: string): Promise<void> {
    if (RESERVED_TENANTS.includes(name)) throw errors.forbidden(`tenant '${name}' is reserved for the server itself`);
    if ((await this.#s.tenants.get(name)) === undefined) throw errors.notFound(`tenant '${name}' does not exist`);
  }

  async #group(tenant: string, id: string): Promise<GroupRecord> {
    await this.#tenant(tenant);
    const g = await this.#s.groups.get(tenant, id);
    if (g === undefined) throw errors.notFound(`group '${id}' does not exist in tenant '${tenant}'`);
    return g;
  }

  async #clientApp(tenant: string, application: string): Promise<ApplicationRecord> {
    const a = await this.#s.applications.get(tenant, application);
    if (a === undefined || a.body.kind === 'service') throw errors.notFound(`application '${application}' does not exist in tenant '${tenant}'`);
    if (a.body.kind === 'api') throw errors.invalidRequest(`application '${application}' is an api; groups are assigned to client applications`);
    return a;
  }

  async putGroup(tenant: string, id: string, body: GroupBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof groupView>>> {
    await this.#tenant(tenant);
    const { members: wanted, ...stored } = body;
    const members = memberSet(wanted);
    const before = await this.#s.groups.get(tenant, id);
    if (before !== undefined && !mayChange(before.body.managedBy, stored.managedBy)) {
      throw errors.conflict(ownedElsewhere('group', id, before.body.managedBy, stored.managedBy), 'managedBy');
    }
    const same = await this.#s.groups.getByDisplayName(tenant, stored.displayName);
    if (same !== undefined && same.id !== id) throw errors.conflict(`displayName '${stored.displayName}' is taken by another group of this tenant`, 'displayName');
    const problems: { path: string; message: string }[] = [];
    for (const m of members) {
      if (problems.length === 20) break;
      if ((await this.#s.users.get(tenant, m)) === undefined) problems.push({ path: `members[${wanted.indexOf(m)}]`, message: `user '${m}' does not exist in tenant '${tenant}'` });
    }
    if (problems.length > 0) throw errors.invalidRequest(problems[0]!.message, problems[0]!.path, problems);
    const current = before === undefined ? [] : await this.#s.groups.listMembers(tenant, id);
    const changes = changedFields(before?.body, stored);
    if (before === undefined ? members.length > 0 : !jsonEqual(current, members)) changes.push('members');
    changes.sort();
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: groupView(before ?? { tenant, id, body: stored, createdAt: now(), updatedAt: now() }, before === undefined ? members : current) };
    }
    const has = new Set(current);
    const keep = new Set(members);
    let rec: GroupRecord;
    try {
      rec = await this.#s.groups.put(tenant, id, stored, { add: members.filter((m) => !has.has(m)), remove: current.filter((m) => !keep.has(m)) });
    } catch (err) {
      if (isUniqueViolation(err)) throw errors.conflict(`displayName '${stored.displayName}' is taken by another group of this tenant`, 'displayName');
      throw err;
    }
    return { outcome, changes, resource: groupView(rec, await this.#s.groups.listMembers(tenant, id)) };
  }

  async getGroup(tenant: string, id: string) {
    const g = await this.#group(tenant, id);
    return groupView(g, await this.#s.groups.listMembers(tenant, id));
  }

  async listGroups(tenant: string, page: PageRequest): Promise<Page<ReturnType<typeof groupSummaryView>>> {
    await this.#tenant(tenant);
    const p = await this.#s.groups.list(tenant, page);
    const counts = await this.#s.groups.countMembers(tenant, p.items.map((g) => g.id));
    return { items: p.items.map((g) => groupSummaryView(g, counts.get(g.id) ?? 0)), nextCursor: p.nextCursor };
  }

  async deleteGroup(tenant: string, id: string, dryRun: boolean): Promise<void> {
    await this.#group(tenant, id);
    if (!dryRun) await this.#s.groups.delete(tenant, id);
  }

  async putGroupAssignment(tenant: string, application: string, group: string, body: GroupAssignmentBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof groupAssignmentView>>> {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    await this.#group(tenant, group);
    const before = await this.#s.groups.getAssignment(tenant, application, group);
    const changes = changedFields(before?.body, body);
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: groupAssignmentView(before ?? { tenant, application, group, body, createdAt: now() }) };
    }
    return { outcome, changes, resource: groupAssignmentView(await this.#s.groups.putAssignment(tenant, application, group, body)) };
  }

  async getGroupAssignment(tenant: string, application: string, group: string) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const a = await this.#s.groups.getAssignment(tenant, application, group);
    if (a === undefined) throw errors.notFound(`group '${group}' is not assigned to application '${application}'`);
    return groupAssignmentView(a);
  }

  async listGroupAssignments(tenant: string, application: string, page: PageRequest) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const p = await this.#s.groups.listAssignments(tenant, application, page);
    return { items: p.items.map(groupAssignmentView), nextCursor: p.nextCursor };
  }

  async deleteGroupAssignment(tenant: string, application: string, group: string, dryRun: boolean): Promise<void> {
    await this.getGroupAssignment(tenant, application, group);
    // Members left without access lose their grants and refresh tokens there, in the same transaction.
    if (!dryRun) await this.#s.groups.deleteAssignment(tenant, application, group);
  }
}
