/**
 * Tenant: one `PUT /admin/v1/tenants/{name}` object. The name is the subdomain, so it cannot
 * change in place: a new name is a new tenant (replace).
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { TenantBody, TenantName } from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, changedKeys, checkWith, jsonEqual, pickKeys } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface TenantArgs {
  /** How to reach the admin API; pass the AuthServer's `connection` (a secret). */
  readonly connection: pulumi.Input<AdminConnection>;
  /** Subdomain label; immutable. */
  readonly name: pulumi.Input<string>;
  /** The desired state, exactly the body `idforge apply` sends. */
  readonly body: pulumi.Input<TenantBody>;
  /** Take over a tenant that already exists on the server instead of refusing (see AdoptSchema). */
  readonly adopt?: pulumi.Input<boolean>;
}

export interface TenantInputs {
  readonly connection: AdminConnection;
  readonly name: string;
  readonly body: TenantBody;
  readonly adopt?: boolean;
}
export type TenantOutputs = TenantInputs;

const TenantInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  name: TenantName,
  body: TenantBody,
  adopt: AdoptSchema,
});

/** Inputs that name the remote object: changing one means a different tenant. */
const IMMUTABLE = ['name'] as const;

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const tenantProvider: Required<Omit<pulumi.dynamic.ResourceProvider<TenantInputs, TenantOutputs>, 'configure'>> = {
  async check(_olds, news) {
    return checkWith(TenantInputsSchema, news as unknown as Record<string, unknown>);
  },
  async diff(_id, olds, news) {
    const replaces = changedKeys(IMMUTABLE, { ...olds }, { ...news });
    // The connection is how we reach the server, not part of the tenant: a new token or port is no change.
    const changes = replaces.length > 0 || !jsonEqual(olds.body, news.body);
    return { changes, replaces };
  },
  async create(inputs) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { notAdopted } = await import('./_common.ts');
    const client = new AdminClient(inputs.connection);
    if (!inputs.adopt && (await client.find('getTenant', { tenant: inputs.name })) !== undefined) {
      // Exactly this tenant and nothing in it is what an `up` killed between this request and its
      // checkpoint leaves behind (its applications and users come after it): taken, so the next
      // `up` converges. Anything else was made outside the stack.
      const at = { tenant: inputs.name };
      const same = (await client.call('putTenant', at, { body: inputs.body, query: { dryRun: true } })).outcome === 'unchanged';
      const empty = async () => (await client.call('listApplications', at, { query: { limit: 1 } })).items.length === 0 &&
        (await client.call('listUsers', at, { query: { limit: 1 } })).items.length === 0;
      if (!same || !(await empty())) throw notAdopted(`tenant ${inputs.name}`);
    }
    await client.call('putTenant', { tenant: inputs.name }, { body: inputs.body });
    return { id: inputs.name, outs: inputs };
  },
  async read(id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const old = props as TenantOutputs;
    const live = await new AdminClient(old.connection).find('getTenant', { tenant: id });
    if (live === undefined) return { id: '' }; // gone: refresh drops it, the next up recreates it
    const body = { ...old.body, ...pickKeys<TenantBody>(TenantBody.shape, live as Record<string, unknown>) };
    const now: TenantOutputs = { ...old, name: id, body };
    // Return the inputs too, so the next diff compares the model with what is live (pulumi#13679).
    return { id, props: now, inputs: now };
  },
  async update(_id, _olds, news) {
    const { AdminClient } = await import('../admin-client/index.ts');
    await new AdminClient(news.connection).call('putTenant', { tenant: news.name }, { body: news.body });
    return { outs: news };
  },
  async delete(id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    await new AdminClient((props as TenantOutputs).connection).remove('deleteTenant', { tenant: id });
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
