/**
 * TenantAssignments: which users may sign in to which application of one tenant, as ONE resource
 * (same reasoning as TenantUsers: one resource per tenant, one call per changed pair).
 *
 * Inputs map application name → sorted user ids (groups already expanded by the generators), so
 * the preview shows `assignments.portal[1]` style changes and a removed assignment is exactly one
 * DELETE.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { ApplicationName, MANAGED_BY, TenantName, UNMANAGED_POLICIES, UserId, type UnmanagedPolicy } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, changedKeys, checkWith, jsonEqual } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface TenantAssignmentsArgs {
  readonly connection: pulumi.Input<AdminConnection>;
  readonly tenant: pulumi.Input<string>;
  /** Application name → ids of the users assigned to it. */
  readonly assignments: pulumi.Input<Record<string, pulumi.Input<readonly string[]>>>;
  /** Take over assignments that already exist on the server instead of refusing (see AdoptSchema). */
  readonly adopt?: pulumi.Input<boolean>;
  /** The Pulumi stack (`project/stack`) that manages them, written into each assignment. */
  readonly stack?: pulumi.Input<string>;
  /** The tenant's client applications in the model: where to look for assignments nobody declared. */
  readonly applications?: pulumi.Input<readonly string[]>;
  /** Assignments on the server that the model does not declare: removed (default), reported, or kept. */
  readonly unmanaged?: pulumi.Input<UnmanagedPolicy>;
}

export interface TenantAssignmentsInputs {
  readonly connection: AdminConnection;
  readonly tenant: string;
  readonly assignments: Record<string, string[]>;
  readonly adopt?: boolean;
  readonly stack?: string;
  readonly applications?: string[];
  readonly unmanaged?: UnmanagedPolicy;
  /** `application/user` pairs on the server that the model does not declare, found by a refresh: drift. */
  readonly strangers?: string[];
}
export type TenantAssignmentsOutputs = TenantAssignmentsInputs;

const TenantAssignmentsInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  tenant: TenantName,
  assignments: z.record(
    ApplicationName,
    // Sorted and unique, so reordering the model is no change.
    z.array(UserId).transform((ids) => [...new Set(ids)].sort()),
  ),
  adopt: AdoptSchema,
  stack: z.string().min(1).max(200).optional(),
  applications: z.array(ApplicationName).default([]),
  unmanaged: z.enum(UNMANAGED_POLICIES).default('remove'),
  strangers: z.array(z.string()).default([]),
});

const CONCURRENCY = 16;

type Pair = readonly [app: string, user: string];

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

