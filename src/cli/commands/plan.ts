/**
 * `idforge plan`: what `apply` would create, change and delete on a live server.
 *
 * The server is the judge of what changes: the compiled plan goes to it as one tenant batch per
 * tenant (POST /tenants/{tenant}/batch, src/contract/batch.ts) with `?dryRun=true`, pruned by owner
 * `idforge`, and the server answers, per object, created / updated (with the fields) / unchanged /
 * deleted, judging each entry after the ones before it. That covers what the CLI cannot see itself
 * (hashed client secrets, "initial password only when none yet", an SPA whose audience is an api
 * the same plan creates). Deletions are the objects marked `managedBy: idforge` that the model no
 * longer has, and managed tenants absent from the model; nothing else is ever deleted.
 *
 * Admin credentials, in this order: `--data-dir <server data dir>` (reads the bootstrap file the
 * server wrote, admin-credentials.json), or IDFORGE_ADMIN_CLIENT_ID + IDFORGE_ADMIN_CLIENT_SECRET.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { AdminApiError, AdminClient, mapLimit, readAdminCredentials, endpointFromCredentials } from '../../admin-client/index.ts';
import {
  DEFAULT_APPLY_MANAGER, MANAGER, SYSTEM_TENANT, adminBaseUrl, applyManager, counted, endpointUrl, leftAsDeclared, MANAGED_BY_CONSOLE, managerOf, managerWords, refOf, stepName, tenantBatches,
  type EventView, type BatchEntryResult, type PlanStep, type ResourceRef, type ServerAddress, type TenantBatchBody, type TenantBatchResult, type UnmanagedPolicy,
} from '../../contract/index.ts';
import { tenantRenames, type Model } from '../../schema/model.ts';
import { compileTenants } from '../../generators/index.ts';
import { EXIT, UsageError, type CliIo, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { loadForCommand, reportProblems } from '../_model.ts';
import { locateProblems } from '../../schema/index.ts';
import { ownershipProblems } from './_ownership.ts';
import { gitInfoOf } from '../../schema/git-source.ts';
import { lastChangeWords, lastChanges } from '../_last-change.ts';
import type { ChangeOp, PlannedChange } from '../_planned-change.ts';
import { StateFileError, locateStateFile, readAsDeclared, readClientSecrets, resolvePasswords, resolveWebhookSecrets, stateLine, type AsDeclared } from '../_state.ts';
import { appliedDeletion, applyPrune, formatOutsideGit, outsideGitOf, planPrune, type OutsideGitObject } from '../_outside-git.ts';

export { AdminApiError } from '../../admin-client/index.ts';

export type { ChangeOp, PlannedChange } from '../_planned-change.ts';

export interface GuardViolation {
  readonly tenant: string;
  readonly kind: 'user' | 'assignment';
  readonly deleting: number;
  readonly existing: number;
}

export interface RemotePlan {
  readonly server: string;
  /** Who the plan writes as. */
  readonly manager: string;
  /** What changes; objects that stay as they are are only counted (`unchanged`). */
  readonly changes: readonly PlannedChange[];
  readonly unchanged: number;
  readonly guard: readonly GuardViolation[];
  /** Objects made outside Git (the console's, or differing only in owner): see _outside-git.ts. */
  readonly outsideGit: readonly OutsideGitObject[];
  /** Tenants not judged again: as the last apply found or left them (AsDeclared), same batch, same server revision. */
  readonly reused: number;
}

/** How plan and apply read the model: the same words in both commands' --help. */
export const MODEL_HELP = `--overlay <file> merges an environment's overlay over the model first (what a stack's
idforge:overlay does; see src/schema/overlay.ts), e.g. --overlay stacks/staging.overlay.yaml.
Initial user passwords come from the environment variables the model names; only a user that
apply creates needs one, and plan and apply both refuse (exit 1) when such a password is missing.
Client secrets are kept in the state file: --state <file>, else $IDFORGE_STATE, else
.idforge/state.json next to the model (in the first model path's directory), whichever directory
the command runs in; the first line printed names the one used.`;

export const CREDENTIAL_HELP = `Admin credentials: --data-dir <server data dir> reads the bootstrap client the server wrote
there (admin-credentials.json) and talks to the server that wrote it; otherwise set
IDFORGE_ADMIN_CLIENT_ID and IDFORGE_ADMIN_CLIENT_SECRET (a client of the server's 'system'
tenant allowed the 'admin' scope), sent to the server the model's 'server' section names.`;

/**
 * The admin client for the model's server. Credentials from a data dir go only to the server that
 * wrote them (the file's adminUrl); when that is not the server the model names, nothing is sent.
 */
