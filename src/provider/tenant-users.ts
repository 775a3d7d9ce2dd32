/**
 * TenantUsers: all the users of one tenant that the model declares, as ONE Pulumi resource.
 *
 * Why bulk: the engine pays per resource (a serial checkpoint write, and a serialized copy of the
 * provider in the state for each one, pulumi#6646); bench/pulumi measures it. A tenant with 10,000
 * users as 10,000 resources makes every `up` slow and the state huge, while one resource keyed by
 * user id still gives a per-user diff in the preview (`users["bob"].email`). Only added, changed
 * and removed users are sent, as one tenant batch (POST /tenants/{tenant}/batch): one request and
 * one transaction on the server, whatever their number.
 *
 * Initial passwords are a separate secret input, sent only when a user is created: the server
 * hashes them, nothing can read them back, and changing one later does not reset a password that
 * the user may have changed since.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { TenantName, UNMANAGED_POLICIES, UserBody, UserId, type UnmanagedPolicy } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, checkWith, jsonEqual, pickKeys, tenantReplaces } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export type UserSpecBody = Omit<UserBody, 'initialPassword'>;

export interface TenantUsersArgs {
  readonly connection: pulumi.Input<AdminConnection>;
  readonly tenant: pulumi.Input<string>;
  /** The tenant's previous name when the model renames it (previousName): a move, not a replacement. */
  readonly previousTenant?: pulumi.Input<string>;
  /** Desired users by id. */
  readonly users: pulumi.Input<Record<string, pulumi.Input<UserSpecBody>>>;
  /** Initial passwords by user id; pass as a secret. */
  readonly initialPasswords?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /**
   * Users whose initial password the model references but this run does not have, with where it
   * should come from (e.g. `environment variable ACME_BOB_PASSWORD`). Only a user being created
   * needs it: the preview fails for those, and no one else.
   */
  readonly missingPasswords?: pulumi.Input<Record<string, string>>;
  /** Users on the server that the model does not declare: removed (default), reported, or kept. */
  readonly unmanaged?: pulumi.Input<UnmanagedPolicy>;
  /**
   * Take over users that already exist on the server instead of refusing (see AdoptSchema). The
   * server sets an initial password only for a user without one, so adopted users keep theirs.
   */
  readonly adopt?: pulumi.Input<boolean>;
}

export interface TenantUsersInputs {
  readonly connection: AdminConnection;
  readonly tenant: string;
  readonly previousTenant?: string;
  readonly users: Record<string, UserSpecBody>;
  readonly initialPasswords?: Record<string, string>;
  readonly missingPasswords?: Record<string, string>;
  readonly unmanaged?: UnmanagedPolicy;
  /**
   * Ids of users on the server that the model does not declare, found by a refresh (the desired
   * value is none): drift, removed by the next up under the `remove` policy.
   */
  readonly strangers?: string[];
  readonly adopt?: boolean;
}
export type TenantUsersOutputs = TenantUsersInputs;

const TenantUsersInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  tenant: TenantName,
  previousTenant: TenantName.optional(),
  users: z.record(UserId, UserBody.omit({ initialPassword: true })),
  initialPasswords: z.record(z.string(), z.string().min(8).max(1024)).optional(),
  missingPasswords: z.record(z.string(), z.string()).optional(),
  unmanaged: z.enum(UNMANAGED_POLICIES).default('remove'),
  strangers: z.array(z.string()).default([]),
  adopt: AdoptSchema,
});

/** Users that are about to be created without the initial password the model gives them. */
export function missingForNewUsers(olds: Record<string, unknown> | undefined, news: Pick<TenantUsersInputs, 'users' | 'missingPasswords'>): { property: string; reason: string }[] {
  return Object.entries(news.missingPasswords ?? {})
    .filter(([id]) => id in news.users && !(id in (olds ?? {})))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, from]) => ({ property: `users[${JSON.stringify(id)}]`, reason: `the user is created with an initial password, and it is missing: set ${from}` }));
}

/** Entries per batch request; a bigger change is sent as several batches, each one transaction. */
export const BATCH_ENTRIES = 20_000;

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

