/**
 * The admin API's operations on stored state, independent of HTTP. PUT is declarative: it
 * carries the full desired state and reports what it changed (`created`, `updated`, `unchanged`)
 * with the changed fields; `dryRun` computes that without writing (idforge plan uses it).
 */
import {
  BUILTIN_SCOPES, RESERVED_TENANTS, changedFields, checkRequestedScopes, formatPath, isConfidentialKind, mayChange, ownedElsewhere,
  type ApplicationBody, type AssignmentBody, type Outcome, type PutResult, type SigningAlg, type TenantBody, type UserBody,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { hashPassword, newClientSecret } from '../_crypto.ts';
import { errors } from '../errors.ts';
import { newTenantKeys, rotateTenantKeys } from '../keys.ts';
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
const diff = changedFields;

export const tenantView = (r: TenantRecord) => ({ name: r.name, ...r.body, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });
export const applicationView = (r: ApplicationRecord) => ({ name: r.name, ...r.body, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });
export const userView = (r: UserRecord) => ({
  id: r.id, ...r.body, hasPassword: r.passwordHash !== null, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt),
});
export const assignmentView = (r: AssignmentRecord) => ({ application: r.application, userId: r.userId, ...r.body, createdAt: iso(r.createdAt) });
export const keyView = (k: KeyRecord) => ({
  kid: k.kid, alg: k.alg, state: k.state, createdAt: iso(k.createdAt), ...(k.retiredAt === null ? {} : { retiredAt: iso(k.retiredAt) }),
});

/** A rule's problems as the one 400 the admin API answers: the first in `message`, all in `problems`. */
function refuse(problems: readonly { code: string; path: readonly (string | number)[]; message: string }[]): never {
  const list = problems.map((p) => ({ path: formatPath(p.path), message: p.message, code: p.code }));
  throw errors.invalidRequest(list[0]!.message, list[0]!.path, list);
}