export async function connect(addr: ServerAddress, dataDir: string | undefined, io: CliIo): Promise<AdminClient> {
  const wanted = adminBaseUrl(addr);
  if (dataDir !== undefined) {
    const creds = await readAdminCredentials(resolve(io.cwd, dataDir));
    if (creds.adminUrl !== wanted) {
      throw new AdminApiError(0, '', undefined,
        `the model's server is ${wanted}, but the credentials in ${dataDir} belong to ${creds.adminUrl}: nothing was sent. ` +
        "Point --data-dir at the data dir of the model's server, or change the model's server section");
    }
    return new AdminClient(endpointFromCredentials(creds));
  }
  const clientId = io.env.IDFORGE_ADMIN_CLIENT_ID;
  const clientSecret = io.env.IDFORGE_ADMIN_CLIENT_SECRET;
  if (!clientId || !clientSecret) throw new UsageError(`no admin credentials.\n${CREDENTIAL_HELP}`);
  return new AdminClient({ adminUrl: wanted, tokenUrl: endpointUrl(addr, SYSTEM_TENANT, 'token'), clientId, clientSecret });
}

const change = (op: PlannedChange['op'], ref: ResourceRef, fields: readonly string[] = []): PlannedChange =>
  ({ op, kind: ref.kind, ref: refOf(ref), name: stepName(ref), fields });

const tenantRef = (tenant: string): ResourceRef => ({ kind: 'tenant', tenant });

/** Tenant batches in flight at once: enough to keep the server's cores busy, few enough to leave it room for sign-ins. */
export const BATCH_CONCURRENCY = 4;

export interface PlanOptions {
  /** Delete the console's objects the model does not declare (`--allow-delete-console`). */
  readonly allowDeleteConsole?: boolean;
  /** Each model tenant's `unmanaged` policy (default remove). */
  readonly unmanaged?: ReadonlyMap<string, UnmanagedPolicy>;
  /** Called as each tenant's dry run is answered. */
  readonly progress?: (done: number, total: number) => void;
  /** Tenant renames the model declares (previousName): new name → previous name. */
  readonly renames?: ReadonlyMap<string, string>;
  /** Application renames the model declares, per tenant: new name → previous name. */
  readonly appRenames?: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** Who this plan writes as (src/contract/managers.ts): `apply:<name>`; default `apply:default`. */
  readonly manager?: string;
  /** Take over what other managers keep (--force-conflicts); otherwise such a change is refused, naming them. */
  readonly force?: boolean;
  /**
   * Tenants as the last apply found or left them exactly as declared (the state file's AsDeclared):
   * one whose batch has the same digest and whose revision the server still answers is not judged
   * again. Without it (`--refresh`), every tenant is.
   */
  readonly asDeclared?: ReadonlyMap<string, AsDeclared>;
}

/**
 * Whether a tenant's batch answer leaves nothing for the next plan to say about the tenant while its
 * revision holds, so that plan may skip it (AsDeclared). A dry run: nothing to change, delete or list
 * (planPrune finds the console's objects and the drift), no access the model does not declare. An
 * apply's batch (pruned by applyPrune, asked `undeclared`): nothing refused or another manager's among
 * its entries, and what it left beside them is kept by another manager that plan never lists (SCIM,
 * another stack), not the console's nor drift (but under `unmanaged: keep`, which never looks for drift).
 */
export function leavesNothingToSay(r: TenantBatchResult, manager: string, policy: UnmanagedPolicy, dryRun: boolean): boolean {
  if (r.revision === undefined) return false;
  const noGrants = policy === 'keep' || (r.undeclared !== undefined && r.undeclared.groupAssignments.length === 0);
  if (dryRun) return r.results.length === 0 && noGrants;
  // Its entries: the rule a Pulumi stack keeps revisions by (nothing refused, nothing another manager keeps).
  if (!leftAsDeclared(r, manager, false)) return false;
  const u = r.undeclared;
  if (u === undefined) return false;
  const unsaid = (o: { readonly manager?: string }) => (o.manager === undefined ? policy === 'keep' : o.manager !== MANAGED_BY_CONSOLE && o.manager !== manager);
  return noGrants && [...u.applications, ...u.users, ...u.assignments, ...(u.webhooks ?? [])].every(unsaid);
}

/**
 * The digest of a tenant's batch as plan judges it and apply sends it (manager, prune and report
 * included) under the tenant's policy: what AsDeclared keeps. A client secret counts by its value, not
 * by where the body holds it (apply adds the ones it makes; the next compile reads them from the state file).
 */
export function batchDigest(tenant: string, batch: TenantBatchBody, policy: UnmanagedPolicy): string {
  const hash = createHash('sha256').update(`idforge batch 1\0${tenant}\0${policy}\0`);
  const secrets: string[] = [];
  const applications = (batch.applications ?? []).map((a) => {
    if (!('clientSecret' in a.body)) return a;
    const { clientSecret, ...body } = a.body as typeof a.body & { clientSecret?: string };
    secrets.push(`${a.name}\0${clientSecret ?? ''}`);
    return { ...a, body };
  });
  hash.update(JSON.stringify(batch.applications === undefined ? batch : { ...batch, applications }));
  for (const s of secrets) hash.update(`\0${s}`);
  return hash.digest('base64url');
}

