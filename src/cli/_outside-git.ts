/**
 * Objects made outside Git, as `idforge plan` and `apply` report them: what the admin console made
 * (`managedBy: console`) in the model's tenants, and objects that differ from the model only in their
 * owner. Kept apart from plan.ts on purpose: the drift policy of a managed tenant (keep, report,
 * remove what the model does not declare) is decided there; this only makes sure the console's
 * objects are never passed over in silence, and never deleted without `--allow-delete-console`.
 *
 * - In the model and only their owner differs (a console-made app that an exported model now
 *   declares): not a change of content. The plan counts them unchanged and lists them here; apply
 *   marks them `managedBy: idforge`, after which the console shows them as managed in Git.
 * - Made in the console and not in the model: kept, and listed; with `--allow-delete-console` they
 *   are planned deletions (children first), which apply carries out.
 */
import type { AdminClient } from '../admin-client/index.ts';
import { MANAGED_BY, MANAGED_BY_CONSOLE, refKey, stepName, type AdminResourceKind, type PlanStep, type ResourceRef } from '../contract/index.ts';
import type { PlannedChange, RemotePlan } from './commands/plan.ts';

export interface OutsideGitObject {
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  readonly name: string;
  /** Its managedBy on the server; '' when it has none. */
  readonly owner: string;
  /** adopt: in the model, apply marks it managed in Git; keep: not in the model, left alone; delete: not in the model, deleted. */
  readonly action: 'adopt' | 'keep' | 'delete';
}

interface Owned {
  readonly ref: ResourceRef;
  readonly owner: string;
}

/** Every object of the model's tenants that exist on the server, with its owner; children first. */
async function liveObjects(client: AdminClient, tenants: readonly string[]): Promise<Owned[]> {
  const out: Owned[][] = [[], [], [], [], []];
  for (const tenant of tenants) {
    const t = await client.find('getTenant', { tenant });
    if (t === undefined) continue;
    out[4]!.push({ ref: { kind: 'tenant', tenant }, owner: t.managedBy ?? '' });
    for (const a of (await client.listAll('listApplications', { tenant })) ?? []) {
      out[a.kind === 'api' ? 3 : 2]!.push({ ref: { kind: 'application', tenant, application: a.name }, owner: a.managedBy ?? '' });
      if (a.kind === 'api') continue;
      for (const x of (await client.listAll('listAssignments', { tenant, application: a.name })) ?? []) {
        out[0]!.push({ ref: { kind: 'assignment', tenant, application: a.name, user: x.userId }, owner: x.managedBy ?? '' });
      }
    }
    for (const u of (await client.listAll('listUsers', { tenant })) ?? []) out[1]!.push({ ref: { kind: 'user', tenant, user: u.id }, owner: u.managedBy ?? '' });
  }
  return out.flat();
}

/** The plan with objects made outside Git listed (and, when allowed, the console's deleted). */
export async function withOutsideGit(client: AdminClient, steps: readonly PlanStep[], plan: RemotePlan, allowDelete: boolean): Promise<RemotePlan> {
  const wanted = new Set(steps.map((s) => refKey(s)));
  const tenants = [...new Set(steps.filter((s) => s.kind === 'tenant').map((s) => s.tenant))];
  const live = await liveObjects(client, tenants);
  const owners = new Map(live.map((o) => [refKey(o.ref), o.owner]));
  const listed: OutsideGitObject[] = [];
  const changes: PlannedChange[] = plan.changes.map((c) => {
    const owner = owners.get(refKey(c.ref));
    if (c.op !== 'update' || owner === undefined || owner === MANAGED_BY || c.fields.length !== 1 || c.fields[0] !== 'managedBy') return c;
    listed.push({ kind: c.kind, ref: c.ref, name: c.name, owner, action: 'adopt' });
    return { ...c, op: 'unchanged', fields: [] };
  });
  const deletions: PlannedChange[] = [];
  for (const o of live) {
    if (o.owner !== MANAGED_BY_CONSOLE || wanted.has(refKey(o.ref))) continue;
    const name = stepName(o.ref);
    listed.push({ kind: o.ref.kind, ref: o.ref, name, owner: o.owner, action: allowDelete ? 'delete' : 'keep' });
    if (allowDelete) deletions.push({ op: 'delete', kind: o.ref.kind, ref: o.ref, name, fields: [] });
  }
  return { ...plan, changes: [...changes, ...deletions], outsideGit: listed };
}

/** The plan's "made outside Git" section; '' when there is nothing to say. */
export function formatOutsideGit(plan: RemotePlan): string {
  const listed = plan.outsideGit ?? [];
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
