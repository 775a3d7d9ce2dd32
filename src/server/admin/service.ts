/**
 * The admin API's operations on stored state, independent of HTTP. PUT is declarative: it
 * carries the full desired state and reports what it changed (`created`, `updated`, `unchanged`)
 * with the changed fields; `dryRun` computes that without writing (idforge plan uses it).
 */
import {
  RESERVED_TENANTS, isConfidentialKind,
  type ApplicationBody, type AssignmentBatchBody, type AssignmentBatchEntry, type AssignmentBody, type ParsedTenantBatch, type PutResult, type SigningAlg,
  type TenantBatchResult, type TenantBody, type UserBody,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { newClientSecret } from '../_crypto.ts';
import { ServerError, errors } from '../errors.ts';
import { MissingUsersError } from '../storage/index.ts';
import { NameTakenError } from '../storage/types.ts';
import { keySealedFor, newTenantKeys, rotateTenantKeys } from '../keys.ts';
import { totpSealedFor } from '../login/factor-totp.ts';
import {
  applicationLookup, isVisibleApplication, judgeApplication, judgeApplicationDelete, judgeAssignment, judgeNewTenantName, judgeTenant,
  requireApplication, requireClientApplication, requireUser, reserved, type ApplicationLookup, type VisibleApplicationRecord,
} from '../directory/rules.ts';
import { applyTenantBatch } from '../directory/batch.ts';
import { removeUser, writeUser } from '../directory/users.ts';
import { changeOf, managerOf } from '../../contract/index.ts';
import { deleteEvent, makeEvent, pairName, putEvent, recordWith, secretChanges } from '../events/make.ts';
import type {
  ApplicationRecord,
  AssignmentRecord,
  KeyRecord,
  Page,
  PageRequest,
  StoredApplicationBody,
  TenantRecord,
  UserRecord,
} from '../storage/types.ts';

export type { Outcome, PutResult } from '../../contract/index.ts';

const iso = (epoch: number) => new Date(epoch * 1000).toISOString();

export const tenantView = (r: TenantRecord) => ({ name: r.name, ...r.body, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });
export const applicationView = (r: VisibleApplicationRecord) => ({ name: r.name, ...r.body, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });
export const userView = (r: UserRecord) => ({
  id: r.id, ...r.body, hasPassword: r.passwordHash !== null, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt),
});
export const assignmentView = (r: AssignmentRecord) => ({ application: r.application, userId: r.userId, ...r.body, createdAt: iso(r.createdAt) });
export const keyView = (k: KeyRecord) => ({
  kid: k.kid, alg: k.alg, state: k.state, createdAt: iso(k.createdAt), ...(k.retiredAt === null ? {} : { retiredAt: iso(k.retiredAt) }),
});

export class AdminService {
  constructor(private readonly ctx: ServerContext) {}

