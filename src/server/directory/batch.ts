/**
 * The tenant batch (POST /admin/v1/tenants/{tenant}/batch, contract: src/contract/batch.ts): many
 * objects of one tenant judged with the single-object rules (_rules.ts), entry after entry against
 * the stored state as the entries before left it, and written in one transaction.
 *
 * How a batch runs: the tenant's contents are read and every entry judged inside one storage
 * transaction (TenantStore.batch), which writes what changed. Work that must not run inside it is
 * done before: a new tenant's RSA keys, and the argon2 hashes of the initial passwords that a first
 * judgement finds needed (seconds for hundreds of users; on every core: password-pool.ts), after
 * which the batch is judged again; a refused entry stops the batch before any hashing. A dry run
 * judges a snapshot of the contents and writes nothing.
 */
import { type BatchEntryResult, type ParsedTenantBatch, type TenantBatchResult, type UndeclaredObjects, RESERVED_TENANTS, managerOf, prunedBy, revisesDirectory } from '../../contract/index.ts';
import { judgeWebhookEntries, NO_WEBHOOK_ENTRIES, type WebhookEntries } from './batch-webhooks.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError, errors } from '../errors.ts';
import { newTenantKeys } from '../keys.ts';
import { passwordHashPool } from '../password-pool.ts';
import type {
  ApplicationRecord, AssignmentRecord, KeyRecord, TenantChanges, TenantContents, TenantRecord, UserRecord,
} from '../storage/types.ts';
import type { EventView } from '../../contract/index.ts';
import { PASSWORD_CHANGE, deleteEvent, pairName, putEvent, recordWith, secretChanges } from '../events/make.ts';
import {
  judgeApplication, judgeApplicationDelete, judgeAssignment, judgeTenant, judgePassword, judgeUser, ownedBy, reserved, type ApplicationLookup,
} from './rules.ts';

/** A refused batch: answered 422 with every entry's outcome (the router adds `result` to the error body). */
export class RefusedBatch extends ServerError {
  constructor(readonly result: TenantBatchResult) {
    const refused = result.results.filter((r) => r.outcome === 'refused');
    const first = refused[0]!;
    const at = (r: BatchEntryResult) => `${[r.application, r.user].filter((x) => x !== undefined).join('/') || 'tenant'}`;
    super(
      422, 'refused',
      `${refused.length} of ${result.results.length} entries refused, nothing applied; ${first.kind} ${at(first)}: ${first.reason}`,
      true, first.path ?? '',
      refused.map((r) => ({ path: r.path ?? '', message: `${r.kind} ${at(r)}: ${r.reason}`, ...(r.error === undefined ? {} : { code: r.error }) })),
    );
  }
}

/** Work to do outside the transaction before the batch can be written. */
interface Needs {
  readonly keys: boolean;
  /** User ids whose initial password must be hashed. */
  readonly passwords: readonly string[];
}

/** What was prepared outside the transaction; `dry` judges without writing and needs nothing. */
type Prepared = { readonly dry: true } | { readonly dry: false; readonly keys?: readonly KeyRecord[]; readonly hashes: ReadonlyMap<string, string> };

class Missing extends Error {
  constructor(readonly needs: Needs) {
    super('batch needs keys or password hashes made outside the transaction');
  }
}

/** At most this many attempts: another attempt only follows a concurrent change of what the batch needs. */
const ATTEMPTS = 4;