/** Every entry of a tenant batch written as `manager`. */
export function asManager(batch: TenantBatchBody, manager: string, force: boolean): TenantBatchBody {
  return {
    ...batch,
    ...(batch.tenant === undefined ? {} : { tenant: { ...batch.tenant, manager } }),
    applications: (batch.applications ?? []).map((a) => ({ ...a, body: { ...a.body, manager } })),
    users: (batch.users ?? []).map((u) => ({ ...u, body: { ...u.body, manager } })),
    assignments: (batch.assignments ?? []).map((g) => ({ ...g, body: { ...g.body, manager } })),
    ...(batch.webhooks === undefined ? {} : { webhooks: batch.webhooks.map((w) => ({ ...w, body: { ...w.body, manager } })) }),
    force,
  };
}

/** One tenant of the model: the batch that makes the server match it, and the server's dry-run judgement of it. */
export interface TenantPlan {
  readonly tenant: string;
  /** What apply sends. */
  readonly batch: TenantBatchBody;
  /** The dry run, as sent (owner-only updates included: apply sends the tenant for them). */
  readonly judged: TenantBatchResult;
  /** The tenant's name on the server until apply renames it (a previousName not yet applied). */
  readonly renameFrom?: string;
  /** Applications to rename first (a previousName not yet applied): the server moves each with its client id, secret, assignments and tokens. */
  readonly appRenames?: readonly { readonly from: string; readonly to: string }[];
  /** batchDigest of `batch`, under `policy`. */
  readonly digest: string;
  readonly policy: UnmanagedPolicy;
  /** Found exactly as declared (by its dry run, or kept from the last apply, `reused`): what AsDeclared keeps of it. */
  readonly asDeclared?: AsDeclared;
  readonly reused?: boolean;
}

/** Pending tenant and application renames as the plan lists them: updates, first of all changes. */
export function renameChanges(tenants: readonly Pick<TenantPlan, 'tenant' | 'renameFrom' | 'appRenames'>[]): PlannedChange[] {
  return tenants.flatMap((t) => [
    ...(t.renameFrom === undefined ? [] : [change('update', tenantRef(t.tenant), [`renamed from '${t.renameFrom}'`])]),
    ...(t.appRenames ?? []).map((r) => change('update', { kind: 'application', tenant: t.tenant, application: r.to }, [`renamed from '${r.from}'`])),
  ]);
}

/**
 * The batch as the server sees it before apply's pending application renames: each renamed entry
 * (and its assignments) under the name it still has there, so the dry run judges the object that
 * will move instead of a new one beside it. Results come back under the new names.
 */
function beforeAppRenames(batch: TenantBatchBody, renames: readonly { from: string; to: string }[]): TenantBatchBody {
  if (renames.length === 0) return batch;
  const old = new Map(renames.map((r) => [r.to, r.from]));
  const back = (name: string) => old.get(name) ?? name;
  return {
    ...batch,
    applications: (batch.applications ?? []).map((a) => ({ ...a, name: back(a.name) })),
    assignments: (batch.assignments ?? []).map((g) => ({ ...g, application: back(g.application) })),
  };
}
const afterAppRenames = <J extends TenantBatchResult>(judged: J, renames: readonly { from: string; to: string }[]): J => {
  if (renames.length === 0) return judged;
  const now = new Map(renames.map((r) => [r.from, r.to]));
  return { ...judged, results: judged.results.map((r) => (r.application !== undefined && now.has(r.application) ? { ...r, application: now.get(r.application)! } : r)) };
};

/** A batch entry's result as the object it names. */
function refOfResult(tenant: string, r: BatchEntryResult): ResourceRef {
  switch (r.kind) {
    case 'tenant':
      return tenantRef(tenant);
    case 'application':
      return { kind: 'application', tenant, application: r.application! };
    case 'user':
      return { kind: 'user', tenant, user: r.user! };
    case 'assignment':
      return { kind: 'assignment', tenant, application: r.application!, user: r.user! };
    case 'webhook':
      return { kind: 'webhook', tenant, webhook: r.webhook! };
  }
}

const OP = { created: 'create', updated: 'update', unchanged: 'unchanged', deleted: 'delete' } as const;

/**
 * Every refused entry as one line, worded as the single-object call's refusal was
 * (`PUT acme/portal: HTTP 409: clientId ... (at clientId)`), so a plan that apply could not carry
 * out fails before anything is written, naming each problem.
 */
