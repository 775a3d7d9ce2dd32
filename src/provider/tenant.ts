/**
 * Tenant: one tenant and everything the model declares in it (its applications, users and
 * assignments) as ONE Pulumi resource, written to the server as the tenant's batch (POST
 * /tenants/{tenant}/batch): the same one request and one transaction per tenant as `idforge
 * apply`, with the same prune (what this stack keeps and no longer declares goes).
 *
 * Why one resource per tenant (issue 23, bench/pulumi): the engine pays per resource, 8 to 18 ms
 * for one that does nothing and a rewrite of the whole state after each step with checkpoints on;
 * a fleet of 500 tenants × 20 applications × 200 users made 21,500 resources (9 hours from empty).
 * Per tenant it is now this resource and its TenantSecrets. A preview still names every
 * application and user that changes (the detailed diff: `applications.portal`), and each field in
 * one line (`acme/portal: redirectUris[1] added`).
 *
 * Every write is idempotent and every object carries the stack's manager (`pulumi:<project>/<stack>`),
 * so the engine may run without a checkpoint per step (PULUMI_SKIP_CHECKPOINTS): an `up` killed
 * after the server applied a batch but before the state was written is finished by the next one,
 * which takes back what carries the stack's mark (create) and removes what the stack keeps and no
 * longer declares (the batch's prune). Nothing another manager keeps is taken without
 * `idforge:adopt`.
 *
 * Every preview and up compares each tenant with the live server, in its diff (liveTenant): one dry
 * run of the declared batch per tenant says what differs (a changed field, a secret that is no longer
 * the stack's, a missing object, an object in the tenant nobody declared), so a plain `pulumi preview`
 * shows drift. Objects other managers keep there (the console, SCIM, `idforge apply`, another stack)
 * are reported under the resource, never removed. The dry run is skipped for a tenant whose directory
 * revision (the server's, moved by every change through every door: GET /revisions, one request for
 * the fleet) is the one the state recorded when the stack last found the tenant exactly as declared.
 *
 * The resource's id stays the name it was created with; the name in its state is the live one (a
 * declared rename, previousName, moves the tenant with everything in it).
 */
import type * as pulumi from '@pulumi/pulumi';
// From its own module, not the package's index, which the provider host need not load (_load.ts).
import { Output, output as pulumiOutput, secret as pulumiSecret } from '@pulumi/pulumi/output.js';
import { z } from 'zod';
import {
  ApplicationName, GitInfo, TenantBody, TenantName, UNMANAGED_POLICIES, UserBody, UserId, WEBHOOK_SECRET, WebhookBody, WebhookName, canonicalJson, formatPath, leftAsDeclared, managerOf, managerWords,
  type BatchEntryResult, type EventActor, type TenantBatchBody, type TenantBatchResult, type UndeclaredObjects, type UnmanagedPolicy,
} from '../contract/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import { AdminConnectionSchema, AdoptSchema, checkWith, differences, isUnknown, jsonEqual, notAdopted, pickKeys, say, type Difference, type ProviderContext } from './_common.ts';
import { SpecBody, applicationsToFree, freeing, isConfidential, liveApplicationBody, type ApplicationSpecBody } from './application.ts';
import { normalAssignments } from './tenant-assignments.ts';
import { missingForNewUsers, type UserSpecBody } from './tenant-users.ts';
import { _DynamicResource } from './_load.ts';
import { packValue, sameJsonText, unpackValue } from './_packed.ts';

export interface TenantArgs {
  /** How to reach the admin API; pass the AuthServer's connection (or its credentials file). */
  readonly connection: pulumi.Input<AdminConnection>;
  /** Subdomain label; changes only through a declared rename (previousName). */
  readonly name: pulumi.Input<string>;
  /** The name the tenant had until now, when the model renames it. */
  readonly previousName?: pulumi.Input<string>;
  /** The tenant's desired state, exactly the body `idforge apply` sends. */
  readonly body: pulumi.Input<TenantBody>;
  /** The tenant's applications by name, bodies without client secrets. */
  readonly applications?: pulumi.Input<Record<string, pulumi.Input<ApplicationSpecBody>>>;
  /** Declared application renames: new name → previous name (moved with client id, secret, assignments and tokens). */
  readonly renamedApplications?: pulumi.Input<Record<string, string>>;
  /** Confidential applications' client secrets by application (pass a secret). Default: the server makes one. */
  readonly clientSecrets?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** The tenant's users by id. */
  readonly users?: pulumi.Input<Record<string, pulumi.Input<UserSpecBody>>>;
  /** Initial passwords by user id (pass a secret); sent only with a user the server does not have. */
  readonly initialPasswords?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** Users whose initial password the model names but this run does not have, with where it should come from. */
  readonly missingPasswords?: pulumi.Input<Record<string, string>>;
  /** Application name → ids of the users assigned to it. */
  readonly assignments?: pulumi.Input<Record<string, pulumi.Input<readonly string[]>>>;
  /** The tenant's webhooks by name: where its events go (README, "Events"), bodies without their secrets. */
  readonly webhooks?: pulumi.Input<Record<string, pulumi.Input<WebhookSpecBody>>>;
  /** Webhooks' signing secrets by name (pass a secret), sent on every write: a new value is a rotation. Default: the server makes one. */
  readonly webhookSecrets?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** Objects in the tenant nobody manages and the model does not declare: removed (default), reported, or not looked for. */
  readonly unmanaged?: pulumi.Input<UnmanagedPolicy>;
  /** Take over objects that already exist on the server (made by hand, by `idforge apply`, by another stack). */
  readonly adopt?: pulumi.Input<boolean>;
}

/** What a read of the live server found that the next up repairs. */
export interface Drift {
  /** Applications, users and `application/user` assignments the model does not declare, that this stack may remove: its own, left by a run cut short, or nobody's. */
  readonly applications?: string[];
  readonly users?: string[];
  readonly assignments?: string[];
  /** Confidential applications whose client secret on the server is not the stack's. */
  readonly secrets?: string[];
  /** Webhooks the model does not declare, that this stack may remove. */
  readonly webhooks?: string[];
  /** Declared webhooks whose signing secret on the server is not the stack's. */
  readonly webhookSecrets?: string[];
  /**
   * Access the model does not declare: `application/group` assignments of another door's group (SCIM's)
   * to an application this stack declares (the model's groups become user assignments, so it declares
   * none). One access rule with `idforge plan`: removed under `unmanaged: remove`, reported under report.
   */
  readonly grants?: string[];
}

export interface TenantInputs {
  readonly connection: AdminConnection;
  readonly name: string;
  readonly previousName?: string;
  readonly body: TenantBody;
  readonly applications: Record<string, ApplicationSpecBody>;
  readonly renamedApplications?: Record<string, string>;
  readonly clientSecrets?: Record<string, string>;
  readonly users: Record<string, UserSpecBody>;
  readonly initialPasswords?: Record<string, string>;
  readonly missingPasswords?: Record<string, string>;
  readonly assignments: Record<string, string[]>;
  readonly webhooks?: Record<string, WebhookSpecBody>;
  readonly webhookSecrets?: Record<string, string>;
  readonly unmanaged: UnmanagedPolicy;
  readonly adopt?: boolean;
  /** Found by the read before a preview or up (the model says none): shown as the change that removes or repairs it. */
  readonly drift?: Drift;
  /**
   * Where the model comes from in Git (commit, branch, path), sent with every write so the server's
   * event log names the commit (src/schema/git-source.ts). Never part of the diff: a new commit that
   * changes nothing declared changes nothing.
   */
  readonly git?: GitInfo;
}
export interface TenantOutputs extends TenantInputs {
  /**
   * An output only: the tenant's directory revision on the server (src/contract/events.ts,
   * TenantRevisions) when this stack last found or left the tenant exactly as declared, with nothing
   * another manager keeps, nothing undeclared and no drift in it. While the server's revision is still
   * this one, a read knows what a dry run would find (nothing) without asking: a no-op preview of 500
   * tenants was 500 dry runs of ~77 KB each (README, "Scale"). Absent: read in full.
   */
  readonly revision?: string;
}

/**
 * Every tenant's directory revision: one request for the whole fleet, its answer shared by the diffs
 * and reads of other tenants that ask while it is in flight or in the REVISIONS_KEPT_MS after, where
 * each tenant's dry run is one request of its own; undefined when the server does not answer it (one
 * from before revisions, or down: the dry run then says what it says). An answer serves each tenant
 * once: a later look at the same tenant asks again, so it sees what changed since, through any door.
 * A write through this process counts its tenant as served (forgetRevision), so the next look at it
 * asks again while the other tenants still share the answer.
 */