export async function applyTenantBatch(ctx: ServerContext, tenant: string, batch: ParsedTenantBatch, dryRun: boolean): Promise<TenantBatchResult> {
  if (RESERVED_TENANTS.includes(tenant)) throw reserved(tenant);
  // What is read beside the contents (group assignments, webhooks) is read after the revision the
  // answer gives, so a change between them moves the revision past what the answer says: a reader that
  // keeps it (the Pulumi provider) reads again rather than missing that change.
  // A dry run: the contents and their revision first.
  const dryContents = dryRun ? await ctx.storage.tenants.contents(tenant) : undefined;
  const revisionBefore = dryRun ? undefined : (await ctx.storage.events.revisions(tenant))[tenant];
  // Group assignments are not the batch's to write: read beside it, only when asked (`undeclared`).
  const grants = batch.undeclared ? await groupAssignmentsOf(ctx, tenant, batch) : [];
  // Webhooks live in a store of their own: judged beside the batch, written right after it.
  const hooks = await judgeWebhookEntries(ctx, tenant, batch, dryRun);
  if (dryContents !== undefined) return judged(judge(ctx, tenant, batch, dryContents, { dry: true }, grants, hooks), false);
  // A tenant the batch creates needs its signing keys: made before the first judgement rather than
  // found missing by it (the common case when a model is applied to a new server).
  const keys = batch.tenant !== undefined && (await ctx.storage.tenants.get(tenant)) === undefined
    ? await newTenantKeys(ctx.master, tenant, ctx.keyAlg) : undefined;
  let prepared: Prepared = { dry: false, hashes: new Map(), ...(keys === undefined ? {} : { keys }) };
  for (let attempt = 1; ; attempt++) {
    try {
      // The events are the judgement's, made inside the transaction and written in it.
      let decided: Judgement | undefined;
      const j = await recordWith(ctx, () => decided?.events ?? [], () => ctx.storage.tenants.batch(tenant, (contents) => {
        const j = judge(ctx, tenant, batch, contents, prepared, grants, hooks);
        if (j.refused) throw new RefusedBatch(j.result(false));
        if (j.needs.keys || j.needs.passwords.length > 0) throw new Missing(j.needs);
        decided = j;
        return { changes: j.changes, result: j };
      }));
      if (j.changes.tenant !== undefined || j.changes.applications.length > 0 || j.changes.deleteApplications.length > 0) ctx.evictTenant(tenant);
      for (const write of hooks.writes) await write();
      const result = j.result(true);
      // Changed by another door between the reads before the transaction and the transaction, or by
      // the webhook writes after it: no revision the reader could keep as what this batch saw.
      return hooks.writes.length > 0 || j.revisionJudged !== revisionBefore ? (({ revision: _, ...rest }) => rest)(result) : result;
    } catch (err) {
      if (!(err instanceof Missing) || attempt >= ATTEMPTS) throw err;
      prepared = await prepare(ctx, tenant, batch, err.needs, prepared);
    }
  }
}

const judged = (j: Judgement, applied: boolean): TenantBatchResult => {
  if (j.refused) throw new RefusedBatch(j.result(false));
  return j.result(applied);
};