export function batchRefusal(tenant: string, batch: TenantBatchBody, results: readonly BatchEntryResult[]): BatchRefused {
  const puts = new Set([
    ...(batch.tenant === undefined ? [] : ['tenant']),
    ...(batch.applications ?? []).map((a) => `application ${a.name}`),
    ...(batch.users ?? []).map((u) => `user ${u.id}`),
    ...(batch.assignments ?? []).flatMap((g) => g.users.map((u) => `assignment ${g.application} ${u}`)),
    ...(batch.webhooks ?? []).map((w) => `webhook ${w.name}`),
  ]);
  const lines = results.filter((r) => r.outcome === 'refused').map((r) => {
    const method = puts.has([r.kind, r.application, r.user, r.webhook].filter((x) => x !== undefined).join(' ')) ? 'PUT' : 'DELETE';
    return `${method} ${stepName(refOfResult(tenant, r))}: HTTP ${r.status}: ${r.reason}${r.path ? ` (at ${r.path})` : ''}`;
  });
  const first = results.find((r) => r.outcome === 'refused');
  return new BatchRefused(tenant, results, first?.status ?? 422, lines.join('\n'));
}

/** A tenant batch the server refused (nothing was written), with every entry's outcome. */
export class BatchRefused extends AdminApiError {
  constructor(readonly tenant: string, readonly results: readonly BatchEntryResult[], status: number, message: string) {
    super(status, '', undefined, message);
  }
}

/**
 * Dry-runs every tenant's batch (writes nothing) and lists the managed tenants the model leaves
 * out: the plan, the mass-deletion guard's verdict, and per tenant what apply will send.
 */
export async function planAgainst(
  client: AdminClient, compiled: readonly { readonly name: string; readonly steps: () => readonly PlanStep[] }[], options: PlanOptions = {},
): Promise<RemotePlan & { readonly tenants: readonly TenantPlan[] }> {
  const allowDeleteConsole = options.allowDeleteConsole === true;
  const manager = options.manager ?? applyManager();
  const force = options.force === true;
  const policy = (tenant: string): UnmanagedPolicy => options.unmanaged?.get(tenant) ?? 'remove';
  // Only what changes is listed in the answers (unchanged objects are counted): a no-op plan of
  // 100,000 users is then a few bytes per tenant. The dry run prunes the console's objects and the
  // drift too, so the server names them (_outside-git.ts); apply prunes them only when allowed.
  // Each tenant is compiled just before its dry run is sent, while the server judges the ones before it.
  const batches = compiled.map(({ name, steps }): [string, () => TenantBatchBody] => [name, () => {
    const batch = tenantBatches(steps()).get(name) ?? {};
    return { ...asManager(batch, manager, force), prune: applyPrune(policy(name), allowDeleteConsole, manager), report: 'changes' };
  }]);
  const inModel = new Set(batches.map(([t]) => t));
  let judgedTenants = 0;
  const onServer = (await client.listAll('listTenants', {})) ?? [];
  const names = new Set(onServer.map((t) => t.name));
  // A declared rename is pending while the server has the old name and not the new one: the old
  // tenant is judged (its contents are what moves), and it is not a tenant to delete.
  const renameFrom = new Map([...(options.renames ?? [])].filter(([to, from]) => inModel.has(to) && names.has(from) && !names.has(to)));
  const renamed = new Set(renameFrom.values());
  // Only tenants this manager keeps go when the model leaves them out: another stack's or apply's stay.
  const going = onServer.filter((t) => !inModel.has(t.name) && !renamed.has(t.name) && managerOf(t) === manager).map((t) => t.name);
  // Every tenant's revision, in one request, when the last apply left any as declared (a server from before revisions answers none).
  const kept = options.asDeclared ?? new Map<string, AsDeclared>();
  const revisions = kept.size === 0 ? {} : await client.call('listTenantRevisions', {}).then((r) => r.revisions, (err: unknown) => {
    if (err instanceof AdminApiError && err.status === 404) return {} as Record<string, string>;
    throw err;
  });
  const tenants = await mapLimit(batches, BATCH_CONCURRENCY, async ([tenant, build]): Promise<TenantPlan> => {
    const batch = build();
    const digest = batchDigest(tenant, batch, policy(tenant));
    const from = renameFrom.get(tenant);
    // Application renames the model declares and the server has not seen yet.
    const declared = options.appRenames?.get(tenant) ?? new Map<string, string>();
    // As the last apply found or left it, the same batch, and nothing changed on the server since: nothing to judge.
    const last = kept.get(tenant);
    if (last !== undefined && from === undefined && declared.size === 0 && last.digest === digest && revisions[tenant] === last.revision) {
      options.progress?.(++judgedTenants, batches.length);
      const none = { applications: [], users: [], assignments: [], groupAssignments: [], webhooks: [] };
      const judged: TenantBatchResult = { applied: false, before: { users: 0, assignments: 0 }, results: [], unchanged: last.objects, undeclared: none, revision: last.revision };
      return { tenant, batch, judged, digest, policy: policy(tenant), asDeclared: last, reused: true };
    }
    let appRenames: { from: string; to: string }[] = [];
    if (declared.size > 0) {
      const live = new Set(((await client.listAll('listApplications', { tenant: from ?? tenant })) ?? []).map((a) => a.name));
      appRenames = [...declared].filter(([to, was]) => live.has(was) && !live.has(to)).map(([to, was]) => ({ from: was, to }));
    }
    // The dry run also answers the group assignments on the tenant's applications (`undeclared`), where the tenant's policy looks for them.
    const looked = policy(tenant) !== 'keep';
    const judged = afterAppRenames(await client.batch(from ?? tenant, {
      ...beforeAppRenames(batch, appRenames), prune: planPrune(policy(tenant), manager), ...(looked ? { undeclared: true } : {}),
    }, { dryRun: true }), appRenames);
    if (judged.refused) throw batchRefusal(tenant, batch, judged.results);
    options.progress?.(++judgedTenants, batches.length);
    const clean = from === undefined && appRenames.length === 0 && leavesNothingToSay(judged, manager, policy(tenant), true);
    return {
      tenant, batch, judged, digest, policy: policy(tenant), ...(from === undefined ? {} : { renameFrom: from }), ...(appRenames.length === 0 ? {} : { appRenames }),
      ...(clean ? { asDeclared: { digest, revision: judged.revision!, objects: judged.unchanged } } : {}),
    };
  });
  const shown = tenants.map((t) => ({ tenant: t.tenant, ...outsideGitOf(t.tenant, t.judged, policy(t.tenant), allowDeleteConsole, refOfResult, manager) }));
  // What a deleted tenant holds goes with it; the guard counts it. An empty batch's dry run says how much.
  const goingCounts = await mapLimit(going, BATCH_CONCURRENCY, async (tenant) => (await client.batch(tenant, {}, { dryRun: true })).before);

  const { changes: found, unchanged, guard } = changesFrom(shown, going.map((tenant, i) => ({ tenant, before: goingCounts[i]! })));
  const granted = await undeclaredGrants(client, tenants, policy);
  const changes = [...renameChanges(tenants), ...found, ...granted.filter((g) => g.action === 'delete').map((g) => change('delete', g.ref))];
  // Apply sends a tenant when its dry run, as sent, has anything to do.
  const sent = tenants.map((t) => ({ ...t, judged: { ...t.judged, results: t.judged.results.filter((r) => appliedDeletion(r, policy(t.tenant), allowDeleteConsole, manager)) } }));
  return {
    server: await client.server(), manager, changes, unchanged, guard, outsideGit: [...shown.flatMap((t) => t.listed), ...granted], tenants: sent,
    reused: tenants.filter((t) => t.reused === true).length,
  };
}

