/**
 * Objects made outside Git, as `idforge plan` reports them: in the model's tenants, what the admin
 * console made (`managedBy: console`), what was made by hand through the admin API (drift, under
 * the tenant's `unmanaged` policy), and objects that differ from the model only in their owner.
 * None is passed over in silence; the console's are never deleted without `--allow-delete-console`,
 * and drift is deleted only under `unmanaged: remove` (the default), the same rule Pulumi's
 * refresh and up follow (the contract's `removableDrift`).
 *
 * The server tells: plan's dry run prunes idforge's objects, the console's and the drift
 * (planPrune), and every updated or deleted entry carries the owner the stored object had, so no
 * object is listed by the CLI itself.
 *
 * - In the model and only their owner differs (a console-made app that an exported model now
 *   declares): not a change of content. The plan counts them unchanged and lists them here; apply
 *   marks them `managedBy: idforge`, after which the console shows them as managed in Git.
 * - Made in the console and not in the model: kept, and listed; with `--allow-delete-console` they
 *   are planned deletions (children first), which apply carries out.
 */
import {
  MANAGED_BY, MANAGED_BY_CONSOLE, stepName, type AdminResourceKind, type BatchEntryResult, type ResourceRef, type TenantBatchResult, type UnmanagedPolicy,
} from '../contract/index.ts';

export interface OutsideGitObject {
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  readonly name: string;
  /** Its managedBy on the server; '' when it has none. */
  readonly owner: string;
  /**
   * adopt: in the model, apply marks it managed in Git; keep: not in the model, left alone; delete:
   * not in the model, deleted; report: drift not in the model, reported and kept (`unmanaged: report`).
   */
  readonly action: 'adopt' | 'keep' | 'delete' | 'report';
}

/** What a plan's dry run prunes: idforge's objects are deleted; the console's and the drift are found. */
export const planPrune = (policy: UnmanagedPolicy) => ({ managedBy: [MANAGED_BY, MANAGED_BY_CONSOLE], drift: policy !== 'keep' });

/** What apply prunes. */
export const applyPrune = (policy: UnmanagedPolicy, allowDeleteConsole: boolean) =>
  ({ managedBy: allowDeleteConsole ? [MANAGED_BY, MANAGED_BY_CONSOLE] : [MANAGED_BY], drift: policy === 'remove' });

/** Whether apply, which prunes with applyPrune, also deletes what a plan's dry run deleted. */
export const appliedDeletion = (r: BatchEntryResult, policy: UnmanagedPolicy, allowDeleteConsole: boolean): boolean =>
  r.outcome !== 'deleted' || r.managedBy === MANAGED_BY || (r.managedBy === MANAGED_BY_CONSOLE ? allowDeleteConsole : policy === 'remove');

const isOwnerOnly = (r: BatchEntryResult) => r.outcome === 'updated' && r.changes?.length === 1 && r.changes[0] === 'managedBy';

/**
 * A tenant's dry run as the plan shows it: owner-only updates counted unchanged, the console's
 * deletions left out unless allowed; and what that set apart, listed.
 */
export function outsideGitOf(
  tenant: string, judged: TenantBatchResult, policy: UnmanagedPolicy, allowDelete: boolean, refOf: (tenant: string, r: BatchEntryResult) => ResourceRef,
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
    } else if (r.outcome === 'deleted' && owner !== MANAGED_BY) {
      // Drift: pruned by the dry run only because the policy is remove or report.
      item(policy === 'remove' ? 'delete' : 'report');
      if (policy === 'remove') results.push(r);
    } else results.push(r);
  }
  return { judged: { ...judged, results, unchanged: judged.unchanged + adopted }, listed };
}

/** The plan's "made outside Git" section; '' when there is nothing to say. */
export function formatOutsideGit(listed: readonly OutsideGitObject[]): string {
  if (listed.length === 0) return '';
  const owner = (o: OutsideGitObject) => (o.owner === '' ? 'no owner' : `managedBy ${o.owner}`);
  const madeBy = (o: OutsideGitObject) => (o.owner === MANAGED_BY_CONSOLE ? 'made in the console' : `made outside the model (${owner(o)})`);
  const lines = listed.map((o) => {
    if (o.action === 'adopt') return `  = ${o.kind} ${o.name}: in the model; apply marks it managed in Git (${owner(o)} → ${MANAGED_BY})`;
    if (o.owner === MANAGED_BY_CONSOLE) {
      return o.action === 'keep'
        ? `  ! ${o.kind} ${o.name}: made in the console, not in the model: kept (--allow-delete-console deletes it)`
        : `  - ${o.kind} ${o.name}: made in the console, not in the model: deleted (--allow-delete-console)`;
    }
    return o.action === 'report'
      ? `  ! ${o.kind} ${o.name}: ${madeBy(o)}, not in the model: drift, kept (the tenant's unmanaged: report)`
      : `  - ${o.kind} ${o.name}: ${madeBy(o)}, not in the model: drift, deleted (the tenant's unmanaged: remove)`;
  });
  return `Made outside Git:\n${lines.join('\n')}\n`;
}
