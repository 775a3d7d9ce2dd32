/**
 * Named managers: who keeps an object the way it is (Kubernetes server-side apply's field managers,
 * per object). Every write says who makes it, each object records one manager, and a write by
 * another manager that would change the object is a conflict that names the owner and the fields,
 * in the same words at every door, unless the writer forces it (a takeover, which plan and preview
 * show as such). Writing what an object already is changes nothing and takes nothing: two managers
 * may declare the same object as long as they agree.
 *
 * - `pulumi:<project>/<stack>`: a Pulumi stack (its objects also carry `stack`, as before);
 * - `apply:<name>`: `idforge apply --manager <name>` (default `apply:default`);
 * - `console`: the admin console (the administrator who acted is the actor, not the manager);
 * - `scim`: an identity provider through /scim/v2;
 * - none: made by hand through the admin API. Such an object is anyone's to adopt; writing a managed
 *   object by hand is a conflict like any other, unless forced.
 *
 * Objects from before managers were named say who made them with `managedBy` (and `stack`):
 * `managerOf` reads those as the manager they meant.
 */
import { MANAGED_BY, MANAGED_BY_CONSOLE } from './names.ts';

/** The `manager` of a body. */
export const MANAGER = /^(?:pulumi:[A-Za-z0-9._-]{1,100}\/[A-Za-z0-9._-]{1,100}|apply:[A-Za-z0-9._-]{1,64}|console|scim)$/;
export const MANAGER_RULE = "must be pulumi:<project>/<stack>, apply:<name> (1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'), console or scim";

/** `idforge apply`'s manager name when --manager is not given. */
export const DEFAULT_APPLY_MANAGER = 'default';
export const applyManager = (name: string = DEFAULT_APPLY_MANAGER): string => `apply:${name}`;
export const pulumiManager = (projectStack: string): string => `pulumi:${projectStack}`;

interface Marks {
  readonly manager?: string | undefined;
  readonly managedBy?: string | undefined;
  readonly stack?: string | undefined;
}

/** The manager a body names: its `manager`, or what its `managedBy` (and `stack`) meant before managers were named. */
export function managerOf(body: Marks | undefined): string | undefined {
  if (body === undefined) return undefined;
  if (typeof body.manager === 'string') return body.manager;
  if (body.managedBy === MANAGED_BY) return typeof body.stack === 'string' ? pulumiManager(body.stack) : applyManager();
  if (body.managedBy === MANAGED_BY_CONSOLE || body.managedBy === 'scim') return body.managedBy;
  return undefined;
}

/** The door a manager writes through, as `managedBy` says it: `idforge` for the model's (Pulumi and apply). */
export function doorOf(manager: string | undefined): string | undefined {
  if (manager === undefined) return undefined;
  if (manager.startsWith('pulumi:') || manager.startsWith('apply:')) return MANAGED_BY;
  return manager;
}

/** The Pulumi stack (`project/stack`) a manager is, if it is one. */
export const stackOf = (manager: string | undefined): string | undefined => (manager?.startsWith('pulumi:') ? manager.slice('pulumi:'.length) : undefined);

/** `the Pulumi stack acme/dev`, `idforge apply (manager 'default')`, ... */
export function managerWords(manager: string | undefined): string {
  if (manager === undefined) return 'nobody (made by hand through the admin API)';
  if (manager.startsWith('pulumi:')) return `the Pulumi stack ${manager.slice('pulumi:'.length)}`;
  if (manager.startsWith('apply:')) return `idforge apply (manager '${manager.slice('apply:'.length)}')`;
  if (manager === MANAGED_BY_CONSOLE) return 'the admin console';
  if (manager === 'scim') return 'SCIM (an identity provider provisions it)';
  return `'${manager}'`;
}

/** How to take an object over, for the conflict message of each kind of writer. */
function howToForce(writer: string | undefined): string {
  if (writer?.startsWith('pulumi:')) return "set the stack's config idforge:adopt to true for one up to take it over";
  if (writer?.startsWith('apply:')) return 'run idforge apply with --force-conflicts to take it over';
  if (writer === undefined) return 'send the write again with force=true to take it over';
  return `${managerWords(writer)} never takes over what another manager keeps`;
}

/** The object kinds managers manage, as messages name them. */
export type ManagedKind = 'tenant' | 'application' | 'user' | 'assignment' | 'group' | 'group assignment' | 'webhook';

/**
 * Why a write by `writer` that changes `fields` of an object `owner` manages is refused; undefined
 * when it may go ahead (same manager, no manager yet, nothing changes, or forced). The one rule and
 * the one message of every door.
 */
export function managerConflict(kind: ManagedKind, name: string, owner: string | undefined, writer: string | undefined, fields: readonly string[], force: boolean): string | undefined {
  if (force || fields.length === 0 || owner === undefined || owner === writer) return undefined;
  // Another door's own objects are never taken over by force through a door that cannot be forced.
  return `${kind} '${name}' is managed by ${managerWords(owner)}; ${managerWords(writer)} would change ${fields.join(', ')}. ` +
    `Change it where it is managed, or ${howToForce(writer)}`;
}

/** The fields of a body that say who manages the object, not what it is. */
export const MANAGER_FIELDS: ReadonlySet<string> = new Set(['manager', 'managedBy', 'stack']);

/**
 * The body to store for a write: the manager it is written by (the writer, when it changes the
 * object or makes it, or forced; else the owner stays), with `managedBy` and `stack` said the way
 * readers from before managers expect.
 */
export function withManager<B extends Marks>(body: B, manager: string | undefined): B {
  const { manager: _m, managedBy: _d, stack: _s, ...rest } = body;
  const door = doorOf(manager);
  const stack = stackOf(manager);
  return { ...rest, ...(manager === undefined ? {} : { manager }), ...(door === undefined ? {} : { managedBy: door }), ...(stack === undefined ? {} : { stack }) } as unknown as B;
}