const revisionsByServer = new Map<string, { readonly revisions: Promise<Record<string, string> | undefined>; readonly served: Set<string> }>();
/**
 * How long an answer serves the looks at other tenants. The engine asks about the tenants one or two
 * at a time, not all at once, so an answer forgotten as soon as it came was one request (and 500
 * revisions sent, and parsed) per tenant: the reads of a 500-tenant preview took 3.8 s in all, 1.0 s
 * with the answer kept 2 s.
 */
const REVISIONS_KEPT_MS = 2000;
/** After a write to these tenants: the next look at each asks the server again (an update that renames names both). */
function forgetRevision(...tenants: string[]): void {
  for (const answer of revisionsByServer.values()) for (const t of tenants) answer.served.add(t);
}

async function liveRevision(connection: AdminConnection, tenant: string): Promise<string | undefined> {
  const key = canonicalJson(connection);
  let answer = revisionsByServer.get(key);
  if (answer === undefined || answer.served.has(tenant)) {
    // Set before the first await: reads that come meanwhile share the request.
    const revisions: Promise<Record<string, string> | undefined> = import('../admin-client/index.ts')
      .then(({ AdminClient }) => new AdminClient(connection).call('listTenantRevisions', {})).then((r) => r.revisions, () => undefined)
      .finally(() => {
        setTimeout(() => {
          if (revisionsByServer.get(key) === fresh) revisionsByServer.delete(key);
        }, REVISIONS_KEPT_MS).unref();
      });
    const fresh = { revisions, served: new Set<string>() };
    answer = fresh;
    revisionsByServer.set(key, fresh);
  }
  answer.served.add(tenant);
  return (await answer.revisions)?.[tenant];
}

/**
 * Whether slim outputs (idforge's host: without the declared objects) recorded a revision the server
 * still has for the tenant ('same'), or one it moved from ('moved'); undefined: nothing to ask about.
 */
async function revisionSince(id: string, outs: (TenantWire & { revision?: string }) | undefined): Promise<'same' | 'moved' | undefined> {
  if (outs?.revision === undefined || outs.connection === undefined || DECLARED_MAPS.some((k) => outs[k] !== undefined)) return undefined;
  return (await liveRevision(outs.connection, liveName(id, outs as unknown as Partial<TenantOutputs>))) === outs.revision ? 'same' : 'moved';
}

/** The outputs of a write: with the revision its batch left when that leaves the tenant exactly as declared, else without one. */
function withRevision<T extends TenantInputs>(outs: T, last: TenantBatchResult | undefined, ours: string | undefined, looked: boolean): TenantOutputs {
  const { revision: _, ...rest } = outs as TenantOutputs;
  return last?.revision !== undefined && leftAsDeclared(last, ours, looked) ? { ...rest, revision: last.revision } : rest;
}

/** The inputs the engine keeps: never the revision, an output only. */
const inputsOf = (o: TenantOutputs): TenantInputs => {
  const { revision: _, ...inputs } = o;
  return inputs;
};

const names = z.array(z.string()).optional();
const DriftSchema = z.strictObject({ applications: names, users: names, assignments: names, secrets: names, grants: names, webhooks: names, webhookSecrets: names });

/** A webhook as the stack declares it: what it sends where (its manager's marks are the tenant's, its secret apart). */
export const WebhookSpecBody = WebhookBody.pick({ url: true, types: true, enabled: true });
export type WebhookSpecBody = z.infer<typeof WebhookSpecBody>;

/** Sorted, and only the kinds that hold something: a drift of nothing is no drift. */
export function normalDrift(d: Drift | undefined): Drift {
  return Object.fromEntries(Object.entries(d ?? {}).filter(([, v]) => Array.isArray(v) && v.length > 0).map(([k, v]) => [k, [...new Set(v as string[])].sort()]));
}

const TenantInputsSchema = z.strictObject({
  connection: AdminConnectionSchema,
  name: TenantName,
  previousName: TenantName.optional(),
  body: TenantBody,
  applications: z.record(ApplicationName, SpecBody).default({}),
  renamedApplications: z.record(ApplicationName, ApplicationName).optional(),
  clientSecrets: z.record(z.string(), z.string().min(32).max(256)).optional(),
  users: z.record(UserId, UserBody.omit({ initialPassword: true })).default({}),
  initialPasswords: z.record(z.string(), z.string().min(8).max(1024)).optional(),
  missingPasswords: z.record(z.string(), z.string()).optional(),
  // Sorted and unique, so reordering the model is no change.
  assignments: z.record(ApplicationName, z.array(UserId)).default({}).transform(normalAssignments),
  webhooks: z.record(WebhookName, WebhookSpecBody).optional(),
  webhookSecrets: z.record(z.string(), z.string().regex(WEBHOOK_SECRET)).optional(),
  unmanaged: z.enum(UNMANAGED_POLICIES).default('remove'),
  adopt: AdoptSchema,
  drift: DriftSchema.default({}).transform(normalDrift),
  git: GitInfo.optional(),
});

/** The tenant's name on the server: the state's (a declared rename changes it), else the id it was created with. */
const liveName = (id: string, props: Partial<TenantOutputs>): string => props.name ?? id;

/** A Tenant of a stack from before issue 23 (its applications a list of names, users and assignments in resources of their own). */
const fromBefore = (props: unknown): boolean => {
  const p = props as { applications?: unknown; users?: unknown };
  return Array.isArray(p.applications) || p.users === undefined;
};

/** A client whose writes name the stack as their actor and, when the model is in Git, its commit (the event log's). */
const writer = <C extends { as(actor: EventActor): C }>(client: C, manager: string | undefined, git: GitInfo | undefined): C =>
  client.as({ ...(manager === undefined ? {} : { manager }), ...(git === undefined ? {} : { git }) });

/** The manager the tenant's objects are written by (the stack's), from the tenant's body. */
const managerOfInputs = (i: Pick<TenantInputs, 'body'>): string | undefined => managerOf(i.body);

