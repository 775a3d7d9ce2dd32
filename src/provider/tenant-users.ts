/**
 * Users as the Tenant resource (tenant.ts) holds them: keyed by user id, each the body `idforge
 * apply` sends, so a preview shows each user's change (`users["u-bob"].email`) while the server gets
 * the tenant's one batch, one request and one transaction whatever their number.
 *
 * Initial passwords are a separate secret input, sent only with a user the server does not have
 * yet: the server hashes them, nothing can read them back, and changing one later does not reset a
 * password that the user may have changed since. A user being created needs one when the model
 * names one; the preview fails for those users, and no one else.
 */
import type * as pulumi from '@pulumi/pulumi';
import type { UserBody } from '../contract/index.ts';
import { jsonEqual } from './_common.ts';

export type UserSpecBody = Omit<UserBody, 'initialPassword'>;

/** Users that are about to be created (`created`) without the initial password the model gives them. */
export function missingForNewUsers(created: Iterable<string>, news: { readonly users: Record<string, unknown>; readonly missingPasswords?: Record<string, string> | undefined }): { property: string; reason: string }[] {
  const isNew = new Set(created);
  return Object.entries(news.missingPasswords ?? {})
    .filter(([id]) => id in news.users && isNew.has(id))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, from]) => ({ property: `users[${JSON.stringify(id)}]`, reason: `the user is created with an initial password, and it is missing: set ${from}` }));
}

/** Per-entry plan between two user maps: pure, so the preview and the update agree. */
export function userChanges(
  olds: Record<string, UserSpecBody>,
  news: Record<string, UserSpecBody>,
): { readonly add: string[]; readonly change: string[]; readonly remove: string[] } {
  const add = Object.keys(news).filter((id) => !(id in olds)).sort();
  const change = Object.keys(news).filter((id) => id in olds && !jsonEqual(olds[id], news[id])).sort();
  const remove = Object.keys(olds).filter((id) => !(id in news)).sort();
  return { add, change, remove };
}

/**
 * The provider of the TenantUsers resources of stacks deployed before issue 23, kept for their
 * state's shell (it calls `tenantUsersProvider` by name): the first `up` with this version declares
 * the users in their Tenant resource and the engine drops these; their delete hands the users over.
 */
export const tenantUsersProvider: Required<Omit<pulumi.dynamic.ResourceProvider, 'configure'>> = {
  async check(_olds, news) {
    return { inputs: news };
  },
  async diff() {
    return { changes: false };
  },
  async create() {
    throw new Error('TenantUsers resources are no longer made: a Tenant resource holds its users (idforge issue 23)');
  },
  async read(id, props) {
    return { id, props };
  },
  async update(_id, olds) {
    return { outs: olds };
  },
  async delete() {
    // Handed over to the tenant's resource.
  },
};