/**
 * Access the model does not declare: group assignments on the model's applications (the model's
 * groups become user assignments, so it declares none). A group another door keeps (SCIM's) must not
 * let an identity provider grant access to an application Git manages without anyone seeing it:
 * such grants follow the tenant's `unmanaged` policy, deleted under `remove` (the default), listed
 * under `report`. Read from each tenant's dry run (`undeclared`).
 */
async function undeclaredGrants(client: AdminClient, tenants: readonly TenantPlan[], policy: (tenant: string) => UnmanagedPolicy): Promise<OutsideGitObject[]> {
  const found = await mapLimit(tenants.filter((t) => policy(t.tenant) !== 'keep'), BATCH_CONCURRENCY, async (t): Promise<OutsideGitObject[]> => {
    const declared = new Set((t.batch.applications ?? []).map((a) => a.name));
    // The dry run's answer holds them; a server from before `undeclared` is asked on its own.
    let items: readonly { application: string; group: string; manager?: string }[] | undefined = t.judged.undeclared?.groupAssignments;
    if (items === undefined) {
      try {
        items = (await client.call('listTenantGroupAssignments', { tenant: t.renameFrom ?? t.tenant })).items;
      } catch (err) {
        if (err instanceof AdminApiError && err.status === 404) return [];
        throw err;
      }
    }
    return items.filter((g) => declared.has(g.application)).map((g) => {
      const ref = { kind: 'group assignment' as const, tenant: t.tenant, application: g.application, group: g.group };
      return { kind: ref.kind, ref, name: stepName(ref), owner: g.manager ?? '', action: policy(t.tenant) === 'remove' ? 'delete' as const : 'report' as const };
    });
  });
  return found.flat();
}

/**
 * The changes that tenant batches' results (a dry run's or an apply's) and deleted tenants make,
 * as the plan lists them: creates and updates in the model's order, then deletions, children
 * first (assignments, users, applications with clients before apis, tenants); and the guard.
 */
