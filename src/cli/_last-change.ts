/**
 * What `idforge plan` says beside each object it would change or delete: the change that last made
 * it what it is, read from the server's event log (src/contract/events.ts): the Git commit (and
 * branch) when the model made it, else the manager and who (the console's administrator, a SCIM
 * token, a hand-made admin API call). A reviewer sees which commit's change this plan undoes or
 * builds on, and changes made outside Git stand out.
 */
import { mapLimit, type AdminClient } from '../admin-client/index.ts';
import { EVENT_TYPES, managerWords, type EventView } from '../contract/index.ts';
import type { PlannedChange } from './_planned-change.ts';

/** The events that make an object what it is (a deletion's event is of an object no longer there). */
const CHANGE_VERBS = ['created', 'updated', 'renamed'] as const;

/** At most this many objects are looked up (one request each); a larger plan names the rest without. */
const MAX_LOOKUPS = 200;

/** The event log's name of a planned change's object, `kind:name`. */
function objectOf(c: PlannedChange): string | undefined {
  const r = c.ref as { tenant: string; application?: string; user?: string; group?: string; webhook?: string };
  switch (c.kind) {
    case 'tenant': return `tenant:${r.tenant}`;
    case 'application': return `application:${r.application}`;
    case 'user': return `user:${r.user}`;
    case 'assignment': return `assignment:${r.application}/${r.user}`;
    case 'group assignment': return `group_assignment:${r.application}/${r.group}`;
    case 'webhook': return `webhook:${r.webhook}`;
    default: return undefined;
  }
}

/** The last change of each object the plan updates or deletes, by the change's name (`PlannedChange.name`). */
export async function lastChanges(client: AdminClient, changes: readonly PlannedChange[]): Promise<ReadonlyMap<string, EventView>> {
  const wanted = changes.filter((c) => c.op === 'update' || c.op === 'delete').slice(0, MAX_LOOKUPS);
  const found = await mapLimit(wanted, 8, async (c) => {
    const object = objectOf(c);
    if (object === undefined) return undefined;
    const kind = object.slice(0, object.indexOf(':'));
    try {
      const page = await client.call('listEvents', { tenant: c.ref.tenant }, {
        query: { object, type: CHANGE_VERBS.map((v) => `${kind}.${v}`).filter((t) => (EVENT_TYPES as readonly string[]).includes(t)).join(','), order: 'desc', limit: 1 },
      });
      return page.items[0] === undefined ? undefined : ([c.name, page.items[0]] as const);
    } catch {
      // A server from before the event log: plans as before, without the names.
      return undefined;
    }
  });
  return new Map(found.filter((x) => x !== undefined));
}

/** `last changed by 0123456789ab on main, 2026-01-31` or `last changed by the admin console (u-alice), ...`. */
export function lastChangeWords(e: EventView): string {
  const by = e.actor.git !== undefined
    ? `${e.actor.git.commit.slice(0, 12)}${e.actor.git.branch === undefined ? '' : ` on ${e.actor.git.branch}`}`
    : `${managerWords(e.actor.manager)}${e.actor.who === undefined ? '' : ` (${e.actor.who})`}`;
  return `last changed by ${by}, ${e.time.slice(0, 10)}`;
}
