/**
 * One tenant's oidc-provider instance. Everything protocol-shaped is oidc-provider's; this file
 * only feeds it the tenant's keys, clients, users and policies.
 */
import Provider, { errors as oidcErrors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { OIDC_ROUTES, issuerUrl } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { SCOPE_CLAIMS, STANDARD_SCOPES, findAccount, grantableScopes, isAssigned } from './accounts.ts';
import { TenantApps, adapterClass } from './adapter.ts';
import { LIFETIMES } from './config.ts';
import { activeKey, privateJwks } from './keys.ts';
import { renderPage } from './login/pages.ts';
import type { TenantRecord } from './storage/types.ts';

/** Every route oidc-provider serves, below the issuer path; fixed in src/contract/urls.ts. */
const ROUTES = {
  authorization: `/${OIDC_ROUTES.authorization}`,
  token: `/${OIDC_ROUTES.token}`,
  userinfo: `/${OIDC_ROUTES.userinfo}`,
  end_session: `/${OIDC_ROUTES.endSession}`,
  revocation: `/${OIDC_ROUTES.revocation}`,
  introspection: `/${OIDC_ROUTES.introspection}`,
  jwks: `/${OIDC_ROUTES.jwks}`,
};

export const INTERACTION_PATH = '/interaction';

/** A tenant's live runtime: its provider, its record, and the node handler for /oauth2/. */
export interface TenantRuntime {
  readonly provider: Provider;
  readonly tenant: TenantRecord;
  readonly callback: ReturnType<Provider['callback']>;
}

export async function buildProvider(ctx: ServerContext, tenant: string): Promise<TenantRuntime | undefined> {
  const { storage, master } = ctx;
  const record = await storage.tenants.get(tenant);
  if (record === undefined) return undefined;
  const keys = await storage.tenants.listKeys(tenant);
  const signing = activeKey(keys);
  if (signing === undefined) throw new Error(`tenant ${tenant} has no active signing key`);
  const alg = signing.alg;

  // The provider's scope vocabulary: standard, the tenant's custom scopes, and every api's scopes.
  const apiScopes: string[] = [];
  for (let cursor: string | undefined, more = true; more; ) {
    const page = await storage.applications.list(tenant, { cursor, limit: 500 });
    for (const a of page.items) if (a.body.kind === 'api') apiScopes.push(...a.body.scopes);
    cursor = page.nextCursor ?? undefined;
    more = page.nextCursor !== null;
  }
  const scopes = [...new Set([...STANDARD_SCOPES, ...record.body.scopes.map((s) => s.name), ...apiScopes])];

  const apps = new TenantApps(storage, tenant);
  const resourceFor = async (oidc: KoaContextWithOIDC, identifier: string) => {
    const api = await apps.byIdentifier(identifier);
    if (api === undefined || api.body.kind !== 'api') throw new oidcErrors.InvalidTarget(`unknown resource ${identifier}`);
    const client = oidc.oidc.client;
    const clientApp = client === undefined ? undefined : await apps.byClientId(client.clientId);
    const audience = clientApp !== undefined && clientApp.body.kind !== 'api' ? clientApp.body.audience : [];
    if (!audience.includes(identifier)) throw new oidcErrors.InvalidTarget(`client may not request resource ${identifier}`);
    return {
      // Standard scopes are listed too, so `scp` shows everything granted (e.g. openid, offline).
      scope: [...new Set([...STANDARD_SCOPES, ...api.body.scopes])].join(' '),
      audience: identifier,
      accessTokenFormat: 'jwt' as const,
      accessTokenTTL: LIFETIMES.AccessToken,
      jwt: { sign: { alg, kid: signing.kid } },
    };
  };

  const clientAudience = async (clientId: string): Promise<readonly string[]> => {
    const app = await apps.byClientId(clientId);
    return app === undefined || app.body.kind === 'api' ? [] : app.body.audience;
  };

  const configuration: Configuration = {
    adapter: adapterClass(ctx, tenant, apps),
    jwks: { keys: privateJwks(keys, master) },
    cookies: {
      // Per tenant, derived from the master key: survives restarts, differs between tenants.
      keys: [master.derive(`cookies:${tenant}`).toString('base64url')],
    },
    routes: ROUTES,
    scopes,
    claims: { ...SCOPE_CLAIMS },
    // Profile and email claims in the ID token too (oauth2-proxy reads email from it).
    conformIdTokenClaims: false,
    clientDefaults: {
      id_token_signed_response_alg: alg,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    findAccount: findAccount(ctx, tenant, apps) as Configuration['findAccount'],
    interactions: {
      url: async (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A client's audience list is its default resource, so clients that never send
        // `resource` still get a JWT for their API. Token requests need exactly one: the first.
        defaultResource: async (oidc, client, oneOf) => {
          if (oneOf !== undefined && oneOf.length > 0) return oneOf[0]!;
          const audience = await clientAudience(client.clientId);
          if (audience.length === 0) return undefined as unknown as string;
          const single = oidc.oidc.route === 'token' || audience.length === 1;
          return single ? audience[0]! : [...audience];
        },
        // Token requests without `resource` get the granted resource even with openid, instead of
        // an opaque userinfo-only token. Clients without an audience get userinfo tokens.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (oidc, identifier) => resourceFor(oidc, identifier),
      },
    },
    pkce: {
      // Public clients must use PKCE (S256, the only method oidc-provider 9 accepts).
      required: (_ctx, client) => client.clientAuthMethod === 'none',
    },
    // Refresh tokens only with the contract's `offline` scope (not offline_access).
    issueRefreshToken: async (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline'),
    // Every refresh rotates the token: a stolen refresh token is detected on its first reuse.
    rotateRefreshToken: true,
    expiresWithSession: async (_ctx, code) => !code.scopes.has('offline'),
    ttl: {
      AccessToken: LIFETIMES.AccessToken,
      ClientCredentials: LIFETIMES.ClientCredentials,
      IdToken: LIFETIMES.IdToken,
      AuthorizationCode: LIFETIMES.AuthorizationCode,
      Interaction: LIFETIMES.Interaction,
      Session: LIFETIMES.Session,
      Grant: LIFETIMES.Grant,
      RefreshToken: (oidc) => {
        // Rotated tokens inherit the remainder, so rotation never extends a session.
        const rotated = oidc?.oidc?.entities?.RotatedRefreshToken as { remainingTTL?: number } | undefined;
        return rotated?.remainingTTL ?? LIFETIMES.RefreshToken;
      },
    },
    formats: {
      customizers: {
        // The contract's `scp`: the granted scopes as an array (`scope` stays, as RFC 9068 has it).
        jwt: (_ctx, token, jwt) => {
          jwt.payload.scp = token.scope ? token.scope.split(' ') : [];
        },
      },
    },
    // Skip the consent screen (first-party apps) but only for assigned users, granting each user
    // only the custom scopes they hold. Unassigned users fall through to the consent prompt,
    // where the interaction page explains the denial.
    loadExistingGrant: async (oidc) => {
      const accountId = oidc.oidc.session?.accountId;
      const client = oidc.oidc.client;
      if (accountId === undefined || client === undefined) return undefined;
      if (!(await isAssigned(ctx, tenant, client.clientId, accountId, apps))) return undefined;
      const user = await storage.users.get(tenant, accountId);
      if (user === undefined || user.body.disabled) return undefined;
      const { Grant } = oidc.oidc.provider;
      const existingId = oidc.oidc.session?.grantIdFor(client.clientId);
      const grant = (existingId ? await Grant.find(existingId) : undefined) ?? new Grant({ accountId, clientId: client.clientId });
      const requested = String(oidc.oidc.params?.scope ?? '').split(' ').filter(Boolean);
      const allowed = grantableScopes(user, requested);
      const refused = requested.filter((s) => !allowed.includes(s));
      // A rejection outweighs a grant in oidc-provider, so scopes refused earlier but held now (an
      // admin gave them since) must leave the rejected set, or this session never receives them.
      const keep = (rejected: string | undefined) => (rejected ?? '').split(' ').filter((s) => s !== '' && !allowed.includes(s)).join(' ');
      if (grant.rejected?.openid?.scope !== undefined) grant.rejected.openid.scope = keep(grant.rejected.openid.scope);
      for (const indicator of Object.keys(grant.rejected?.resources ?? {})) grant.rejected!.resources![indicator] = keep(grant.rejected!.resources![indicator]);
      // Refused scopes are recorded as rejected, so oidc-provider does not ask for consent again.
      grant.addOIDCScope(allowed.filter((s) => scopes.includes(s)).join(' '));
      grant.rejectOIDCScope(refused.filter((s) => scopes.includes(s)).join(' '));
      for (const [indicator, rs] of Object.entries(oidc.oidc.resourceServers ?? {})) {
        grant.addResourceScope(indicator, allowed.filter((s) => rs.scopes.has(s)).join(' '));
        grant.rejectResourceScope(indicator, refused.filter((s) => rs.scopes.has(s)).join(' '));
      }
      const claims = oidc.oidc.claims as { id_token?: object; userinfo?: object } | undefined;
      if (claims?.id_token) grant.addOIDCClaims(Object.keys(claims.id_token));
      if (claims?.userinfo) grant.addOIDCClaims(Object.keys(claims.userinfo));
      await grant.save();
      return grant;
    },
    clientBasedCORS: (_ctx, origin, client) =>
      // Browsers may call the token endpoint only from a registered redirect URI's origin (SPAs).
      (client.redirectUris ?? []).some((u) => URL.parse(u)?.origin === origin),
    renderError: async (oidc, out, _error) => {
      oidc.type = 'html';
      oidc.body = renderPage({
        title: 'Sign-in error',
        tenantName: record.body.displayName,
        body: `<p>The sign-in request could not be completed.</p><p class="detail">${escapeHtml(String(out.error ?? 'error'))}${
          out.error_description ? `: ${escapeHtml(String(out.error_description))}` : ''}</p>`,
      });
    },
  };

  const provider = new Provider(issuerUrl(ctx.address(), tenant), configuration);
  // Behind a TLS-terminating proxy the request is http; trust X-Forwarded-Proto for public URLs.
  provider.proxy = ctx.address().scheme === 'https';

  // Client secrets are stored hashed; the client's `client_secret` field holds the hash, so
  // compare the presented secret through the hash instead of oidc-provider's plain comparison.
  (provider.Client.prototype as unknown as { compareClientSecret(this: { clientSecret?: string }, actual: string): boolean }).compareClientSecret =
    function compareClientSecret(this: { clientSecret?: string }, actual: string): boolean {
      return typeof this.clientSecret === 'string' && typeof actual === 'string' && master.verifyClientSecret(this.clientSecret, actual);
    };

  provider.on('server_error', (_oidc: unknown, err: Error) => ctx.log(`tenant ${tenant}: server_error: ${err.message}`));
  return { provider, tenant: record, callback: provider.callback() };
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