  get #s() {
    return this.ctx.storage;
  }

  async #tenant(name: string): Promise<TenantRecord> {
    if (RESERVED_TENANTS.includes(name)) throw reserved(name);
    const t = await this.#s.tenants.get(name);
    if (t === undefined) throw errors.notFound(`tenant '${name}' does not exist`);
    return t;
  }

  // Tenants
  async putTenant(name: string, body: TenantBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof tenantView>>> {
    if (RESERVED_TENANTS.includes(name)) throw reserved(name);
    const before = await this.#s.tenants.get(name);
    const { outcome, changes, stored } = judgeTenant(name, body, before, force);
    if (dryRun || outcome === 'unchanged') {
      const now = Math.floor(Date.now() / 1000);
      return { outcome, changes, resource: tenantView(before ?? { name, body: stored, createdAt: now, updatedAt: now }) };
    }
    const keys = before === undefined ? await newTenantKeys(this.ctx.master, name, this.ctx.keyAlg) : undefined;
    const rec = await recordWith(this.ctx, [putEvent(name, 'tenant', name, before?.body, stored, managerOf(body))], () => this.#s.tenants.put(name, stored, keys));
    this.ctx.evictTenant(name);
    return { outcome, changes, resource: tenantView(rec) };
  }

  async getTenant(name: string) {
    return tenantView(await this.#tenant(name));
  }

  async listTenants(page: PageRequest): Promise<Page<ReturnType<typeof tenantView>>> {
    const p = await this.#s.tenants.list(page);
    return { items: p.items.filter((t) => !RESERVED_TENANTS.includes(t.name)).map(tenantView), nextCursor: p.nextCursor };
  }

  async deleteTenant(name: string, dryRun: boolean): Promise<boolean> {
    await this.#tenant(name);
    if (dryRun) return true;
    const t = await this.#s.tenants.get(name);
    const gone = await recordWith(this.ctx, [deleteEvent(name, 'tenant', name, t?.body)], () => this.#s.tenants.delete(name));
    this.ctx.evictTenant(name);
    return gone;
  }

  /** A tenant's new name: everything moves, sealed under the new name; the old issuer's sessions and tokens end. */
  async renameTenant(name: string, to: string) {
    await this.#tenant(name);
    judgeNewTenantName(to, 'to');
    const master = this.ctx.master;
    // Opened under the old tenant's associated data, sealed under the new one's.
    const reseal = (sealedFor: (tenant: string, id: string) => string) => (from: string, into: string, id: string, sealed: string) =>
      master.seal(master.unseal(sealed, sealedFor(from, id)), sealedFor(into, id));
    try {
      const renamed = makeEvent({ tenant: to, type: 'tenant.renamed', object: { kind: 'tenant', name: to }, changes: [changeOf('name', name, to)] });
      const moved = await recordWith(this.ctx, [renamed], () => this.#s.tenants.rename(name, to, { key: reseal(keySealedFor), totp: reseal(totpSealedFor) }));
      if (!moved) throw errors.notFound(`tenant '${name}' does not exist`);
    } catch (err) {
      if (err instanceof NameTakenError) throw errors.conflict(`tenant '${to}' already exists`, 'to');
      throw err;
    }
    this.ctx.evictTenant(name);
    this.ctx.evictTenant(to);
    return this.getTenant(to);
  }

  async listKeys(tenant: string) {
    await this.#tenant(tenant);
    return (await this.#s.tenants.listKeys(tenant)).map(keyView);
  }

  async rotateKeys(tenant: string, alg: SigningAlg | undefined) {
    await this.#tenant(tenant);
    const rotated = makeEvent({ tenant, type: 'tenant.keys_rotated', object: { kind: 'tenant', name: tenant }, details: alg === undefined ? {} : { alg } });
    const keys = await recordWith(this.ctx, [rotated], () => rotateTenantKeys(this.#s, this.ctx.master, tenant, alg));
    this.ctx.evictTenant(tenant);
    return keys.map(keyView);
  }

  // Applications
  /** Every application of the tenant, for the rules that look across them (client ids, identifiers, audiences). */
  async #applicationLookup(tenant: string): Promise<ApplicationLookup> {
    const apps: ApplicationRecord[] = [];
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await this.#s.applications.list(tenant, { cursor, limit: 500 });
      apps.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      more = page.nextCursor !== null;
    }
    return applicationLookup(apps);
  }

  async putApplication(tenantName: string, name: string, body: ApplicationBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof applicationView>>> {
    const tenant = await this.#tenant(tenantName);
    const existing = await this.#s.applications.get(tenantName, name);
    // An internal `service` application is not the admin API's to see or overwrite: 404, as for GET.
    const before = existing === undefined ? undefined : requireApplication(tenantName, name, existing);
    const { outcome, changes, stored, secretHash, clientSecret } = judgeApplication(
      tenant, name, body, before, await this.#applicationLookup(tenantName), this.ctx.master, force,
    );
    const now = Math.floor(Date.now() / 1000);
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: applicationView(before ?? { tenant: tenantName, name, body: stored, secretHash, createdAt: now, updatedAt: now }) };
    }
    // A changed client id orphans the old id's grants and tokens: no client answers to it any more.
    const event = putEvent(tenantName, 'application', name, before?.body, stored, managerOf(body), secretChanges(before, secretHash));
    const rec = requireApplication(tenantName, name, await recordWith(this.ctx, [event], () => this.#s.applications.put(tenantName, name, stored, secretHash)));
    this.ctx.evictTenant(tenantName);
    return { outcome, changes, resource: applicationView(rec), ...(clientSecret === undefined ? {} : { clientSecret }) };
  }

  async getApplication(tenant: string, name: string) {
    await this.#tenant(tenant);
    return applicationView(requireApplication(tenant, name, await this.#s.applications.get(tenant, name)));
  }

  async listApplications(tenant: string, page: PageRequest) {
    await this.#tenant(tenant);
    const p = await this.#s.applications.list(tenant, page);
    // The storage lists no `service` application; the filter says so to the types as well.
    return { items: p.items.filter(isVisibleApplication).map(applicationView), nextCursor: p.nextCursor };
  }

  async deleteApplication(tenant: string, name: string, dryRun: boolean): Promise<void> {
    await this.#tenant(tenant);
    const before = await this.#s.applications.get(tenant, name);
    judgeApplicationDelete(tenant, name, before, await this.#applicationLookup(tenant));
    if (dryRun) return;
    await recordWith(this.ctx, [deleteEvent(tenant, 'application', name, before?.body)], () => this.#s.applications.delete(tenant, name));
    this.ctx.evictTenant(tenant);
  }

  async renameApplication(tenant: string, name: string, to: string) {
    await this.getApplication(tenant, name);
    try {
      const renamed = makeEvent({ tenant, type: 'application.renamed', object: { kind: 'application', name: to }, changes: [changeOf('name', name, to)] });
      if (!(await recordWith(this.ctx, [renamed], () => this.#s.applications.rename(tenant, name, to)))) throw errors.notFound(`application '${name}' does not exist in tenant '${tenant}'`);
    } catch (err) {
      if (err instanceof NameTakenError) throw errors.conflict(`application '${to}' already exists in tenant '${tenant}'`, 'to');
      throw err;
    }
    this.ctx.evictTenant(tenant);
    return this.getApplication(tenant, to);
  }

  async verifyClientSecret(tenant: string, name: string, clientSecret: string): Promise<{ matches: boolean }> {
    await this.#tenant(tenant);
    const a = requireApplication(tenant, name, await this.#s.applications.get(tenant, name));
    if (!isConfidentialKind(a.body.kind)) {
      throw errors.invalidRequest(`application '${name}' is of kind '${a.body.kind}', which has no client secret`);
    }
    return { matches: a.secretHash !== null && this.ctx.master.verifyClientSecret(a.secretHash, clientSecret) };
  }

  async rotateClientSecret(tenant: string, name: string): Promise<{ clientId: string; clientSecret: string }> {
    await this.#tenant(tenant);
    const a = await this.#s.applications.get(tenant, name);
    if (a === undefined || a.body.kind === 'service') throw errors.notFound(`application '${name}' does not exist in tenant '${tenant}'`);
    if (!isConfidentialKind(a.body.kind) || !('clientId' in a.body)) {
      throw errors.invalidRequest(`application '${name}' is of kind '${a.body.kind}', which has no client secret`);
    }
    const clientSecret = newClientSecret();
    const rotated = makeEvent({ tenant, type: 'application.secret_rotated', object: { kind: 'application', name }, changes: [changeOf('clientSecret', undefined, undefined)] });
    await recordWith(this.ctx, [rotated], () => this.#s.applications.put(tenant, name, a.body, this.ctx.master.hashClientSecret(clientSecret)));
    this.ctx.evictTenant(tenant);
    return { clientId: a.body.clientId, clientSecret };
  }

  // Users
  async putUser(tenantName: string, id: string, body: UserBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof userView>>> {
    await this.#tenant(tenantName);
    const { outcome, changes, record } = await writeUser(this.ctx, tenantName, id, { body, force, dryRun });
    return { outcome, changes, resource: userView(record) };
  }

  async getUser(tenant: string, id: string) {
    await this.#tenant(tenant);
    return userView(requireUser(tenant, id, await this.#s.users.get(tenant, id)));
  }

  /** `search`: lower-case text the id, email or display name holds (peopleQuery). */
  async listUsers(tenant: string, page: PageRequest, search?: string) {
    await this.#tenant(tenant);
    const p = await this.#s.users.list(tenant, page, search);
    return { items: p.items.map(userView), nextCursor: p.nextCursor };
  }

  async deleteUser(tenant: string, id: string, dryRun: boolean): Promise<void> {
    await this.#tenant(tenant);
    const before = requireUser(tenant, id, await this.#s.users.get(tenant, id));
    if (!dryRun) await removeUser(this.ctx, tenant, before);
  }

  // Assignments
  async #clientApp(tenant: string, application: string): Promise<ApplicationRecord & { body: { clientId: string } }> {
    return requireClientApplication(tenant, application, await this.#s.applications.get(tenant, application));
  }

  async putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody, dryRun: boolean, force = false): Promise<PutResult<ReturnType<typeof assignmentView>>> {
    await this.#tenant(tenant);
    const before = await this.#s.users.getAssignment(tenant, application, userId);
    const { outcome, changes, stored } = judgeAssignment(
      tenant, application, userId, body, await this.#s.applications.get(tenant, application), await this.#s.users.get(tenant, userId), before, force,
    );
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: assignmentView(before ?? { tenant, application, userId, body: stored, createdAt: Math.floor(Date.now() / 1000) }) };
    }
    const event = putEvent(tenant, 'assignment', pairName(application, userId), before?.body, stored, managerOf(body));
    return { outcome, changes, resource: assignmentView(await recordWith(this.ctx, [event], () => this.#s.users.putAssignment(tenant, application, userId, stored))) };
  }

  async getAssignment(tenant: string, application: string, userId: string) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const a = await this.#s.users.getAssignment(tenant, application, userId);
    if (a === undefined) throw errors.notFound(`user '${userId}' is not assigned to application '${application}'`);
    return assignmentView(a);
  }

  /** A user's direct assignments, one per application (groups assigned to an application let their members in too). */
  async listUserAssignments(tenant: string, userId: string) {
    await this.#tenant(tenant);
    requireUser(tenant, userId, await this.#s.users.get(tenant, userId));
    return { items: (await this.#s.users.listUserAssignments(tenant, userId)).map(assignmentView) };
  }

  async listAssignments(tenant: string, application: string, page: PageRequest) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const p = await this.#s.users.listAssignments(tenant, application, page);
    return { items: p.items.map(assignmentView), nextCursor: p.nextCursor };
  }

  async deleteAssignment(tenant: string, application: string, userId: string, dryRun: boolean): Promise<void> {
    const app = await this.#clientApp(tenant, application);
    const before = await this.getAssignment(tenant, application, userId);
    if (dryRun) return;
    const { application: _a, userId: _u, createdAt: _c, ...body } = before;
    await recordWith(this.ctx, [deleteEvent(tenant, 'assignment', pairName(application, userId), body)], () => this.#s.users.deleteAssignment(tenant, application, userId));
    // The user's grants and refresh tokens at this application end with the assignment.
    await this.#s.grants.revokeUserClient(tenant, userId, app.body.clientId);
  }

  /** Which of `add` are not assigned yet, and which of `remove` are. */
  async #assignedAmong(tenant: string, application: string, add: readonly string[], remove: readonly string[]) {
    const assigned = async (id: string) => (await this.#s.users.getAssignment(tenant, application, id)) !== undefined;
    const added: string[] = [];
    const removed: string[] = [];
    for (const id of new Set(add)) if (!(await assigned(id))) added.push(id);
    for (const id of new Set(remove)) if (await assigned(id)) removed.push(id);
    return { added, removed };
  }

  /**
   * Adds and removes several assignments of one application at once (one storage transaction):
   * either every entry holds afterwards or nothing changed. Users to add that do not exist fail the
   * batch with 409, one problem per entry (`add[i]`), so a caller can say exactly what failed.
   */
  async changeAssignments(tenant: string, application: string, body: AssignmentBatchBody, dryRun: boolean): Promise<{ results: AssignmentBatchEntry[] }> {
    await this.#tenant(tenant);
    const app = requireClientApplication(tenant, application, await this.#s.applications.get(tenant, application));
    const missing = async () => {
      const out: string[] = [];
      for (const id of body.add) if ((await this.#s.users.get(tenant, id)) === undefined) out.push(id);
      return out;
    };
    const refuse = (ids: readonly string[]): never => {
      const problems = body.add.flatMap((id, i) => (ids.includes(id) ? [{ path: `add[${i}]`, message: `user '${id}' does not exist in tenant '${tenant}'`, code: 'not_found' }] : []));
      throw new ServerError(409, 'conflict', `${problems.length === 1 ? problems[0]!.message : `${problems.length} users to add do not exist in tenant '${tenant}'`}; nothing was changed`, true, problems[0]!.path, problems);
    };
    const gone = await missing();
    if (gone.length > 0) refuse(gone);
    let added: readonly string[];
    let removed: readonly string[];
    if (dryRun) {
      ({ added, removed } = await this.#assignedAmong(tenant, application, body.add, body.remove));
    } else {
      const stored = body.managedBy === undefined ? {} : { managedBy: body.managedBy };
      // The events of what the change will do, as read just before it (an entry another request
      // changes in between may be told twice or not at all; the tenant batch reads inside its transaction).
      const will = await this.#assignedAmong(tenant, application, body.add, body.remove);
      const events = [
        ...will.added.map((id) => putEvent(tenant, 'assignment', pairName(application, id), undefined, stored, managerOf(stored))),
        ...will.removed.map((id) => deleteEvent(tenant, 'assignment', pairName(application, id), undefined)),
      ];
      try {
        ({ added, removed } = await recordWith(this.ctx, events, () => this.#s.users.changeAssignments(tenant, application, app.body.clientId, {
          add: body.add, remove: body.remove, body: stored,
        })));
      } catch (err) {
        // A user deleted between the check above and the transaction.
        if (err instanceof MissingUsersError) refuse(err.userIds);
        throw err;
      }
    }
    return {
      results: [
        ...body.add.map((userId) => ({ op: 'add' as const, userId, outcome: added.includes(userId) ? ('created' as const) : ('unchanged' as const) })),
        ...body.remove.map((userId) => ({ op: 'remove' as const, userId, outcome: removed.includes(userId) ? ('deleted' as const) : ('unchanged' as const) })),
      ],
    };
  }

  // Batches: many objects of one tenant in one transaction, judged by the rules above (batch.ts).
  applyTenantBatch(tenant: string, batch: ParsedTenantBatch, dryRun: boolean): Promise<TenantBatchResult> {
    return applyTenantBatch(this.ctx, tenant, batch, dryRun);
  }
}
