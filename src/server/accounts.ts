/**
 * Users as oidc-provider sees them (findAccount), who may use an application (assigned, directly or
 * through a group), and which scopes a user may hold.
 */
import type { Account, KoaContextWithOIDC } from 'oidc-provider';
import type { ServerContext } from './_context.ts';
import type { ApplicationRecord, UserRecord } from './storage/types.ts';

/** Always grantable when the client may request them; every other scope is custom and per-user. */
export const STANDARD_SCOPES: readonly string[] = ['openid', 'profile', 'email', 'offline'];

/** The claims each standard scope releases (ID token and userinfo). */
export const SCOPE_CLAIMS = {
  openid: ['sub'],
  profile: ['name'],
  email: ['email', 'email_verified'],
} as const;

/**
 * The subset of `requested` this user may be granted: standard scopes always, custom scopes only
 * when the user holds them. (Whether the client may ask at all is checked by oidc-provider
 * against the client's registered `scope`.)
 */
export function grantableScopes(user: UserRecord, requested: Iterable<string>): string[] {
  const held = new Set(user.body.scopes);
  return [...new Set(requested)].filter((s) => STANDARD_SCOPES.includes(s) || held.has(s));
}

export async function isAssigned(
  ctx: ServerContext, tenant: string, clientId: string, userId: string, apps?: { byClientId(id: string): Promise<ApplicationRecord | undefined> },
): Promise<boolean> {
  // An app at the edge (the admin console) admits by its own rule, and says why to others.
  if (ctx.edge.some((e) => e.clientId === clientId)) return true;
  const app = await (apps ? apps.byClientId(clientId) : ctx.storage.applications.getByClientId(tenant, clientId));
  if (app === undefined) return false;
  // Assigned directly, or a member of a group assigned to the application: access follows
  // membership, so a member who leaves the group is refused at the next request.
  return (await ctx.storage.users.getAssignment(tenant, app.name, userId)) !== undefined || ctx.storage.groups.grantsAccess(tenant, app.name, userId);
}

export function accountFor(user: UserRecord): Account {
  return {
    accountId: user.id,
    // email_verified is true because addresses are provisioned by the tenant's administrators, not
    // self-asserted; oauth2-proxy refuses unverified emails by default.
    claims: async () => ({
      sub: user.id,
      email: user.body.email,
      email_verified: true,
      ...(user.body.displayName === undefined ? {} : { name: user.body.displayName }),
    }),
  };
}

/**
 * oidc-provider's findAccount. With a token (refresh, userinfo, introspection) the user must still
 * exist, be enabled and be assigned to the token's client: removing an assignment therefore ends
 * that user's refresh tokens for that application at once, even before the grant purge.
 */
export function findAccount(ctx: ServerContext, tenant: string, apps?: Parameters<typeof isAssigned>[4]) {
  return async (_oidc: KoaContextWithOIDC, sub: string, token?: { clientId?: string; kind?: string }): Promise<Account | undefined> => {
    const user = await ctx.storage.users.get(tenant, sub);
    if (user === undefined || user.body.disabled) return undefined;
    if (token?.clientId !== undefined && token.kind !== 'ClientCredentials') {
      if (!(await isAssigned(ctx, tenant, token.clientId, sub, apps))) return undefined;
    }
    return accountFor(user);
  };
}
