/**
 * The names SCIM shows for users where another resource refers to them: a group member's `display`
 * and a manager's `displayName` (both read-only, RFC 7643 §2.4 and §4.3). Taken from the user as it
 * is now, not from what a client once sent: a rename shows everywhere at once.
 */
import type { UserWithScim } from '../storage/types.ts';
import type { ScimScope } from './_scope.ts';
import { attributesOf, findAttr, flatten, nest, type Attr, type ResourceKind } from './_schema.ts';

/** Up to this many users are looked up one by one; more, and the tenant's users are read a thousand at a time. */
const POINT_LOOKUPS = 200;
const SCAN_BATCH = 1000;

/** A user's name for others to show: displayName, else userName (SCIM's users), else the email. */
const nameOf = (u: UserWithScim): string => u.user.body.displayName ?? u.scim?.userName ?? u.user.body.email;

/** Per user id of the tenant, its name; ids that name no user of the tenant are absent. */
export async function userNames(scope: ScimScope, ids: Iterable<string>): Promise<Map<string, string>> {
  const { storage } = scope.ctx;
  const wanted = new Set(ids);
  const out = new Map<string, string>();
  if (wanted.size <= POINT_LOOKUPS) {
    for (const id of wanted) {
      const u = await storage.scim.getUser(scope.tenant, id);
      if (u !== undefined) out.set(id, nameOf(u));
    }
    return out;
  }
  for (let offset = 0; ; offset += SCAN_BATCH) {
    const batch = await storage.scim.listUsers(scope.tenant, offset, SCAN_BATCH);
    for (const u of batch) if (wanted.has(u.user.id)) out.set(u.user.id, nameOf(u));
    if (batch.length < SCAN_BATCH) return out;
  }
}

/**
 * The single-valued references to a user that carry a read-only `displayName` (the enterprise
 * `manager`), found through the schema table rather than by name.
 */
function userReferences(kind: ResourceKind): readonly Attr[] {
  return attributesOf(kind).filter((a) => a.type === 'complex' && a.multiValued !== true
    && findAttr(a.subAttributes, '$ref')?.referenceTypes?.includes('User') === true
    && findAttr(a.subAttributes, 'displayName')?.mutability === 'readOnly');
}

/** The ids the references of these resources' attributes (stored form, extensions nested) name. */
export function referencedUserIds(kind: ResourceKind, resources: readonly Readonly<Record<string, unknown>>[]): string[] {
  const refs = userReferences(kind);
  return resources.flatMap((r) => {
    const flat = flatten(kind, r);
    return refs.map((a) => (flat[a.name] as { value?: unknown } | undefined)?.value).filter((v): v is string => typeof v === 'string');
  });
}

/** The attributes with each reference's `displayName` filled in from the user it names (left out when that is no user of the tenant). */
export function withReferencedNames(kind: ResourceKind, attrs: Readonly<Record<string, unknown>>, names: ReadonlyMap<string, string>): Record<string, unknown> {
  const refs = userReferences(kind);
  if (refs.length === 0) return { ...attrs };
  const flat = flatten(kind, attrs);
  for (const a of refs) {
    const ref = flat[a.name] as Record<string, unknown> | undefined;
    if (ref === undefined) continue;
    const { displayName: _, ...rest } = ref;
    const name = typeof rest.value === 'string' ? names.get(rest.value) : undefined;
    flat[a.name] = name === undefined ? rest : { ...rest, displayName: name };
  }
  return nest(kind, flat);
}