/** The marks an assignment carries: the tenant's door, stack and manager. */
function assignmentMarks(body: TenantBody): Record<string, string> {
  const b = body as { managedBy?: string; stack?: string; manager?: string };
  return Object.fromEntries(Object.entries({ managedBy: b.managedBy, stack: b.stack, manager: b.manager }).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
}

export interface BatchOptions {
  /** Which users get their initial password (when the inputs have it). Default: none. */
  readonly passwordsFor?: (id: string) => boolean;
  /** Applications (and their assignments) to leave out. */
  readonly omit?: ReadonlySet<string>;
  /** Names to send declared applications under: new name → the name the server still has (a rename not applied yet). */
  readonly sendAs?: Readonly<Record<string, string>>;
  readonly prune?: { readonly managers: string[]; readonly drift: boolean };
  readonly force?: boolean;
}

/** Pure: the tenant's batch for its declared state, the whole of it (the server writes what differs). */
export function tenantBatch(i: Pick<TenantInputs, 'body' | 'applications' | 'clientSecrets' | 'users' | 'initialPasswords' | 'assignments' | 'webhooks' | 'webhookSecrets'>, o: BatchOptions = {}): TenantBatchBody {
  const as = (n: string) => o.sendAs?.[n] ?? n;
  const kept = (n: string) => !(o.omit?.has(n) ?? false);
  const marks = assignmentMarks(i.body);
  return {
    tenant: i.body,
    applications: Object.entries(i.applications).filter(([n]) => kept(n)).map(([name, body]) => {
      const secret = isConfidential(body) && !isUnknown(i.clientSecrets) ? i.clientSecrets?.[name] : undefined;
      return { name: as(name), body: { ...body, ...(secret === undefined ? {} : { clientSecret: secret }) } as never };
    }),
    users: Object.entries(i.users).map(([id, body]) => {
      const pw = o.passwordsFor?.(id) === true && !isUnknown(i.initialPasswords) ? i.initialPasswords?.[id] : undefined;
      return { id, body: { ...body, ...(pw === undefined ? {} : { initialPassword: pw }) } };
    }),
    assignments: Object.entries(i.assignments).filter(([app, users]) => users.length > 0 && kept(app)).map(([app, users]) => ({ application: as(app), users, body: marks })),
    // Only for a tenant that declares webhooks: the batches of others stay as they were.
    ...(Object.keys(i.webhooks ?? {}).length === 0 ? {} : {
      webhooks: Object.entries(i.webhooks!).map(([name, body]) => {
        const secret = isUnknown(i.webhookSecrets) ? undefined : i.webhookSecrets?.[name];
        return { name, body: { ...body, ...marks, ...(secret === undefined ? {} : { secret }) } };
      }),
    }),
    ...(o.prune === undefined ? {} : { prune: o.prune }),
    force: o.force ?? false,
    report: 'changes',
  };
}

/** An object of the tenant as diagnostics and drift name it. */
interface Named { readonly kind: 'tenant' | 'application' | 'user' | 'assignment' | 'webhook'; readonly name: string; readonly manager?: string | undefined; readonly reason?: string | undefined }

/** What a dry run of the declared batch says about the live tenant. */
export interface Findings {
  /** The tenant is not there. */
  readonly gone: boolean;
  /** Declared, not on the server. */
  readonly missing: { readonly applications: string[]; readonly users: string[]; readonly assignments: string[]; readonly webhooks: string[] };
  /** Declared, and different on the server (its fields). */
  readonly changed: { readonly tenant: boolean; readonly applications: string[]; readonly users: string[]; readonly webhooks: string[] };
  readonly drift: Drift;
  /** Not declared, kept by another manager: reported, never removed. */
  readonly others: Named[];
  /** Declared, and kept by another manager: left to it (or refused, with why). */
  readonly held: Named[];
}

const entryName = (r: BatchEntryResult): string =>
  (r.kind === 'assignment' ? `${r.application}/${r.user}` : r.kind === 'user' ? r.user! : r.kind === 'webhook' ? r.webhook! : (r.application ?? ''));

/** Pure: a dry run's answers, as the read sorts them (`ours`: the stack's manager). */
export function findingsOf(results: readonly BatchEntryResult[], ours: string | undefined, policy: UnmanagedPolicy): Findings {
  const f = {
    gone: false,
    missing: { applications: [] as string[], users: [] as string[], assignments: [] as string[], webhooks: [] as string[] },
    changed: { tenant: false, applications: [] as string[], users: [] as string[], webhooks: [] as string[] },
    drift: { applications: [] as string[], users: [] as string[], assignments: [] as string[], secrets: [] as string[], webhooks: [] as string[], webhookSecrets: [] as string[] },
    others: [] as Named[],
    held: [] as Named[],
  };
  const plural = { application: 'applications', user: 'users', assignment: 'assignments', webhook: 'webhooks' } as const;
  /** The changed fields' list of a kind that has fields. */
  const changedOf = (kind: 'application' | 'user' | 'webhook') => f.changed[kind === 'user' ? 'users' : kind === 'webhook' ? 'webhooks' : 'applications'];
  for (const r of results) {
    const name = entryName(r);
    const foreign = r.manager !== undefined && r.manager !== ours;
    if (r.kind === 'tenant') {
      if (r.outcome === 'created') f.gone = true;
      if (r.outcome === 'updated' || r.outcome === 'refused') f.changed.tenant = true;
      if (r.outcome === 'refused' || (r.outcome === 'unchanged' && foreign)) f.held.push({ kind: 'tenant', name: '', manager: r.manager, reason: r.reason });
      continue;
    }
    const list = plural[r.kind];
    switch (r.outcome) {
      case 'created':
        f.missing[list].push(name);
        break;
      case 'updated': {
        const secret = r.kind === 'webhook' ? 'secret' : 'clientSecret';
        const fields = (r.changes ?? []).filter((c) => c !== secret);
        if ((r.changes ?? []).includes(secret)) f.drift[r.kind === 'webhook' ? 'webhookSecrets' : 'secrets'].push(name);
        // An assignment has no fields but its marks: one that lost them is made again.
        if (r.kind === 'assignment') f.missing.assignments.push(name);
        else if (fields.length > 0) changedOf(r.kind).push(name);
        break;
      }
      case 'refused':
        if (r.kind === 'assignment') f.missing.assignments.push(name);
        else changedOf(r.kind).push(name);
        f.held.push({ kind: r.kind, name, manager: r.manager, reason: r.reason });
        break;
      case 'deleted':
        if (r.manager === undefined ? policy !== 'keep' : r.manager === ours) f.drift[list].push(name);
        else if (r.manager !== undefined) f.others.push({ kind: r.kind, name, manager: r.manager });
        break;
      case 'unchanged':
        if (foreign) f.held.push({ kind: r.kind, name, manager: r.manager });
        break;
    }
  }
  return { ...f, drift: normalDrift(f.drift) };
}

/**
 * Pure: the entries of a dry run of a new tenant resource's batch that exist on the server and are
 * not this stack's (made by hand, by `idforge apply`, by another stack): what its create refuses.
 * What carries the stack's mark (an up killed before its state was written) is not among them.
 */
export function outsideOf(results: readonly BatchEntryResult[], ours: string | undefined): BatchEntryResult[] {
  return results.filter((x) => x.outcome === 'refused' || ((x.outcome === 'updated' || x.outcome === 'unchanged') && x.manager !== ours && (x.outcome === 'updated' || x.manager !== undefined)));
}

/** The create's refusal of what exists outside the stack, naming it. */
function outsideError(tenant: string, outside: readonly BatchEntryResult[]): Error {
  if (outside.some((x) => x.kind === 'tenant')) return notAdopted(`tenant ${tenant}`);
  const listed = outside.map((x) => `${x.kind} ${x.kind === 'assignment' ? `${x.application}→${x.user}` : entryName(x)}`);
  return notAdopted(`in tenant ${tenant}, ${listed.slice(0, 5).join(', ')}${listed.length > 5 ? ` (and ${listed.length - 5} more)` : ''}`);
}

/** `the admin console: application backdoor; SCIM (...): users a, b (and 3 more)` */
function byManager(objects: readonly Named[]): string {
  const groups = new Map<string, Named[]>();
  const rank = { tenant: 0, application: 1, user: 2, assignment: 3, webhook: 4 };
  const sorted = [...objects].sort((a, b) => rank[a.kind] - rank[b.kind] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const o of sorted) (groups.get(o.manager ?? '') ?? groups.set(o.manager ?? '', []).get(o.manager ?? '')!).push(o);
  return [...groups].map(([manager, list]) => {
    const kinds = new Map<string, string[]>();
    for (const o of list) (kinds.get(o.kind) ?? kinds.set(o.kind, []).get(o.kind)!).push(o.name);
    const what = [...kinds].map(([k, ns]) => `${ns.length === 1 ? k : `${k}s`} ${ns.slice(0, 5).join(', ')}${ns.length > 5 ? ` (and ${ns.length - 5} more)` : ''}`).join(', ');
    return `${managerWords(manager === '' ? undefined : manager)}: ${what}`;
  }).join('; ');
}

async function readTenant(id: string, old: TenantOutputs, ctx: ProviderContext | undefined, moved = false): Promise<pulumi.dynamic.ReadResult<TenantOutputs> & { same?: boolean }> {
  const { AdminClient, mapLimit } = await import('../admin-client/index.ts');
  const client = new AdminClient(old.connection);
  const name = liveName(id, old);
  const ours = managerOfInputs(old);
  const policy = old.unmanaged ?? 'remove';
  const look = policy !== 'keep';
  // Nothing changed in the tenant since the stack found or left it exactly as declared: nothing to find.
  // (`moved`: the caller asked already, and the revision moved.)
  if (!moved && old.revision !== undefined && name === old.name && (await liveRevision(old.connection, name)) === old.revision) {
    return { id, props: old, inputs: inputsOf(old), same: true };
  }
  // One request per tenant: a dry run of what the stack declares, pruned as an up prunes (its own
  // objects, and under remove or report nobody's), that also answers what the tenant holds and the
  // stack does not declare (other managers' objects, group grants on its applications).
  const judged = await client.batch(name, { ...tenantBatch(old, { prune: { managers: ours === undefined ? [] : [ours], drift: look } }), undeclared: look }, { dryRun: true });
  const f = findingsOf(judged.results, ours, policy);
  if (f.gone) return { id: '' }; // gone: refresh drops it, the next up makes it again
  const others = [...f.others, ...othersOf(judged.undeclared, ours)];
  const grants = look ? (judged.undeclared?.groupAssignments ?? []).map((g) => ({ grant: `${g.application}/${g.group}`, manager: g.manager })) : [];

  // Only what differs is fetched, so the diff shows the live values.
  let body = old.body;
  if (f.changed.tenant) {
    const live = await client.find('getTenant', { tenant: name });
    if (live !== undefined) body = pickKeys<TenantBody>(TenantBody.shape, live as Record<string, unknown>, old.body as Record<string, unknown>);
  }
  const applications = Object.fromEntries(Object.entries(old.applications).filter(([n]) => !f.missing.applications.includes(n)));
  await mapLimit(f.changed.applications, 8, async (a) => {
    const live = await client.find('getApplication', { tenant: name, application: a });
    if (live === undefined) delete applications[a];
    else applications[a] = liveApplicationBody(live as Record<string, unknown>, old.applications[a]);
  });
  const userMap = Object.fromEntries(Object.entries(old.users).filter(([u]) => !f.missing.users.includes(u)));
  await mapLimit(f.changed.users, 8, async (u) => {
    const live = await client.find('getUser', { tenant: name, userId: u });
    if (live === undefined) delete userMap[u];
    else {
      const { initialPassword: _, ...fields } = pickKeys<UserBody>(UserBody.shape, live as Record<string, unknown>, old.users[u] as Record<string, unknown>);
      userMap[u] = fields;
    }
  });
  const webhooks = Object.fromEntries(Object.entries(old.webhooks ?? {}).filter(([n]) => !f.missing.webhooks.includes(n)));
  await mapLimit(f.changed.webhooks, 8, async (w) => {
    const live = await client.find('getWebhook', { tenant: name, webhook: w });
    if (live === undefined) delete webhooks[w];
    else webhooks[w] = { url: live.url, types: [...live.types], enabled: live.enabled };
  });
  const gone = new Set(f.missing.assignments);
  const assignments = normalAssignments(Object.fromEntries(Object.entries(old.assignments).map(([app, ids]) => [app, ids.filter((u) => !gone.has(`${app}/${u}`))])));

  if (others.length > 0) {
    await say(ctx, 'warning', `tenant ${name} holds objects this stack does not declare, kept by other managers (reported, never removed): ${byManager(others)}`);
  }
  const refused = f.held.filter((h) => h.reason !== undefined);
  const left = f.held.filter((h) => h.reason === undefined);
  if (left.length > 0) {
    await say(ctx, 'info', `tenant ${name}: objects the model declares, exactly as they are, stay with the managers that keep them (idforge:adopt takes them over): ${byManager(left)}`);
  }
  for (const h of refused) await say(ctx, 'warning', `tenant ${name}: ${h.kind} ${h.name || name} changed under another manager; the next up is refused for it: ${h.reason}`);
  if (grants.length > 0) {
    await say(ctx, 'warning', `tenant ${name}: access the model does not declare, granted through another door's group: ${grants.map((g) => `${g.grant} (${managerWords(g.manager)})`).join(', ')}; ` +
      (policy === 'remove' ? 'the next up removes it (unmanaged: remove)' : 'reported (unmanaged: report)'));
  }

  const drift = policy === 'remove' && grants.length > 0 ? { ...f.drift, grants: grants.map((g) => g.grant) } : f.drift;
  const { revision: _, ...kept } = old;
  const now: TenantOutputs = { ...kept, name, body, applications, users: userMap, assignments, ...(old.webhooks === undefined && Object.keys(webhooks).length === 0 ? {} : { webhooks }), drift };
  // The live tenant is the state's: nothing to hand back (the engine keeps the inputs it has).
  const same = name === old.name && !f.changed.tenant && f.changed.applications.length === 0 && f.changed.users.length === 0 &&
    f.missing.applications.length === 0 && f.missing.users.length === 0 && f.missing.assignments.length === 0 &&
    f.changed.webhooks.length === 0 && f.missing.webhooks.length === 0 && jsonEqual(drift, normalDrift(old.drift));
  // Found exactly as declared, with nothing to say: its revision is kept, and the next read while it holds asks nothing more.
  const clean = same && Object.keys(drift).length === 0 && others.length === 0 && f.held.length === 0 && grants.length === 0;
  const props: TenantOutputs = clean && judged.revision !== undefined ? { ...now, revision: judged.revision } : now;
  // Inputs as well as outputs, so the next diff compares the model with what is live (pulumi#13679).
  return { id, props, inputs: now, ...(same ? { same } : {}) };
}

/** Pure: the objects a read's dry run says the tenant holds undeclared that another manager keeps (what is nobody's or the stack's, the prune took). */
export function othersOf(u: UndeclaredObjects | undefined, ours: string | undefined): Named[] {
  if (u === undefined) return [];
  const foreign = (m: string | undefined): m is string => m !== undefined && m !== ours;
  return [
    ...u.applications.filter((a) => foreign(a.manager)).map((a) => ({ kind: 'application' as const, name: a.application, manager: a.manager })),
    ...u.users.filter((x) => foreign(x.manager)).map((x) => ({ kind: 'user' as const, name: x.user, manager: x.manager })),
    ...u.assignments.filter((a) => foreign(a.manager)).map((a) => ({ kind: 'assignment' as const, name: `${a.application}/${a.user}`, manager: a.manager })),
    ...(u.webhooks ?? []).filter((w) => foreign(w.manager)).map((w) => ({ kind: 'webhook' as const, name: w.webhook, manager: w.manager })),
  ];
}

/** Group assignments on the applications the stack declares (`application/group`), with the group assignment's manager. A tenant not there yet has none. */
async function undeclaredGrants(client: AdminConnectionClient, tenant: string, applications: readonly string[]): Promise<{ grant: string; application: string; group: string; manager: string | undefined }[]> {
  const { AdminApiError } = await import('../admin-client/index.ts');
  const declared = new Set(applications);
  try {
    const { items } = await client.call('listTenantGroupAssignments', { tenant });
    return items.filter((g) => declared.has(g.application)).map((g) => ({ grant: `${g.application}/${g.group}`, application: g.application, group: g.group, manager: g.manager }));
  } catch (err) {
    if (err instanceof AdminApiError && err.status === 404) return [];
    throw err;
  }
}

/** Under `unmanaged: remove`, the access the model does not declare goes (idempotent: a grant already gone is no error). */
async function removeGrants(client: AdminConnectionClient, tenant: string, applications: readonly string[]): Promise<void> {
  for (const g of await undeclaredGrants(client, tenant, applications)) {
    await client.remove('deleteGroupAssignment', { tenant, application: g.application, group: g.group });
  }
}

type AdminConnectionClient = import('../admin-client/index.ts').AdminClient;

/** The parts of the inputs that are the tenant (not how to reach it, not what the model says to do with drift). */
function declaredOf(i: Partial<TenantInputs>) {
  return {
    name: i.name, body: i.body, applications: i.applications ?? {}, users: i.users ?? {}, assignments: normalAssignments(i.assignments ?? {}),
    unmanaged: i.unmanaged ?? 'remove', drift: normalDrift(i.drift), clientSecrets: i.clientSecrets ?? {},
    webhooks: i.webhooks ?? {}, webhookSecrets: i.webhookSecrets ?? {},
  };
}

/** A last-applied entry is one change however much of it differs: its fields show under the object already. */
const whole = (path: readonly (string | number)[]): boolean =>
  path[path.length - 1] === 'lastApplied' || ((path[0] === 'clientSecrets' || path[0] === 'webhookSecrets' || path[0] === 'drift') && path.length === 2);

/** Pure: the preview's detailed diff between what the stack holds and what the model declares. */
export function tenantDifferences(olds: Partial<TenantInputs>, news: Partial<TenantInputs>): Difference[] {
  const o = declaredOf(olds);
  const n = declaredOf(news);
  const out: Difference[] = [];
  // Assignments by user, as sets: `assignments.portal` is one change, named per user in the summary.
  for (const k of ['name', 'body', 'applications', 'users', 'webhooks', 'unmanaged', 'drift', 'clientSecrets', 'webhookSecrets'] as const) out.push(...differences({ [k]: o[k] }, { [k]: n[k] }, whole));
  out.push(...differences({ assignments: o.assignments }, { assignments: n.assignments }, (p) => p.length === 2));
  return out;
}

/** `acme/portal: redirectUris[1] added`: one line per difference, for people. */
export function describe(tenant: string, d: Difference, olds: Partial<TenantInputs>, news: Partial<TenantInputs>): string[] {
  const [top, key, ...rest] = d.path;
  const verb = { add: 'added', delete: 'removed', update: 'changed' }[d.kind];
  const tail = (r: readonly (string | number)[]) => (r.length === 0 ? '' : `${formatPath(r)} `);
  switch (top) {
    case 'applications':
      return [`${tenant}/${String(key)}: ${rest.length === 0 ? `application ${verb}` : `${tail(rest)}${verb}`}`];
    case 'users':
      return [`${tenant} user ${String(key)}: ${rest.length === 0 ? verb : `${tail(rest)}${verb}`}`];
    case 'assignments': {
      const before = new Set(olds.assignments?.[key as string] ?? []);
      const after = new Set(news.assignments?.[key as string] ?? []);
      return [
        ...[...after].filter((u) => !before.has(u)).map((u) => `${tenant}/${String(key)}: assignment of ${u} added`),
        ...[...before].filter((u) => !after.has(u)).map((u) => `${tenant}/${String(key)}: assignment of ${u} removed`),
      ];
    }
    case 'clientSecrets':
      return [key === undefined ? `${tenant}: client secrets of new applications are made in this run` : `${tenant}/${String(key)}: client secret ${verb}`];
    case 'webhooks':
      return [`${tenant}/webhooks/${String(key)}: ${rest.length === 0 ? `webhook ${verb}` : `${tail(rest)}${verb}`}`];
    case 'webhookSecrets':
      return [`${tenant}/webhooks/${String(key)}: signing secret ${verb}`];
    case 'drift': {
      const found = (olds.drift as Record<string, string[]> | undefined)?.[key as string] ?? [];
      const removes = news.unmanaged === 'remove';
      return found.map((x) => key === 'secrets'
        ? `${tenant}/${x}: the client secret on the server is not the stack's: set again`
        : key === 'webhookSecrets'
          ? `${tenant}/webhooks/${x}: the signing secret on the server is not the stack's: set again`
        : key === 'grants'
          ? `${tenant}/${x.split('/')[0]}: group ${x.split('/')[1]} grants access the model does not declare: ${removes ? 'removed' : 'reported (unmanaged: report)'}`
          : `${tenant}: ${String(key).slice(0, -1)} ${x} is in the tenant but not in the model: ${removes ? 'removed' : 'reported (unmanaged: report)'}`);
    }
    case 'body':
      return [`${tenant}: ${rest.length === 0 ? `${String(key)} ${verb}` : `${formatPath([key!, ...rest])} ${verb}`}`];
    default:
      return [`${tenant}: ${formatPath(d.path)} ${verb}`];
  }
}

/** Lines of a summary shown at most; the detailed diff holds all. */
const SUMMARY_LINES = 30;

/** The change lines under the resource, at most SUMMARY_LINES of them. */
async function sayLines(ctx: ProviderContext | undefined, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  const more = lines.length > SUMMARY_LINES ? `\n(and ${lines.length - SUMMARY_LINES} more: pulumi preview --diff shows every one)` : '';
  await say(ctx, 'info', `${lines.slice(0, SUMMARY_LINES).join('\n')}${more}`);
}

/**
 * Preview = up: the declared batch judged by the server before anything is written, one dry run:
 * what it would refuse (a client id another application holds, a user SCIM keeps, another
 * manager's object) fails the preview at that object, and a user it would create without the
 * initial password the model names too. Renames not applied yet are judged under the names the
 * server still has; applications the up frees first (applicationsToFree) are left out.
 */
async function judgeDeclared(olds: Partial<TenantInputs>, news: TenantInputs): Promise<{ property: string; reason: string }[]> {
  const { AdminClient } = await import('../admin-client/index.ts');
  const client = new AdminClient(news.connection);
  const known = !fromBefore(olds) && olds.applications !== undefined;
  const tenant = known && news.previousName !== undefined && olds.name === news.previousName ? olds.name : news.name;
  const oldApps = known ? olds.applications! : {};
  const sendAs = Object.fromEntries(Object.entries(news.renamedApplications ?? {}).filter(([to, from]) => from in oldApps && !(to in oldApps)));
  const omit = new Set(freeing(oldApps, news.applications, news.renamedApplications).takers);
  const ours = managerOfInputs(news);
  const batch = tenantBatch(news, {
    omit, sendAs, force: news.adopt === true, passwordsFor: () => true,
    prune: { managers: ours === undefined ? [] : [ours], drift: news.unmanaged === 'remove' },
  });
  const r = await client.batch(tenant, batch, { dryRun: true });
  // A tenant resource being made meets what exists outside the stack as its create would: refused, naming it.
  if (!known && news.adopt !== true) {
    const outside = outsideOf(r.results, ours);
    if (outside.length > 0) return [{ property: outside.some((x) => x.kind === 'tenant') ? 'name' : '', reason: outsideError(news.name, outside).message }];
  }
  const back = new Map(Object.entries(sendAs).map(([to, from]) => [from, to]));
  const failures = r.results.filter((x) => x.outcome === 'refused').map((x) => {
    const at = x.path ? `.${x.path}` : '';
    if (x.kind === 'tenant') return { property: `body${at}`, reason: x.reason ?? 'refused' };
    if (x.kind === 'application') return { property: `${formatPath(['applications', back.get(x.application!) ?? x.application!])}${at}`, reason: x.reason ?? 'refused' };
    if (x.kind === 'user') return { property: formatPath(['users', x.user!]), reason: x.reason ?? 'refused' };
    if (x.kind === 'webhook') return { property: `${formatPath(['webhooks', x.webhook!])}${at}`, reason: x.reason ?? 'refused' };
    return { property: formatPath(['assignments', back.get(x.application!) ?? x.application!]), reason: `${x.user}: ${x.reason ?? 'refused'}` };
  });
  const created = r.results.filter((x) => x.kind === 'user' && x.outcome === 'created').map((x) => x.user!);
  return [...failures, ...missingForNewUsers(created, news)];
}

/** The check on decoded inputs: the model's rules, and (when the declared state changed) the server's judgement. */
async function checkTenant(before: Partial<TenantInputs>, news: TenantInputs, ctx: ProviderContext | undefined): Promise<pulumi.dynamic.CheckResult<TenantInputs>> {
  const apps = (news as { applications?: unknown }).applications;
  if (apps !== null && typeof apps === 'object' && !isUnknown(apps)) {
    const secretIn = Object.entries(apps as Record<string, unknown>).filter(([, b]) => b !== null && typeof b === 'object' && 'clientSecret' in b).map(([n]) => n);
    if (secretIn.length > 0) {
      return { inputs: news, failures: secretIn.map((n) => ({ property: `${formatPath(['applications', n])}.clientSecret`, reason: 'the stack makes and keeps the client secret (clientSecrets); leave it out' })) };
    }
  }
  const checked = checkWith(TenantInputsSchema as unknown as z.ZodType<TenantInputs & Record<string, unknown>>, news as unknown as Record<string, unknown>);
  if ((checked.failures?.length ?? 0) > 0) return checked;
  const inputs = checked.inputs as TenantInputs;
  if ([inputs.connection, inputs.name, inputs.body, inputs.applications, inputs.users, inputs.assignments, inputs.renamedApplications, inputs.webhooks, inputs.webhookSecrets].some(isUnknown)) return checked;
  // What the stack already holds as declared needs no judging again: a no-op preview asks the server nothing here.
  const known = !fromBefore(before) && before.body !== undefined;
  if (known && sameDeclared(toWire(before as TenantInputs), toWire(inputs))) return checked;
  // What this run changes, one line each (`acme/portal: redirectUris[1] added`), said once per run:
  // here, where only the model's registration comes (the engine also diffs for a refresh).
  if (known) {
    await sayLines(ctx, tenantDifferences(before, inputs).flatMap((d) => describe(inputs.name, d, before, inputs)));
  }
  // Users another door (SCIM, the console) manages: the model may not declare them, in that door's words.
  const { ownershipFailures } = await import('./_ownership.ts');
  const added = Object.keys(inputs.users).filter((u) => !(u in (before.users ?? {})));
  const owned = await ownershipFailures(inputs.connection, inputs.name, added);
  let judged: { property: string; reason: string }[];
  try {
    judged = await judgeDeclared(before, inputs);
  } catch (err) {
    const { unreachable } = await import('./_common.ts');
    // A server that is not deployed yet (or down) has nothing to say: the up meets its own refusals.
    if (!unreachable(err)) throw err;
    judged = missingForNewUsers(added, inputs);
  }
  const ownedAt = new Set(owned.map((o) => o.property));
  const failures = [...owned, ...judged.filter((j) => !ownedAt.has(j.property))];
  return failures.length > 0 ? { inputs: checked.inputs, failures } : checked;
}

/** The provider on decoded inputs (tenantProvider, below, is it on the wire). */
const onObjects: {
  check(olds: Partial<TenantInputs>, news: TenantInputs, ctx?: ProviderContext): Promise<pulumi.dynamic.CheckResult<TenantInputs>>;
  create(inputs: TenantInputs): Promise<pulumi.dynamic.CreateResult<TenantInputs>>;
  /** `moved`: the caller asked for the tenant's revision already, and it moved (no second request for it). */
  read(id: string, props: TenantInputs, ctx?: ProviderContext, moved?: boolean): Promise<pulumi.dynamic.ReadResult<TenantInputs>>;
  update(id: string, olds: TenantInputs, news: TenantInputs): Promise<pulumi.dynamic.UpdateResult<TenantInputs>>;
  delete(id: string, props: TenantInputs): Promise<void>;
} = {
  async check(olds, news, ctx?: ProviderContext) {
    return checkTenant(olds, news, ctx);
  },
  async create(inputs) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { sendBatches } = await import('./_common.ts');
    const ours = managerOfInputs(inputs);
    const client = writer(new AdminClient(inputs.connection), ours, inputs.git);
    if (inputs.adopt !== true) {
      // Objects that exist already and are not this stack's (made by hand, by `idforge apply`, by
      // another stack) are refused; what carries this stack's mark (an up killed before its state was
      // written) is taken back, and the batch brings it to the declared state.
      const outside = outsideOf((await client.batch(inputs.name, tenantBatch(inputs, {}), { dryRun: true })).results, ours);
      if (outside.length > 0) throw outsideError(inputs.name, outside);
    }
    forgetRevision(inputs.name);
    const looked = inputs.unmanaged !== 'keep';
    const { results, last } = await sendBatches(client, inputs.name, [{
      ...tenantBatch(inputs, {
        passwordsFor: () => true, force: inputs.adopt === true,
        prune: { managers: ours === undefined ? [] : [ours], drift: inputs.unmanaged === 'remove' },
      }),
      undeclared: looked,
    }]);
    if (inputs.unmanaged === 'remove') await removeGrants(client, inputs.name, Object.keys(inputs.applications));
    return { id: inputs.name, outs: withRevision(withServerSecrets({ ...inputs, drift: {} }, results), last, ours, looked) } as pulumi.dynamic.CreateResult;
  },
  async read(id, props, ctx?: ProviderContext, moved = false) {
    const { readOrKeep } = await import('./_common.ts');
    const old = props as TenantOutputs;
    // A state from before issue 23: kept as it is; the next up rewrites it in this shape.
    if (fromBefore(old)) return { id, props: old, inputs: old };
    return readOrKeep(id, old, () => readTenant(id, old, ctx, moved), ctx);
  },
  async update(_id, olds, news) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const { sendBatches } = await import('./_common.ts');
    const client = writer(new AdminClient(news.connection), managerOfInputs(news), news.git);
    // A declared rename (diff let it through): moved on the server, unless a run cut short did it already.
    if (olds.name !== news.name && (await client.find('getTenant', { tenant: news.name })) === undefined) {
      await client.call('renameTenant', { tenant: olds.name }, { body: { to: news.name } });
    }
    const oldApps = fromBefore(olds) ? {} : olds.applications;
    // Declared application renames: each moves with its client id, secret, assignments and tokens.
    for (const [to, from] of Object.entries(news.renamedApplications ?? {})) {
      if (to in news.applications && !(to in oldApps) && (await client.find('getApplication', { tenant: news.name, application: to })) === undefined &&
        (await client.find('getApplication', { tenant: news.name, application: from })) !== undefined) {
        await client.call('renameApplication', { tenant: news.name, application: from }, { body: { to } });
      }
    }
    // A new kind or client id is a new registration, and a client id a declared application takes
    // from one this stack drops must be free first: those go before the batch.
    const free = applicationsToFree(oldApps, news.applications, news.renamedApplications);
    const ours = managerOfInputs(news);
    const isNew = (id: string) => fromBefore(olds) || !(id in olds.users);
    forgetRevision(olds.name, news.name);
    const looked = news.unmanaged !== 'keep';
    const { results, last } = await sendBatches(client, news.name, [
      ...(free.length > 0 ? [{ delete: { applications: free } }] : []),
      {
        ...tenantBatch(news, {
          passwordsFor: isNew, force: news.adopt === true,
          prune: { managers: ours === undefined ? [] : [ours], drift: news.unmanaged === 'remove' },
        }),
        undeclared: looked,
      },
    ]);
    if (news.unmanaged === 'remove') await removeGrants(client, news.name, Object.keys(news.applications));
    return { outs: withRevision(withServerSecrets({ ...news, drift: {} }, results), last, ours, looked) } as pulumi.dynamic.UpdateResult;
  },
  async delete(id, props) {
    const { AdminClient } = await import('../admin-client/index.ts');
    const old = props as TenantOutputs;
    forgetRevision(liveName(id, old));
    await writer(new AdminClient(old.connection), managerOfInputs(old), old.git).remove('deleteTenant', { tenant: liveName(id, old) });
  },
};

