/**
 * StableSecret: random bytes made once, at create time, and kept in the state as a secret. A later
 * `up` never regenerates them (there is nothing to update); only changing the size or encoding, or
 * replacing the resource on purpose (`pulumi up --replace`), makes a new value.
 *
 * Used for the values that belong to client apps rather than to the server: the reverse proxy's
 * cookie secret (16 bytes, URL-safe base64, as the contract requires) and the web app's session
 * secret. Generators never make secrets; this is where Pulumi makes them.
 */
import type * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { changedKeys, checkWith } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface StableSecretArgs {
  /** Number of random bytes. */
  readonly bytes: pulumi.Input<number>;
  /** How the bytes are written. Default: base64url (RFC 4648 §5, no padding). */
  readonly encoding?: pulumi.Input<'base64url' | 'hex'>;
}

export interface StableSecretInputs {
  readonly bytes: number;
  readonly encoding: 'base64url' | 'hex';
}
export interface StableSecretOutputs extends StableSecretInputs {
  readonly value: string;
}

const StableSecretInputsSchema = z.strictObject({
  bytes: z.number().int().min(8).max(1024),
  encoding: z.enum(['base64url', 'hex']).default('base64url'),
});

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `stableSecretProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const stableSecretProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<StableSecretInputs, StableSecretOutputs>, 'configure'>
> = {
  async check(_olds, news) {
    return checkWith(StableSecretInputsSchema as z.ZodType<StableSecretInputs & Record<string, unknown>>, news as never);
  },
  async diff(_id, olds, news) {
    // Every input shapes the value, so any change is a new value: replace, never update.
    const replaces = changedKeys(['bytes', 'encoding'], { ...olds }, { ...news });
    return { changes: replaces.length > 0, replaces };
  },
  async create(inputs) {
    const { randomBytes, randomUUID } = await import('node:crypto');
    const value = randomBytes(inputs.bytes).toString(inputs.encoding);
    return { id: randomUUID(), outs: { ...inputs, value } };
  },
  async read(id, props) {
    // Nothing remote to compare with: the state is the truth.
    return { id, props: props as StableSecretOutputs };
  },
  async update(_id, olds) {
    // Unreachable: every input change is a replacement (see diff). Keeps the value if it happens.
    return { outs: olds };
  },
  async delete() {
    // Nothing remote to remove.
  },
};

export class StableSecret extends _DynamicResource {
  /** Secret. */
  declare readonly value: pulumi.Output<string>;

  constructor(name: string, args: StableSecretArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'stableSecretProvider',
      'StableSecret',
      name,
      { encoding: 'base64url', ...args, value: undefined },
      { ...opts, additionalSecretOutputs: ['value'] },
    );
  }
}
