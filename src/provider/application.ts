/**
 * Applications as the Tenant resource (tenant.ts) holds them: one entry per application, keyed by
 * name, each the body `idforge apply` sends (src/generators/plan.ts) without its client secret,
 * which the stack keeps apart (a Pulumi secret, from the tenant's TenantSecrets).
 *
 * Why not a resource per application any more (issue 23): the engine pays per resource (8 to 18 ms
 * for one that does nothing, bench/pulumi's engine row), and a fleet of 500 tenants × 20
 * applications made 10,000 Application and 10,000 StableSecret resources; a tenant's applications
 * go to the server in the tenant's one batch anyway. The preview still names each application (the
 * Tenant's detailed diff: `applications.portal`) and field (a line each: `acme/portal: redirectUris[1] added`).
 *
 * Tenant, name, kind and client id identify a registration: a new kind or client id deletes the old
 * registration before the new one is made (the server fixes a client id at creation); a declared
 * rename (previousName) moves it with its client id, secret, assignments and tokens.
 */
import type * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import {
  ApiApplicationBody,
  type ApplicationBody,
  BODY_OF_KIND,
  ConfidentialApplicationBody,
  PublicApplicationBody,
  checkClientBody,
  isConfidentialKind,
  type ApplicationKind,
} from '../contract/index.ts';
import { pickKeys } from './_common.ts';

/** The body without `clientSecret`: the stack keeps the secret apart. */
export type ApplicationSpecBody = ApplicationBody extends infer B ? (B extends unknown ? Omit<B, 'clientSecret'> : never) : never;

/** The admin API's application body without the secret, with the same rules (redirect URIs). */
export const SpecBody = z
  .discriminatedUnion('kind', [ConfidentialApplicationBody.omit({ clientSecret: true }), PublicApplicationBody, ApiApplicationBody])
  .superRefine((b, ctx) => {
    if (b.kind === 'api') return;
    for (const p of checkClientBody(b)) ctx.addIssue({ code: 'custom', message: p.message, path: [...p.path] });
  });

function shapeOf(kind: string): Record<string, unknown> {
  return (BODY_OF_KIND[kind as ApplicationKind] ?? ConfidentialApplicationBody).shape;
}

export function isConfidential(body: { kind: string }): boolean {
  return isConfidentialKind(body.kind);
}

function clientIdOf(body: ApplicationSpecBody): string | undefined {
  return 'clientId' in body ? body.clientId : undefined;
}

/** What names an application on the server besides its name: its client id, or an api's identifier. */
function handleOf(body: ApplicationSpecBody): string | undefined {
  return clientIdOf(body) ?? ('identifier' in body ? `api ${body.identifier}` : undefined);
}

/** The application as the server holds it, in the declared body's terms (no secret: it cannot be read back). */
export function liveApplicationBody(live: Record<string, unknown>, declared: ApplicationSpecBody | undefined): ApplicationSpecBody {
  const kind = typeof live.kind === 'string' ? live.kind : (declared?.kind ?? 'web');
  const { clientSecret: _never, ...fields } = pickKeys<Record<string, unknown>>(shapeOf(kind), live, declared as Record<string, unknown> | undefined);
  return { ...(declared?.kind === kind ? declared : {}), ...fields, kind } as ApplicationSpecBody;
}

/**
 * Applications to delete before the tenant's batch: those whose kind or client id changes (the
 * server fixes a client id at creation: a new one is a new registration, so the old goes first),
 * and this stack's applications that the model no longer declares whose client id (or api
 * identifier) a declared application takes (a rename by a new name keeping its client id). Pure:
 * `olds` are the applications the stack holds (read from the server before every up), `news` the
 * declared ones, `renamed` the declared renames (new name → previous name), moved in place instead.
 */
export function applicationsToFree(
  olds: Readonly<Record<string, ApplicationSpecBody>>, news: Readonly<Record<string, ApplicationSpecBody>>, renamed: Readonly<Record<string, string>> = {},
): string[] {
  return freeing(olds, news, renamed).free;
}

/** applicationsToFree, and the declared applications that can be judged only once those are gone (they take their name or handle). */
export function freeing(
  olds: Readonly<Record<string, ApplicationSpecBody>>, news: Readonly<Record<string, ApplicationSpecBody>>, renamed: Readonly<Record<string, string>> = {},
): { readonly free: string[]; readonly takers: string[] } {
  const moving = new Set(Object.entries(renamed).filter(([to, from]) => from in olds && !(to in olds)).map(([, from]) => from));
  const replaced = Object.keys(news).filter((n) => n in olds && (olds[n]!.kind !== news[n]!.kind || clientIdOf(olds[n]!) !== clientIdOf(news[n]!)));
  const wanted = new Map(Object.entries(news).map(([n, b]) => [handleOf(b), n]));
  const holders = Object.keys(olds).filter((n) => !(n in news) && !moving.has(n) && handleOf(olds[n]!) !== undefined && wanted.has(handleOf(olds[n]!)));
  const takers = [...replaced, ...holders.map((h) => wanted.get(handleOf(olds[h]!))!)];
  return { free: [...new Set([...replaced, ...holders])].sort(), takers: [...new Set(takers)].sort() };
}

/**
 * The provider of the Application resources of stacks deployed before issue 23. The state's shell
 * (_load.ts) imports this module and calls `applicationProvider` by name in the provider process,
 * so it stays: the first `up` with this version declares every application in its Tenant resource
 * (whose batch also removes what the stack no longer declares) and lets the engine drop these, so
 * their delete hands the application over instead of deleting it. Refresh keeps them as they are.
 */
export const applicationProvider: Required<Omit<pulumi.dynamic.ResourceProvider, 'configure'>> = {
  async check(_olds, news) {
    return { inputs: news };
  },
  async diff() {
    return { changes: false };
  },
  async create() {
    throw new Error('Application resources are no longer made: a Tenant resource holds its applications (idforge issue 23)');
  },
  async read(id, props) {
    return { id, props };
  },
  async update(_id, olds) {
    return { outs: olds };
  },
  async delete() {
    // Handed over to the tenant's resource, which declares it (or removes it, if the model does not).
  },
};