/**
 * The engine's copy: the tenant's body, each application and each webhook as one canonical JSON
 * string, and ALL its users, and all its assignments, as one canonical JSON string each. Why: each hop
 * between the engine, the program and this provider converts the inputs to protobuf values and back,
 * one value per leaf, and a tenant of 20 applications and 200 users is ~5,000 leaves: 54 ms a round
 * trip, and a preview makes about eight hops per tenant (500 tenants: over 3 minutes of one core). One
 * string per object, 3 ms (measured on the bench/compile tenant). Then one string for the users and
 * one for the assignments (~245 values per tenant → ~30): what was left per value (google-protobuf's
 * map entries, the engine's copies of every property for its events, the host's garbage) was most
 * of the provider host's and much of the engine's CPU in a no-op preview of 500 bench tenants
 * (README, "Scale"). Applications stay one string each, so the engine's `--diff` shows a changed
 * application by name with its fields (`(json)`); a changed user is named in the detailed diff
 * (`users["u-bob"]`) and in the summary line check writes. The users' and assignments' strings are
 * packed (deflated, _packed.ts): they were most of the state's bytes, which every process copied.
 *
 * A state written before (users and assignments one string per object, or one plain JSON string)
 * reads the same: `packed` makes it the string this shape holds, and plain and packed JSON of the
 * same value compare equal, so moving to it previews no change.
 */
