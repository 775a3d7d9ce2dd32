/**
 * Assignments as the Tenant resource (tenant.ts) holds them: application name → sorted user ids
 * (groups already expanded by the generators), so the preview shows `assignments.portal[1]` style
 * changes, and the server gets them in the tenant's one batch.
 */
import type * as pulumi from '@pulumi/pulumi';

export type Pair = readonly [app: string, user: string];

function pairs(a: Record<string, readonly string[]>): Map<string, Pair> {
  const out = new Map<string, Pair>();
  for (const [app, users] of Object.entries(a)) for (const u of users) out.set(`${app}\u0000${u}`, [app, u]);
  return out;
}

/** Pairs to add and to remove between two assignment maps: pure, tested directly. */
export function assignmentChanges(
  olds: Record<string, readonly string[]>,
  news: Record<string, readonly string[]>,
): { readonly add: Pair[]; readonly remove: Pair[] } {
  const o = pairs(olds);
  const n = pairs(news);
  return {
    add: [...n].filter(([k]) => !o.has(k)).map(([, p]) => p),
    remove: [...o].filter(([k]) => !n.has(k)).map(([, p]) => p),
  };
}

/** Sorted, without duplicates, without applications that assign nobody: reordering the model is no change. */
export function normalAssignments(a: Readonly<Record<string, readonly string[]>>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(a).filter(([, users]) => users.length > 0).map(([app, users]) => [app, [...new Set(users)].sort()]).sort((x, y) => (x[0]! < y[0]! ? -1 : 1)));
}

/**
 * The provider of the TenantAssignments resources of stacks deployed before issue 23, kept for their
 * state's shell (it calls `tenantAssignmentsProvider` by name): the first `up` with this version
 * declares the assignments in their Tenant resource and the engine drops these; their delete hands
 * the assignments over.
 */
export const tenantAssignmentsProvider: Required<Omit<pulumi.dynamic.ResourceProvider, 'configure'>> = {
  async check(_olds, news) {
    return { inputs: news };
  },
  async diff() {
    return { changes: false };
  },
  async create() {
    throw new Error('TenantAssignments resources are no longer made: a Tenant resource holds its assignments (idforge issue 23)');
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
