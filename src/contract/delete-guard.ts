/**
 * The mass-deletion guard, one rule for both paths (`idforge apply` and `pulumi up`): a change that
 * would delete a tenant that still has users, or most (more than half) of a tenant's applications,
 * users or assignments, is refused unless the operator allows it for that run. A model file left out
 * of a directory, a renamed tenant or a bad merge looks exactly like this, and it locks people out.
 */
import { counted } from './problems.ts';

/** What a tenant holds, as far as the guard needs to know. */
export interface TenantInventory {
  readonly applications: readonly string[];
  readonly users: number;
  readonly assignments: number;
}
export type Inventory = Readonly<Record<string, TenantInventory>>;

export interface MassDeletion {
  readonly tenant: string;
  readonly kind: 'tenant' | 'application' | 'user' | 'assignment';
  readonly deleting: number;
  readonly existing: number;
}

/** More than half, and at least one. */
export const isMostOf = (deleting: number, existing: number): boolean => deleting > 0 && deleting * 2 > existing;

/**
 * What going from `before` to `after` would delete beyond the guard's bounds. Users and assignments
 * are judged by count (the guard's inventory is small on purpose); applications and tenants by name.
 * `renamed` maps a tenant's new name to its previous one, `renamedApps` an application's: a rename
 * deletes nothing.
 */
export function massDeletions(
  before: Inventory,
  after: Inventory,
  renamed: Readonly<Record<string, string>> = {},
  /** Per tenant, an application's new name → its previous one (a rename deletes nothing). */
  renamedApps: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): MassDeletion[] {
  const out: MassDeletion[] = [];
  const previousOf = new Map(Object.entries(renamed).map(([now, was]) => [was, now]));
  for (const [tenant, was] of Object.entries(before).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const now = after[tenant] ?? (previousOf.has(tenant) ? after[previousOf.get(tenant)!] : undefined);
    if (now === undefined) {
      if (was.users > 0) out.push({ tenant, kind: 'tenant', deleting: 1, existing: 1 });
      continue;
    }
    const movedFrom = new Set(Object.values(renamedApps[tenant] ?? {}));
    const goneApps = was.applications.filter((a) => !now.applications.includes(a) && !movedFrom.has(a)).length;
    if (isMostOf(goneApps, was.applications.length)) out.push({ tenant, kind: 'application', deleting: goneApps, existing: was.applications.length });
    const goneUsers = Math.max(0, was.users - now.users);
    if (isMostOf(goneUsers, was.users)) out.push({ tenant, kind: 'user', deleting: goneUsers, existing: was.users });
    const goneAssignments = Math.max(0, was.assignments - now.assignments);
    if (isMostOf(goneAssignments, was.assignments)) out.push({ tenant, kind: 'assignment', deleting: goneAssignments, existing: was.assignments });
  }
  return out;
}

/** One line per refused deletion, the words both paths print. */
export function formatMassDeletion(m: MassDeletion): string {
  return m.kind === 'tenant'
    ? `refusing to delete tenant '${m.tenant}', which still has users`
    : `refusing to delete ${m.deleting} of ${counted(m.existing, m.kind)} of tenant '${m.tenant}' (most of them)`;
}
