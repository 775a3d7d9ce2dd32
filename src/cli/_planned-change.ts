/** One change a plan lists: what `idforge plan` prints, `apply` carries out and `_last-change.ts` annotates. */
import type { AdminResourceKind, ResourceRef } from '../contract/index.ts';

export type ChangeOp = 'create' | 'update' | 'delete';

export interface PlannedChange {
  readonly op: ChangeOp | 'unchanged';
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  /** Human name: `acme`, `acme/portal`, `acme/u-alice`, `acme/portal/u-alice`, `acme/webhooks/siem`. */
  readonly name: string;
  /** Changed fields (updates). */
  readonly fields: readonly string[];
}
