/**
 * Names and reserved values of the admin API and the model: one definition each, used by every door
 * (model loader, admin API, Pulumi providers, console, SCIM).
 */

/** Lowercase DNS label, 1..63 ASCII chars: a tenant is a subdomain. */
export const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Names of applications, scopes, groups, providers: safe in URLs and file names. */
export const NAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
/** Scope tokens (RFC 6749 §3.3 NQCHAR minus space), kept simple on purpose. */
export const SCOPE = /^[A-Za-z0-9._:/-]{1,128}$/;
/** Opaque user ids (and client ids): printable ASCII without spaces or slashes, so they fit in a URL path segment. */
export const USER_ID = /^[A-Za-z0-9._@+~-]{1,128}$/;

/** What each pattern means, in the words every door uses when a name does not match. */
export const NAME_RULES = {
  dnsLabel: 'must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters',
  name: 'must be 1 to 64 characters of a-z, 0-9, ".", "_" or "-", starting and ending with a letter or digit',
  scope: 'must be a scope token: 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":", "/" or "-"',
  userId: 'must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", "@", "+", "~" or "-"',
} as const;

/** Marks objects that idforge created; only these are ever deleted by `idforge apply`. */
export const MANAGED_BY = 'idforge';
/**
 * Marks objects made in the admin console. `idforge plan` reports them as made outside Git and
 * deletes them only when asked (`--allow-delete-console`); the console edits only objects not
 * marked `idforge` (those are Git's: the console proposes a change to the model instead).
 */
export const MANAGED_BY_CONSOLE = 'console';

/**
 * What idforge does with objects in a tenant it manages that the model does not declare (made by
 * hand through the admin API, or left behind): `remove` them (the default: an undeclared user or
 * assignment is a way in nobody reviewed), `report` them as drift without removing them, or `keep`
 * them silently.
 */
export const UNMANAGED_POLICIES = ['remove', 'report', 'keep'] as const;
export type UnmanagedPolicy = (typeof UNMANAGED_POLICIES)[number];

/** Owners whose objects are never removed as drift, only reported: another door manages them. */
export const OTHER_DOORS: readonly string[] = [MANAGED_BY_CONSOLE, 'scim'];

/**
 * Whether an undeclared object may be removed under the `remove` policy: only what nobody manages
 * (made by hand). What a manager keeps (another stack, `idforge apply`, the console, SCIM) is
 * reported, never removed (src/contract/managers.ts).
 */
export const removableDrift = (object: { readonly managedBy?: unknown; readonly stack?: unknown; readonly manager?: unknown }): boolean =>
  typeof object.manager !== 'string' && typeof object.managedBy !== 'string';

/** The tenant that issues admin tokens. Reserved: no model may declare it and the admin API refuses to touch it. */
export const SYSTEM_TENANT = 'system';
/** Tenant names no model or admin call may use. */
export const RESERVED_TENANTS: readonly string[] = [SYSTEM_TENANT];

/**
 * Names a new tenant (made or renamed) may not take, besides the system tenant's. A tenant is a host
 * name people type and trust: `admin.<base>` and `www.<base>` read as the operator's own, and
 * `localhost.<base>` is special to resolvers (RFC 6761 §6.3).
 */
export const RESERVED_TENANT_NAMES: readonly string[] = [SYSTEM_TENANT, 'admin', 'administrator', 'localhost', 'www', 'root', 'idforge'];

/**
 * The one rule for the name of a new tenant, run by the model loader, the admin API (create, batch,
 * rename) and every other door: a DNS label, not reserved, and not a label with hyphens in its third
 * and fourth characters (RFC 5891 §4.2.3.1 reserves those: `xn--` labels are punycoded Unicode,
 * whose look-alikes of other tenants' names are a phishing tool). Undefined when the name may be used.
 */
export function tenantNameProblem(name: string): { readonly code: string; readonly message: string } | undefined {
  if (!DNS_LABEL.test(name)) return { code: 'invalid-name', message: `tenant name ${NAME_RULES.dnsLabel}` };
  if (name === SYSTEM_TENANT) return { code: 'reserved-name', message: `tenant name '${name}' is reserved for the server's own tenant, which issues admin tokens: choose another name` };
  if (RESERVED_TENANT_NAMES.includes(name)) return { code: 'reserved-name', message: `tenant name '${name}' is reserved: it would read as the operator's own host or is special to resolvers; choose another name` };
  if (name.length >= 4 && name[2] === '-' && name[3] === '-') {
    return { code: 'reserved-name', message: `tenant name '${name}' has hyphens in its third and fourth characters, which DNS reserves for encoded labels such as xn-- (RFC 5891): choose another name` };
  }
  return undefined;
}

/** Audience (resource indicator) of admin API tokens. Port-independent on purpose. */
export const ADMIN_AUDIENCE = 'urn:idforge:admin-api';
/** The scope an admin token must carry; also the contract's administrator scope checked against `scp`. */
export const ADMIN_SCOPE = 'admin';

/**
 * Scopes every tenant knows without defining them. `offline` asks for refresh tokens (the contract's
 * name for the self-hosted server shown).
 */
export const BUILTIN_SCOPES: readonly string[] = ['openid', 'profile', 'email', 'offline'];
