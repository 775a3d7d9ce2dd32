/**
 * The console as an OpenID Connect client of each tenant: the server is its own client. Its
 * registration is not stored (it is not one of the tenant's applications, so it never shows in
 * listings, exports or plans): oidc-provider's adapter answers it from here. Its client id holds a
 * character no application's client id may have (':' is outside USER_ID), so it cannot collide.
 *
 * Confidential (client_secret_basic, a per-tenant secret derived from the master key that never
 * leaves the process) and PKCE S256 on top, as RFC 9700 §2.1.1 recommends for every client.
 * Everyone may complete a sign-in to it: the console itself admits only holders of the tenant's
 * `admin` scope and tells the others why (index.ts), so the assignment rule does not apply to it.
 */
import { ADMIN_SCOPE, RESERVED_TENANTS, issuerUrl, type EdgeClient, type EdgeHost, type ServerAddress } from '../contract/index.ts';

export const CONSOLE_CLIENT_ID = 'idforge:console';
/** Where the console lives on every tenant host. */
export const CONSOLE_PATH = '/console';
export const CONSOLE_SCOPES = ['openid', 'email', 'profile', ADMIN_SCOPE] as const;

export const isConsoleClient = (clientId: string): boolean => clientId === CONSOLE_CLIENT_ID;

/** `http://acme.localhost:9080`: the tenant host's origin. */
export function tenantOrigin(addr: ServerAddress, tenant: string): string {
  return new URL(issuerUrl(addr, tenant)).origin;
}

export function consoleRedirectUri(addr: ServerAddress, tenant: string): string {
  return `${tenantOrigin(addr, tenant)}${CONSOLE_PATH}/callback`;
}

/** Where the tenant's end-session endpoint returns the browser after a console sign-out. */
export function consoleSignedOutUri(addr: ServerAddress, tenant: string): string {
  return `${tenantOrigin(addr, tenant)}${CONSOLE_PATH}/signed-out`;
}

/** The console's client secret at one tenant: derived from the master key, so nothing is stored and tenants differ. */
export function consoleClientSecret(host: Pick<EdgeHost, 'derive'>, tenant: string): string {
  return host.derive(`console-client:${tenant}`).toString('base64url');
}

/** The console's registration at a tenant (none at the server's own tenant: the admin API refuses to touch it). */
export function consoleClientMetadata(host: Pick<EdgeHost, 'derive'>, addr: ServerAddress, tenant: string): EdgeClient | undefined {
  if (RESERVED_TENANTS.includes(tenant)) return undefined;
  return {
    client_id: CONSOLE_CLIENT_ID,
    client_secret: consoleClientSecret(host, tenant),
    client_name: 'Admin console',
    redirect_uris: [consoleRedirectUri(addr, tenant)],
    post_logout_redirect_uris: [consoleSignedOutUri(addr, tenant)],
    scope: CONSOLE_SCOPES.join(' '),
  };
}