export function changesFrom(
  tenants: readonly { readonly tenant: string; readonly judged: Pick<TenantBatchResult, 'results' | 'before' | 'unchanged'> }[],
  going: readonly { readonly tenant: string; readonly before: TenantBatchResult['before'] }[],
): { changes: PlannedChange[]; unchanged: number; guard: GuardViolation[] } {
  const puts: PlannedChange[] = [];
  let unchanged = 0;
  const deletions: PlannedChange[][] = [[], [], [], []];
  const guard: GuardViolation[] = [];
  for (const { tenant, judged } of tenants) {
    let userDeletes = 0;
    let assignmentDeletes = 0;
    unchanged += judged.unchanged;
    for (const r of judged.results) {
      if (r.outcome === 'unchanged') continue;
      const op = OP[r.outcome as keyof typeof OP];
      // A takeover says whose the object was (plan and preview show it explicitly).
      const fields = r.outcome === 'updated' ? (r.changes ?? []).map((f) => (f === 'manager' ? (r.manager === undefined ? 'adopted' : `taken over from ${managerWords(r.manager)}`) : f)) : [];
      const c = change(op, refOfResult(tenant, r), fields);
      if (op !== 'delete') puts.push(c);
      else {
        deletions[r.kind === 'assignment' ? 0 : r.kind === 'user' ? 1 : 2]!.push(c);
        if (r.kind === 'user') userDeletes++;
        if (r.kind === 'assignment') assignmentDeletes++;
      }
    }
    guard.push(...guardOf(tenant, userDeletes, assignmentDeletes, judged.before));
  }
  for (const { tenant, before } of going) {
    deletions[3]!.push(change('delete', tenantRef(tenant)));
    guard.push(...guardOf(tenant, before.users, before.assignments, before));
  }
  return { changes: [...puts, ...deletions.flat()], unchanged, guard };
}

/**
 * The guard: deleting most (more than half) of a tenant's users or assignments is refused unless
 * asked for, since a mistake there (a file left out of the model) locks people out.
 */
function guardOf(tenant: string, userDeletes: number, assignmentDeletes: number, before: TenantBatchResult['before']): GuardViolation[] {
  const out: GuardViolation[] = [];
  if (userDeletes > 0 && userDeletes * 2 > before.users) out.push({ tenant, kind: 'user', deleting: userDeletes, existing: before.users });
  if (assignmentDeletes > 0 && assignmentDeletes * 2 > before.assignments) {
    out.push({ tenant, kind: 'assignment', deleting: assignmentDeletes, existing: before.assignments });
  }
  return out;
}

export function summary(plan: RemotePlan): Record<ChangeOp | 'unchanged', number> {
  const s = { create: 0, update: 0, delete: 0, unchanged: plan.unchanged };
  for (const c of plan.changes) s[c.op]++;
  return s;
}

const SIGIL = { create: '+', update: '~', delete: '-', unchanged: '=' } as const;

/** `last`: the change that last made each object what it is (`idforge plan`), by change name. */
export function formatPlan(plan: RemotePlan, color: boolean, last: ReadonlyMap<string, EventView> = new Map()): string {
  const paint = (op: keyof typeof SIGIL, s: string) =>
    !color ? s : `\u001b[${op === 'create' ? 32 : op === 'update' ? 33 : op === 'delete' ? 31 : 2}m${s}\u001b[0m`;
  const lines = plan.changes
    .filter((c) => c.op !== 'unchanged')
    .map((c) => {
      const was = last.get(c.name);
      return paint(c.op, `  ${SIGIL[c.op]} ${c.kind} ${c.name}${c.fields.length > 0 ? ` (${c.fields.join(', ')})` : ''}${was === undefined ? '' : ` [${lastChangeWords(was)}]`}`);
    });
  const s = summary(plan);
  const head = `Server ${plan.server}`;
  const total = s.create + s.update + s.delete;
  const tail = total === 0
    ? `No changes: the server matches the model (${s.unchanged} object${s.unchanged === 1 ? '' : 's'}).`
    : `Plan: ${s.create} to create, ${s.update} to change, ${s.delete} to delete, ${s.unchanged} unchanged.`;
  return [head, ...lines, tail, ...(plan.reused > 0 ? [reusedWords(plan.reused)] : [])].join('\n') + '\n';
}

/** The line that says how many tenants were not judged again (AsDeclared), and how to have them judged. */
export const reusedWords = (n: number): string =>
  `${counted(n, 'tenant')} as the last apply left ${n === 1 ? 'it' : 'them'} (the same model, no change on the server since): not judged again; --refresh judges every tenant.`;

export function formatGuard(guard: readonly GuardViolation[]): string {
  return guard.map((g) => `refusing to delete ${g.deleting} of ${counted(g.existing, g.kind)} of tenant '${g.tenant}' (most of them); ` +
    'if that is intended, run again with --allow-mass-delete\n').join('');
}

