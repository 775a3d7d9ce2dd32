/**
 * An app at the edge as an OpenID Connect relying party of each tenant (the console, the account
 * page): openid-client's view of a tenant, from discovery over HTTP like any client, once per tenant
 * and process (at most 1,000 tenants kept; a failed discovery is tried again next time).
 */
import * as oidc from 'openid-client';
import { localhostFetch } from '../admin-client/index.ts';
import { issuerUrl, type EdgeHost } from '../contract/index.ts';

export function relyingParties(host: Pick<EdgeHost, 'address'>, clientId: string, secretOf: (tenant: string) => string): (tenant: string) => Promise<oidc.Configuration> {
  const configs = new Map<string, Promise<oidc.Configuration>>();
  return (tenant) => {
    let hit = configs.get(tenant);
    if (hit === undefined) {
      const secret = secretOf(tenant);
      hit = oidc.discovery(new URL(issuerUrl(host.address(), tenant)), clientId, { client_secret: secret }, oidc.ClientSecretBasic(secret), {
        execute: host.address().scheme === 'https' ? [] : [oidc.allowInsecureRequests],
        [oidc.customFetch]: localhostFetch as never,
      }).then((c) => {
        c[oidc.customFetch] = localhostFetch as never;
        return c;
      });
      hit.catch(() => configs.delete(tenant));
      if (configs.size > 1000) configs.clear();
      configs.set(tenant, hit);
    }
    return hit;
  };
}