export interface TenantWire extends Omit<TenantInputs, 'body' | 'applications' | 'users' | 'assignments' | 'webhooks'> {
  readonly body: string;
  readonly applications: Record<string, string>;
  /** Packed canonical JSON of every user by id (a state from before: plain JSON, or one string per user). */
  readonly users: string | Record<string, string>;
  /** Packed canonical JSON of every application's assigned user ids (a state from before: plain JSON, or one string per application). */
  readonly assignments: string | Record<string, string>;
  readonly webhooks?: Record<string, string>;
}

const each = <A, B>(m: Readonly<Record<string, A>>, f: (a: A) => B): Record<string, B> => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, f(v)]));
const encode = (v: unknown): string => (isUnknown(v) ? (v as string) : canonicalJson(v));
/** Users and assignments, a tenant's largest values: packed (_packed.ts). */
const encodePacked = (v: unknown): string => (isUnknown(v) ? (v as string) : packValue(v));
const decode = (v: unknown): unknown => (typeof v === 'string' && !isUnknown(v) ? unpackValue(v) : v);
const decodeMap = (m: unknown): unknown => (m !== null && typeof m === 'object' && !isUnknown(m) ? each(m as Record<string, unknown>, decode) : m);
const encodeMap = (m: unknown): unknown => (m !== null && typeof m === 'object' && !isUnknown(m) ? each(m as Record<string, unknown>, encode) : m);
/** A packed map (users, assignments) decoded: one string now, one string per entry in a state from before. */
const unpack = (v: unknown): unknown => (typeof v === 'string' ? decode(v) : decodeMap(v));
/** A packed map as this shape holds it, whichever shape it came in: equal strings for equal maps. */
export const packed = (v: unknown): string => (typeof v === 'string' ? v : encodePacked(unpack(v ?? {})));
/** A packed map as one string per entry, to name what differs. */
const entriesOf = (v: unknown): Record<string, string> => encodeMap(unpack(v ?? {})) as Record<string, string>;

