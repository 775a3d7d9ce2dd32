/**
 * The tenant batch: a tenant's desired applications, users and assignments (and the tenant itself)
 * in one request, which the server diffs against what it holds and applies in one transaction,
 * answering an outcome per entry. `idforge plan|apply` send one per tenant instead of one request per
 * object; the Pulumi provider sends one per changed Tenant resource (and dry-runs one to read it).
 *
 * Every entry's body is the single-object PUT's body (the same zod schema, with its refinements),
 * and the server judges each entry with the single-object PUT's rules, in this order, each seeing
 * the entries before it: the tenant; applications (apis first, then clients); users; assignments;
 * then deletions (assignments, users, client applications, apis). So a batch that creates an api
 * and an SPA naming it as audience, or a user and its assignment, is judged as those PUTs in that
 * order would be. If any entry is refused, nothing is applied and every entry's outcome is answered.
 */
import { z } from 'zod';
import { MANAGER, MANAGER_RULE, managerOf } from './managers.ts';
import { ApplicationBody, ApplicationName, AssignmentBody, TenantBody, UserBody, UserId } from './bodies.ts';
import { WebhookBody } from './webhooks.ts';
import type { PlanStep, PutStep } from './plan.ts';

const ManagedByValue = z.string().min(1).max(64);

export const BatchApplication = z.strictObject({ name: ApplicationName, body: ApplicationBody });
export const BatchUser = z.strictObject({ id: UserId, body: UserBody });
export const BatchAssignments = z.strictObject({
  application: ApplicationName,
  /** The users assigned to the application, each an entry of its own. */
  users: z.array(UserId),
  body: AssignmentBody.default({}),
});
const BatchUnassignments = z.strictObject({ application: ApplicationName, users: z.array(UserId) });
/** A webhook's name: as an application's. */
export const WebhookName = ApplicationName;
export const BatchWebhook = z.strictObject({ name: WebhookName, body: WebhookBody });

/** POST /admin/v1/tenants/{tenant}/batch */
export const TenantBatchBody = z
  .strictObject({
    /** The tenant's full desired state (created when absent); absent: the tenant must exist. */
    tenant: TenantBody.optional(),
    applications: z.array(BatchApplication).default([]),
    users: z.array(BatchUser).default([]),
    assignments: z.array(BatchAssignments).default([]),
    /**
     * The tenant's webhooks (src/contract/webhooks.ts), each the single PUT's body. They are judged
     * with the other entries (a refused one refuses the batch) and written right after the batch's
     * transaction, each with its event in a transaction of its own (the webhook store is not the
     * tenant's): a crash between the two leaves the webhooks to the next, idempotent, run.
     */
    webhooks: z.array(BatchWebhook).default([]),
    /** Objects to delete; deleting what is not there is `unchanged`. */
    delete: z
      .strictObject({
        applications: z.array(ApplicationName).default([]),
        users: z.array(UserId).default([]),
        assignments: z.array(BatchUnassignments).default([]),
        webhooks: z.array(WebhookName).default([]),
      })
      .default({ applications: [], users: [], assignments: [], webhooks: [] }),
    /**
     * Also delete every application, user and assignment of the tenant that one of these managers
     * keeps (src/contract/managers.ts) and that the batch does not list: the batch is then the
     * whole of what that manager wants (what `idforge apply --manager <name>` sends). Objects of
     * other managers stay. `idforge plan` also names the console's in its dry run, to list them.
     */
    prune: z.strictObject({
      managers: z.array(z.string().regex(MANAGER, { error: MANAGER_RULE })).default([]),
      /** Also every object no manager keeps (made by hand): what a model's `unmanaged: remove` removes. */
      drift: z.boolean().default(false),
    }).optional(),
    /**
     * Which outcomes the answer lists: `all` (default), or `changes` (all but the unchanged ones,
     * which are only counted): a no-op batch of thousands of objects then answers in a few bytes.
     */
    report: z.enum(['all', 'changes']).default('all'),
    /**
     * Take over objects another manager keeps (src/contract/managers.ts): without it, an entry that
     * would change one is refused, naming its manager. `idforge apply --force-conflicts`.
     */
    force: z.boolean().default(false),
    /**
     * Also answer `undeclared`: what the tenant holds that the batch neither lists nor deletes (its
     * prune included), each object with its manager, and the group assignments on the applications
     * the batch lists. With a dry run that is all a reader of the tenant needs, in one request (the
     * Pulumi provider's look at the live tenant in every preview: the drift, and what other managers keep there).
     */
    undeclared: z.boolean().default(false),
  })
  .superRefine((b, ctx) => {
    // An object listed twice has no one desired state: refused at its second listing.
    const twice = (path: (string | number)[], what: string) =>
      ctx.addIssue({ code: 'custom', path, message: `${what} is listed more than once`, params: { code: 'duplicate-entry' } });
    const seen = (keys: Set<string>, key: string) => (keys.has(key) ? true : (keys.add(key), false));
    const apps = new Set<string>();
    b.applications.forEach((a, i) => seen(apps, a.name) && twice(['applications', i, 'name'], `application '${a.name}'`));
    b.delete.applications.forEach((a, i) => seen(apps, a) && twice(['delete', 'applications', i], `application '${a}'`));
    const users = new Set<string>();
    b.users.forEach((u, i) => seen(users, u.id) && twice(['users', i, 'id'], `user '${u.id}'`));
    b.delete.users.forEach((u, i) => seen(users, u) && twice(['delete', 'users', i], `user '${u}'`));
    const pairs = new Set<string>();
    const pair = (list: readonly { application: string; users: readonly string[] }[], at: (string | number)[]) =>
      list.forEach((a, i) => a.users.forEach((u, j) => seen(pairs, `${a.application}\u0000${u}`) && twice([...at, i, 'users', j], `assignment of user '${u}' to '${a.application}'`)));
    pair(b.assignments, ['assignments']);
    pair(b.delete.assignments, ['delete', 'assignments']);
    const hooks = new Set<string>();
    b.webhooks.forEach((w, i) => seen(hooks, w.name) && twice(['webhooks', i, 'name'], `webhook '${w.name}'`));
    b.delete.webhooks.forEach((w, i) => seen(hooks, w) && twice(['delete', 'webhooks', i], `webhook '${w}'`));
  });
