/**
 * The admin API's operations on groups and group assignments. PUT is declarative as elsewhere: a
 * group's PUT carries its full desired state, members included, and the server stores the
 * difference (so members SCIM adds meanwhile are not lost to a stale list in flight: they are only
 * removed when this PUT names the group without them).
 *
 * Writes go through the directory core (directory/groups.ts), the same judge and writer as SCIM's.
 */
import {
  RESERVED_TENANTS,
  type GroupAssignmentBody, type GroupBody, type Outcome, type PutResult,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { removeGroup, writeGroup } from '../directory/groups.ts';
import { managerOf } from '../../contract/index.ts';
import { deleteEvent, pairName, putEvent, recordWith } from '../events/make.ts';
import { judgeManaged } from '../directory/rules.ts';
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

export { memberSet } from '../directory/groups.ts';

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

  async putGroup(tenant: string, id: string, body: GroupBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof groupView>>> {
    await this.#tenant(tenant);
    const { members, ...rest } = body;
    const { outcome, changes, record, members: now } = await writeGroup(this.ctx, tenant, id, { body: rest, members, dryRun, force });
    return { outcome, changes, resource: groupView(record, now) };
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
    const before = await this.#group(tenant, id);
    if (!dryRun) await removeGroup(this.ctx, tenant, before);
  }

  async putGroupAssignment(tenant: string, application: string, group: string, body: GroupAssignmentBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof groupAssignmentView>>> {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    await this.#group(tenant, group);
    const before = await this.#s.groups.getAssignment(tenant, application, group);
    const { stored, changes } = judgeManaged('group assignment', `${application}/${group}`, body, before?.body, force);
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: groupAssignmentView(before ?? { tenant, application, group, body: stored, createdAt: now() }) };
    }
    const event = putEvent(tenant, 'group_assignment', pairName(application, group), before?.body, stored, managerOf(body));
    return { outcome, changes, resource: groupAssignmentView(await recordWith(this.ctx, [event], () => this.#s.groups.putAssignment(tenant, application, group, stored))) };
  }

  async getGroupAssignment(tenant: string, application: string, group: string) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const a = await this.#s.groups.getAssignment(tenant, application, group);
    if (a === undefined) throw errors.notFound(`group '${group}' is not assigned to application '${application}'`);
    return groupAssignmentView(a);
  }

  /** Every client application's group assignments, in one answer (plan asks once per tenant). */
  async listTenantGroupAssignments(tenant: string) {
    await this.#tenant(tenant);
    const out: ReturnType<typeof groupAssignmentView>[] = [];
    const apps = await this.#s.applications.list(tenant, { cursor: undefined, limit: 10_000 });
    for (const a of apps.items) {
      if (a.body.kind === 'api' || a.body.kind === 'service') continue;
      let cursor: string | undefined;
      do {
        const p = await this.#s.groups.listAssignments(tenant, a.name, { cursor, limit: 500 });
        out.push(...p.items.map(groupAssignmentView));
        cursor = p.nextCursor ?? undefined;
      } while (cursor !== undefined);
    }
    return out;
  }

  async listGroupAssignments(tenant: string, application: string, page: PageRequest) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const p = await this.#s.groups.listAssignments(tenant, application, page);
    return { items: p.items.map(groupAssignmentView), nextCursor: p.nextCursor };
  }

  async deleteGroupAssignment(tenant: string, application: string, group: string, dryRun: boolean): Promise<void> {
    const { application: _a, group: _g, createdAt: _c, ...before } = await this.getGroupAssignment(tenant, application, group);
    // Members left without access lose their grants and refresh tokens there, in the same transaction.
    if (!dryRun) await recordWith(this.ctx, [deleteEvent(tenant, 'group_assignment', pairName(application, group), before)], () => this.#s.groups.deleteAssignment(tenant, application, group));
  }
}
