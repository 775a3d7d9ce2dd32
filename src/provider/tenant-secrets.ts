/**
 * TenantSecrets: the random values one tenant's applications keep (client secrets, a proxy's cookie
 * secret, a web app's session secret), made once each and kept in the state as one secret map keyed
 * `<application>/<kind>`. A later `up` never makes a value again: an update makes values only for
 * keys that are new (or whose size changed), and drops those of applications that left; a declared
 * application rename (`moved`) carries the value to the new key. `pulumi up --replace` on purpose
 * makes them all again.
 *
 * One resource per tenant rather than one per value (issue 23: 10,000 StableSecret resources for a
 * fleet of 500 tenants cost the engine minutes), and apart from the Tenant resource so that the
 * values stay known in a preview that changes an application but no secret: the client
 * configurations are then previewed exactly, not as "may change".
 *
 * Generators never make secrets; this is where Pulumi makes them.
 */
import type * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { checkWith, jsonEqual } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface TenantSecretsArgs {
  /** Per `<application>/<kind>`: how many random bytes (written base64url, RFC 4648 §5, no padding). */
  readonly sizes: pulumi.Input<Record<string, number>>;
  /** Declared renames: new key → the key whose value it takes over, when that one has a value. */
  readonly moved?: pulumi.Input<Record<string, string>>;
}

export interface TenantSecretsInputs {
  readonly sizes: Record<string, number>;
  readonly moved?: Record<string, string>;
}
export interface TenantSecretsOutputs extends TenantSecretsInputs {
  readonly values: Record<string, string>;
}

const TenantSecretsInputsSchema = z.strictObject({
  sizes: z.record(z.string().min(1).max(300), z.number().int().min(8).max(1024)),
  moved: z.record(z.string(), z.string()).optional(),
});

/** The values for `sizes`: those of `olds` kept (or moved), new ones made. Pure but for the randomness it is given. */
export function valuesFor(news: TenantSecretsInputs, olds: TenantSecretsOutputs | undefined, random: (bytes: number) => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, bytes] of Object.entries(news.sizes).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const from = [key, news.moved?.[key]].find((k) => k !== undefined && olds?.values[k] !== undefined && olds.sizes[k] === bytes);
    out[key] = from === undefined ? random(bytes) : olds!.values[from]!;
  }
  return out;
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantSecretsProvider`
 * by name in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const tenantSecretsProvider: Required<Omit<pulumi.dynamic.ResourceProvider<TenantSecretsInputs, TenantSecretsOutputs>, 'configure'>> & {
  previewUpdate(id: string, olds: TenantSecretsOutputs, news: TenantSecretsInputs): Promise<TenantSecretsOutputs>;
} = {
  async check(_olds, news) {
    return checkWith(TenantSecretsInputsSchema as z.ZodType<TenantSecretsInputs & Record<string, unknown>>, news as never);
  },
  async diff(_id, olds, news) {
    // Renames are how values move, not part of what the stack holds: dropping a previousName is no change.
    return { changes: !jsonEqual(olds.sizes, news.sizes) };
  },
  async create(inputs) {
    const { randomBytes, randomUUID } = await import('node:crypto');
    return { id: randomUUID(), outs: { ...inputs, values: valuesFor(inputs, undefined, (n) => randomBytes(n).toString('base64url')) } };
  },
  async read(id, props) {
    // Nothing remote to compare with: the state is the truth.
    return { id, props: props as TenantSecretsOutputs };
  },
  async update(_id, olds, news) {
    const { randomBytes } = await import('node:crypto');
    return { outs: { ...news, values: valuesFor(news, olds, (n) => randomBytes(n).toString('base64url')) } };
  },
  async delete() {
    // Nothing remote to remove.
  },
  /**
   * In a preview (idforge's host asks): the values an update keeps or moves are known already; a new
   * one is not. So renaming an application or adding one without secrets previews exactly.
   */
  async previewUpdate(_id, olds, news) {
    const { UNKNOWN, isUnknown } = await import('./_common.ts');
    if (isUnknown(news.sizes) || isUnknown(news.moved)) return { ...news, values: UNKNOWN as never };
    return { ...news, values: valuesFor(news, olds, () => UNKNOWN) };
  },
};

export class TenantSecrets extends _DynamicResource {
  /** Secret: per `<application>/<kind>`, the value. */
  declare readonly values: pulumi.Output<Record<string, string>>;

  constructor(name: string, args: TenantSecretsArgs, opts?: pulumi.CustomResourceOptions) {
    super(import.meta.url, 'tenantSecretsProvider', 'TenantSecrets', name, { ...args, values: undefined }, { ...opts, additionalSecretOutputs: ['values'] });
  }
}
