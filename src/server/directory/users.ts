/**
 * The one writer of users. Every door that writes a user (the admin API's PUT, SCIM's create,
 * replace and PATCH; the tenant batch judges with the same rules in its own transaction) comes
 * here: the contract's rules through `judgeUser` (the named-manager rule, one email per tenant,
 * scopes lost or an account disabled ending grants in the same write), passwords hashed only through
 * the password pool (so hashing never starves sign-ins), and the write.
 *
 * Doors translate their wire format into a UserBody (SCIM: its primary email, active, displayName)
 * and the answer back; none runs a rule of its own.
 */
import type { Outcome, UserBody } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { passwordHashPool } from '../password-pool.ts';
import type { ScimUserRecord, UserRecord } from '../storage/types.ts';
import { judgePassword, judgeUser } from './rules.ts';
import { fieldChanges, managerOf } from '../../contract/index.ts';
import { PASSWORD_CHANGE, deleteEvent, putEvent, recordWith } from '../events/make.ts';

export interface UserWrite {
  readonly body: UserBody;
  /** Take over a user another manager keeps. */
  readonly force?: boolean;
  readonly dryRun?: boolean;
  /** A password to set now, whether or not the user has one (SCIM's `password`); `body.initialPassword` sets one only where none is. */
  readonly password?: string;
  /** SCIM's own record of the user, written with it in one transaction. */
  readonly scim?: Omit<ScimUserRecord, 'tenant' | 'userId'>;
}

export interface UserWritten {
  readonly outcome: Outcome;
  readonly changes: string[];
  /** The user as stored (for a dry run or no change: as it would be, or is). */
  readonly record: UserRecord;
}

export async function writeUser(ctx: ServerContext, tenant: string, id: string, w: UserWrite): Promise<UserWritten> {
  const s = ctx.storage;
  const before = await s.users.get(tenant, id);
  const d = judgeUser(id, w.body, before, await s.users.getByEmail(tenant, w.body.email), w.force === true);
  // The tenant's password policy, on whichever password this write sets.
  if (w.password !== undefined) judgePassword(await s.tenants.get(tenant), w.body.email, w.password, 'password');
  else if (d.setsPassword) judgePassword(await s.tenants.get(tenant), w.body.email, w.body.initialPassword!, 'initialPassword');
  const setsPassword = w.password !== undefined || d.setsPassword;
  const changes = w.password !== undefined && before !== undefined && !d.changes.includes('password') ? [...d.changes, 'password'] : d.changes;
  const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
  const now = Math.floor(Date.now() / 1000);
  const planned: UserRecord = before === undefined
    ? { tenant, id, body: d.stored, passwordHash: setsPassword ? 'to be set' : null, createdAt: now, updatedAt: now }
    : { ...before, body: d.stored };
  // SCIM's record changes with attributes the user record does not hold (name, title, ...): written even when the user is unchanged.
  if (w.dryRun === true || (outcome === 'unchanged' && w.scim === undefined)) return { outcome, changes, record: before ?? planned };
  const hash = setsPassword ? await passwordHashPool.hash(w.password ?? w.body.initialPassword!) : (before?.passwordHash ?? null);
  // SCIM's own attributes (name, title, ...) are told as `scim.<attribute>`.
  const scimChanges = w.scim === undefined ? [] : fieldChanges((await s.scim.getUser(tenant, id))?.scim?.resource, w.scim.resource)
    // What the user record holds too (active as disabled, displayName) is told once, as the record's.
    .filter((c) => !['schemas', 'meta', 'id', 'password', 'active', 'displayName'].includes(c.field)).map((c) => ({ ...c, field: `scim.${c.field}` }));
  const event = putEvent(tenant, 'user', id, before?.body, d.stored, managerOf(w.body), [...(setsPassword ? [PASSWORD_CHANGE] : []), ...scimChanges]);
  const record = await recordWith(ctx, [event], async () => w.scim === undefined
    ? s.users.put(tenant, id, d.stored, hash, { revokeArtifacts: d.revokeArtifacts })
    : (await s.scim.putUser(tenant, id, d.stored, hash, w.scim!, { revokeArtifacts: d.revokeArtifacts })).user);
  return { outcome, changes, record };
}

/**
 * The one remover of users (admin API DELETE, SCIM DELETE): with the user go its assignments,
 * memberships, sessions, tokens and factors, in one transaction with its event.
 */
export async function removeUser(ctx: ServerContext, tenant: string, before: UserRecord): Promise<boolean> {
  return recordWith(ctx, [deleteEvent(tenant, 'user', before.id, before.body)], () => ctx.storage.users.delete(tenant, before.id));
}
