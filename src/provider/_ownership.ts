/**
 * Preview time: users the model declares that another door manages on the live server (an identity
 * provider through SCIM, the admin console). The server would refuse them in the `up`; saying so in
 * `check` fails the preview already, at the user's property, in the contract's words.
 *
 * A server that cannot be asked (not deployed yet, down, its credentials file not written) has
 * nothing to say: the `up` then meets the server's own refusal.
 */
import { MANAGED_BY, mayChange, ownedElsewhere } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { isUnknown } from './_common.ts';

export async function ownershipFailures(connection: AdminConnection, tenant: string, userIds: readonly string[]): Promise<{ property: string; reason: string }[]> {
  if (userIds.length === 0 || isUnknown(connection) || isUnknown(tenant)) return [];
  const { AdminClient, AdminApiError } = await import('../admin-client/index.ts');
  let live;
  try {
    live = (await new AdminClient(connection).listAll('listUsers', { tenant })) ?? [];
  } catch (err) {
    if (err instanceof AdminApiError && err.status === 0) return [];
    throw err;
  }
  const owners = new Map(live.map((u) => [u.id, u.managedBy]));
  return [...userIds].sort()
    .filter((id) => owners.has(id) && !mayChange(owners.get(id), MANAGED_BY))
    .map((id) => ({ property: `users[${JSON.stringify(id)}]`, reason: ownedElsewhere('user', id, owners.get(id), MANAGED_BY) }));
}
