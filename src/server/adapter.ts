/**
 * oidc-provider's storage adapter, one class per tenant, backed by the Storage interface. The
 * `Client` model is answered from the tenant's applications, so admin API changes take effect on
 * the next request without restarting anything.
 */
import type { Adapter, AdapterPayload, ClientMetadata } from 'oidc-provider';
import { type EdgeClient, KINDS } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import type { ApplicationRecord } from './storage/types.ts';

/**
 * `https://app.example` and `https://app.example/` are the same URL (RFC 3986 §6.2.3), but
 * oidc-provider compares redirect URIs as strings; SPAs register their origin (the contract's
 * shape) and libraries send either form, so both are registered.
 */
export function redirectUriVariants(uris: readonly string[]): string[] {
  const out = new Set<string>();
  for (const u of uris) {
    out.add(u);
    const parsed = URL.parse(u);
    if (parsed !== null && (parsed.pathname === '/' || parsed.pathname === '') && parsed.search === '' && parsed.hash === '') {
      out.add(parsed.origin);
      out.add(`${parsed.origin}/`);
    }
  }
  return [...out];
}

/** The client metadata (an extension, RFC 7591 §2) that carries the application's `pkce: optional`. */
export const PKCE_CLIENT_METADATA = 'idforge_pkce';
/** The client metadata that carries the application's kind (provider.ts gives a proxy short ID tokens). */
export const KIND_CLIENT_METADATA = 'idforge_kind';

/**
 * Application → oidc-provider client metadata: the kind's registration facts from the contract's
 * kinds table, plus the application's own fields. The secret field holds the hash (see provider.ts).
 */
/**
 * An edge app's client (the admin console's) as oidc-provider takes it: confidential
 * (client_secret_basic, the secret kept as a hash like any client's), code flow, PKCE as every
 * client. Not one of the tenant's applications: never stored, listed, exported or planned.
 */
export function edgeClientMetadata(ctx: ServerContext, c: EdgeClient | undefined): ClientMetadata | undefined {
  if (c === undefined) return undefined;
  return {
    client_id: c.client_id,
    client_secret: ctx.master.hashClientSecret(c.client_secret),
    client_name: c.client_name,
    redirect_uris: [...c.redirect_uris],
    post_logout_redirect_uris: [...c.post_logout_redirect_uris],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    application_type: 'web',
    scope: c.scope,
  };
}

