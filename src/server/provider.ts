/**
 * One tenant's oidc-provider instance. Everything protocol-shaped is oidc-provider's; this file
 * only feeds it the tenant's keys, clients, users and policies.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Provider, { errors as oidcErrors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { OIDC_ROUTES, PROXY_ID_TOKEN_LIFETIME, endpointUrl, issuerUrl, pkceRefusal, type PkcePolicy } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { SCOPE_CLAIMS, STANDARD_SCOPES, findAccount, grantableScopes, isAssigned } from './accounts.ts';
import { KIND_CLIENT_METADATA, PKCE_CLIENT_METADATA, TenantApps, adapterClass } from './adapter.ts';
import { LIFETIMES } from './config.ts';
import { activeKey, privateJwks, publicJwks } from './keys.ts';
import { PAGE_HEADERS, SECURITY_HEADERS, renderPage } from './login/pages.ts';
import type { TenantRecord } from './storage/types.ts';
import { DatabaseFault } from './errors.ts';
import { requestFault } from './ops/request-context.ts';
import { jwtUserinfo } from './userinfo-jwt.ts';

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
      accessTokenTTL: ctx.tokens.accessTokenLifetime,
      jwt: { sign: { alg, kid: signing.kid } },
    };
  };

  const issuer = issuerUrl(ctx.address(), tenant);
  const userinfoUrl = endpointUrl(ctx.address(), tenant, 'userinfo');
  const accounts = findAccount(ctx, tenant, apps);
  const userinfo = jwtUserinfo({ issuer, userinfoUrl, publicJwks: publicJwks(keys, master), apps, findAccount: accounts });

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
    // Listed in discovery: `offline_access` is accepted as the standard name of `offline`.
    scopes: [...scopes, 'offline_access'],
    // Discovery lists what clients can use: the code flow only (no implicit, id_token or hybrid
    // response types, RFC 9700 §2.1.2), client secrets or no authentication (public clients).
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    claims: { ...SCOPE_CLAIMS },
    // Profile and email claims in the ID token too (oauth2-proxy reads email from it).
    conformIdTokenClaims: false,
    clientDefaults: {
      id_token_signed_response_alg: alg,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    findAccount: accounts as Configuration['findAccount'],
    interactions: {
      url: async (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // A client may introspect only its own tokens: one client of a tenant must not learn who
      // holds another's tokens. APIs are not clients here (they verify JWTs offline, against the
      // tenant's JWKS), so no other caller is entitled.
      introspection: { enabled: true, allowedPolicy: async (_oidc, client, token) => token.clientId === client.clientId },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        // oidc-provider's own pages load a web font from Google and carry no anti-framing headers.
        logoutSource: async (koa, form) => {
          koa.set(PAGE_HEADERS);
          koa.body = renderPage({
            title: 'Sign out?',
            tenantName: record.body.displayName,
            body: `<p>Do you want to sign out of ${escapeHtml(record.body.displayName)}? You will have to sign in again to use its applications.</p>
${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm" class="secondary">No, stay signed in</button>`,
          });
        },
        postLogoutSuccessSource: async (koa) => {
          koa.set(PAGE_HEADERS);
          koa.body = renderPage({ title: 'Signed out', tenantName: record.body.displayName, body: '<p>You are signed out. You can close this page.</p>' });
        },
      },
      // OpenID Connect Back-Channel Logout 1.0: a sign-out here owes each of the session's clients
      // that registered a backchannel_logout_uri a logout token naming the session (`sid`, in
      // their ID tokens too). Queued, not sent here: Client.backchannelLogout below.
      backchannelLogout: { enabled: true },
      // Advertised by default but used by no client idforge registers.
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
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
    // An application's `pkce: optional` (src/contract/pkce.ts), in its client metadata (adapter.ts).
    extraClientMetadata: { properties: [PKCE_CLIENT_METADATA, KIND_CLIENT_METADATA] },
    pkce: {
      // Every client, confidential ones too (RFC 9700 §2.1.1): S256, the only method oidc-provider 9
      // accepts. A confidential client with `pkce: optional` may send an OpenID Connect request with
      // a nonce instead. Asked only of requests without code_challenge; a refusal names what is missing.
      required: (koa, client) => {
        const params = koa.oidc.params ?? {};
        const refusal = pkceRefusal(client.metadata()[PKCE_CLIENT_METADATA] as PkcePolicy | undefined, {
          codeChallenge: false,
          nonce: typeof params.nonce === 'string' && params.nonce !== '',
          openid: String(params.scope ?? '').split(' ').includes('openid'),
        });
        if (refusal !== undefined) throw new oidcErrors.InvalidRequest(refusal);
        return false;
      },
    },
    // Refresh tokens with the contract's `offline` scope (offline_access is read as offline, below).
    issueRefreshToken: async (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline'),
    // Every refresh rotates the token: a stolen refresh token is detected on its first reuse.
    rotateRefreshToken: true,
    expiresWithSession: async (_ctx, code) => !code.scopes.has('offline'),
    ttl: {
      AccessToken: ctx.tokens.accessTokenLifetime,
      ClientCredentials: LIFETIMES.ClientCredentials,
      // A reverse proxy's session lives while its ID token verifies: short, so a refused refresh ends it (contract/tokens.ts).
      IdToken: (_ctx, _token, client) => (client?.metadata()[KIND_CLIENT_METADATA] === 'proxy' ? PROXY_ID_TOKEN_LIFETIME : LIFETIMES.IdToken),
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
          // A user's token with openid is good at the userinfo endpoint too (userinfo-jwt.ts).
          const user = 'accountId' in token && token.accountId !== undefined;
          if (user && token.scopes.has('openid')) jwt.payload.aud = [...[jwt.payload.aud ?? []].flat(), userinfoUrl];
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
      oidc.set(PAGE_HEADERS);
      oidc.type = 'html';
      oidc.body = renderPage({
        title: 'Sign-in error',
        tenantName: record.body.displayName,
        body: `<p>The sign-in request could not be completed.</p><p class="detail">${escapeHtml(String(out.error ?? 'error'))}${
          out.error_description ? `: ${escapeHtml(String(out.error_description))}` : ''}</p>`,
      });
    },
  };

  const provider = new Provider(issuer, configuration);
  // Behind a TLS-terminating proxy the request is http; trust X-Forwarded-Proto for public URLs.
  provider.proxy = ctx.address().scheme === 'https';

  // Client secrets are stored hashed; the client's `client_secret` field holds the hash, so
  // compare the presented secret through the hash instead of oidc-provider's plain comparison.
  (provider.Client.prototype as unknown as { compareClientSecret(this: { clientSecret?: string }, actual: string): boolean }).compareClientSecret =
    function compareClientSecret(this: { clientSecret?: string }, actual: string): boolean {
      return typeof this.clientSecret === 'string' && typeof actual === 'string' && master.verifyClientSecret(this.clientSecret, actual);
    };

  // oidc-provider would POST the logout token of a sign-out itself, once, while the browser waits; it
  // goes into the back-channel outbox instead (backchannel/dispatcher.ts): the webhooks' SSRF rules,
  // retries across restarts, one signer and one format with the logout tokens of revocations.
  (provider.Client.prototype as unknown as { backchannelLogout(sub: string, sid: string): Promise<void> }).backchannelLogout =
    async function backchannelLogout(this: { clientId: string; backchannelLogoutUri?: string }, sub: string, sid: string): Promise<void> {
      if (this.backchannelLogoutUri === undefined) return;
      await storage.backchannel.add([{ tenant, jti: randomUUID(), clientId: this.clientId, uri: this.backchannelLogoutUri, sub, sid }], Date.now());
    };

  provider.use(async (koa, next) => {
    // Before the route: every page oidc-provider renders (errors, logout, the form_post page) is
    // refused in frames, and form_post adds its inline script's hash to this script-src.
    koa.set(SECURITY_HEADERS);
    try {
      if (koa.path === ROUTES.authorization) await offlineAccessIsOffline(koa);
      if (koa.path === ROUTES.token) await offlineAccessAtRefresh(koa);
      if (koa.path === ROUTES.userinfo && (await userinfo(koa))) return;
      await next();
    } catch (err) {
      if (!(err instanceof DatabaseFault)) throw err;
      answerFault(koa, err, record.body.displayName);
      return;
    }
    // oidc-provider answers what its routes throw itself, as a 500 server_error: a database fault
    // the request met (noted by storage, ops/request-context.ts) is answered as what it is instead.
    const fault = requestFault();
    if (fault instanceof DatabaseFault && koa.status >= 500) answerFault(koa, fault, record.body.displayName);
  });

  provider.on('server_error', (_oidc: unknown, err: Error) => {
    if (!(err instanceof DatabaseFault)) ctx.log(`tenant ${tenant}: server_error: ${err.message}`);
  });
  return { provider, tenant: record, callback: provider.callback() };
}

/**
 * A database fault at one of oidc-provider's endpoints: 503 (or 507 for a full disk) with
 * Retry-After, as JSON `{error, error_description}` for clients (`temporarily_unavailable`, RFC 6749
 * §4.1.2.1) or as a page in words for a person's browser; never the database's own text.
 */
