/** What a SCIM request works in: the server, the tenant, and the tenant's SCIM base URL. */
import type { ServerContext } from '../_context.ts';
import { KeyedLocks } from '../storage/_keyed-locks.ts';

export interface ScimScope {
  readonly ctx: ServerContext;
  readonly tenant: string;
  /** `http://acme.localhost:9080/scim/v2`: where `meta.location` and `$ref` point. */
  readonly base: string;
}

/**
 * Changes of one resource through this process, one at a time: a conditional change (If-Match)
 * checks the version and writes without another change of the same resource in between. Group
 * memberships are stored as differences, so changes through other replicas never lose members
 * either; between replicas, If-Match is checked against the version read just before the write.
 */
const locks = new KeyedLocks();
export function oneAtATime<T>(scope: ScimScope, kind: 'User' | 'Group', id: string, fn: () => Promise<T>): Promise<T> {
  return locks.hold([`${scope.tenant}\u0000${kind}\u0000${id}`], fn);
}

export { isUniqueViolation } from '../storage/_common.ts';
