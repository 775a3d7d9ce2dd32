/**
 * Application: one `PUT /admin/v1/tenants/{tenant}/applications/{name}` object.
 *
 * A confidential client's secret is an input (the IdentityStack passes a StableSecret, which stays
 * known during previews, so a change to an app does not make every client config "maybe changed").
 * Without one, the provider makes a secret when it creates the application. Either way it is kept in
 * the state as a secret and sent with every PUT, so no `up` rotates it by accident.
 * Tenant, name, kind and client id identify the registration: changing one replaces it; everything
 * else (redirect URIs, scopes, audience...) is updated in place.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import {
  ApiApplicationBody,
  ApplicationBody,
  BODY_OF_KIND,
  ConfidentialApplicationBody,
  ApplicationName,
  TenantName,
  PublicApplicationBody,
  SECRET_BYTES,
  checkClientUris,
  isConfidentialKind,
  type ApplicationKind,
} from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, changedKeys, checkWith, defined, isUnknown, jsonEqual, pickKeys } from './_common.ts';
import { _DynamicResource } from './_load.ts';

/** The body without `clientSecret`: the provider owns the secret. */
export type ApplicationSpecBody = ApplicationBody extends infer B ? (B extends unknown ? Omit<B, 'clientSecret'> : never) : never;

export interface ApplicationArgs {
  readonly connection: pulumi.Input<AdminConnection>;
  readonly tenant: pulumi.Input<string>;
  readonly name: pulumi.Input<string>;
  readonly body: pulumi.Input<ApplicationSpecBody>;
  /** Confidential clients: the secret to register (pass a secret). Default: made at create. */
  readonly clientSecret?: pulumi.Input<string>;
  /**
   * Take over an application that already exists on the server instead of refusing (see
   * AdoptSchema). Its client secret cannot be read back (the server keeps a hash), so adoption
   * sets it to this resource's secret: clients configured with the old secret need the new configs.
   */
  readonly adopt?: pulumi.Input<boolean>;
}

export interface ApplicationInputs {
  readonly connection: AdminConnection;
  readonly tenant: string;
  readonly name: string;
  readonly body: ApplicationSpecBody;
  readonly clientSecret?: string;
  readonly adopt?: boolean;
}
export interface ApplicationOutputs extends ApplicationInputs {
  /** The OAuth client id; absent for api applications, which are audiences, not clients. */
  readonly clientId?: string;
}

/** The admin API's application body without the secret, with the same rules (redirect URIs). */
const SpecBody = z
  .discriminatedUnion('kind', [ConfidentialApplicationBody.omit({ clientSecret: true }), PublicApplicationBody, ApiApplicationBody])
  .superRefine((b, ctx) => {
    if (b.kind === 'api') return;
    for (const p of checkClientUris(b)) ctx.addIssue({ code: 'custom', message: p.message, path: [...p.path] });
  });

const ApplicationInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  tenant: TenantName,
  name: ApplicationName,
  body: SpecBody,
  clientSecret: z.string().min(32).max(256).optional(),
  adopt: AdoptSchema,
});

const IMMUTABLE = ['tenant', 'name'] as const;
const IMMUTABLE_BODY = ['kind', 'clientId'] as const;

function shapeOf(kind: string): Record<string, unknown> {
  return (BODY_OF_KIND[kind as ApplicationKind] ?? ConfidentialApplicationBody).shape;
}

function isConfidential(body: { kind: string }): boolean {
  return isConfidentialKind(body.kind);
}