export type TenantBatchBody = z.input<typeof TenantBatchBody>;
export type ParsedTenantBatch = z.output<typeof TenantBatchBody>;

/** Whether a batch's `prune` takes an object whose body is this: kept by a manager it names, or by none (drift). */
export function prunedBy(prune: ParsedTenantBatch['prune'], body: object): boolean {
  if (prune === undefined) return false;
  const m = managerOf(body);
  return m === undefined ? prune.drift : prune.managers.includes(m);
}

export const BATCH_OUTCOMES = ['created', 'updated', 'unchanged', 'deleted', 'refused'] as const;
export type BatchOutcome = (typeof BATCH_OUTCOMES)[number];

/** One entry's outcome, named by typed identity (the tenant is the request's). */
export const BatchEntryResult = z.object({
  kind: z.enum(['tenant', 'application', 'user', 'assignment', 'webhook']),
  application: z.string().optional(),
  user: z.string().optional(),
  webhook: z.string().optional(),
  outcome: z.enum(BATCH_OUTCOMES),
  /** Top-level fields that differ from the stored state (updated). */
  changes: z.array(z.string()).optional(),
  /** The owner (`managedBy`) the stored object had, for updated and deleted entries that had one. */
  managedBy: z.string().optional(),
  /** The manager the stored object had (src/contract/managers.ts), for updated and deleted entries that had one. */
  manager: z.string().optional(),
  /** Only when the server made or replaced a client secret and nobody else knows it yet. */
  clientSecret: z.string().optional(),
  /** Only when the server made a webhook's signing secret (the entry gave none): shown once. */
  webhookSecret: z.string().optional(),
  /** Refused: the single-object operation's HTTP status and error code, why, and where in the entry's body. */
  status: z.number().int().optional(),
  error: z.string().optional(),
  reason: z.string().optional(),
  path: z.string().optional(),
  problems: z.array(z.object({ path: z.string(), message: z.string(), code: z.string().optional() })).optional(),
});
export type BatchEntryResult = z.infer<typeof BatchEntryResult>;

/** An object of the tenant that a batch neither lists nor deletes, with its manager when it has one. */
const Undeclared = <K extends z.ZodRawShape>(key: K) => z.array(z.object(key).extend({ manager: z.string().optional() }));

/** What a batch that asks for it (`undeclared`) leaves in the tenant without naming it: the objects as the batch would leave them. */
export const UndeclaredObjects = z.object({
  applications: Undeclared({ application: z.string() }),
  users: Undeclared({ user: z.string() }),
  assignments: Undeclared({ application: z.string(), user: z.string() }),
  /** Group assignments (`application/group`) on the applications the batch lists: access it does not declare. */
  groupAssignments: Undeclared({ application: z.string(), group: z.string() }),
  /** Webhooks of the tenant the batch does not list (absent from servers before webhooks were batched). */
  webhooks: Undeclared({ webhook: z.string() }).optional(),
});
export type UndeclaredObjects = z.infer<typeof UndeclaredObjects>;