/** Pure: the inputs as the engine keeps them. */
export function toWire(i: TenantInputs): TenantWire {
  return {
    ...i, body: encode(i.body), applications: encodeMap(i.applications) as Record<string, string>, users: encodePacked(i.users), assignments: encodePacked(i.assignments),
    ...(i.webhooks === undefined ? {} : { webhooks: encodeMap(i.webhooks) as Record<string, string> }),
  } as TenantWire;
}

/** Pure: the inputs from the engine's copy. Objects that are not strings stay as they are (a state from before, a caller that did not encode). */
export function fromWire(w: unknown): TenantInputs {
  const x = w as Record<string, unknown>;
  if (fromBefore(x)) return x as unknown as TenantInputs;
  return {
    ...x, body: decode(x.body), applications: decodeMap(x.applications ?? {}), users: unpack(x.users ?? {}), assignments: unpack(x.assignments ?? {}),
    ...(x.webhooks === undefined ? {} : { webhooks: decodeMap(x.webhooks) }),
  } as TenantInputs;
}

/**
 * Whether two tenants on the wire declare the same, string for string (the users' string is compared,
 * never copied into a bigger one, which as a JSON array of everything was 0.3 s of the provider
 * host's CPU in a no-op preview of 500 bench tenants); users and assignments decoded only when their
 * strings differ (a state from before the packed form).
 */
