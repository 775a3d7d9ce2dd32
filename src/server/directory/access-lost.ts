/**
 * Who lost access to which application through an event of the log, against the directory as it is
 * when the event is read: the one reading behind the SSF transmitter's `session-revoked`
 * (ssf/access.ts) and the back-channel logout (backchannel/targets.ts). A person whose assignment
 * went but whom a group still lets in lost nothing.
 *
 * - `assignment.deleted` (`<application>/<user>`): that user at that application;
 * - `group_assignment.deleted` (`<application>/<group>`): each member at that application;
 * - `group.updated` that removed members: each removed member at each application the group is
 *   assigned to;
 * - `group.deleted`: each member at each application the group was assigned to (the event's
 *   `before` holds both: groups.ts writes them into it, since they are gone with the group).
 */
import type { EventView } from '../../contract/index.ts';
import type { Storage } from '../storage/types.ts';

type Reads = Pick<Storage, 'applications' | 'users' | 'groups'>;

/** The event types whose losses are read from the directory. */
export const ACCESS_EVENT_TYPES: ReadonlySet<string> = new Set(['assignment.deleted', 'group_assignment.deleted', 'group.updated', 'group.deleted']);

export interface LostAccess {
  readonly application: string;
  readonly user: string;
}

/** `<application>/<member>`: application names hold no slash, user and group ids may. */
export const pairOf = (name: string): [string, string] => {
  const i = name.indexOf('/');
  return [name.slice(0, i), name.slice(i + 1)];
};

const hasAccess = async (s: Reads, tenant: string, application: string, user: string): Promise<boolean> =>
  (await s.users.getAssignment(tenant, application, user)) !== undefined || s.groups.grantsAccess(tenant, application, user);

/** The applications `group` is assigned to now. */
export async function applicationsOfGroup(s: Pick<Storage, 'applications' | 'groups'>, tenant: string, group: string): Promise<string[]> {
  const out: string[] = [];
  for (let cursor: string | undefined, more = true; more;) {
    const page = await s.applications.list(tenant, { cursor, limit: 500 });
    for (const a of page.items) if ((await s.groups.getAssignment(tenant, a.name, group)) !== undefined) out.push(a.name);
    cursor = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }
  return out;
}

const listOf = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const before = (e: EventView, field: string) => listOf(e.changes.find((c) => c.field === field)?.before);

/** Each (application, user) whose access the event ended (none for other events). */
export async function accessLost(s: Reads, e: EventView): Promise<LostAccess[]> {
  const tenant = e.tenant;
  const lost: LostAccess[] = [];
  const check = async (applications: readonly string[], users: readonly string[]) => {
    for (const application of applications) {
      for (const user of users) if (!(await hasAccess(s, tenant, application, user))) lost.push({ application, user });
    }
  };
  switch (e.type) {
    case 'assignment.deleted': {
      const [application, user] = pairOf(e.object.name);
      await check([application], [user]);
      break;
    }
    case 'group_assignment.deleted': {
      const [application, group] = pairOf(e.object.name);
      await check([application], await s.groups.listMembers(tenant, group));
      break;
    }
    case 'group.updated': {
      const after = new Set(listOf(e.changes.find((c) => c.field === 'members')?.after));
      const removed = before(e, 'members').filter((u) => !after.has(u));
      if (removed.length > 0) await check(await applicationsOfGroup(s, tenant, e.object.name), removed);
      break;
    }
    case 'group.deleted':
      await check(before(e, 'applications'), before(e, 'members'));
      break;
    default:
      break;
  }
  return lost;
}
