/**
 * Who lost access to what through an event whose SETs depend on the directory as it is when the
 * event is read (the same reading the back-channel logout makes, backchannel/targets.ts): a person
 * whose assignment went but whom a group still lets in lost nothing, so no session-revoked.
 *
 * - `assignment.deleted` (`<application>/<user>`): the user, unless a group still gives access;
 * - `group_assignment.deleted` (`<application>/<group>`): each member left without access;
 * - `group.updated` that removed members: each removed member left without access to an
 *   application the group is assigned to.
 */
import type { EventView } from '../../contract/index.ts';
import type { Storage } from '../storage/types.ts';

type Reads = Pick<Storage, 'applications' | 'users' | 'groups'>;

/** The event types whose SETs need `lostAccess` first. */
export const LOOKUP_TYPES: ReadonlySet<string> = new Set(['assignment.deleted', 'group_assignment.deleted', 'group.updated']);

/** `<application>/<member>`: application names hold no slash, user and group ids may. */
export const pairOf = (name: string): [string, string] => {
  const i = name.indexOf('/');
  return [name.slice(0, i), name.slice(i + 1)];
};

const hasAccess = async (s: Reads, tenant: string, application: string, user: string): Promise<boolean> =>
  (await s.users.getAssignment(tenant, application, user)) !== undefined || s.groups.grantsAccess(tenant, application, user);

/** The applications `group` is assigned to. */
async function applicationsOf(s: Reads, tenant: string, group: string): Promise<string[]> {
  const out: string[] = [];
  for (let cursor: string | undefined, more = true; more;) {
    const page = await s.applications.list(tenant, { cursor, limit: 500 });
    for (const a of page.items) if ((await s.groups.getAssignment(tenant, a.name, group)) !== undefined) out.push(a.name);
    cursor = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }
  return out;
}

/** The users the event left without access they had (empty for other events). */
export async function lostAccess(s: Reads, e: EventView): Promise<readonly string[]> {
  const tenant = e.tenant;
  switch (e.type) {
    case 'assignment.deleted': {
      const [application, user] = pairOf(e.object.name);
      return (await hasAccess(s, tenant, application, user)) ? [] : [user];
    }
    case 'group_assignment.deleted': {
      const [application, group] = pairOf(e.object.name);
      const lost: string[] = [];
      for (const user of await s.groups.listMembers(tenant, group)) if (!(await hasAccess(s, tenant, application, user))) lost.push(user);
      return lost;
    }
    case 'group.updated': {
      const members = e.changes.find((c) => c.field === 'members');
      const before = Array.isArray(members?.before) ? (members.before as unknown[]).map(String) : [];
      const after = new Set(Array.isArray(members?.after) ? (members.after as unknown[]).map(String) : []);
      const removed = before.filter((u) => !after.has(u));
      if (removed.length === 0) return [];
      const applications = await applicationsOf(s, tenant, e.object.name);
      const lost: string[] = [];
      for (const user of removed) {
        for (const application of applications) {
          if (!(await hasAccess(s, tenant, application, user))) {
            lost.push(user);
            break;
          }
        }
      }
      return lost;
    }
    default:
      return [];
  }
}