async function apply(olds: TenantUsersInputs | undefined, news: TenantUsersInputs): Promise<void> {
  const { AdminClient } = await import('../admin-client/index.ts');
  const { sendBatches } = await import('./_common.ts');
  const { add, change, remove } = userChanges(olds?.users ?? {}, news.users);
  const added = new Set(add);
  const put = [...add, ...change].map((id) => {
    // The initial password goes with a user this resource adds; the server sets it only if the user has none.
    const pw = added.has(id) ? news.initialPasswords?.[id] : undefined;
    return { id, body: { ...news.users[id]!, ...(pw ? { initialPassword: pw } : {}) } };
  });
  // Users nobody declared (found by refresh) go under the `remove` policy; `report` leaves them.
  const strangers = news.unmanaged === 'remove' ? (olds?.strangers ?? []).filter((id) => !(id in news.users)) : [];
  // Adopting (idforge:adopt) takes over users another manager keeps; otherwise the server refuses to change them.
  const force = news.adopt === true;
  await sendBatches(new AdminClient(news.connection), news.tenant, [
    ...chunks(put, BATCH_ENTRIES).map((users) => ({ users, force })),
    ...chunks([...remove, ...strangers], BATCH_ENTRIES).map((users) => ({ delete: { users } })),
  ]);
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantUsersProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const tenantUsersProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<TenantUsersInputs, TenantUsersOutputs>, 'configure'>
> = {
  async check(olds, news) {
    const checked = checkWith(TenantUsersInputsSchema as z.ZodType<TenantUsersInputs & Record<string, unknown>>, news as never);
    if (checked.failures !== undefined && checked.failures.length > 0) return checked;
    const missing = missingForNewUsers((olds as Partial<TenantUsersInputs>).users, checked.inputs as TenantUsersInputs);
    // Users another door (SCIM, the console) manages on the server: the model may not declare them.
    const { ownershipFailures } = await import('./_ownership.ts');
    const inputs = checked.inputs as TenantUsersInputs;
    const owned = await ownershipFailures(inputs.connection, inputs.tenant, Object.keys(inputs.users));
    return missing.length + owned.length > 0 ? { inputs: checked.inputs, failures: [...missing, ...owned] } : checked;
  },
  async diff(_id, olds, news) {
    const replaces = tenantReplaces(olds, news);
    // What refresh looks for is part of the resource: a new policy takes effect through an update.
    const drift = !jsonEqual(olds.strangers ?? [], news.strangers ?? []) || (olds.unmanaged ?? 'remove') !== (news.unmanaged ?? 'remove');
    return { changes: replaces.length > 0 || olds.tenant !== news.tenant || !jsonEqual(olds.users, news.users) || drift, replaces };
  },
  async create(inputs) {
    if (!inputs.adopt) {
      // Users that exist and differ from what this resource declares were made outside the stack:
      // refused. Users that exist exactly as declared are what an `up` killed after its request and
      // before its checkpoint left behind (the server applied the batch, the state never heard):
      // taken, so the next `up` converges.
      const { AdminClient } = await import('../admin-client/index.ts');
      const { existingThatDiffer, notAdopted } = await import('./_common.ts');
      const client = new AdminClient(inputs.connection);
      const differ: string[] = [];
      for (const users of chunks(Object.entries(inputs.users).map(([id, body]) => ({ id, body })), BATCH_ENTRIES)) {
        differ.push(...(await existingThatDiffer(client, inputs.tenant, { users })));
      }
      // Differing users this stack made itself (a create cut short by a crash, then the model changed)
      // are taken back too; others are refused.
      const live = await Promise.all(differ.map((id) => client.find('getUser', { tenant: inputs.tenant, userId: id })));
      const taken = differ.filter((id, i) => !(inputs.users[id]!.stack !== undefined && live[i]?.stack === inputs.users[id]!.stack));
      if (taken.length > 0) throw notAdopted(`in tenant ${inputs.tenant}, user${taken.length > 1 ? 's' : ''} ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ` (and ${taken.length - 5} more)` : ''}`);
    }
    await apply(undefined, inputs);
    return { id: `${inputs.tenant}/users`, outs: inputs };
  },
  async read(id, props) {
    const { readOrKeep } = await import('./_common.ts');
    return readOrKeep(id, props as TenantUsersOutputs, async () => {
      const { AdminClient } = await import('../admin-client/index.ts');
      const old = props as TenantUsersOutputs;
      // Pages of 500 rather than a GET per user: a refresh of 100,000 users is 200 requests.
      const live = await new AdminClient(old.connection).listAll('listUsers', { tenant: old.tenant });
      const byId = new Map((live ?? []).map((u) => [u.id, u]));
      const { removableDrift } = await import('../contract/index.ts');
      const strangers = old.unmanaged === 'keep' ? [] : (live ?? []).filter((u) => !(u.id in old.users) && removableDrift(u)).map((u) => u.id).sort();
      const users: Record<string, UserSpecBody> = {};
      for (const u of Object.keys(old.users)) {
        const l = byId.get(u);
        if (l === undefined) continue;
        const { initialPassword: _, ...fields } = pickKeys<UserBody>(UserBody.shape, l as Record<string, unknown>, old.users[u] as Record<string, unknown>);
        users[u] = { ...old.users[u], ...fields } as UserSpecBody;
      }
      const now = { ...old, users, strangers };
      return { id, props: now, inputs: now };
    });
  },
  async update(_id, olds, news) {
    await apply(olds, news);
    return { outs: news };
  },
  async delete(_id, props) {
    const old = props as TenantUsersOutputs;
    await apply(old, { ...old, users: {} });
  },
};

export class TenantUsers extends _DynamicResource {
  declare readonly users: pulumi.Output<Record<string, UserSpecBody>>;

  constructor(name: string, args: TenantUsersArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'tenantUsersProvider',
      'TenantUsers',
      name,
      { ...args },
      { ...opts, additionalSecretOutputs: ['connection', 'initialPasswords'] },
    );
  }
}
