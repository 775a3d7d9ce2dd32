/**
 * The admin console's sessions, kept by the server so that signing out ends them. A session is
 * bound to one tenant's incarnation: it is stored among the tenant's artifacts, so deleting the
 * tenant deletes it, and a tenant re-created under the same name knows none of the old sessions.
 * Its user is checked on every read: a user who is disabled, deleted, or loses the admin scope has
 * no console session from that moment (disabling or deleting a user also deletes every artifact
 * carrying the account, these included).
 *
 * The id is 32 random bytes, answered once; storage keeps its SHA-256, so a copy of the database
 * opens no console.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ADMIN_SCOPE, RESERVED_TENANTS, type ConsoleSessionCreated, type ConsoleSessionView } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { reserved } from './rules.ts';

/** The artifact model console sessions are kept under. */
export const CONSOLE_SESSION_MODEL = 'ConsoleSession';
/** A console session lasts this long from sign-in (then the administrator signs in again, usually without a password). */
export const CONSOLE_SESSION_SECONDS = 8 * 60 * 60;

const storedId = (id: string) => createHash('sha256').update(id).digest('base64url');

interface Stored {
  readonly [key: string]: unknown;
  readonly accountId: string;
  readonly expiresAt: number;
}

export class ConsoleSessions {
  constructor(private readonly ctx: ServerContext) {}

  async #tenant(tenant: string): Promise<void> {
    if (RESERVED_TENANTS.includes(tenant)) throw reserved(tenant);
    if ((await this.ctx.storage.tenants.get(tenant)) === undefined) throw errors.notFound(`tenant '${tenant}' does not exist`);
  }

  /** Whether the user may hold a console session now: their email, or why not. */
  async #refusal(tenant: string, userId: string): Promise<{ readonly why: string; readonly email?: undefined } | { readonly email: string; readonly why?: undefined }> {
    const user = await this.ctx.storage.users.get(tenant, userId);
    if (user === undefined) return { why: `user '${userId}' does not exist in tenant '${tenant}'` };
    if (user.body.disabled === true) return { why: `user '${userId}' is disabled` };
    if (!user.body.scopes.includes(ADMIN_SCOPE)) return { why: `user '${userId}' does not hold the tenant's '${ADMIN_SCOPE}' scope` };
    return { email: user.body.email };
  }

  async create(tenant: string, userId: string): Promise<ConsoleSessionCreated> {
    await this.#tenant(tenant);
    const who = await this.#refusal(tenant, userId);
    if (who.why !== undefined) throw errors.forbidden(`no console session: ${who.why}`);
    const id = randomBytes(32).toString('base64url');
    const expiresAt = Math.floor(Date.now() / 1000) + CONSOLE_SESSION_SECONDS;
    const stored: Stored = { accountId: userId, expiresAt };
    await this.ctx.storage.grants.upsert(tenant, CONSOLE_SESSION_MODEL, storedId(id), stored, CONSOLE_SESSION_SECONDS);
    return { id, userId, email: who.email, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  async get(tenant: string, id: string): Promise<ConsoleSessionView> {
    await this.#tenant(tenant);
    const key = storedId(id);
    const s = (await this.ctx.storage.grants.find(tenant, CONSOLE_SESSION_MODEL, key)) as Stored | undefined;
    if (s === undefined) throw errors.notFound('this console session has ended');
    const who = await this.#refusal(tenant, s.accountId);
    if (who.why !== undefined) {
      // Ended for good; a 403 rather than a 404, so the console can tell the person why.
      await this.ctx.storage.grants.destroy(tenant, CONSOLE_SESSION_MODEL, key);
      throw errors.forbidden(`this console session has ended: ${who.why}`);
    }
    return { userId: s.accountId, email: who.email, expiresAt: new Date(s.expiresAt * 1000).toISOString() };
  }

  async delete(tenant: string, id: string): Promise<void> {
    await this.#tenant(tenant);
    await this.ctx.storage.grants.destroy(tenant, CONSOLE_SESSION_MODEL, storedId(id));
  }
}