const reserved = (name: string) => errors.forbidden(`tenant '${name}' is reserved for the server itself`);

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
  async putTenant(name: string, body: TenantBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof tenantView>>> {
    // Scope definitions and the login policy were checked with the body (the contract's TenantBody).
    if (RESERVED_TENANTS.includes(name)) throw reserved(name);
    const before = await this.#s.tenants.get(name);
    const changes = diff(before?.body, body);
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    if (dryRun || outcome === 'unchanged') {
      const now = Math.floor(Date.now() / 1000);
      return { outcome, changes, resource: tenantView(before ?? { name, body, createdAt: now, updatedAt: now }) };
    }
    const keys = before === undefined ? await newTenantKeys(this.ctx.master, name, this.ctx.keyAlg) : undefined;
    const rec = await this.#s.tenants.put(name, body, keys);
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
    const gone = await this.#s.tenants.delete(name);
    this.ctx.evictTenant(name);
    return gone;
  }

  async listKeys(tenant: string) {
    await this.#tenant(tenant);
    return (await this.#s.tenants.listKeys(tenant)).map(keyView);
  }

  async rotateKeys(tenant: string, alg: SigningAlg | undefined) {
    await this.#tenant(tenant);
    const keys = await rotateTenantKeys(this.#s, this.ctx.master, tenant, alg);
    this.ctx.evictTenant(tenant);
    return keys.map(keyView);
  }

  // Applications
  async #checkApplication(tenant: TenantRecord, name: string, body: ApplicationBody): Promise<void> {
    const s = this.#s;
    if (body.kind === 'api') {
      const other = await s.applications.getByIdentifier(tenant.name, body.identifier);
      if (other !== undefined && other.name !== name) {
        throw errors.conflict(`identifier '${body.identifier}' is already used by application '${other.name}'`, 'identifier');
      }
      return;
    }
    const other = await s.applications.getByClientId(tenant.name, body.clientId);
    if (other !== undefined && other.name !== name) {
      throw errors.conflict(`clientId '${body.clientId}' is already used by application '${other.name}'`, 'clientId');
    }
    const known = new Set([...BUILTIN_SCOPES, ...tenant.body.scopes.map((s) => s.name)]);
    for (const [i, aud] of body.audience.entries()) {
      const api = await s.applications.getByIdentifier(tenant.name, aud);
      if (api === undefined || api.body.kind !== 'api') {
        throw errors.invalidRequest(`audience '${aud}' is not the identifier of an api application in tenant '${tenant.name}'`, formatPath(['audience', i]));
      }
      for (const sc of api.body.scopes) known.add(sc);
    }
    // The model's scope rule: each known (built in, defined by the tenant, or offered by an api of
    // the audience), none twice, openid among them.
    const scopeProblems = checkRequestedScopes(body.scopes, known, ['scopes'], `tenant '${tenant.name}' or the apis of its audience`);
    if (scopeProblems.length > 0) refuse(scopeProblems);
  }

  /** Client applications (not the internal service client) whose audience names `identifier`. */
  async #clientsWithAudience(tenant: string, identifier: string): Promise<string[]> {
    const names: string[] = [];
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await this.#s.applications.list(tenant, { cursor, limit: 500 });
      for (const a of page.items) if (a.body.kind !== 'api' && a.body.audience.includes(identifier)) names.push(a.name);
      cursor = page.nextCursor ?? undefined;
      more = page.nextCursor !== null;
    }
    return names;
  }

  /**
   * An api whose identifier is some client's audience must stay: without it every code and
   * refresh request of those clients fails with invalid_target. The caller is told which clients
   * to change (or delete) first.
   */
  async #refuseIfAudience(tenant: string, api: ApplicationRecord, doing: string): Promise<void> {
    if (api.body.kind !== 'api') return;
    const clients = await this.#clientsWithAudience(tenant, api.body.identifier);
    if (clients.length === 0) return;
    throw errors.conflict(
      `cannot ${doing} api application '${api.name}': its identifier '${api.body.identifier}' is the audience of ` +
        `${clients.length === 1 ? 'application' : 'applications'} ${clients.map((c) => `'${c}'`).join(', ')}; ` +
        'remove it from their audience (or delete them) first',
      'identifier',
    );
  }

  async putApplication(tenantName: string, name: string, body: ApplicationBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof applicationView>>> {
    const tenant = await this.#tenant(tenantName);
    await this.#checkApplication(tenant, name, body);
    const before = await this.#s.applications.get(tenantName, name);
    if (before?.body.kind === 'api' && (body.kind !== 'api' || body.identifier !== before.body.identifier)) {
      await this.#refuseIfAudience(tenantName, before, 'change the identifier of');
    }
    let stored: StoredApplicationBody;
    let secretHash: string | null = null;
    let clientSecret: string | undefined;
    let secretChanged = false;
    if (body.kind === 'web' || body.kind === 'proxy') {
      // A confidential kind (KINDS[kind].confidential): the secret is kept as a hash.
      const { clientSecret: given, ...rest } = body;
      stored = rest;
      if (given !== undefined) {
        secretChanged = before?.secretHash == null || !this.ctx.master.verifyClientSecret(before.secretHash, given);
        secretHash = this.ctx.master.hashClientSecret(given);
      } else if (before?.secretHash != null) {
        secretHash = before.secretHash;
      } else {
        clientSecret = newClientSecret();
        secretHash = this.ctx.master.hashClientSecret(clientSecret);
        secretChanged = true;
      }
    } else {
      stored = body;
    }
    const changes = diff(before?.body, stored);
    if (secretChanged && before !== undefined) changes.push('clientSecret');
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    const now = Math.floor(Date.now() / 1000);
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: applicationView(before ?? { tenant: tenantName, name, body: stored, secretHash, createdAt: now, updatedAt: now }) };
    }
    // A changed client id orphans the old id's grants and tokens: no client answers to it any more.
    const rec = await this.#s.applications.put(tenantName, name, stored, secretHash);
    this.ctx.evictTenant(tenantName);
    return { outcome, changes, resource: applicationView(rec), ...(clientSecret === undefined ? {} : { clientSecret }) };
  }

  async getApplication(tenant: string, name: string) {
    await this.#tenant(tenant);
    const a = await this.#s.applications.get(tenant, name);
    if (a === undefined || a.body.kind === 'service') throw errors.notFound(`application '${name}' does not exist in tenant '${tenant}'`);
    return applicationView(a);
  }

  async listApplications(tenant: string, page: PageRequest) {
    await this.#tenant(tenant);
    const p = await this.#s.applications.list(tenant, page);
    return { items: p.items.map(applicationView), nextCursor: p.nextCursor };
  }

  async deleteApplication(tenant: string, name: string, dryRun: boolean): Promise<void> {
    await this.getApplication(tenant, name);
    await this.#refuseIfAudience(tenant, (await this.#s.applications.get(tenant, name))!, 'delete');
    if (dryRun) return;
    await this.#s.applications.delete(tenant, name);
    this.ctx.evictTenant(tenant);
  }

  async verifyClientSecret(tenant: string, name: string, clientSecret: string): Promise<{ matches: boolean }> {
    await this.#tenant(tenant);
    const a = await this.#s.applications.get(tenant, name);
    if (a === undefined || a.body.kind === 'service') throw errors.notFound(`application '${name}' does not exist in tenant '${tenant}'`);
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
    await this.#s.applications.put(tenant, name, a.body, this.ctx.master.hashClientSecret(clientSecret));
    this.ctx.evictTenant(tenant);
    return { clientId: a.body.clientId, clientSecret };
  }

  // Users
  async putUser(tenantName: string, id: string, body: UserBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof userView>>> {
    await this.#tenant(tenantName);
    const { initialPassword, ...stored } = body;
    const other = await this.#s.users.getByEmail(tenantName, stored.email);
    if (other !== undefined && other.id !== id) throw errors.conflict(`email '${stored.email}' belongs to another user of this tenant`, 'email');
    const before = await this.#s.users.get(tenantName, id);
    // One owner per object: what SCIM or the console manages, nobody else changes (a model naming it, too).
    if (before !== undefined && !mayChange(before.body.managedBy, stored.managedBy)) throw errors.conflict(ownedElsewhere('user', id, before.body.managedBy, stored.managedBy), 'managedBy');
    const changes = diff(before?.body, stored);
    // The initial password only counts when there is no password yet, so re-applying is a no-op.
    const setsPassword = initialPassword !== undefined && (before?.passwordHash ?? null) === null;
    if (setsPassword && before !== undefined) changes.push('password');
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    const now = Math.floor(Date.now() / 1000);
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: userView(before ?? { tenant: tenantName, id, body: stored, passwordHash: setsPassword ? 'x' : null, createdAt: now, updatedAt: now }) };
    }
    const hash = setsPassword ? await hashPassword(initialPassword) : (before?.passwordHash ?? null);
    // Losing a scope or being disabled must not survive in existing grants and refresh tokens; both
    // are written in one transaction, so a failure leaves the user as before and a retry revokes.
    const lostScope = before !== undefined && before.body.scopes.some((s) => !stored.scopes.includes(s));
    const revokeArtifacts = lostScope || (stored.disabled && before?.body.disabled !== true);
    const rec = await this.#s.users.put(tenantName, id, stored, hash, { revokeArtifacts });
    return { outcome, changes, resource: userView(rec) };
  }

  async getUser(tenant: string, id: string) {
    await this.#tenant(tenant);
    const u = await this.#s.users.get(tenant, id);
    if (u === undefined) throw errors.notFound(`user '${id}' does not exist in tenant '${tenant}'`);
    return userView(u);
  }

  async listUsers(tenant: string, page: PageRequest) {
    await this.#tenant(tenant);
    const p = await this.#s.users.list(tenant, page);
    return { items: p.items.map(userView), nextCursor: p.nextCursor };
  }

  async deleteUser(tenant: string, id: string, dryRun: boolean): Promise<void> {
    await this.getUser(tenant, id);
    if (!dryRun) await this.#s.users.delete(tenant, id);
  }

  // Assignments
  async #clientApp(tenant: string, application: string): Promise<ApplicationRecord & { body: { clientId: string } }> {
    const a = await this.#s.applications.get(tenant, application);
    if (a === undefined || a.body.kind === 'service') throw errors.notFound(`application '${application}' does not exist in tenant '${tenant}'`);
    if (a.body.kind === 'api') throw errors.invalidRequest(`application '${application}' is an api; users are assigned to client applications`);
    return a as ApplicationRecord & { body: { clientId: string } };
  }

  async putAssignment(tenant: string, application: string, userId: string, body: AssignmentBody, dryRun: boolean): Promise<PutResult<ReturnType<typeof assignmentView>>> {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    if ((await this.#s.users.get(tenant, userId)) === undefined) throw errors.notFound(`user '${userId}' does not exist in tenant '${tenant}'`);
    const before = await this.#s.users.getAssignment(tenant, application, userId);
    const changes = diff(before?.body, body);
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    if (dryRun || outcome === 'unchanged') {
      return { outcome, changes, resource: assignmentView(before ?? { tenant, application, userId, body, createdAt: Math.floor(Date.now() / 1000) }) };
    }
    return { outcome, changes, resource: assignmentView(await this.#s.users.putAssignment(tenant, application, userId, body)) };
  }

  async getAssignment(tenant: string, application: string, userId: string) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const a = await this.#s.users.getAssignment(tenant, application, userId);
    if (a === undefined) throw errors.notFound(`user '${userId}' is not assigned to application '${application}'`);
    return assignmentView(a);
  }

  async listAssignments(tenant: string, application: string, page: PageRequest) {
    await this.#tenant(tenant);
    await this.#clientApp(tenant, application);
    const p = await this.#s.users.listAssignments(tenant, application, page);
    return { items: p.items.map(assignmentView), nextCursor: p.nextCursor };
  }

  async deleteAssignment(tenant: string, application: string, userId: string, dryRun: boolean): Promise<void> {
    const app = await this.#clientApp(tenant, application);
    await this.getAssignment(tenant, application, userId);
    if (dryRun) return;
    await this.#s.users.deleteAssignment(tenant, application, userId);
    // The user's grants and refresh tokens at this application end with the assignment.
    await this.#s.grants.revokeUserClient(tenant, userId, app.body.clientId);
  }
}
