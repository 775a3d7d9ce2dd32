/**
 * TenantAssignments: which users may sign in to which application of one tenant, as ONE resource
 * (same reasoning as TenantUsers: one resource per tenant; the added and removed pairs go to the
 * server as one tenant batch, one request and one transaction).
 *
 * Inputs map application name → sorted user ids (groups already expanded by the generators), so
 * the preview shows `assignments.portal[1]` style changes.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { ApplicationName, MANAGED_BY, TenantName, UNMANAGED_POLICIES, UserId, pulumiManager, type UnmanagedPolicy } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, checkWith, jsonEqual, tenantReplaces } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface TenantAssignmentsArgs {
  readonly connection: pulumi.Input<AdminConnection>;
  readonly tenant: pulumi.Input<string>;
  /** The tenant's previous name when the model renames it (previousName): a move, not a replacement. */
  readonly previousTenant?: pulumi.Input<string>;
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
  readonly previousTenant?: string;
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
  previousTenant: TenantName.optional(),
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

/** Lists of assignments read at once (one request each). */
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

/** Pairs as the tenant batch's per-application lists. */
function byApplication(list: readonly Pair[]): { application: string; users: string[] }[] {
  const out = new Map<string, string[]>();
  for (const [a, u] of list) (out.get(a) ?? out.set(a, []).get(a)!).push(u);
  return [...out].map(([application, users]) => ({ application, users }));
}

async function apply(olds: TenantAssignmentsInputs | undefined, news: TenantAssignmentsInputs): Promise<void> {
  const { AdminClient } = await import('../admin-client/index.ts');
  const { sendBatches } = await import('./_common.ts');
  const { add, remove } = assignmentChanges(olds?.assignments ?? {}, news.assignments);
  // Pairs nobody declared (found by refresh) go under the `remove` policy; `report` leaves them.
  const declared = pairs(news.assignments);
  const strangers = news.unmanaged === 'remove'
    ? (olds?.strangers ?? []).map((p): Pair => [p.slice(0, p.indexOf('/')), p.slice(p.indexOf('/') + 1)]).filter(([a, u]) => !declared.has(`${a}\u0000${u}`))
    : [];
  const unassign = [...remove, ...strangers];
  const body = { managedBy: MANAGED_BY, ...(news.stack === undefined ? {} : { stack: news.stack, manager: pulumiManager(news.stack) }) };
  // One batch: the removals (each revoking that user's grants at that application, in the same
  // transaction) and the additions.
  const batch = {
    force: news.adopt === true,
    ...(add.length > 0 ? { assignments: byApplication(add).map((g) => ({ ...g, body })) } : {}),
    ...(unassign.length > 0 ? { delete: { assignments: byApplication(unassign) } } : {}),
  };
  await sendBatches(new AdminClient(news.connection), news.tenant, add.length + unassign.length > 0 ? [batch] : []);
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
    const replaces = tenantReplaces(olds, news);
    // What refresh looks for is part of the resource: a new policy or application list takes effect through an update.
    const drift = !jsonEqual(olds.strangers ?? [], news.strangers ?? []) || (olds.unmanaged ?? 'remove') !== (news.unmanaged ?? 'remove') ||
      !jsonEqual(olds.applications ?? [], news.applications ?? []);
    return { changes: replaces.length > 0 || olds.tenant !== news.tenant || !jsonEqual(olds.assignments, news.assignments) || drift, replaces };
  },
  async create(inputs) {
    if (!inputs.adopt) {
      // As TenantUsers: existing assignments that differ from the declared ones (another owner or
      // stack) are refused; exactly the declared ones (an `up` killed before its checkpoint, carrying
      // this stack's marker) are taken.
      const { AdminClient } = await import('../admin-client/index.ts');
      const { existingThatDiffer, notAdopted } = await import('./_common.ts');
      const body = { managedBy: MANAGED_BY, ...(inputs.stack === undefined ? {} : { stack: inputs.stack }) };
      const assignments = Object.entries(inputs.assignments).filter(([, users]) => users.length > 0)
        .map(([application, users]) => ({ application, users, body }));
      const taken = await existingThatDiffer(new AdminClient(inputs.connection), inputs.tenant, { assignments });
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
        for (const x of live[i] ?? []) if (!(old.assignments[app] ?? []).includes(x.userId) && removableDrift(x)) strangers.push(`${app}/${x.userId}`);
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
