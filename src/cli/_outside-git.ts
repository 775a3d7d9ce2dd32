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
  MANAGED_BY_CONSOLE, managerWords, stepName, type AdminResourceKind, type BatchEntryResult, type ResourceRef, type TenantBatchResult, type UnmanagedPolicy,
} from '../contract/index.ts';

export interface OutsideGitObject {
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  readonly name: string;
  /** Its manager on the server (src/contract/managers.ts); '' when it has none. */
  readonly owner: string;
  /**
   * adopt: in the model, apply marks it managed in Git; keep: not in the model, left alone; delete:
   * not in the model, deleted; report: drift not in the model, reported and kept (`unmanaged: report`).
   */
  readonly action: 'adopt' | 'keep' | 'delete' | 'report' | 'record' | 'held';
}

/** What a plan's dry run prunes: this manager's objects are deleted; the console's and the drift are found. */
export const planPrune = (policy: UnmanagedPolicy, manager: string) => ({ managers: [manager, MANAGED_BY_CONSOLE], drift: policy !== 'keep' });

/** What apply prunes: only what this manager keeps (and, when allowed, the console's; under `unmanaged: remove`, what nobody keeps). */
export const applyPrune = (policy: UnmanagedPolicy, allowDeleteConsole: boolean, manager: string) =>
  ({ managers: allowDeleteConsole ? [manager, MANAGED_BY_CONSOLE] : [manager], drift: policy === 'remove' });

/** Whether apply, which prunes with applyPrune, also deletes what a plan's dry run deleted. */
export const appliedDeletion = (r: BatchEntryResult, policy: UnmanagedPolicy, allowDeleteConsole: boolean, manager: string): boolean =>
  r.outcome !== 'deleted' || r.manager === manager || (r.manager === MANAGED_BY_CONSOLE ? allowDeleteConsole : policy === 'remove');

/**
 * An update that changes no content: a new owner, and/or the model entry the object was applied
 * from recorded where none was (objects made before the server kept it, or by the console).
 */
const BOOKKEEPING = new Set(['manager', 'lastApplied']);
const isOwnerOnly = (r: BatchEntryResult) => r.outcome === 'updated' && (r.changes?.length ?? 0) > 0 && r.changes!.every((c) => BOOKKEEPING.has(c)) && r.changes!.includes('manager');
/** Only the declared entry is recorded (an object idforge already manages, applied by an idforge that kept none). */
const isRecordOnly = (r: BatchEntryResult) => r.outcome === 'updated' && r.changes?.length === 1 && r.changes[0] === 'lastApplied';

/**
 * A tenant's dry run as the plan shows it: owner-only updates counted unchanged, the console's
 * deletions left out unless allowed; and what that set apart, listed.
 */
export function outsideGitOf(
  tenant: string, judged: TenantBatchResult, policy: UnmanagedPolicy, allowDelete: boolean, refOf: (tenant: string, r: BatchEntryResult) => ResourceRef, manager: string,
): { judged: TenantBatchResult; listed: OutsideGitObject[] } {
  const listed: OutsideGitObject[] = [];
  const results: BatchEntryResult[] = [];
  let adopted = 0;
  for (const r of judged.results) {
    const owner = r.manager ?? '';
    const ref = refOf(tenant, r);
    const item = (action: OutsideGitObject['action']) => listed.push({ kind: ref.kind, ref, name: stepName(ref), owner, action });
    if (r.outcome === 'unchanged' && owner !== '' && owner !== manager) {
      // Declared as it is, and kept by another manager: left to it (a takeover needs --force-conflicts).
      item('held');
      results.push(r);
    } else if (isOwnerOnly(r) && owner !== manager) {
      item('adopt');
      adopted++;
    } else if (isRecordOnly(r)) {
      // Not a change of what the server serves: apply records the entry (for export), and says so.
      item('record');
      adopted++;
    } else if (r.outcome === 'deleted' && owner === MANAGED_BY_CONSOLE) {
      item(allowDelete ? 'delete' : 'keep');
      if (allowDelete) results.push(r);
    } else if (r.outcome === 'deleted' && owner !== manager) {
      // Drift: pruned by the dry run only because the policy is remove or report.
      item(policy === 'remove' ? 'delete' : 'report');
      if (policy === 'remove') results.push(r);
    } else results.push(r);
  }
  return { judged: { ...judged, results, unchanged: judged.unchanged + adopted }, listed };
}

/** The plan's "made outside Git" section (and the entries apply records); '' when there is nothing to say. */
export function formatOutsideGit(all: readonly OutsideGitObject[], manager: string): string {
  const recording = all.filter((o) => o.action === 'record').length;
  const note = recording === 0 ? '' : `${recording} object${recording === 1 ? '' : 's'} unchanged but for the model entry ${recording === 1 ? 'it was' : 'they were'} applied from, which apply records (kept by the server for idforge export).\n`;
  const listed = all.filter((o) => o.action !== 'record');
  if (listed.length === 0) return note;
  const owner = (o: OutsideGitObject) => (o.owner === '' ? 'no owner' : `managed by ${managerWords(o.owner)}`);
  const madeBy = (o: OutsideGitObject) => (o.owner === MANAGED_BY_CONSOLE ? 'made in the console' : `made outside the model (${owner(o)})`);
  const lines = listed.map((o) => {
    if (o.action === 'held') return `  = ${o.kind} ${o.name}: managed by ${managerWords(o.owner)}, as the model declares it: left to it (--force-conflicts takes it over)`;
    if (o.action === 'adopt') {
      return o.owner === ''
        ? `  = ${o.kind} ${o.name}: in the model, made by hand: apply adopts it (${managerWords(manager)} manages it from then on)`
        : `  = ${o.kind} ${o.name}: in the model; apply takes it over from ${managerWords(o.owner)} (--force-conflicts)`;
    }
    if (o.kind === 'group assignment') {
      // Access through a group: one rule whoever made it (the tenant's unmanaged policy).
      const whom = o.owner === MANAGED_BY_CONSOLE ? 'granted in the console' : o.owner === '' ? 'granted by hand' : `granted by ${managerWords(o.owner)}`;
      return o.action === 'report'
        ? `  ! ${o.kind} ${o.name}: access the model does not declare (${whom}): kept, reported (the tenant's unmanaged: report)`
        : `  - ${o.kind} ${o.name}: access the model does not declare (${whom}): deleted (the tenant's unmanaged: remove)`;
    }
    if (o.owner === MANAGED_BY_CONSOLE) {
      return o.action === 'keep'
        ? `  ! ${o.kind} ${o.name}: made in the console, not in the model: kept (--allow-delete-console deletes it)`
        : `  - ${o.kind} ${o.name}: made in the console, not in the model: deleted (--allow-delete-console)`;
    }
    return o.action === 'report'
      ? `  ! ${o.kind} ${o.name}: ${madeBy(o)}, not in the model: drift, kept (the tenant's unmanaged: report)`
      : `  - ${o.kind} ${o.name}: ${madeBy(o)}, not in the model: drift, deleted (the tenant's unmanaged: remove)`;
  });
  return `${note}Made outside Git:\n${lines.join('\n')}\n`;
}
