/**
 * oidc-provider's storage adapter, one class per tenant, backed by the Storage interface. The
 * `Client` model is answered from the tenant's applications, so admin API changes take effect on
 * the next request without restarting anything.
 */
import type { Adapter, AdapterPayload, ClientMetadata } from 'oidc-provider';
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

/** Application → oidc-provider client metadata. The secret field holds the hash (see provider.ts). */
export function clientMetadata(app: ApplicationRecord): ClientMetadata | undefined {
  const b = app.body;
  switch (b.kind) {
    case 'api':
      return undefined;
    case 'web':
    case 'proxy':
      if (app.secretHash === null) return undefined;
      return {
        client_id: b.clientId,
        client_secret: app.secretHash,
        ...(b.displayName === undefined ? {} : { client_name: b.displayName }),
        redirect_uris: redirectUriVariants(b.redirectUris),
        post_logout_redirect_uris: b.postLogoutRedirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        // client_secret_post is accepted too: oidc-provider accepts both secret methods for either.
        token_endpoint_auth_method: 'client_secret_basic',
        scope: b.scopes.join(' '),
        application_type: 'web',
      };
    case 'spa':
      return {
        client_id: b.clientId,
        ...(b.displayName === undefined ? {} : { client_name: b.displayName }),
        redirect_uris: redirectUriVariants(b.redirectUris),
        post_logout_redirect_uris: b.postLogoutRedirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        // `offline: true` lets the SPA ask for refresh tokens even if its scope list omits it.
        scope: [...new Set([...b.scopes, ...(b.offline ? ['offline'] : [])])].join(' '),
        application_type: 'web',
      };
    case 'service':
      if (app.secretHash === null) return undefined;
      return {
        client_id: b.clientId,
        client_secret: app.secretHash,
        redirect_uris: [],
        grant_types: ['client_credentials'],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: b.scopes.join(' '),
      };
  }
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

export function adapterClass(ctx: ServerContext, tenant: string, apps: TenantApps): new (name: string) => Adapter {
  const { grants } = ctx.storage;
  return class TenantAdapter implements Adapter {
    constructor(readonly name: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await grants.upsert(tenant, this.name, id, payload as Record<string, unknown>, expiresIn > 0 ? expiresIn : undefined);
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.name === 'Client') {
        const app = await apps.byClientId(id);
        return app === undefined ? undefined : (clientMetadata(app) as AdapterPayload | undefined);
      }
      return (await grants.find(tenant, this.name, id)) as AdapterPayload | undefined;
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return (await grants.findByUserCode(tenant, this.name, userCode)) as AdapterPayload | undefined;
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return (await grants.findByUid(tenant, this.name, uid)) as AdapterPayload | undefined;
    }
    async consume(id: string): Promise<void> {
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
