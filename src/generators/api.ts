/** Protected API: what it needs to verify tokens offline against the tenant's JWKS. */
import type { ApiAppSpec, Model, TenantSpec } from '../schema/model.ts';
import { issuerUrl, jwksUrl, ssfConfigurationUrl } from '../contract/index.ts';
import type { Artifact } from './_artifact.ts';
import { originOf } from './_app-facts.ts';
import { stableJson } from './_serialize.ts';
import type { ApiConfig } from './artifact-schemas.ts';
import { appKey } from './secrets.ts';

export function apiArtifacts(model: Model, tenant: TenantSpec, app: ApiAppSpec): Artifact[] {
  const config: ApiConfig = {
    issuer: issuerUrl(model.server, tenant.name),
    jwks_uri: jwksUrl(model.server, tenant.name),
    audience: app.audience,
    origin: app.origin === undefined ? undefined : originOf(app.origin),
    public_routes: [...app.publicRoutes],
    routes: app.routes.map((r) => ({ path: r.path, scopes: [...r.scopes] })),
    // Where the API learns of revoked sessions (templates/api: with a stream's receiver token).
    ssf_configuration_url: ssfConfigurationUrl(model.server, tenant.name),
  };
  return [{ path: `${appKey(tenant.name, app.name)}/api-config.json`, content: stableJson(config), secret: false }];
}
