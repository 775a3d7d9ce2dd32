/** Single-page app: the contract's client parameters, nothing more (a public client has no secret). */
import type { Model, SpaAppSpec, TenantSpec } from '../schema/model.ts';
import { discoveryUrl } from '../contract/index.ts';
import type { Artifact } from './_artifact.ts';
import { audienceOf, clientIdOf, originOf, scopesOf } from './_app-facts.ts';
import { stableJson } from './_serialize.ts';
import type { SpaConfig } from './artifact-schemas.ts';
import { appKey } from './secrets.ts';

export function spaArtifacts(model: Model, tenant: TenantSpec, app: SpaAppSpec): Artifact[] {
  const config: SpaConfig = {
    wellknown_endpoint: discoveryUrl(model.server, tenant.name),
    client_id: clientIdOf(app),
    audience: audienceOf(tenant, app),
    scope: scopesOf(app).join(' '),
    redirect_uri: originOf(app.origin),
    cache_type: app.cacheType,
  };
  return [{ path: `${appKey(tenant.name, app.name)}/spa-config.json`, content: stableJson(config), secret: false }];
}
