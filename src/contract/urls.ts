/**
 * Public addresses of the server, derived from its settings. The issuer ends with `/oauth2/` (the
 * contract's issuer path segment, no version), so `{issuer}.well-known/...` is a plain concatenation.
 */
export interface ServerAddress {
  readonly scheme: 'http' | 'https';
  readonly baseDomain: string;
  /** Omitted means the scheme's default port. */
  readonly port?: number | undefined;
}

function hostPort(addr: ServerAddress, host: string): string {
  const defaultPort = addr.scheme === 'https' ? 443 : 80;
  return addr.port === undefined || addr.port === defaultPort ? host : `${host}:${addr.port}`;
}

/** `{scheme}://<tenant>.<baseDomain>[:port]/oauth2/` */
export function issuerUrl(addr: ServerAddress, tenant: string): string {
  return `${addr.scheme}://${hostPort(addr, `${tenant}.${addr.baseDomain}`)}/oauth2/`;
}

export function discoveryUrl(addr: ServerAddress, tenant: string): string {
  return `${issuerUrl(addr, tenant)}.well-known/openid-configuration`;
}

export function jwksUrl(addr: ServerAddress, tenant: string): string {
  return `${issuerUrl(addr, tenant)}.well-known/jwks.json`;
}

/** `{scheme}://<tenant>.<baseDomain>[:port]/scim/v2`: the tenant's SCIM 2.0 service provider (RFC 7644). */
export function scimBaseUrl(addr: ServerAddress, tenant: string): string {
  return `${addr.scheme}://${hostPort(addr, `${tenant}.${addr.baseDomain}`)}/scim/v2`;
}

/** The base host (no tenant subdomain) serves the admin API. */
export function adminBaseUrl(addr: ServerAddress): string {
  return `${addr.scheme}://${hostPort(addr, addr.baseDomain)}/admin/v1`;
}

/**
 * oidc-provider routes below the issuer, fixed here so that configs that cannot use discovery
 * (grant's authorize_url/access_url/profile_url) agree with the server by construction.
 */
export const OIDC_ROUTES = {
  authorization: 'auth',
  token: 'token',
  userinfo: 'me',
  endSession: 'session/end',
  revocation: 'token/revocation',
  introspection: 'token/introspection',
  jwks: '.well-known/jwks.json',
} as const;

export function endpointUrl(addr: ServerAddress, tenant: string, route: keyof typeof OIDC_ROUTES): string {
  return `${issuerUrl(addr, tenant)}${OIDC_ROUTES[route]}`;
}
