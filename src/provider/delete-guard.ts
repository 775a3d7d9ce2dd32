/**
 * DeleteGuard: the mass-deletion guard on the Pulumi path, judged in `pulumi preview` already.
 *
 * Deletions of resources the program no longer declares happen at the end of an `up`, after every
 * registration, and no provider is asked about them in a preview. So the guard is one small resource
 * whose input is the model's inventory (per tenant: application names, user and assignment counts).
 * Its check compares that with the inventory in the state when it is registered, first of all: a
 * change that would delete a tenant with users, or most of a tenant's applications, users or
 * assignments (the contract's rule, src/contract/delete-guard.ts, the same as `idforge apply`'s) fails
 * the preview or the up before any other resource is touched, since every other resource depends on
 * the guard.
 *
 * Allowed for one run with the stack config `idforge:allowDelete` (set it, `pulumi up`, remove it).
 */
import type * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { formatMassDeletion, massDeletions, type Inventory } from '../contract/index.ts';
import { checkWith, jsonEqual } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface DeleteGuardArgs {
  readonly inventory: pulumi.Input<Inventory>;
  /** Tenant renames declared in the model: new name → previous name. */
  readonly renamed?: pulumi.Input<Record<string, string>>;
  /** Application renames declared in the model (previousName), per tenant: new name → previous name. */
  readonly renamedApps?: pulumi.Input<Record<string, Record<string, string>>>;
  /** Let this run delete beyond the guard's bounds. */
  readonly allow?: pulumi.Input<boolean>;
}

export interface DeleteGuardInputs {
  readonly inventory: Inventory;
  readonly renamed: Record<string, string>;
  readonly renamedApps: Record<string, Record<string, string>>;
  readonly allow: boolean;
}

const DeleteGuardInputsSchema = z.strictObject({
  inventory: z.record(
    z.string(),
    z.strictObject({ applications: z.array(z.string()), users: z.number().int().min(0), assignments: z.number().int().min(0) }),
  ),
  renamed: z.record(z.string(), z.string()).default({}),
  renamedApps: z.record(z.string(), z.record(z.string(), z.string())).default({}),
  allow: z.boolean().default(false),
});

/** Why the guard refuses a change of inventory, or undefined when it lets it through. */
export function refusal(olds: Pick<DeleteGuardInputs, 'inventory'>, news: DeleteGuardInputs): string | undefined {
  if (news.allow) return undefined;
  const found = massDeletions(olds.inventory, news.inventory, news.renamed, news.renamedApps);
  if (found.length === 0) return undefined;
  return `${found.map(formatMassDeletion).join('\n')}\n` +
    'If that is intended, allow it for one run: `pulumi config set idforge:allowDelete true`, `pulumi up`, ' +
    '`pulumi config rm idforge:allowDelete`. A renamed tenant or application is moved, keeping what it holds, when the model ' +
    'says so (`previousName`).';
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `deleteGuardProvider` by
 * name in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const deleteGuardProvider: Required<Omit<pulumi.dynamic.ResourceProvider<DeleteGuardInputs, DeleteGuardInputs>, 'configure'>> = {
  async check(olds, news) {
    const checked = checkWith(DeleteGuardInputsSchema as z.ZodType<DeleteGuardInputs & Record<string, unknown>>, news as never);
    // Judged in check, not diff: the engine shows a check failure once, as the resource's error,
    // while whatever diff throws is also logged by the dynamic provider host with its stack trace.
    // `olds` are the inputs in the state (none when the guard is first made: nothing to delete).
    const before = DeleteGuardInputsSchema.shape.inventory.safeParse((olds as { inventory?: unknown }).inventory);
    const now = DeleteGuardInputsSchema.safeParse(checked.inputs);
    if (!before.success || !now.success) return checked;
    const refused = refusal({ inventory: before.data }, now.data);
    return refused === undefined ? checked : { inputs: checked.inputs, failures: [{ property: '', reason: refused }] };
  },
  async diff(_id, olds, news) {
    // Renames are how a change is judged, not part of what the stack holds: dropping a previousName
    // once it was applied everywhere is no change.
    return { changes: !jsonEqual(olds.inventory, news.inventory) || olds.allow !== news.allow };
  },
  async create(inputs) {
    return { id: 'delete-guard', outs: inputs };
  },
  async read(id, props) {
    // Nothing remote: the inventory in the state is what the last up declared.
    return { id, props: props as DeleteGuardInputs };
  },
  async update(_id, _olds, news) {
    return { outs: news };
  },
  async delete() {
    // Nothing remote to remove; `pulumi destroy` is an explicit decision to delete everything.
  },
};

export class DeleteGuard extends _DynamicResource {
  constructor(name: string, args: DeleteGuardArgs, opts?: pulumi.CustomResourceOptions) {
    super(import.meta.url, 'deleteGuardProvider', 'DeleteGuard', name, { ...args }, opts);
  }
}
