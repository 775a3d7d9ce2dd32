/**
 * Who lost access through an event whose SETs depend on the directory as it is when the event is
 * read: the directory's one reading (directory/access-lost.ts), which the back-channel logout makes
 * too. A person whose assignment went but whom a group still lets in lost nothing, so no
 * session-revoked.
 */
import type { EventView } from '../../contract/index.ts';
import { ACCESS_EVENT_TYPES, accessLost } from '../directory/access-lost.ts';
import type { Storage } from '../storage/types.ts';

export { pairOf } from '../directory/access-lost.ts';

/** The event types whose SETs need `lostAccess` first. */
export const LOOKUP_TYPES: ReadonlySet<string> = ACCESS_EVENT_TYPES;

/** The users the event left without access they had, each once (empty for other events). */
export async function lostAccess(s: Pick<Storage, 'applications' | 'users' | 'groups'>, e: EventView): Promise<readonly string[]> {
  return [...new Set((await accessLost(s, e)).map((l) => l.user))];
}
