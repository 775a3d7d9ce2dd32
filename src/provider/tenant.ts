/**
 * Tenant: one `PUT /admin/v1/tenants/{name}` object. The name is the subdomain: a new name is a new
 * tenant (replace), unless the model declares the rename (`previousName`): then the server moves the
 * tenant with everything in it (POST /tenants/{name}/rename) and the resource is updated in place.
 * The resource's id stays the name it was created with; the name in its state is the live one.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { TenantBody, TenantName, UNMANAGED_POLICIES, type UnmanagedPolicy } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, changedKeys, checkWith, jsonEqual, pickKeys } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface TenantArgs {
  /** How to reach the admin API; pass the AuthServer's `connection` (a secret). */
  readonly connection: pulumi.Input<AdminConnection>;
  /** Subdomain label; changes only through a declared rename (previousName). */
  readonly name: pulumi.Input<string>;
  /** The name the tenant had until now, when the model renames it. */
  readonly previousName?: pulumi.Input<string>;
  /** The desired state, exactly the body `idforge apply` sends. */
  readonly body: pulumi.Input<TenantBody>;
  /** Take over a tenant that already exists on the server instead of refusing (see AdoptSchema). */
  readonly adopt?: pulumi.Input<boolean>;
  /** The tenant's applications in the model: any other on the server is an application nobody declared. */
  readonly applications?: pulumi.Input<readonly string[]>;
  /** Applications on the server that the model does not declare: removed (default), reported, or kept. */
  readonly unmanaged?: pulumi.Input<UnmanagedPolicy>;
}

export interface TenantInputs {
  readonly connection: AdminConnection;
  readonly name: string;
  readonly previousName?: string;
  readonly body: TenantBody;
  readonly adopt?: boolean;
  readonly applications?: string[];
  readonly unmanaged?: UnmanagedPolicy;
  /** Applications on the server that the model does not declare, found by a refresh: drift. */
  readonly strangers?: string[];
}
export type TenantOutputs = TenantInputs;

const TenantInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  name: TenantName,
  previousName: TenantName.optional(),
  body: TenantBody,
  adopt: AdoptSchema,
  applications: z.array(z.string()).default([]),
  unmanaged: z.enum(UNMANAGED_POLICIES).default('remove'),
  strangers: z.array(z.string()).default([]),
});

/** The tenant's name on the server: the state's (a declared rename changes it), else the id it was created with. */
const liveName = (id: string, props: Partial<TenantOutputs>): string => props.name ?? id;

async function readTenant(id: string, old: TenantOutputs): Promise<pulumi.dynamic.ReadResult<TenantOutputs>> {
  const { AdminClient } = await import('../admin-client/index.ts');
  const { removableDrift } = await import('../contract/index.ts');
  const client = new AdminClient(old.connection);
  const name = liveName(id, old);
  const live = await client.find('getTenant', { tenant: name });
  if (live === undefined) return { id: '' }; // gone: refresh drops it, the next up recreates it
  const body = { ...old.body, ...pickKeys<TenantBody>(TenantBody.shape, live as Record<string, unknown>, old.body as Record<string, unknown>) };
  const declared = new Set(old.applications ?? []);
  const strangers = old.unmanaged === 'keep' || old.applications === undefined
    ? []
    : ((await client.listAll('listApplications', { tenant: name })) ?? []).filter((a) => !declared.has(a.name) && removableDrift(a)).map((a) => a.name).sort();
  const now: TenantOutputs = { ...old, name, body, strangers };
  // Return the inputs too, so the next diff compares the model with what is live (pulumi#13679).
  return { id, props: now, inputs: now };
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const tenantProvider: Required<Omit<pulumi.dynamic.ResourceProvider<TenantInputs, TenantOutputs>, 'configure'>> = {
  async check(_olds, news) {
    return checkWith(TenantInputsSchema, news as unknown as Record<string, unknown>);
  },
  async diff(_id, olds, news) {
    // A new name is a new tenant, unless it is the rename the model declares.
    const renamed = news.previousName !== undefined && olds.name === news.previousName;
    const replaces = renamed ? [] : changedKeys(['name'], { ...olds }, { ...news });
    // The connection is how we reach the server, not part of the tenant: a new token or port is no change.
    // What refresh looks for (the declared applications, the policy) is part of the resource too.
    const changes = replaces.length > 0 || olds.name !== news.name || !jsonEqual(olds.body, news.body) || !jsonEqual(olds.strangers ?? [], news.strangers ?? []) ||
      (olds.unmanaged ?? 'remove') !== (news.unmanaged ?? 'remove') || !jsonEqual(olds.applications ?? [], news.applications ?? []);
    return { changes, replaces };
  },
  async create(inputs) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { mayTakeOver, notAdopted } = await import('./_common.ts');
    const client = new AdminClient(inputs.connection);
    const live = await client.find('getTenant', { tenant: inputs.name });
    if (!mayTakeOver(live, inputs.body.stack, inputs.adopt)) throw notAdopted(`tenant ${inputs.name}`);
    await client.call('putTenant', { tenant: inputs.name }, { body: inputs.body, query: { force: inputs.adopt === true } });
    return { id: inputs.name, outs: inputs };
  },
  async read(id, props) {
    const { readOrKeep } = await import('./_common.ts');
    return readOrKeep(id, props as TenantOutputs, () => readTenant(id, props as TenantOutputs));
  },
  async update(_id, olds, news) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const client = new AdminClient(news.connection);
    // A declared rename (diff let it through): moved on the server, unless a run cut short did it already.
    if (olds.name !== news.name && (await client.find('getTenant', { tenant: news.name })) === undefined) {
      await client.call('renameTenant', { tenant: olds.name }, { body: { to: news.name } });
    }
    await client.call('putTenant', { tenant: news.name }, { body: news.body });
    // Applications nobody declared (found by refresh) go under the `remove` policy: clients before
    // the apis they may name in their audience.
    const strangers = news.unmanaged === 'remove' ? (olds.strangers ?? []).filter((a) => !(news.applications ?? []).includes(a)) : [];
    if (strangers.length > 0) {
      const live = (await client.listAll('listApplications', { tenant: news.name })) ?? [];
      const kindOf = new Map(live.map((a) => [a.name, a.kind]));
      for (const a of [...strangers].sort((x, y) => Number(kindOf.get(x) === 'api') - Number(kindOf.get(y) === 'api'))) {
        await client.remove('deleteApplication', { tenant: news.name, application: a });
      }
    }
    return { outs: news };
  },
  async delete(id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    await new AdminClient((props as TenantOutputs).connection).remove('deleteTenant', { tenant: liveName(id, props as TenantOutputs) });
  },
};

export class Tenant extends _DynamicResource {
  declare readonly name: pulumi.Output<string>;
  declare readonly body: pulumi.Output<TenantBody>;

  constructor(name: string, args: TenantArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'tenantProvider',
      'Tenant',
      name,
      { ...args },
      { ...opts, additionalSecretOutputs: ['connection'] },
    );
  }
}