export function clientMetadata(app: ApplicationRecord): ClientMetadata | undefined {
  const b = app.body;
  if (b.kind === 'service') {
    // The server's own bootstrap client: client_credentials only.
    if (app.secretHash === null) return undefined;
    return {
      client_id: b.clientId, client_secret: app.secretHash, redirect_uris: [], grant_types: ['client_credentials'], response_types: [],
      token_endpoint_auth_method: 'client_secret_basic', scope: b.scopes.join(' '),
    };
  }
  const facts = KINDS[b.kind];
  if (facts.registration === undefined || b.kind === 'api') return undefined;
  if (facts.confidential && app.secretHash === null) return undefined;
  // An SPA's `offline: true` lets it ask for refresh tokens even if its scope list omits it.
  const offline = 'offline' in b && b.offline ? ['offline'] : [];
  return {
    client_id: b.clientId,
    ...(facts.confidential ? { client_secret: app.secretHash! } : {}),
    ...(b.displayName === undefined ? {} : { client_name: b.displayName }),
    redirect_uris: redirectUriVariants(b.redirectUris),
    post_logout_redirect_uris: b.postLogoutRedirectUris,
    // With the session required, ID tokens carry `sid` and logout tokens name it, so the
    // application ends the one session it names (Back-Channel Logout 1.0 §2.2).
    ...('backchannelLogoutUri' in b && b.backchannelLogoutUri !== undefined ? { backchannel_logout_uri: b.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
    // Read by provider.ts's pkce.required; only a confidential client may be `optional` (contract/pkce.ts).
    ...(facts.confidential && 'pkce' in b && b.pkce === 'optional' ? { [PKCE_CLIENT_METADATA]: 'optional' } : {}),
    [KIND_CLIENT_METADATA]: b.kind,
    ...facts.registration,
    grant_types: [...facts.registration.grant_types],
    response_types: [...facts.registration.response_types] as ClientMetadata['response_types'],
    scope: [...new Set([...b.scopes, ...offline])].join(' '),
  };
}

/**
 * Application lookups memoized for the life of one provider instance. Every application change
 * evicts the tenant's provider (and with it this memo), so it never serves stale clients.
 */
export class TenantApps {
  readonly #byClientId = new Map<string, Promise<ApplicationRecord | undefined>>();
  readonly #byIdentifier = new Map<string, Promise<ApplicationRecord | undefined>>();
  constructor(private readonly storage: ServerContext['storage'], private readonly tenant: string) {}

  byClientId(clientId: string): Promise<ApplicationRecord | undefined> {
    return TenantApps.#memo(this.#byClientId, clientId, () => this.storage.applications.getByClientId(this.tenant, clientId));
  }

  byIdentifier(identifier: string): Promise<ApplicationRecord | undefined> {
    return TenantApps.#memo(this.#byIdentifier, identifier, () => this.storage.applications.getByIdentifier(this.tenant, identifier));
  }

  static #memo<T>(memo: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
    let hit = memo.get(key);
    if (hit === undefined) {
      hit = load();
      // Bounded: unknown keys come from the network; do not let them grow the memo without limit.
      if (memo.size > 10_000) memo.clear();
      memo.set(key, hit);
    }
    return hit;
  }
}

/**
 * Refresh token reuse grace. oidc-provider rotates a refresh token on use and, when a used
 * (`consumed`) token comes back, takes it for theft and revokes the whole grant. Two refreshes in
 * parallel with one token (a duplicated tab, a retried request whose answer was lost) would sign
 * the user out, so for `grace` seconds after its first use a token reads as unused: the second
 * refresh rotates it again and gets its own new token. The first use's time is kept, so reuse
 * never extends the window; after it the theft rule applies. Refused refreshes (a revoked
 * assignment) are refused all the same: revocation deletes the tokens.
 */
function withinReuseGrace(payload: AdapterPayload | undefined, grace: number): boolean {
  const consumed = payload?.consumed;
  return typeof consumed === 'number' && grace > 0 && Date.now() / 1000 - consumed <= grace;
}

export function adapterClass(ctx: ServerContext, tenant: string, apps: TenantApps): new (name: string) => Adapter {
  const { grants } = ctx.storage;
  const grace = ctx.tokens.refreshTokenReuseGrace;
  return class TenantAdapter implements Adapter {
    constructor(readonly name: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await grants.upsert(tenant, this.name, id, payload as Record<string, unknown>, expiresIn > 0 ? expiresIn : undefined);
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.name === 'Client') {
        const edge = ctx.edge.find((e) => e.clientId === id);
        if (edge !== undefined) return edgeClientMetadata(ctx, edge.client(tenant, ctx.edgeHost)) as AdapterPayload | undefined;
        const app = await apps.byClientId(id);
        return app === undefined ? undefined : (clientMetadata(app) as AdapterPayload | undefined);
      }
      const payload = (await grants.find(tenant, this.name, id)) as AdapterPayload | undefined;
      if (this.name === 'RefreshToken' && withinReuseGrace(payload, grace)) {
        const { consumed: _first, ...unused } = payload!;
        return unused;
      }
      return payload;
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return (await grants.findByUserCode(tenant, this.name, userCode)) as AdapterPayload | undefined;
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return (await grants.findByUid(tenant, this.name, uid)) as AdapterPayload | undefined;
    }
    async consume(id: string): Promise<void> {
      // A refresh token reused within the grace keeps its first use's time (see withinReuseGrace).
      if (this.name === 'RefreshToken' && (await grants.find(tenant, this.name, id))?.consumed !== undefined) return;
      await grants.consume(tenant, this.name, id);
    }
    async destroy(id: string): Promise<void> {
      await grants.destroy(tenant, this.name, id);
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      await grants.revokeByGrantId(tenant, grantId);
    }
  };
}