function clientIdOf(body: ApplicationSpecBody): string | undefined {
  return 'clientId' in body ? body.clientId : undefined;
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `applicationProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const applicationProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<ApplicationInputs, ApplicationOutputs>, 'configure'>
> = {
  async check(_olds, news) {
    const raw = news as unknown as Record<string, unknown>;
    const body = raw.body as Record<string, unknown> | undefined;
    if (body && !isUnknown(body) && 'clientSecret' in body) {
      return {
        inputs: news,
        failures: [{ property: 'body.clientSecret', reason: 'the provider makes and keeps the client secret; leave it out' }],
      };
    }
    return checkWith(ApplicationInputsSchema as z.ZodType<ApplicationInputs & Record<string, unknown>>, raw);
  },
  async diff(_id, olds, news) {
    const replaces: string[] = changedKeys(IMMUTABLE, { ...olds }, { ...news });
    for (const k of IMMUTABLE_BODY) {
      const o = (olds.body as Record<string, unknown>)[k];
      const n = isUnknown(news.body) ? undefined : (news.body as Record<string, unknown>)[k];
      if (n !== undefined && !isUnknown(n) && !jsonEqual(o, n)) replaces.push(`body.${k}`);
    }
    const newSecret = news.clientSecret !== undefined && news.clientSecret !== olds.clientSecret;
    // A new kind or client id keeps the same path on the server: the old registration must go
    // first, or deleting it after the create would delete the new one.
    const samePath = replaces.length > 0 && replaces.every((k) => k.startsWith('body.'));
    return {
      changes: replaces.length > 0 || newSecret || !jsonEqual(olds.body, news.body),
      replaces,
      ...(samePath ? { deleteBeforeReplace: true } : {}),
    };
  },
  async create(inputs) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { randomBytes } = await import('node:crypto');
    const clientSecret = isConfidential(inputs.body)
      ? (inputs.clientSecret ?? randomBytes(SECRET_BYTES.clientSecret).toString('base64url'))
      : undefined;
    const { notAdopted } = await import('./_common.ts');
    const client = new AdminClient(inputs.connection);
    const at = { tenant: inputs.tenant, application: inputs.name };
    const body = { ...inputs.body, ...(clientSecret === undefined ? {} : { clientSecret }) } as ApplicationBody;
    if (!inputs.adopt && (await client.find('getApplication', at)) !== undefined) {
      // Exactly this application (a confidential one with this stack's secret), with nobody assigned
      // yet, is what an `up` killed between this request and its checkpoint leaves behind: taken, so
      // the next `up` converges. Anything else was made outside the stack.
      const same = (await client.call('putApplication', at, { body, query: { dryRun: true } })).outcome === 'unchanged';
      const unassigned = async () => inputs.body.kind === 'api' || (await client.call('listAssignments', at, { query: { limit: 1 } })).items.length === 0;
      if (!same || !(await unassigned())) throw notAdopted(`application ${inputs.tenant}/${inputs.name}`);
    }
    await client.call('putApplication', at, { body });
    const outs: ApplicationOutputs = { ...inputs, clientId: clientIdOf(inputs.body), clientSecret };
    return { id: `${inputs.tenant}/${inputs.name}`, outs: defined(outs) };
  },
  async read(id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const old = props as ApplicationOutputs;
    const live = (await new AdminClient(old.connection).find('getApplication', { tenant: old.tenant, application: old.name })) as Record<string, unknown> | undefined;
    if (live === undefined) return { id: '' };
    const kind = typeof live.kind === 'string' ? live.kind : old.body.kind;
    const { clientSecret: _never, ...fields } = pickKeys<Record<string, unknown>>(shapeOf(kind), live);
    const body = { ...old.body, ...fields, kind } as ApplicationSpecBody;
    // The secret cannot be read back (the server keeps a hash): the state's stays the truth.
    const inputs: ApplicationInputs = { connection: old.connection, tenant: old.tenant, name: old.name, body, clientSecret: old.clientSecret, adopt: old.adopt };
    // Inputs as well as outputs, so drift shows up in the next diff (pulumi#13679).
    return { id, props: defined({ ...old, ...inputs }), inputs: defined(inputs) as ApplicationOutputs };
  },
  async update(_id, olds, news) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const clientSecret = isConfidential(news.body) ? (news.clientSecret ?? olds.clientSecret) : undefined;
    await new AdminClient(news.connection).call('putApplication', { tenant: news.tenant, application: news.name }, {
      body: { ...news.body, ...(clientSecret === undefined ? {} : { clientSecret }) } as ApplicationBody,
    });
    return { outs: defined({ ...news, clientId: clientIdOf(news.body), clientSecret }) };
  },
  async delete(_id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const old = props as ApplicationOutputs;
    await new AdminClient(old.connection).remove('deleteApplication', { tenant: old.tenant, application: old.name });
  },
};

export class Application extends _DynamicResource {
  declare readonly tenant: pulumi.Output<string>;
  declare readonly body: pulumi.Output<ApplicationSpecBody>;
  declare readonly clientId: pulumi.Output<string | undefined>;
  /** Secret. */
  declare readonly clientSecret: pulumi.Output<string | undefined>;

  constructor(name: string, args: ApplicationArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'applicationProvider',
      'Application',
      name,
      { ...args, clientId: undefined, clientSecret: args.clientSecret === undefined ? undefined : pulumi.secret(args.clientSecret) },
      { ...opts, additionalSecretOutputs: ['clientSecret', 'connection'] },
    );
  }
}
