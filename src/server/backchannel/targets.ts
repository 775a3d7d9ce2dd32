/**
 * Which logout tokens a revocation owes (OpenID Connect Back-Channel Logout 1.0), read from the
 * event log's event of it, against the directory as it is when the event is read:
 *
 * - an assignment or a group's assignment removed, members removed from a group, a group deleted:
 *   each application with a back-channel logout URI where a person lost access, that person (the
 *   directory's one reading: directory/access-lost.ts);
 * - `user.deleted`, and `user.updated` that disabled the user: every application of the tenant
 *   with a back-channel logout URI (a user's sessions are the applications' to know; a logout
 *   token for a user without one is ignored there);
 * - `application.deleted`: that application (its client id and URI from the event's `before`),
 *   each user the log shows signing in to it within a session's lifetime.
 *
 * Every token names the user (`sub`) and no session: the person's every session at the client
 * ends. A sign-out at the server names the session instead (`sid`, provider.ts).
 */
import { createHash } from 'node:crypto';
import type { EventView } from '../../contract/index.ts';
import { LIFETIMES } from '../config.ts';
import { ACCESS_EVENT_TYPES, accessLost } from '../directory/access-lost.ts';
import type { ApplicationRecord, LogoutDraft, Storage } from '../storage/types.ts';

type Reads = Pick<Storage, 'applications' | 'users' | 'groups' | 'events'>;

/** The event types that can owe logout tokens (the dispatcher reads only these). */
export const REVOCATION_EVENT_TYPES: ReadonlySet<string> = new Set([...ACCESS_EVENT_TYPES, 'user.deleted', 'user.updated', 'application.deleted']);

/** Sign-ins read per deleted application at most (pages of 500). */
const MAX_SIGN_IN_PAGES = 20;

interface Client {
  readonly clientId: string;
  readonly uri: string;
  readonly application: string;
}

const clientOf = (a: ApplicationRecord | undefined): Client | undefined => {
  const b = a?.body as { clientId?: string; backchannelLogoutUri?: string } | undefined;
  return a === undefined || b?.clientId === undefined || b.backchannelLogoutUri === undefined ? undefined : { clientId: b.clientId, uri: b.backchannelLogoutUri, application: a.name };
};

async function backchannelClients(s: Reads, tenant: string): Promise<Client[]> {
  const out: Client[] = [];
  for (let cursor: string | undefined, more = true; more; ) {
    const page = await s.applications.list(tenant, { cursor, limit: 500 });
    for (const a of page.items) {
      const c = clientOf(a);
      if (c !== undefined) out.push(c);
    }
    cursor = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }
  return out;
}

const change = (e: EventView, field: string) => e.changes.find((c) => c.field === field);

/** The users the log shows signing in to `clientId` since `sinceMs`. */
async function signedInTo(s: Reads, tenant: string, clientId: string, sinceMs: number): Promise<Set<string>> {
  const users = new Set<string>();
  let cursor: string | undefined;
  for (let i = 0; i < MAX_SIGN_IN_PAGES; i++) {
    const page = await s.events.list(tenant, { types: ['login.success'], sinceMs }, { cursor, limit: 500 });
    for (const { event } of page.items) if (event.details?.client === clientId && event.object.kind === 'user') users.add(event.object.name);
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  return users;
}

/** What the event's revocation owes, as drafts (`jti` derived from the event, the client and the user: the same on a retry). */
export async function logoutTargets(s: Reads, event: EventView, nowMs: number): Promise<LogoutDraft[]> {
  const tenant = event.tenant;
  const pairs: { client: Client; sub: string }[] = [];
  switch (event.type) {
    case 'assignment.deleted':
    case 'group_assignment.deleted':
    case 'group.updated':
    case 'group.deleted': {
      const clients = new Map<string, Client | undefined>();
      for (const { application, user } of await accessLost(s, event)) {
        if (!clients.has(application)) clients.set(application, clientOf(await s.applications.get(tenant, application)));
        const client = clients.get(application);
        if (client !== undefined) pairs.push({ client, sub: user });
      }
      break;
    }
    case 'user.updated':
      if (change(event, 'disabled')?.after !== true) break;
    // falls through: a disabled user's sessions end as a deleted one's
    case 'user.deleted':
      for (const client of await backchannelClients(s, tenant)) pairs.push({ client, sub: event.object.name });
      break;
    case 'application.deleted': {
      const clientId = change(event, 'clientId')?.before;
      const uri = change(event, 'backchannelLogoutUri')?.before;
      if (typeof clientId !== 'string' || typeof uri !== 'string') break;
      const client = { clientId, uri, application: event.object.name };
      for (const user of await signedInTo(s, tenant, clientId, nowMs - LIFETIMES.Session * 1000)) pairs.push({ client, sub: user });
      break;
    }
    default:
      break;
  }
  return pairs.map(({ client, sub }) => ({
    tenant, clientId: client.clientId, uri: client.uri, sub,
    jti: createHash('sha256').update(`${event.id}\u0000${client.clientId}\u0000${sub}`).digest('base64url').slice(0, 32),
  }));
}
