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
  checkClientBody,
  isConfidentialKind,
  type ApplicationKind,
} from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, changedKeys, checkWith, defined, isUnknown, jsonEqual, pickKeys, tenantReplaces } from './_common.ts';
import { _DynamicResource } from './_load.ts';

/** The body without `clientSecret`: the provider owns the secret. */
export type ApplicationSpecBody = ApplicationBody extends infer B ? (B extends unknown ? Omit<B, 'clientSecret'> : never) : never;

export interface ApplicationArgs {
  readonly connection: pulumi.Input<AdminConnection>;
  readonly tenant: pulumi.Input<string>;
  /** The tenant's previous name when the model renames it (previousName): a move, not a replacement. */
  readonly previousTenant?: pulumi.Input<string>;
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
  /**
   * The names of the tenant's applications in the model. Not part of the application (diffs ignore
   * it): it tells which applications of this stack are going away in the same up, so a client id
   * that moves from one of them to this one is freed first instead of failing with a conflict.
   */
  readonly siblings?: pulumi.Input<readonly string[]>;
}

export interface ApplicationInputs {
  readonly connection: AdminConnection;
  readonly tenant: string;
  readonly previousTenant?: string;
  readonly name: string;
  readonly body: ApplicationSpecBody;
  readonly clientSecret?: string;
  readonly adopt?: boolean;
  readonly siblings?: string[];
  /** false when a refresh found the secret on the server is not the stack's: drift the next up repairs. */
  readonly secretInSync?: boolean;
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
    for (const p of checkClientBody(b)) ctx.addIssue({ code: 'custom', message: p.message, path: [...p.path] });
  });

const ApplicationInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  tenant: TenantName,
  previousTenant: TenantName.optional(),
  name: ApplicationName,
  body: SpecBody,
  clientSecret: z.string().min(32).max(256).optional(),
  adopt: AdoptSchema,
  siblings: z.array(z.string()).optional(),
  secretInSync: z.boolean().default(true),
});

/** Applications of one tenant as the server lists them, fetched once per provider process (a preview). */
const liveApps = new Map<string, Promise<readonly { name: string; kind: string; clientId?: string; identifier?: string; stack?: string }[]>>();

/**
 * The application on the server that already holds this one's client id (or api identifier), if
 * any, and whether this stack may free it: it carries this stack's marker and the model no longer
 * declares it (a rename in the same up).
 */
async function holderOf(inputs: ApplicationInputs, fresh: boolean): Promise<{ name: string; ours: boolean } | undefined> {
  const { AdminClient } = await import('../admin-client/index.ts');
  const key = `${JSON.stringify(inputs.connection)} ${inputs.tenant}`;
  if (fresh || !liveApps.has(key)) liveApps.set(key, new AdminClient(inputs.connection).listAll('listApplications', { tenant: inputs.tenant }).then((l) => (l ?? []) as never));
  const apps = await liveApps.get(key)!;
  const b = inputs.body as { clientId?: string; identifier?: string };
  const holder = apps.find((a) => a.name !== inputs.name && ((b.clientId !== undefined && a.clientId === b.clientId) || (b.identifier !== undefined && a.identifier === b.identifier)));
  if (holder === undefined) return undefined;
  const ours = holder.stack !== undefined && holder.stack === inputs.body.stack && inputs.siblings !== undefined && !inputs.siblings.includes(holder.name);
  return { name: holder.name, ours };
}