async function apply(olds: TenantAssignmentsInputs | undefined, news: TenantAssignmentsInputs): Promise<void> {
  const { AdminClient, mapLimit } = await import('../admin-client/index.ts');
  const client = new AdminClient(news.connection);
  const { add, remove } = assignmentChanges(olds?.assignments ?? {}, news.assignments);
  // Pairs nobody declared (found by refresh) go under the `remove` policy; `report` leaves them.
  const declared = pairs(news.assignments);
  const strangers = news.unmanaged === 'remove'
    ? (olds?.strangers ?? []).map((p): Pair => [p.slice(0, p.indexOf('/')), p.slice(p.indexOf('/') + 1)]).filter(([a, u]) => !declared.has(`${a}\u0000${u}`))
    : [];
  await mapLimit([...remove, ...strangers], CONCURRENCY, ([a, u]) => client.remove('deleteAssignment', { tenant: news.tenant, application: a, userId: u }));
  await mapLimit(add, CONCURRENCY, ([a, u]) => client.call('putAssignment', { tenant: news.tenant, application: a, userId: u }, { body: { managedBy: MANAGED_BY, ...(news.stack === undefined ? {} : { stack: news.stack }) } }));
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantAssignmentsProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const tenantAssignmentsProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<TenantAssignmentsInputs, TenantAssignmentsOutputs>, 'configure'>
> = {
  async check(_olds, news) {
    return checkWith(
      TenantAssignmentsInputsSchema as unknown as z.ZodType<TenantAssignmentsInputs & Record<string, unknown>>,
      news as never,
    );
  },
  async diff(_id, olds, news) {
    const replaces = changedKeys(['tenant'], { ...olds }, { ...news });
    // What refresh looks for is part of the resource: a new policy or application list takes effect through an update.
    const drift = !jsonEqual(olds.strangers ?? [], news.strangers ?? []) || (olds.unmanaged ?? 'remove') !== (news.unmanaged ?? 'remove') ||
      !jsonEqual(olds.applications ?? [], news.applications ?? []);
    return { changes: replaces.length > 0 || !jsonEqual(olds.assignments, news.assignments) || drift, replaces };
  },
  async create(inputs) {
    if (!inputs.adopt) {
      const { AdminClient, mapLimit } = await import('../admin-client/index.ts');
      const { notAdopted } = await import('./_common.ts');
      const client = new AdminClient(inputs.connection);
      const apps = Object.keys(inputs.assignments).filter((a) => inputs.assignments[a]!.length > 0);
      const live = await mapLimit(apps, CONCURRENCY, (a) =>
        client.listAll('listAssignments', { tenant: inputs.tenant, application: a }),
      );
      // Assignments this stack made itself (a create cut short by a crash) are taken back; others are refused.
      const mine = (x: { stack?: string }) => inputs.stack !== undefined && x.stack === inputs.stack;
      const taken = apps.flatMap((a, i) => (live[i] ?? []).filter((x) => inputs.assignments[a]!.includes(x.userId) && !mine(x)).map((x) => `${a}→${x.userId}`));
      if (taken.length > 0) throw notAdopted(`in tenant ${inputs.tenant}, assignment${taken.length > 1 ? 's' : ''} ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ` (and ${taken.length - 5} more)` : ''}`);
    }
    await apply(undefined, inputs);
    return { id: `${inputs.tenant}/assignments`, outs: inputs };
  },
  async read(id, props) {
    const { readOrKeep } = await import('./_common.ts');
    return readOrKeep(id, props as TenantAssignmentsOutputs, async () => {
      const { AdminClient, mapLimit } = await import('../admin-client/index.ts');
      const old = props as TenantAssignmentsOutputs;
      const client = new AdminClient(old.connection);
      const { removableDrift } = await import('../contract/index.ts');
      // Every client application of the model, also those with no declared assignment (someone may have added one).
      const apps = [...new Set([...Object.keys(old.assignments), ...(old.applications ?? [])])].sort();
      // One paged list per application rather than a GET per pair.
      const live = await mapLimit(apps, CONCURRENCY, (a) =>
        client.listAll('listAssignments', { tenant: old.tenant, application: a }),
      );
      const assignments: Record<string, string[]> = {};
      const strangers: string[] = [];
      apps.forEach((app, i) => {
        const present = new Set((live[i] ?? []).map((x) => x.userId));
        if (app in old.assignments) assignments[app] = (old.assignments[app] ?? []).filter((u) => present.has(u));
        if (old.unmanaged === 'keep') return;
        for (const x of live[i] ?? []) if (!(old.assignments[app] ?? []).includes(x.userId) && removableDrift(x.managedBy)) strangers.push(`${app}/${x.userId}`);
      });
      const now = { ...old, assignments, strangers: strangers.sort() };
      return { id, props: now, inputs: now };
    });
  },
  async update(_id, olds, news) {
    await apply(olds, news);
    return { outs: news };
  },
  async delete(_id, props) {
    const old = props as TenantAssignmentsOutputs;
    await apply(old, { ...old, assignments: {} });
  },
};

export class TenantAssignments extends _DynamicResource {
  declare readonly assignments: pulumi.Output<Record<string, string[]>>;

  constructor(name: string, args: TenantAssignmentsArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'tenantAssignmentsProvider',
      'TenantAssignments',
      name,
      { ...args },
      { ...opts, additionalSecretOutputs: ['connection'] },
    );
  }
}
