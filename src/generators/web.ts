/** Login-helper web app: grant's config (`/connect/<provider>/callback`) and the session secret. */
import type { Model, TenantSpec, WebAppSpec } from '../schema/model.ts';
import { defaultBackchannelLogoutUri, endpointUrl, issuerUrl, jwksUrl } from '../contract/index.ts';
import { GENERATED_HEADER, type Artifact } from './_artifact.ts';
import { audienceOf, clientIdOf, originOf, providerOf, scopesOf } from './_app-facts.ts';
import { envFile, stableJson } from './_serialize.ts';
import type { BackchannelLogoutConfig, GrantProvider } from './artifact-schemas.ts';
import { appKey, secretFor, type Resolved } from './secrets.ts';

export function webArtifacts(model: Model, tenant: TenantSpec, app: WebAppSpec, resolved: Resolved): Artifact[] {
  const key = appKey(tenant.name, app.name);
  // grant substitutes `[subdomain]` with the provider's `subdomain`: the tenant.
  const url = (route: 'authorization' | 'token' | 'userinfo') => endpointUrl(model.server, '[subdomain]', route);
  const [resource] = audienceOf(tenant, app);
  const provider: GrantProvider = {
    oauth: 2,
    authorize_url: url('authorization'),
    access_url: url('token'),
    profile_url: url('userinfo'),
    subdomain: tenant.name,
    key: clientIdOf(app),
    secret: secretFor(resolved, key, 'clientSecret'),
    // With `offline` (KINDS.web.refreshTokens): the template checks the session by refreshing.
    scope: scopesOf(app),
    scope_delimiter: ' ',
    callback: app.callback,
    response: [...app.response],
    // RFC 9700 §2.1.1: PKCE for confidential clients too; nonce binds the ID token to the login.
    pkce: true,
    nonce: true,
    // RFC 8707: the access token is a JWT for this API (its `aud`), which the app may call with it.
    ...(resource === undefined ? {} : { custom_params: { resource } }),
  };
  const config = {
    defaults: { origin: originOf(app.origin), prefix: '/connect', transport: 'session', state: true },
    [providerOf(tenant, app)]: provider,
  };
  // What the template needs to take logout tokens (OpenID Connect Back-Channel Logout 1.0): whose
  // tokens, which client's, and the path it serves (none when the URI is not on the app's origin).
  const backchannelUri = app.backchannelLogoutUri === null ? undefined : new URL(app.backchannelLogoutUri ?? defaultBackchannelLogoutUri(originOf(app.origin)));
  const backchannel: BackchannelLogoutConfig = {
    issuer: issuerUrl(model.server, tenant.name),
    jwks_uri: jwksUrl(model.server, tenant.name),
    client_id: clientIdOf(app),
    path: backchannelUri !== undefined && backchannelUri.origin === originOf(app.origin) ? backchannelUri.pathname : null,
  };
  return [
    { path: `${key}/backchannel-logout.json`, content: stableJson(backchannel), secret: false },
    { path: `${key}/grant.json`, content: stableJson(config), secret: true },
    { path: `${key}/session.env`, content: envFile({ SESSION_SECRET: secretFor(resolved, key, 'sessionSecret') }, GENERATED_HEADER), secret: true },
  ];
}
