/**
 * The account page as an OpenID Connect client of each tenant, as the console is (src/console/client.ts):
 * its registration is answered by the server's adapter from here, never stored, so it shows in no
 * listing, export or plan, and its id holds a ':' that no application's client id may have.
 * Confidential (client_secret_basic, a per-tenant secret derived from the master key) and PKCE S256.
 * Every person of the tenant may sign in to it: it is their own account, so the assignment rule does
 * not apply to it (accounts.ts lets edge apps admit by their own rule).
 */
import { RESERVED_TENANTS, type EdgeClient, type EdgeHost, type ServerAddress } from '../contract/index.ts';
import { tenantOrigin } from '../console/client.ts';

export const ACCOUNT_CLIENT_ID = 'idforge:account';
/** Where the account page lives on every tenant host. */
export const ACCOUNT_PATH = '/account';
export const ACCOUNT_SCOPES = ['openid', 'email', 'profile'] as const;

export const accountRedirectUri = (addr: ServerAddress, tenant: string) => `${tenantOrigin(addr, tenant)}${ACCOUNT_PATH}/callback`;
export const accountSignedOutUri = (addr: ServerAddress, tenant: string) => `${tenantOrigin(addr, tenant)}${ACCOUNT_PATH}/signed-out`;

/** Derived from the master key: nothing is stored and tenants differ. */
export const accountClientSecret = (host: Pick<EdgeHost, 'derive'>, tenant: string) => host.derive(`account-client:${tenant}`).toString('base64url');

export function accountClientMetadata(host: Pick<EdgeHost, 'derive'>, addr: ServerAddress, tenant: string): EdgeClient | undefined {
  if (RESERVED_TENANTS.includes(tenant)) return undefined;
  return {
    client_id: ACCOUNT_CLIENT_ID,
    client_secret: accountClientSecret(host, tenant),
    client_name: 'Your account',
    redirect_uris: [accountRedirectUri(addr, tenant)],
    post_logout_redirect_uris: [accountSignedOutUri(addr, tenant)],
    scope: ACCOUNT_SCOPES.join(' '),
  };
}