function answerFault(koa: Parameters<Parameters<Provider['use']>[0]>[0], fault: DatabaseFault, tenantName: string): void {
  const html = /html/.test(String(koa.response.type ?? '')) || koa.accepts('json', 'html') === 'html';
  koa.status = fault.status;
  koa.set({ ...fault.headers, 'cache-control': 'no-store' });
  koa.remove('location');
  if (html) {
    koa.set(PAGE_HEADERS);
    koa.type = 'html';
    koa.body = renderPage({
      title: 'Sign-in unavailable',
      tenantName,
      body: `<p class="error" role="alert">${fault.kind === 'disk_full'
        ? 'Sign-in cannot be completed right now: the service has no room left to store it. Try again later.'
        : 'Sign-in is unavailable for a moment: the service cannot reach its database. Try again in a few seconds.'}</p>`,
    });
  } else {
    koa.body = { error: fault.error, error_description: fault.message };
  }
}

/** What an authorization request needs of koa's context to be read and rewritten. */
interface AuthorizationRequest {
  method: string;
  querystring: string;
  readonly url: string;
  readonly query: Record<string, unknown>;
  readonly req: IncomingMessage;
  is(type: string): string | false | null;
}

/**
 * OpenID Connect's `offline_access` is the standard name of the contract's `offline` (seed §2,
 * §5.4): both give refresh tokens. oidc-provider follows OIDC Core §11 and silently drops
 * offline_access unless the request also says prompt=consent, so clients that send the standard
 * name got no refresh token and no error; the request is read as if it said `offline`.
 *
 * A POST authorization request (OIDC Core §3.1.2.1 allows GET and POST with the same parameters)
 * is read here and passed on as the equivalent GET, as its body can be read only once.
 */
