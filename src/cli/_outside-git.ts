/**
 * Objects made outside Git, as `idforge plan` reports them: what the admin console made
 * (`managedBy: console`) in the model's tenants, and objects that differ from the model only in their
 * owner. Kept apart from plan.ts on purpose: the drift policy of a managed tenant (keep, report,
 * remove what the model does not declare) is decided there; this only makes sure the console's
 * objects are never passed over in silence, and never deleted without `--allow-delete-console`.
 *
 * The server tells: plan's dry run prunes both owners (PLAN_PRUNE), and every updated or deleted
 * entry carries the owner the stored object had, so no object is listed by the CLI itself.
 *
 * - In the model and only their owner differs (a console-made app that an exported model now
 *   declares): not a change of content. The plan counts them unchanged and lists them here; apply
 *   marks them `managedBy: idforge`, after which the console shows them as managed in Git.
 * - Made in the console and not in the model: kept, and listed; with `--allow-delete-console` they
 *   are planned deletions (children first), which apply carries out.
 */
import {
  MANAGED_BY, MANAGED_BY_CONSOLE, stepName, type AdminResourceKind, type BatchEntryResult, type ResourceRef, type TenantBatchResult,
} from '../contract/index.ts';

export interface OutsideGitObject {
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  readonly name: string;
  /** Its managedBy on the server; '' when it has none. */
  readonly owner: string;
  /** adopt: in the model, apply marks it managed in Git; keep: not in the model, left alone; delete: not in the model, deleted. */
  readonly action: 'adopt' | 'keep' | 'delete';
}

/** The owners a plan's dry run prunes: idforge's objects are deleted, the console's are found. */
export const PLAN_PRUNE = [MANAGED_BY, MANAGED_BY_CONSOLE];

/** The owners apply prunes. */
export const applyPrune = (allowDeleteConsole: boolean) => (allowDeleteConsole ? PLAN_PRUNE : [MANAGED_BY]);

const isOwnerOnly = (r: BatchEntryResult) => r.outcome === 'updated' && r.changes?.length === 1 && r.changes[0] === 'managedBy';

/**
 * A tenant's dry run as the plan shows it: owner-only updates counted unchanged, the console's
 * deletions left out unless allowed; and what that set apart, listed.
 */
export function outsideGitOf(
  tenant: string, judged: TenantBatchResult, allowDelete: boolean, refOf: (tenant: string, r: BatchEntryResult) => ResourceRef,
): { judged: TenantBatchResult; listed: OutsideGitObject[] } {
  const listed: OutsideGitObject[] = [];
  const results: BatchEntryResult[] = [];
  let adopted = 0;
  for (const r of judged.results) {
    const owner = r.managedBy ?? '';
    const ref = refOf(tenant, r);
    const item = (action: OutsideGitObject['action']) => listed.push({ kind: ref.kind, ref, name: stepName(ref), owner, action });
    if (isOwnerOnly(r) && owner !== MANAGED_BY) {
      item('adopt');
      adopted++;
    } else if (r.outcome === 'deleted' && owner === MANAGED_BY_CONSOLE) {
      item(allowDelete ? 'delete' : 'keep');
      if (allowDelete) results.push(r);
    } else results.push(r);
  }
  return { judged: { ...judged, results, unchanged: judged.unchanged + adopted }, listed };
}

/** The plan's "made outside Git" section; '' when there is nothing to say. */
export function formatOutsideGit(listed: readonly OutsideGitObject[]): string {
  if (listed.length === 0) return '';
  const owner = (o: OutsideGitObject) => (o.owner === '' ? 'no owner' : `managedBy ${o.owner}`);
  const lines = listed.map((o) =>
    o.action === 'adopt'
      ? `  = ${o.kind} ${o.name}: in the model; apply marks it managed in Git (${owner(o)} → ${MANAGED_BY})`
      : o.action === 'keep'
        ? `  ! ${o.kind} ${o.name}: made in the console, not in the model: kept (--allow-delete-console deletes it)`
        : `  - ${o.kind} ${o.name}: made in the console, not in the model: deleted (--allow-delete-console)`,
  );
  return `Made outside Git:\n${lines.join('\n')}\n`;
}