function sameDeclared(a: TenantWire, b: TenantWire): boolean {
  return a.name === b.name && a.body === b.body && (a.unmanaged ?? 'remove') === (b.unmanaged ?? 'remove') &&
    sameEntries(a.applications, b.applications) && sameJsonText(packed(a.users), packed(b.users)) && sameJsonText(packed(a.assignments), packed(b.assignments)) &&
    sameEntries(a.webhooks, b.webhooks);
}
const sameEntries = (a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean => {
  const keys = Object.keys(a ?? {});
  return keys.length === Object.keys(b ?? {}).length && keys.every((k) => Object.hasOwn(b ?? {}, k) && a![k] === b![k]);
};

/** Pure: the detailed diff on the wire, object by object (`applications.portal`, `users["u-bob"]`, `drift.users`). */
export function wireDifferences(olds: TenantWire, news: TenantWire): Difference[] {
  const out: Difference[] = [];
  const scalar = (k: 'name' | 'body' | 'unmanaged') => {
    if ((olds[k] ?? (k === 'unmanaged' ? 'remove' : undefined)) !== (news[k] ?? (k === 'unmanaged' ? 'remove' : undefined))) out.push({ path: [k], kind: 'update' });
  };
  const map = (k: string, o: Readonly<Record<string, string>> | undefined, n: Readonly<Record<string, string>> | undefined) => {
    for (const key of [...new Set([...Object.keys(o ?? {}), ...Object.keys(n ?? {})])].sort()) {
      const a = o?.[key];
      const b = n?.[key];
      if (a === b) continue;
      out.push({ path: [k, key], kind: a === undefined ? 'add' : b === undefined ? 'delete' : 'update' });
    }
  };
  scalar('name');
  scalar('body');
  map('applications', olds.applications, news.applications);
  // Packed: compared as one string, taken apart only when it differs.
  for (const k of ['users', 'assignments'] as const) if (!sameJsonText(packed(olds[k]), packed(news[k]))) map(k, entriesOf(olds[k]), entriesOf(news[k]));
  map('webhooks', olds.webhooks, news.webhooks);
  scalar('unmanaged');
  const od = normalDrift(olds.drift);
  const nd = normalDrift(news.drift);
  for (const k of [...new Set([...Object.keys(od), ...Object.keys(nd)])].sort()) {
    if (!jsonEqual((od as Record<string, unknown>)[k], (nd as Record<string, unknown>)[k])) out.push({ path: ['drift', k], kind: k in nd ? (k in od ? 'update' : 'add') : 'delete' });
  }
  map('clientSecrets', olds.clientSecrets, news.clientSecrets);
  map('webhookSecrets', olds.webhookSecrets, news.webhookSecrets);
  return out;
}

/** What the outputs leave out: the declared objects, which the inputs hold. */
const DECLARED_MAPS = ['applications', 'users', 'assignments', 'webhooks'] as const;
/** ... and the tenant's body (~3 KB: its lastApplied entry holds every group), which the inputs hold too. */
const LEFT_TO_INPUTS = [...DECLARED_MAPS, 'body'] as const;

/** The inputs but the declared objects, checked alone when those are what the stack holds already. */
const SmallInputsSchema = TenantInputsSchema.omit({ body: true, applications: true, users: true, assignments: true, webhooks: true });

/**
 * A check whose declared objects are, string for string, the ones the stack holds (a no-op preview or
 * up; what differs live shows in the diff after the read): those were checked and judged when they
 * were declared, and the check's output is its input for them, so only the other inputs are parsed.
 * Why: decoding, parsing and encoding again ~500 objects per tenant was the provider's largest cost in
 * a no-op preview of the bench fleet (README, "Scale"). Undefined: check it all.
 */
export function checkUnchanged(olds: TenantWire, news: TenantWire): pulumi.dynamic.CheckResult<TenantWire> | undefined {
  const strings = (w: TenantWire) => typeof w.body === 'string' && !isUnknown(w.body) &&
    DECLARED_MAPS.every((k) => (k === 'webhooks' && w[k] === undefined) || (w[k] !== null && (typeof w[k] === 'object' || ((k === 'users' || k === 'assignments') && typeof w[k] === 'string')) && !isUnknown(w[k])));
  if (olds === undefined || fromBefore(olds) || !strings(olds) || !strings(news) || !sameDeclared(olds, news)) return undefined;
  const { body, applications, users, assignments, webhooks, ...rest } = news;
  const checked = checkWith(SmallInputsSchema as unknown as z.ZodType<Record<string, unknown>>, rest as Record<string, unknown>);
  if ((checked.failures?.length ?? 0) > 0 || checked.inputs === undefined) return undefined;
  return { inputs: { ...(checked.inputs as object), body, applications, users, assignments, ...(webhooks === undefined ? {} : { webhooks }) } as TenantWire };
}

/**
 * Pure: the outputs as the state keeps them when idforge's host runs the provider: without the
 * declared objects and the tenant's body (the inputs beside them hold those; the host hands them back
 * as `ctx.inputs`). Outputs written with the body (before) read the same: its value is the inputs' one.
 * Why: every hop between the engine, this provider and the program carries the outputs too (a read's
 * answer, every diff, the answer to the program's registration, which the SDK also logs as text), and a
 * tenant of 20 applications and 200 users is ~77 KB; it halves the state as well. Measured on a no-op
 * preview of 100 bench tenants (README, "Scale").
 */
export function slimOutputs(w: TenantWire): TenantWire {
  const out: Record<string, unknown> = { ...w };
  for (const k of LEFT_TO_INPUTS) delete out[k];
  return out as unknown as TenantWire;
}

/** Pure: the outputs with what they leave out taken from the inputs (outputs of before, which hold everything, stay as they are). */
export function withInputs(outs: TenantWire, inputs: Record<string, unknown> | undefined): TenantWire {
  if (inputs === undefined || DECLARED_MAPS.some((k) => (outs as unknown as Record<string, unknown>)[k] !== undefined)) return outs;
  return { ...inputs, ...outs } as TenantWire;
}

/** Outputs for the engine: slim under idforge's host (the only one that passes a context, and it hands the inputs back), whole under another. */
const outputsFor = (w: TenantWire, ctx: ProviderContext | undefined): TenantWire => (ctx === undefined ? w : slimOutputs(w));

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `tenantProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks. It keeps
 * the inputs on the wire (TenantWire) and works on them decoded.
 */
export const tenantProvider: Required<Omit<pulumi.dynamic.ResourceProvider<TenantWire, TenantWire>, 'configure'>> = {
  async check(olds, news, ctx?: ProviderContext) {
    const same = checkUnchanged(olds, news);
    if (same !== undefined) return same;
    const r = await onObjects.check(fromWire(olds), fromWire(news), ctx);
    return { ...r, inputs: r.inputs === undefined ? undefined : toWire(r.inputs as TenantInputs) } as pulumi.dynamic.CheckResult<TenantWire>;
  },
  async diff(id, outs, news, ctx?: ProviderContext) {
    const recorded = withInputs(outs, ctx?.inputs);
    // A new name is a new tenant, unless it is the rename the model declares.
    const renamed = news.previousName !== undefined && recorded.name === news.previousName;
    const replaces = renamed || isUnknown(news.name) || recorded.name === news.name ? [] : ['name'];
    if (fromBefore(recorded)) return { changes: true, replaces };
    if ([news.body, news.applications, news.users, news.assignments, news.clientSecrets, news.webhooks, news.webhookSecrets].some(isUnknown)) return { changes: true, replaces };
    // Compared with the live tenant (a plain preview sees drift), pipelined with the program; after a
    // read in this process (a refresh), with what that read found.
    const live = ctx === undefined || readHere.has(ctx.urn) ? recorded : await liveTenant(id, outs as TenantWire & { revision?: string }, recorded, news, ctx);
    if (live === 'gone') return { changes: true, replaces, detailedDiff: { name: 'add' } } as pulumi.dynamic.DiffResult;
    const olds = live;
    const found = wireDifferences(olds, news);
    if (found.length === 0 && replaces.length === 0) return { changes: false, replaces };
    // Where, for the engine's display and `preview --json` (idforge's provider host passes it on).
    const detailedDiff = Object.fromEntries(found.map((d) => [formatPath(d.path), d.kind]));
    return { changes: true, replaces, detailedDiff } as pulumi.dynamic.DiffResult;
  },
  async create(inputs, ctx?: ProviderContext) {
    const r = await onObjects.create(fromWire(inputs));
    return { ...r, outs: outputsFor(toWire(r.outs as TenantInputs), ctx) };
  },
  async read(id, outs, ctx?: ProviderContext) {
    if (ctx !== undefined) readHere.add(ctx.urn);
    // The tenant is as the stack recorded it (its revision): answered from the slim outputs alone, the
    // declared objects (ctx.inputs, ~77 KB a tenant) never decoded. Why: decoding them was most of the
    // provider host's work before the program ran in a preview of 500 bench tenants (README, "Scale").
    const since = ctx === undefined ? undefined : await revisionSince(id, outs as TenantWire & { revision?: string });
    if (since === 'same') return { id, props: outs } as pulumi.dynamic.ReadResult<TenantWire>;
    const merged = withInputs(outs ?? ({} as TenantWire), ctx?.inputs);
    const r = await onObjects.read(id, fromWire(merged), ctx, since === 'moved');
    if (r.props === undefined) return r as unknown as pulumi.dynamic.ReadResult<TenantWire>;
    // Nothing differs live: no inputs in the answer, so the engine keeps its own (a no-op preview's ~77 KB per tenant not encoded, sent and compared again).
    if ((r as { same?: boolean }).same === true && ctx?.inputs !== undefined) {
      const { revision: _, ...rest } = merged as TenantWire & { revision?: string };
      const revision = (r.props as TenantOutputs).revision;
      return { id: r.id, props: slimOutputs({ ...rest, ...(revision === undefined ? {} : { revision }) } as TenantWire) } as pulumi.dynamic.ReadResult<TenantWire>;
    }
    return { ...r, props: outputsFor(toWire(r.props), ctx), inputs: r.inputs === undefined ? undefined : toWire(r.inputs) } as pulumi.dynamic.ReadResult<TenantWire>;
  },
  async update(id, outs, news, ctx?: ProviderContext) {
    const r = await onObjects.update(id, fromWire(withInputs(outs, ctx?.inputs)), fromWire(news));
    return { ...r, outs: r.outs === undefined ? undefined : outputsFor(toWire(r.outs), ctx) } as pulumi.dynamic.UpdateResult<TenantWire>;
  },
  async delete(id, outs, ctx?: ProviderContext) {
    await onObjects.delete(id, fromWire(withInputs(outs, ctx?.inputs)));
  },
};

/** The tenants this process read (a refresh): their diff compares with what the read found, and reads nothing again. */
const readHere = new Set<string>();

/**
 * The tenant as it is live, for the diff: what the state recorded when nothing changed since (its
 * revision; one request for the fleet), else what one dry run of its batch finds (readTenant), with
 * one line said for each way the live tenant differs from the model that the state does not already
 * explain (`acme/wiki: redirectUris[0] changed`). 'gone': the tenant is not on the server.
 *
 * Why in the diff, and not a read before the update (the engine's refreshBeforeUpdate, as until
 * now): the engine makes those reads one after another before it even starts the program, ~3 s of a
 * 500-tenant preview's 16 (README, "Scale"); here each tenant is read as the program registers it.
 */
async function liveTenant(id: string, outs: TenantWire & { revision?: string }, recorded: TenantWire, news: TenantWire, ctx: ProviderContext): Promise<TenantWire | 'gone'> {
  const since = await revisionSince(id, outs);
  if (since === 'same') return recorded;
  const state = fromWire(recorded);
  const r = await onObjects.read(id, state, ctx, since === 'moved');
  if (r.props === undefined || r.id === '') {
    await say(ctx, 'warning', `tenant ${liveName(id, state)} is not on the server (deleted outside this stack): the next up makes it again`);
    return 'gone';
  }
  if ((r as { same?: boolean }).same === true) return recorded;
  const found = r.props as TenantInputs;
  const declared = fromWire(news);
  const explained = new Set(tenantDifferences(state, declared).map((d) => formatPath(d.path)));
  await sayLines(ctx, tenantDifferences(found, declared).filter((d) => !explained.has(formatPath(d.path))).flatMap((d) => describe(declared.name, d, found, declared)));
  const { revision: _, ...rest } = toWire(found) as TenantWire & { revision?: string };
  return rest as TenantWire;
}

/** Client secrets the server made (an application declared without one) are kept in the state, the only place they are known. */
function withServerSecrets(outs: TenantOutputs, results: readonly BatchEntryResult[]): TenantOutputs {
  const made = results.filter((r) => r.kind === 'application' && typeof r.clientSecret === 'string');
  if (made.length === 0) return outs;
  return { ...outs, clientSecrets: { ...(outs.clientSecrets ?? {}), ...Object.fromEntries(made.map((r) => [r.application!, r.clientSecret!])) } };
}

/**
 * Whether a value holds no Output or promise down to `depth` levels (1: the value itself; 2: a map
 * and its entries), the deepest an input's type lets one be (TenantArgs: `Input<Record<string,
 * Input<Body>>>`): plain data, encoded at once. Why not the whole tree: walking every field of 200
 * users' bodies per tenant was 0.2 s of the program's CPU at 500 bench tenants (README, "Scale").
 */
function plain(v: unknown, depth: number): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (Output.isInstance(v) || typeof (v as { then?: unknown }).then === 'function') return false;
  if (depth <= 1) return true;
  // A loop rather than Object.values(v).every: no array per object.
  for (const k in v) if (Object.hasOwn(v, k) && !plain((v as Record<string, unknown>)[k], depth - 1)) return false;
  return true;
}

/**
 * An input on the wire: encoded at once when it is plain data (what IdentityStack passes), through an
 * Output when it is not. Why: every promise the SDK makes for an Output captures a source-mapped stack
 * trace for its leak report (debuggablePromise); profiled, 1.1 s of the program's ~8 s of CPU in a
 * no-op preview of 100 bench tenants went to those traces.
 */
function encodeInput<T>(v: pulumi.Input<T>, depth: number, f: (x: unknown) => unknown): pulumi.Input<unknown> {
  return plain(v, depth) ? f(v) : pulumiOutput(v).apply(f);
}

export class Tenant extends _DynamicResource {
  declare readonly name: pulumi.Output<string>;
  /** Secret. */
  declare readonly clientSecrets: pulumi.Output<Record<string, string> | undefined>;

  constructor(name: string, args: TenantArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'tenantProvider',
      'Tenant',
      name,
      {
        ...args,
        // On the wire: one JSON string per object (TenantWire).
        body: encodeInput(args.body, 1, encode),
        applications: encodeInput(args.applications ?? {}, 2, encodeMap),
        users: encodeInput(args.users ?? {}, 2, encodePacked),
        assignments: encodeInput(args.assignments ?? {}, 2, (a) => encodePacked(normalAssignments(a as Record<string, string[]>))),
        ...(args.webhooks === undefined ? {} : { webhooks: encodeInput(args.webhooks, 2, encodeMap) }),
        // Secrets as secrets. Optional inputs not given are left out rather than passed as undefined
        // (clientSecrets stays: a declared output): the SDK makes an Output for every key it is given.
        clientSecrets: args.clientSecrets === undefined ? undefined : pulumiSecret(args.clientSecrets),
        ...(args.initialPasswords === undefined ? {} : { initialPasswords: pulumiSecret(args.initialPasswords) }),
        ...(args.webhookSecrets === undefined ? {} : { webhookSecrets: pulumiSecret(args.webhookSecrets) }),
      },
      { ...opts, additionalSecretOutputs: ['connection', 'clientSecrets', 'initialPasswords', 'webhookSecrets'] },
    );
  }
}