export const TenantBatchResult = z.object({
  /** Whether the batch was written: false for a dry run and for a refused batch. */
  applied: z.boolean(),
  /** The tenant's users and assignments before the batch (all of them, whoever manages them). */
  before: z.object({ users: z.number().int(), assignments: z.number().int() }),
  /** Tenant, applications, users, assignments, then deletions, in the order they were judged (with `report: changes`, not the unchanged ones). */
  results: z.array(BatchEntryResult),
  /** How many entries were unchanged, listed in `results` or not. */
  unchanged: z.number().int(),
  /** Only when the batch asks (`undeclared`). */
  undeclared: UndeclaredObjects.optional(),
  /**
   * The tenant's directory revision (TenantRevisions, events.ts) as this batch left it (a dry run: as
   * it judged it): read in the batch's transaction, so a change by another door after it moves it.
   * Absent when the server has none for the tenant yet.
   */
  revision: z.string().optional(),
});
export type TenantBatchResult = z.infer<typeof TenantBatchResult>;

/**
 * Whether a batch's answer leaves the tenant exactly as declared: nothing refused, nothing another
 * manager keeps, nothing undeclared (when looked for, `undeclared`). Its revision then stands for the
 * declared state: a reader that keeps both (the Pulumi provider, `idforge plan`) need not ask again
 * while the revision holds.
 */
export function leftAsDeclared(last: Pick<TenantBatchResult, 'results' | 'undeclared'> | undefined, ours: string | undefined, looked: boolean): boolean {
  if (last === undefined) return false;
  if (last.results.some((r) => r.outcome === 'refused' || (r.manager !== undefined && r.manager !== ours))) return false;
  if (!looked) return true;
  const u = last.undeclared;
  return u !== undefined && u.applications.length === 0 && u.users.length === 0 && u.assignments.length === 0 && u.groupAssignments.length === 0 && (u.webhooks ?? []).length === 0;
}

/** A refused batch (HTTP 422): the error body (the first refusal) and every entry's outcome. */
export const TenantBatchRefusal = TenantBatchResult.extend({
  error: z.string(),
  message: z.string(),
  path: z.string(),
  problems: z.array(z.object({ path: z.string(), message: z.string(), code: z.string().optional() })).optional(),
});

/** The largest batch request the server reads: a tenant of ~150,000 users in one request. */
export const BATCH_MAX_BYTES = 32 * 1024 * 1024;

/** `acme/portal/u-alice`-style name of an entry, relative to its tenant. */
export function batchEntryName(tenant: string, r: Pick<BatchEntryResult, 'kind' | 'application' | 'user' | 'webhook'>): string {
  if (r.webhook !== undefined) return `${tenant}/webhooks/${r.webhook}`;
  return [tenant, ...(r.application === undefined ? [] : [r.application]), ...(r.user === undefined ? [] : [r.user])].join('/');
}

/**
 * The PUT steps of a provisioning plan as one batch per tenant, in plan order. A tenant's batch
 * carries its body only when the plan puts the tenant; assignments are grouped per application.
 */
export function tenantBatches(steps: readonly PlanStep[]): Map<string, TenantBatchBody & { readonly assignments: { application: string; users: string[]; body: z.input<typeof AssignmentBody> }[] }> {
  type Batch = {
    tenant?: z.input<typeof TenantBody>; applications: { name: string; body: z.input<typeof ApplicationBody> }[]; users: { id: string; body: z.input<typeof UserBody> }[];
    assignments: { application: string; users: string[]; body: z.input<typeof AssignmentBody> }[]; webhooks?: { name: string; body: z.input<typeof WebhookBody> }[];
  };
  const out = new Map<string, Batch>();
  const of = (t: string): Batch => {
    let b = out.get(t);
    if (b === undefined) out.set(t, (b = { applications: [], users: [], assignments: [] }));
    return b;
  };
  for (const s of steps as readonly PlanStep[]) {
    if (s.op !== 'put') continue;
    const step = s as PutStep;
    const b = of(step.tenant);
    switch (step.kind) {
      case 'tenant':
        b.tenant = step.body;
        break;
      case 'application':
        b.applications.push({ name: step.application, body: step.body });
        break;
      case 'user':
        b.users.push({ id: step.user, body: step.body });
        break;
      case 'assignment': {
        const last = b.assignments[b.assignments.length - 1];
        const body = step.body ?? {};
        if (last !== undefined && last.application === step.application && JSON.stringify(last.body) === JSON.stringify(body)) last.users.push(step.user);
        else b.assignments.push({ application: step.application, users: [step.user], body });
        break;
      }
      case 'webhook':
        // Only in the batches of tenants that declare webhooks: others stay byte-identical to before.
        (b.webhooks ??= []).push({ name: step.webhook, body: step.body });
        break;
    }
  }
  return out;
}