export const PLAN_OPTIONS = {
  'data-dir': { type: 'string' },
  state: { type: 'string' },
  json: { type: 'boolean' },
  'allow-mass-delete': { type: 'boolean' },
  'allow-delete-console': { type: 'boolean' },
  overlay: { type: 'string' },
  manager: { type: 'string' },
  'force-conflicts': { type: 'boolean' },
  refresh: { type: 'boolean' },
} as const;

/** Shared by plan and apply: load, resolve secrets, compile, connect, dry-run. */
export async function preparePlan(
  command: 'plan' | 'apply', argv: readonly string[], io: CliIo, usage: string, help: string,
): Promise<{ exit: number } | {
  plan: RemotePlan & { readonly tenants: readonly TenantPlan[] }; client: AdminClient; stateFile: string;
  /** Client secrets found under a renamed tenant's or application's old key: apply keeps them under the new one. */
  movedSecrets: readonly { key: string; clientSecret: string }[];
  /** The model's files and directories, resolved: where apply reads the sources of what it sends. */
  paths: readonly string[];
  values: { json: boolean; allowMassDelete: boolean };
}> {
  const { values, positionals } = parseCommandArgs(argv, PLAN_OPTIONS, usage);
  if (values.help) {
    io.stdout(help);
    return { exit: EXIT.ok };
  }
  if (positionals.length === 0) throw new UsageError(`no model given\n${usage}`);
  const json = values.json === true;
  const managerName = values.manager ?? DEFAULT_APPLY_MANAGER;
  if (!MANAGER.test(applyManager(managerName))) throw new UsageError(`--manager '${managerName}' must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' or '-'\n${usage}`);
  const paths = positionals.map((p) => resolve(io.cwd, p));
  const overlay = values.overlay === undefined ? undefined : resolve(io.cwd, values.overlay);
  const model: Model | undefined = await loadForCommand(io, paths, json, overlay);
  if (model === undefined) return { exit: EXIT.invalid };
  const { passwords, unresolved } = resolvePasswords(model, io.env);
  // Webhook secrets are sent on every run: a missing one stops the command before it connects.
  const { secrets: webhookSecrets, problems: hookProblems } = resolveWebhookSecrets(model, io.env);
  if (hookProblems.length > 0) {
    reportProblems(io, overlay === undefined ? await locateProblems(paths, hookProblems) : hookProblems, json);
    return { exit: EXIT.invalid };
  }
  let secrets;
  let movedSecrets;
  const state = await locateStateFile(paths, values.state, io.env, io.cwd);
  const stateFile = state.file;
  try {
    ({ secrets, moved: movedSecrets } = await readClientSecrets(model, stateFile));
  } catch (err) {
    if (err instanceof StateFileError) {
      io.stderr(`idforge ${command}: ${err.message}\n`);
      return { exit: EXIT.invalid };
    }
    throw err;
  }
  // Where each entry was declared is recorded by apply, for the tenants it sends (apply.ts): never a
  // change a plan would show, so the plan is made without it.
  const compiled = compileTenants(model, { secrets, passwords, webhookSecrets });
  try {
    // Every write names its manager and, in a Git repository, the model's commit (the server's event log).
    const git = await gitInfoOf(paths[0]!);
    const client = (await connect(model.server, values['data-dir'], io)).as({ manager: applyManager(managerName), ...(git === undefined ? {} : { git }) });
    // apply plans first too: the guard and every refusal are judged before anything is written.
    const progress = progressLine(io, json, command === 'plan' ? 'planning' : 'planning before apply');
    const asDeclared = values.refresh === true ? undefined : await readAsDeclared(stateFile, await client.server());
    const plan = await planAgainst(client, compiled, {
      ...(asDeclared === undefined ? {} : { asDeclared }),
      allowDeleteConsole: values['allow-delete-console'] === true,
      unmanaged: new Map(model.tenants.map((t) => [t.name, t.unmanaged])),
      renames: tenantRenames(model),
      appRenames: new Map(model.tenants.map((t) => [t.name, new Map(t.applications.flatMap((a) => (a.previousName === undefined ? [] : [[a.name, a.previousName] as const])))])),
      progress: progress.update,
      manager: applyManager(managerName),
      force: values['force-conflicts'] === true,
    });
    progress.done();
    // An initial password matters only to a user this run creates (as on the Pulumi path, the Tenant resource's
    // check): plan and apply refuse the same users, in the same words, before anything is written.
    const needed = plan.changes.flatMap((c) => {
      const p = c.op === 'create' && c.kind === 'user' ? unresolved.get(c.name) : undefined;
      return p === undefined ? [] : [{ ...p, message: `${p.message} (${c.name} is new on the server and is created with it)` }];
    });
    if (needed.length > 0) {
      // An overlay's paths are the merged model's, which no file holds: those stay unlocated.
      reportProblems(io, overlay === undefined ? await locateProblems(paths, needed) : needed, json);
      return { exit: EXIT.invalid };
    }
    if (!json) io.stdout(stateLine(state));
    return { plan, client, stateFile, movedSecrets, paths, values: { json, allowMassDelete: values['allow-mass-delete'] === true } };
  } catch (err) {
    // Users another door manages (SCIM, the console) are the model's mistake: shown at their place in it.
    const owned = err instanceof BatchRefused ? ownershipProblems(model, err.tenant, err.results) : [];
    if (owned.length > 0) {
      reportProblems(io, await locateProblems(positionals.map((p) => resolve(io.cwd, p)), owned), json);
      return { exit: EXIT.invalid };
    }
    if (err instanceof AdminApiError) {
      if (json) io.stdout(`${JSON.stringify({ ok: false, error: err.message }, null, 2)}\n`);
      else io.stderr(`idforge ${command}: ${err.message}\n`);
      return { exit: EXIT.invalid };
    }
    throw err;
  }
}