/** The group assignments on the client applications the batch lists (a reader's "access the model does not declare"). */
async function groupAssignmentsOf(ctx: ServerContext, tenant: string, batch: ParsedTenantBatch): Promise<UndeclaredObjects['groupAssignments']> {
  const out: UndeclaredObjects['groupAssignments'] = [];
  for (const { name, body } of batch.applications) {
    if (body.kind === 'api') continue;
    let cursor: string | undefined;
    do {
      const p = await ctx.storage.groups.listAssignments(tenant, name, { cursor, limit: 500 });
      for (const g of p.items) {
        const manager = managerOf(g.body);
        out.push({ application: g.application, group: g.group, ...(manager === undefined ? {} : { manager }) });
      }
      cursor = p.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
  return out;
}

async function prepare(ctx: ServerContext, tenant: string, batch: ParsedTenantBatch, needs: Needs, before: Prepared): Promise<Prepared> {
  const had = before.dry ? undefined : before;
  const keys = needs.keys ? await newTenantKeys(ctx.master, tenant, ctx.keyAlg) : had?.keys;
  const hashes = new Map(had?.hashes);
  const wanted = needs.passwords.filter((id) => !hashes.has(id));
  const passwordOf = new Map(batch.users.map((u) => [u.id, u.body.initialPassword]));
  const made = await passwordHashPool.hashAll(wanted.map((id) => passwordOf.get(id)!));
  wanted.forEach((id, i) => hashes.set(id, made[i]!));
  return { dry: false, keys, hashes };
}

interface Judgement {
  /** The revision of the contents judged (TenantContents.revision). */
  readonly revisionJudged: string | undefined;
  /** One per object the batch writes (none for a dry run). */
  readonly events: readonly EventView[];
  readonly refused: boolean;
  readonly needs: Needs;
  readonly changes: TenantChanges;
  result(applied: boolean): TenantBatchResult;
}

const pairKey = (application: string, user: string) => `${application}\u0000${user}`;

/**
 * The tenant's contents as the entries judged so far leave them: the single-object rules read
 * this, so each entry sees the ones before it.
 */
class TenantState implements ApplicationLookup {
  tenant: TenantRecord | undefined;
  readonly apps = new Map<string, ApplicationRecord>();
  readonly users = new Map<string, UserRecord>();
  /** Lowercased email → ids of the users holding it. */
  readonly #byEmail = new Map<string, Set<string>>();
  readonly assignments = new Map<string, AssignmentRecord>();
  /** User id, application name → keys of their assignments. */
  readonly #ofUser = new Map<string, Set<string>>();
  readonly #ofApp = new Map<string, Set<string>>();

  constructor(c: TenantContents) {
    this.tenant = c.tenant;
    for (const a of c.applications) this.apps.set(a.name, a);
    for (const u of c.users) this.setUser(u);
    for (const a of c.assignments) this.setAssignment(a);
  }

  byClientId(clientId: string): ApplicationRecord | undefined {
    for (const a of this.apps.values()) if (a.body.kind !== 'api' && a.body.clientId === clientId) return a;
    return undefined;
  }
  byIdentifier(identifier: string): ApplicationRecord | undefined {
    for (const a of this.apps.values()) if (a.body.kind === 'api' && a.body.identifier === identifier) return a;
    return undefined;
  }
  clientsWithAudience(identifier: string): string[] {
    return [...this.apps.values()]
      .filter((a) => a.body.kind !== 'api' && a.body.kind !== 'service' && a.body.audience.includes(identifier))
      .map((a) => a.name)
      .sort();
  }
  /** As UserStore.getByEmail: case-insensitive, the lowest id when several share the address. */
  emailOwner(email: string): UserRecord | undefined {
    const ids = this.#byEmail.get(email.toLowerCase());
    let lowest: string | undefined;
    for (const id of ids ?? []) if (lowest === undefined || Buffer.compare(Buffer.from(id), Buffer.from(lowest)) < 0) lowest = id;
    return lowest === undefined ? undefined : this.users.get(lowest);
  }
  setUser(u: UserRecord): void {
    const old = this.users.get(u.id);
    if (old !== undefined) this.#byEmail.get(old.body.email.toLowerCase())?.delete(u.id);
    this.users.set(u.id, u);
    index(this.#byEmail, u.body.email.toLowerCase()).add(u.id);
  }
  setAssignment(a: AssignmentRecord): void {
    const key = pairKey(a.application, a.userId);
    this.assignments.set(key, a);
    index(this.#ofUser, a.userId).add(key);
    index(this.#ofApp, a.application).add(key);
  }
  deleteAssignment(key: string): void {
    const a = this.assignments.get(key);
    if (a === undefined) return;
    this.assignments.delete(key);
    this.#ofUser.get(a.userId)?.delete(key);
    this.#ofApp.get(a.application)?.delete(key);
  }
  /** With its assignments, as UserStore.delete. */
  deleteUser(id: string): void {
    const old = this.users.get(id);
    if (old === undefined) return;
    this.#byEmail.get(old.body.email.toLowerCase())?.delete(id);
    this.users.delete(id);
    for (const key of [...(this.#ofUser.get(id) ?? [])]) this.deleteAssignment(key);
  }
  /** With its assignments, as ApplicationStore.delete. */
  deleteApplication(name: string): void {
    this.apps.delete(name);
    for (const key of [...(this.#ofApp.get(name) ?? [])]) this.deleteAssignment(key);
  }
}

function index<K, V>(map: Map<K, Set<V>>, key: K): Set<V> {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  return set;
}

/** Judges every entry in the batch's order (see the contract), against `contents`. Never throws a rule's refusal: it becomes the entry's outcome. */
function judge(
  ctx: ServerContext, tenant: string, batch: ParsedTenantBatch, contents: TenantContents, prepared: Prepared, grants: UndeclaredObjects['groupAssignments'] = [],
  hooks: WebhookEntries = NO_WEBHOOK_ENTRIES,
): Judgement {
  const state = new TenantState(contents);
  const now = Math.floor(Date.now() / 1000);
  // Another manager's objects change only when the batch says so (idforge apply --force-conflicts, Pulumi's idforge:adopt).
  const force = batch.force;
  const results: BatchEntryResult[] = [];
  const needs = { keys: false, passwords: [] as string[] };
  const changes = {
    applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [],
  } as { -readonly [K in keyof TenantChanges]: TenantChanges[K] extends readonly (infer E)[] ? E[] : TenantChanges[K] };
  let refused = false;
  const events: EventView[] = [];
  /** Notes an entry's event when the batch will be written; a dry run (every plan, and apply's own) does not make it at all. */
  const tell = (make: () => EventView | undefined) => {
    if (prepared.dry) return;
    const e = make();
    if (e !== undefined) events.push(e);
  };
  /** Runs one entry's rules; a refusal (ServerError) becomes its outcome, anything else is a bug and propagates. */
  const entry = (id: Pick<BatchEntryResult, 'kind' | 'application' | 'user'>, run: () => Omit<BatchEntryResult, 'kind' | 'application' | 'user'>) => {
    try {
      results.push({ ...id, ...run() });
    } catch (err) {
      if (!(err instanceof ServerError)) throw err;
      refused = true;
      results.push({
        ...id, outcome: 'refused', status: err.status, error: err.error, reason: err.message, path: err.path,
        ...(err.problems.length > 1 ? { problems: [...err.problems] } : {}),
      });
    }
  };
  const updated = (outcome: string, fields: string[]) => (outcome === 'updated' ? { changes: fields } : {});
  /** An entry left as it was because another manager keeps it: said, so a plan can tell. */
  const keptBy = (d: { readonly foreign?: string }) => (d.foreign === undefined ? {} : { manager: d.foreign });
  /** The owner the stored object had (its door and its manager), answered with updated and deleted entries. */

  // The tenant.
  if (batch.tenant !== undefined) {
    const body = batch.tenant;
    entry({ kind: 'tenant' }, () => {
      const before = state.tenant;
      const d = judgeTenant(tenant, body, before, force);
      if (d.outcome !== 'unchanged') {
        let initialKeys: readonly KeyRecord[] | undefined;
        if (before === undefined && !prepared.dry) {
          initialKeys = prepared.keys;
          if (initialKeys === undefined) needs.keys = true;
        }
        changes.tenant = { body: d.stored, ...(initialKeys === undefined ? {} : { initialKeys }) };
        tell(() => putEvent(tenant, 'tenant', tenant, before?.body, d.stored, managerOf(body)));
        state.tenant = { name: tenant, body: d.stored, createdAt: before?.createdAt ?? now, updatedAt: now };
      }
      return { outcome: d.outcome, ...updated(d.outcome, d.changes), ...(d.outcome === 'updated' ? ownedBy(before) : keptBy(d)) };
    });
  }
  const t = state.tenant;
  if (t === undefined) {
    // Nothing can be judged in a tenant that is not there (and is not being made): as every single-object operation, 404.
    if (!refused) throw errors.notFound(`tenant '${tenant}' does not exist`);
    return { events, refused, needs, changes, revisionJudged: contents.revision, result: (applied) => ({ applied, before: { users: 0, assignments: 0 }, results, unchanged: 0 }) };
  }

  // Applications: apis first, since clients name them as their audience.
  const apps = [...batch.applications.filter((a) => a.body.kind === 'api'), ...batch.applications.filter((a) => a.body.kind !== 'api')];
  for (const { name, body } of apps) {
    entry({ kind: 'application', application: name }, () => {
      const before = state.apps.get(name);
      const d = judgeApplication(state.tenant!, name, body, before, state, ctx.master, force);
      if (d.outcome !== 'unchanged') {
        state.apps.set(name, { tenant, name, body: d.stored, secretHash: d.secretHash, createdAt: before?.createdAt ?? now, updatedAt: now });
        changes.applications.push({ name, body: d.stored, secretHash: d.secretHash });
        tell(() => putEvent(tenant, 'application', name, before?.body, d.stored, managerOf(body), secretChanges(before, d.secretHash)));
      }
      return {
        outcome: d.outcome, ...updated(d.outcome, d.changes), ...(d.outcome === 'updated' ? ownedBy(before) : keptBy(d)),
        ...(d.clientSecret === undefined || prepared.dry ? {} : { clientSecret: d.clientSecret }),
      };
    });
  }

  // Users.
  for (const { id, body } of batch.users) {
    entry({ kind: 'user', user: id }, () => {
      const before = state.users.get(id);
      const d = judgeUser(id, body, before, state.emailOwner(body.email), force);
      if (d.setsPassword) judgePassword(state.tenant, body.email, body.initialPassword!, 'initialPassword');
      let hash: string | null = null;
      if (d.setsPassword && !prepared.dry) {
        hash = prepared.hashes.get(id) ?? null;
        if (hash === null) needs.passwords.push(id);
      }
      if (d.outcome !== 'unchanged') {
        state.setUser({
          tenant, id, body: d.stored, passwordHash: d.setsPassword ? (hash ?? 'to be set') : (before?.passwordHash ?? null),
          createdAt: before?.createdAt ?? now, updatedAt: now,
        });
        changes.users.push({ id, body: d.stored, initialPasswordHash: hash, revokeArtifacts: d.revokeArtifacts });
        tell(() => putEvent(tenant, 'user', id, before?.body, d.stored, managerOf(body), d.setsPassword ? [PASSWORD_CHANGE] : []));
      }
      return { outcome: d.outcome, ...updated(d.outcome, d.changes), ...(d.outcome === 'updated' ? ownedBy(before) : keptBy(d)) };
    });
  }

  // Assignments.
  for (const group of batch.assignments) {
    for (const userId of group.users) {
      entry({ kind: 'assignment', application: group.application, user: userId }, () => {
        const key = pairKey(group.application, userId);
        const before = state.assignments.get(key);
        const d = judgeAssignment(tenant, group.application, userId, group.body, state.apps.get(group.application), state.users.get(userId), before, force);
        if (d.outcome !== 'unchanged') {
          state.setAssignment({ tenant, application: group.application, userId, body: d.stored, createdAt: before?.createdAt ?? now });
          changes.assignments.push({ application: group.application, userId, body: d.stored });
          tell(() => putEvent(tenant, 'assignment', pairName(group.application, userId), before?.body, d.stored, managerOf(group.body)));
        }
        return { outcome: d.outcome, ...updated(d.outcome, d.changes), ...(d.outcome === 'updated' ? ownedBy(before) : keptBy(d)) };
      });
    }
  }

  // Deletions: what the batch names, then (prune) what its owner no longer lists; children first.
  const owners = batch.prune;
  const pruned = (body: object) => prunedBy(batch.prune, body);
  const listedPairs = new Set(batch.assignments.flatMap((g) => g.users.map((u) => pairKey(g.application, u))));
  const listedUsers = new Set(batch.users.map((u) => u.id));
  const listedApps = new Set(batch.applications.map((a) => a.name));
  const named = batch.delete.assignments.flatMap((g) => g.users.map((userId) => ({ application: g.application, userId })));
  const namedPairs = new Set(named.map((a) => pairKey(a.application, a.userId)));
  const namedUsers = new Set(batch.delete.users);
  const namedApps = new Set(batch.delete.applications);
  const unassign = [
    ...named,
    ...(owners === undefined ? [] : [...state.assignments.values()]
      .filter((a) => pruned(a.body) && !listedPairs.has(pairKey(a.application, a.userId)) && !namedPairs.has(pairKey(a.application, a.userId)))
      .map((a) => ({ application: a.application, userId: a.userId }))),
  ];
  for (const { application, userId } of unassign) {
    entry({ kind: 'assignment', application, user: userId }, () => {
      const key = pairKey(application, userId);
      const before = state.assignments.get(key);
      if (before === undefined) return { outcome: 'unchanged' };
      // The grants to end are the ones issued to the client id the application had when they were made.
      const app = state.apps.get(application) ?? contents.applications.find((a) => a.name === application);
      const original = contents.applications.find((a) => a.name === application);
      const clientId = [app, original].map((a) => (a !== undefined && a.body.kind !== 'api' ? a.body.clientId : undefined)).find((c) => c !== undefined);
      state.deleteAssignment(key);
      changes.deleteAssignments.push({ application, userId, clientId: clientId ?? '' });
      tell(() => deleteEvent(tenant, 'assignment', pairName(application, userId), before.body));
      return { outcome: 'deleted', ...ownedBy(before) };
    });
  }
  const removeUsers = [
    ...batch.delete.users,
    ...(owners === undefined ? [] : [...state.users.values()]
      .filter((u) => pruned(u.body) && !listedUsers.has(u.id) && !namedUsers.has(u.id))
      .map((u) => u.id)),
  ];
  for (const id of removeUsers) {
    entry({ kind: 'user', user: id }, () => {
      const before = state.users.get(id);
      if (before === undefined) return { outcome: 'unchanged' };
      state.deleteUser(id);
      changes.deleteUsers.push(id);
      tell(() => deleteEvent(tenant, 'user', id, before.body));
      return { outcome: 'deleted', ...ownedBy(before) };
    });
  }
  const removeApps = [
    ...batch.delete.applications,
    ...(owners === undefined ? [] : [...state.apps.values()]
      .filter((a) => a.body.kind !== 'service' && pruned(a.body) && !listedApps.has(a.name) && !namedApps.has(a.name))
      .map((a) => a.name)),
  ];
  // Clients before apis: an api stays while a client names it as audience.
  const isApi = (name: string) => state.apps.get(name)?.body.kind === 'api';
  for (const name of [...removeApps.filter((n) => !isApi(n)), ...removeApps.filter(isApi)]) {
    entry({ kind: 'application', application: name }, () => {
      const app = state.apps.get(name);
      if (app === undefined || app.body.kind === 'service') return { outcome: 'unchanged' };
      judgeApplicationDelete(tenant, name, app, state);
      state.deleteApplication(name);
      changes.deleteApplications.push(name);
      tell(() => deleteEvent(tenant, 'application', name, app.body));
      return { outcome: 'deleted', ...ownedBy(app) };
    });
  }

  // Webhooks, judged beside the batch (batch-webhooks.ts).
  results.push(...hooks.results);
  if (hooks.refused) refused = true;

  const before = { users: contents.users.length, assignments: contents.assignments.length };
  const unchanged = results.filter((r) => r.outcome === 'unchanged').length;
  // With `changes`, the unchanged entries are only counted, but for those another manager keeps (a plan lists them).
  const listed = batch.report === 'changes' ? results.filter((r) => r.outcome !== 'unchanged' || r.manager !== undefined) : results;
  const undeclared = batch.undeclared ? { undeclared: { ...undeclaredOf(state, listedApps, listedUsers, listedPairs, grants), webhooks: hooks.undeclared } } : {};
  // The revision as the batch leaves it: its own last directory event when it writes one (inserted in its
  // transaction), else the one read with the contents it judged.
  const revisionAfter = (applied: boolean) => (applied ? events.findLast((e) => revisesDirectory(e.type))?.id : undefined) ?? contents.revision;
  return {
    events, refused, needs, changes, revisionJudged: contents.revision,
    result: (applied) => {
      const revision = revisionAfter(applied);
      return { applied, before, results: listed, unchanged, ...undeclared, ...(revision === undefined ? {} : { revision }) };
    },
  };
}

/** What the tenant holds, as the batch leaves it, that the batch does not list (the internal service client aside). */
function undeclaredOf(state: TenantState, apps: ReadonlySet<string>, users: ReadonlySet<string>, pairs: ReadonlySet<string>, grants: UndeclaredObjects['groupAssignments']): UndeclaredObjects {
  const by = (body: object) => {
    const manager = managerOf(body);
    return manager === undefined ? {} : { manager };
  };
  return {
    applications: [...state.apps.values()].filter((a) => a.body.kind !== 'service' && !apps.has(a.name)).map((a) => ({ application: a.name, ...by(a.body) })),
    users: [...state.users.values()].filter((u) => !users.has(u.id)).map((u) => ({ user: u.id, ...by(u.body) })),
    assignments: [...state.assignments.values()].filter((a) => !pairs.has(pairKey(a.application, a.userId))).map((a) => ({ application: a.application, user: a.userId, ...by(a.body) })),
    groupAssignments: grants.filter((g) => state.apps.has(g.application)),
  };
}
