/** Reverse proxy: oauth2-proxy's environment and a compose service with the official image. */
import type { Model, ProxyAppSpec, TenantSpec } from '../schema/model.ts';
import { isLocalHost, issuerUrl } from '../contract/index.ts';
import { GENERATED_HEADER, type Artifact } from './_artifact.ts';
import { audienceOf, clientIdOf, originOf, scopesOf } from './_app-facts.ts';
import { envFile, stableYaml } from './_serialize.ts';
import { appKey, secretFor, type Resolved } from './secrets.ts';

/** The oauth2-proxy release that the tests run; the compose file names the same release's image. */
export const OAUTH2_PROXY_VERSION = 'v7.8.1';
export const OAUTH2_PROXY_IMAGE = `quay.io/oauth2-proxy/oauth2-proxy:${OAUTH2_PROXY_VERSION}`;

function listenPort(origin: string): string {
  const u = new URL(origin);
  return u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : '80';
}

/**
 * Where oauth2-proxy listens: loopback for a local origin (a developer's machine: nothing else on the
 * network reaches the proxy, let alone around it), every interface otherwise (in a container, whose
 * port mapping decides what reaches it). The env file says so above the value.
 */
function bindHost(origin: string): string {
  return isLocalHost(new URL(origin).hostname) ? '127.0.0.1' : '0.0.0.0';
}

const BIND_NOTE = `# OAUTH2_PROXY_HTTP_ADDRESS is where the proxy listens: 127.0.0.1 for a local origin; 0.0.0.0 otherwise,
# for a container (its port mapping decides what reaches it). On a host without one, set it to the one
# address your load balancer reaches, so nobody can talk to the proxy around it.
`;

export function proxyArtifacts(model: Model, tenant: TenantSpec, app: ProxyAppSpec, resolved: Resolved): Artifact[] {
  const key = appKey(tenant.name, app.name);
  const origin = originOf(app.origin);
  const port = listenPort(origin);
  const env = {
    OAUTH2_PROXY_PROVIDER: 'oidc',
    OAUTH2_PROXY_PROVIDER_DISPLAY_NAME: tenant.displayName,
    // Exactly as the server publishes it, trailing slash included: oauth2-proxy compares issuers.
    OAUTH2_PROXY_OIDC_ISSUER_URL: issuerUrl(model.server, tenant.name),
    OAUTH2_PROXY_CLIENT_ID: clientIdOf(app),
    OAUTH2_PROXY_CLIENT_SECRET: secretFor(resolved, key, 'clientSecret'),
    OAUTH2_PROXY_COOKIE_SECRET: secretFor(resolved, key, 'cookieSecret'),
    OAUTH2_PROXY_COOKIE_SECURE: 'true',
    OAUTH2_PROXY_COOKIE_NAME: `_oauth2_proxy_${tenant.name}_${app.name}`.replace(/[^A-Za-z0-9_]/g, '_'),
    OAUTH2_PROXY_EMAIL_DOMAINS: app.emailDomains.join(','),
    OAUTH2_PROXY_REDIRECT_URL: `${origin}/oauth2/callback`,
    OAUTH2_PROXY_UPSTREAMS: app.upstream,
    OAUTH2_PROXY_CODE_CHALLENGE_METHOD: 'S256',
    OAUTH2_PROXY_HTTP_ADDRESS: `${bindHost(origin)}:${port}`,
    // With `offline` (KINDS.proxy.refreshTokens): refresh tokens for the cookie refresh below.
    OAUTH2_PROXY_SCOPE: scopesOf(app).join(' '),
    // Every this often the session's tokens are refreshed at the server; a refused refresh (the
    // assignment, the user or the application is gone) ends the session when its access token
    // expires, instead of the cookie's 7 days.
    OAUTH2_PROXY_COOKIE_REFRESH: `${app.cookieRefresh}s`,
    // X-Forwarded-User (the user id, from `sub`) and X-Forwarded-Email to the upstream.
    OAUTH2_PROXY_PASS_USER_HEADERS: 'true',
    // With an audience the access token is a JWT for that API, and the upstream gets it as
    // X-Forwarded-Access-Token to call the API for the user (oauth2-proxy's oidc provider sends no
    // `resource`: the server gives the client's registered audience by default).
    ...(audienceOf(tenant, app).length === 0 ? {} : { OAUTH2_PROXY_PASS_ACCESS_TOKEN: 'true' }),
    // An anonymous visitor goes straight to the login page, as the contract's session behaviour says.
    OAUTH2_PROXY_SKIP_PROVIDER_BUTTON: 'true',
    OAUTH2_PROXY_REVERSE_PROXY: 'false',
  };
  // Inside a container, loopback and *.localhost are the container itself: when the issuer or the
  // upstream is local, the proxy must share the host's network to reach them (Linux hosts).
  const local = isLocalHost(new URL(app.upstream).hostname) || isLocalHost(model.server.baseDomain);
  const compose = {
    services: {
      [`${app.name}-oauth2-proxy`]: {
        image: OAUTH2_PROXY_IMAGE,
        env_file: ['oauth2-proxy.env'],
        ...(local ? { network_mode: 'host' } : { ports: [`${port}:${port}`] }),
        restart: 'unless-stopped',
      },
    },
  };
  return [
    { path: `${key}/oauth2-proxy.env`, content: envFile(env, `${GENERATED_HEADER}${BIND_NOTE}`), secret: true },
    { path: `${key}/docker-compose.yml`, content: stableYaml(compose, GENERATED_HEADER), secret: false },
  ];
}