/**
 * Per-tenant progress on a terminal (stderr, rewritten in place, at most ten times a second), gone
 * when the work ends. Nothing without a terminal or with --json, so pipes and logs stay clean.
 */
export function progressLine(io: CliIo, json: boolean, what: string): { update: (done: number, total: number) => void; done: () => void } {
  if (json || !io.interactive) return { update: () => {}, done: () => {} };
  let last = 0;
  let shown = false;
  return {
    update: (done, total) => {
      const now = Date.now();
      if (done < total && now - last < 100) return;
      last = now;
      shown = true;
      io.stderr(`\r\u001b[2K${what}: ${done}/${total} tenant${total === 1 ? '' : 's'}`);
    },
    done: () => {
      if (shown) io.stderr('\r\u001b[2K');
    },
  };
}

export function planJson(plan: RemotePlan) {
  return {
    server: plan.server,
    summary: summary(plan),
    reused: plan.reused,
    changes: plan.changes.filter((c) => c.op !== 'unchanged').map(({ op, ref, name, fields }) => ({ op, ...ref, name, fields })),
    guard: plan.guard,
    outsideGit: plan.outsideGit.map(({ kind, name, owner, action }) => ({ kind, name, owner, action })),
  };
}

const USAGE = 'usage: idforge plan <model file or directory>... [--overlay <environment overlay>] (--data-dir <server data dir> | env IDFORGE_ADMIN_CLIENT_ID/SECRET) [--manager <name>] [--force-conflicts] [--refresh] [--state <file>] [--json] [--allow-mass-delete] [--allow-delete-console]';
export const MANAGER_HELP = `--manager <name>   who this apply is (default 'default'): objects it makes are managed by
                   apply:<name>, and only those are deleted when the model drops them. A change
                   to an object another manager keeps (a Pulumi stack, another --manager, the
                   console, SCIM) is refused, naming it; objects declared exactly as they are stay
                   theirs.
--force-conflicts  take such objects over instead (shown as "taken over from ...").
--refresh          have the server judge every tenant. Otherwise a tenant that the last apply
                   found or left exactly as declared (kept in the state file) is not judged
                   again while the model compiles to the same batch for it and the server's
                   directory revision for it (moved by every change through every door) holds.`;
const HELP = `${USAGE}

Compares the model with the live server named in its 'server' section and prints what
'idforge apply' would create (+), change (~) and delete (-). Changes nothing, and writes no file.
Only objects this manager keeps are ever deleted; deleting most of a tenant's users or
assignments is refused without --allow-mass-delete (plan exits 1 when apply would refuse).
Objects made in the admin console are listed under "Made outside Git": kept when the model does
not declare them, deleted only with --allow-delete-console. Objects made by hand (through the
admin API) in a tenant of the model are drift, listed there too: deleted under the tenant's
'unmanaged: remove' (the default), kept under 'report', not looked for under 'keep'; declared by
the model, apply adopts them. What SCIM made is never touched.
On a terminal, progress is shown per tenant on stderr.

${MANAGER_HELP}

${MODEL_HELP}

${CREDENTIAL_HELP}
`;

export const run: Command = async (argv, io) => {
  const prepared = await preparePlan('plan', argv, io, USAGE, HELP);
  if ('exit' in prepared) return prepared.exit;
  const { plan, values } = prepared;
  const refused = plan.guard.length > 0 && !values.allowMassDelete;
  const last = await lastChanges(prepared.client, plan.changes);
  if (values.json) {
    const lastChanged = Object.fromEntries([...last].map(([name, e]) => [name, { event: e.id, time: e.time, actor: e.actor }]));
    io.stdout(`${JSON.stringify({ ok: !refused, stateFile: prepared.stateFile, ...planJson(plan), ...(last.size > 0 ? { lastChanged } : {}) }, null, 2)}\n`);
  } else {
    io.stdout(formatPlan(plan, io.color, last) + formatOutsideGit(plan.outsideGit, plan.manager));
    if (refused) io.stderr(formatGuard(plan.guard));
  }
  return refused ? EXIT.invalid : EXIT.ok;
};