async function offlineAccessIsOffline(koa: AuthorizationRequest): Promise<void> {
  // oidc-provider finds its mount path (/oauth2) as the part of originalUrl before koa's url.
  const req = koa.req as IncomingMessage & { originalUrl?: string };
  const mount = req.originalUrl === undefined ? undefined : req.originalUrl.slice(0, Math.max(0, req.originalUrl.indexOf(koa.url)));
  let params: URLSearchParams;
  if (koa.method === 'GET') {
    if (typeof koa.query.scope !== 'string' || !koa.query.scope.split(' ').includes('offline_access')) return;
    params = new URLSearchParams(koa.querystring);
  } else if (koa.method === 'POST' && koa.is('application/x-www-form-urlencoded')) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of koa.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      // oidc-provider's own limit for request bodies.
      if (size > 56 * 1024) throw new oidcErrors.InvalidRequest('request entity too large');
      chunks.push(chunk);
    }
    params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    delete koa.req.headers['content-type'];
    delete koa.req.headers['content-length'];
    koa.method = 'GET';
  } else {
    return;
  }
  const scope = params.get('scope');
  if (scope !== null) params.set('scope', [...new Set(scope.split(' ').map((s) => (s === 'offline_access' ? 'offline' : s)))].join(' '));
  koa.querystring = params.toString();
  if (mount !== undefined) req.originalUrl = `${mount}${koa.url}`;
}

/** Reads a request body up to oidc-provider's own limit for request bodies. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 56 * 1024) throw new oidcErrors.InvalidRequest('request entity too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The same name at the token endpoint: a refresh request may repeat the scope it was granted
 * (RFC 6749 §6), and libraries that asked for offline_access send it (Authlib's clients send their
 * configured scope with every refresh). The grant holds `offline`, so oidc-provider would refuse
 * offline_access as a scope the refresh token lacks; the request is read as if it said `offline`.
 * oidc-provider reads the body itself, so the rewritten body is handed to it as the request's own
 * stream (only `readable` and `iterator`, what its body reader uses, are replaced).
 */
async function offlineAccessAtRefresh(koa: AuthorizationRequest): Promise<void> {
  if (koa.method !== 'POST' || !koa.is('application/x-www-form-urlencoded')) return;
  const req = koa.req;
  const body = await readBody(req);
  const params = new URLSearchParams(body.toString('utf8'));
  const scope = params.get('scope');
  let text = body;
  if (params.get('grant_type') === 'refresh_token' && scope !== null && scope.split(' ').includes('offline_access')) {
    params.set('scope', [...new Set(scope.split(' ').map((s) => (s === 'offline_access' ? 'offline' : s)))].join(' '));
    text = Buffer.from(params.toString());
  }
  req.headers['content-length'] = String(text.length);
  Object.defineProperty(req, 'readable', { value: true, configurable: true });
  Object.defineProperty(req, 'iterator', { value: async function* replay() { yield text; }, configurable: true });
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