/**
 * The tenant identifies the registration (a declared tenant rename moves it: tenantReplaces); a new
 * name is a rename in place (a declared previousName aliases the resource).
 */
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
    const checked = checkWith(ApplicationInputsSchema as z.ZodType<ApplicationInputs & Record<string, unknown>>, raw);
    if ((checked.failures?.length ?? 0) > 0) return checked;
    const known = checked.inputs as Partial<ApplicationInputs>;
    // A new application's secret is still unknown in a preview; what names it on the server is known.
    if (isUnknown(known.body) || isUnknown(known.connection) || isUnknown(known.tenant) || isUnknown(known.name) || isUnknown(known.siblings)) return checked;
    // Preview = up: a client id or identifier the server already gives another application is
    // found now, not half-way through the up. A server not reachable yet (first deploy) is no answer.
    const inputs = checked.inputs as ApplicationInputs;
    const holder = await holderOf(inputs, false).catch(() => undefined);
    if (holder === undefined || holder.ours) return checked;
    const field = 'clientId' in inputs.body ? 'clientId' : 'identifier';
    const value = (inputs.body as Record<string, unknown>)[field];
    return { inputs: checked.inputs, failures: [{ property: `body.${field}`, reason: `${field} ${JSON.stringify(value)} is already used by application '${holder.name}' on the server, which this stack does not manage` }] };
  },
  async diff(_id, olds, news) {
    const replaces: string[] = tenantReplaces(olds, news);
    for (const k of IMMUTABLE_BODY) {
      const o = (olds.body as Record<string, unknown>)[k];
      const n = isUnknown(news.body) ? undefined : (news.body as Record<string, unknown>)[k];
      if (n !== undefined && !isUnknown(n) && !jsonEqual(o, n)) replaces.push(`body.${k}`);
    }
    // A secret changed behind the stack's back (found by refresh) is drift: the update sets the stack's again.
    const newSecret = (news.clientSecret !== undefined && news.clientSecret !== olds.clientSecret) || olds.secretInSync === false;
    // One name, one object on the server: a replacement (a new kind or client id, or `up --replace`)
    // must delete the old registration first, or deleting it after the create would delete the new one.
    return {
      changes: replaces.length > 0 || newSecret || olds.tenant !== news.tenant || olds.name !== news.name || !jsonEqual(olds.body, news.body),
      replaces,
      deleteBeforeReplace: true,
    };
  },
  async create(inputs) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { randomBytes } = await import('node:crypto');
    const clientSecret = isConfidential(inputs.body)
      ? (inputs.clientSecret ?? randomBytes(SECRET_BYTES.clientSecret).toString('base64url'))
      : undefined;
    const { mayTakeOver, notAdopted } = await import('./_common.ts');
    const client = new AdminClient(inputs.connection);
    const at = { tenant: inputs.tenant, application: inputs.name };
    const live = await client.find('getApplication', at);
    if (!mayTakeOver(live, inputs.body.stack, inputs.adopt)) throw notAdopted(`application ${inputs.tenant}/${inputs.name}`);
    // A client id moving from an application this stack is deleting in the same up (a rename): free it first.
    const holder = await holderOf(inputs, true);
    if (holder?.ours) await client.remove('deleteApplication', { tenant: inputs.tenant, application: holder.name });
    // Adopting (idforge:adopt) takes over an application another manager keeps.
    await client.call('putApplication', at, { body: { ...inputs.body, ...(clientSecret === undefined ? {} : { clientSecret }) } as ApplicationBody, query: { force: inputs.adopt === true } });
    const outs: ApplicationOutputs = { ...inputs, clientId: clientIdOf(inputs.body), clientSecret };
    return { id: `${inputs.tenant}/${inputs.name}`, outs: defined(outs) };
  },
  async read(id, props) {
    const { readOrKeep } = await import('./_common.ts');
    return readOrKeep(id, props as ApplicationOutputs, async () => {
      const { AdminClient } = await import('../admin-client/index.ts');
      const old = props as ApplicationOutputs;
      const live = (await new AdminClient(old.connection).find('getApplication', { tenant: old.tenant, application: old.name })) as Record<string, unknown> | undefined;
      if (live === undefined) return { id: '' };
      const kind = typeof live.kind === 'string' ? live.kind : old.body.kind;
      const { clientSecret: _never, ...fields } = pickKeys<Record<string, unknown>>(shapeOf(kind), live, old.body as Record<string, unknown>);
      const body = { ...old.body, ...fields, kind } as ApplicationSpecBody;
      // The secret cannot be read back (the server keeps a hash): the state's stays the truth, and the
      // server says whether it still holds it.
      const client = new AdminClient(old.connection);
      const secretInSync = old.clientSecret === undefined || !isConfidential(body)
        ? true
        : (await client.call('verifyClientSecret', { tenant: old.tenant, application: old.name }, { body: { clientSecret: old.clientSecret } })).matches;
      const inputs: ApplicationInputs = {
        connection: old.connection, tenant: old.tenant, name: old.name, body, clientSecret: old.clientSecret, adopt: old.adopt, siblings: old.siblings, secretInSync,
      };
      // Inputs as well as outputs, so drift shows up in the next diff (pulumi#13679).
      return { id, props: defined({ ...old, ...inputs }), inputs: defined(inputs) as ApplicationOutputs };
    });
  },
  async update(_id, olds, news) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const clientSecret = isConfidential(news.body) ? (news.clientSecret ?? olds.clientSecret) : undefined;
    const client = new AdminClient(news.connection);
    // A declared rename: the server moves the application with its client id, secret, assignments and tokens.
    if (olds.name !== news.name && (await client.find('getApplication', { tenant: news.tenant, application: news.name })) === undefined) {
      await client.call('renameApplication', { tenant: news.tenant, application: olds.name }, { body: { to: news.name } });
    }
    await client.call('putApplication', { tenant: news.tenant, application: news.name }, {
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
