/**
 * Pure generators: Model + resolved secrets → provisioning plan and client artifacts.
 * No I/O, no clock, no randomness: the same input gives byte-identical output.
 */
import type { ApplicationKind, ProvisioningPlan } from '../contract/index.ts';
import type { ApplicationSpec, Model, TenantSpec } from '../schema/model.ts';
import type { Artifact } from './_artifact.ts';
import { byName } from './_app-facts.ts';
import { stableJson } from './_serialize.ts';
import { apiArtifacts } from './api.ts';
import { compilePlan } from './plan.ts';
import { proxyArtifacts } from './proxy.ts';
import type { Resolved } from './secrets.ts';
import { spaArtifacts } from './spa.ts';
import { webArtifacts } from './web.ts';

export { compilePlan, compileTenants, tenantInventory, tenantSteps } from './plan.ts';
export { requiredSecrets, previousAppKeys, appKey, type Resolved, type ResolvedSecrets, type ResolvedPasswords, type SecretNeed, type SecretKind } from './secrets.ts';
export { ARTIFACT_SCHEMAS, SpaConfig, ApiConfig, GrantConfig, PlanSchema } from './artifact-schemas.ts';
export { OAUTH2_PROXY_VERSION, OAUTH2_PROXY_IMAGE } from './proxy.ts';
export { stableJson } from './_serialize.ts';
export { byName } from './_app-facts.ts';
export type { Artifact } from './_artifact.ts';
export { modelFileOfLive, tenantSpecOfLive, serverSpecOf, UNKNOWN_UPSTREAM, type LiveTenant, type ExportNote, type ModelFileInput, type TenantSpecInput } from './from-live.ts';
export { modelYaml, unifiedDiff } from './model-yaml.ts';
export { entryPatch, assignmentsPatch } from './entry-patch.ts';

/**
 * The generator of each application kind: the one place a kind meets its client configuration.
 * Adding a kind to the contract's table without a row here does not compile.
 */
const KIND_GENERATORS: { readonly [K in ApplicationKind]: (model: Model, tenant: TenantSpec, app: Extract<ApplicationSpec, { kind: K }>, resolved: Resolved) => Artifact[] } = {
  web: webArtifacts,
  proxy: proxyArtifacts,
  spa: (model, tenant, app) => spaArtifacts(model, tenant, app),
  api: (model, tenant, app) => apiArtifacts(model, tenant, app),
};

function artifactsOf<K extends ApplicationKind>(model: Model, tenant: TenantSpec, app: Extract<ApplicationSpec, { kind: K }>, resolved: Resolved): Artifact[] {
  return (KIND_GENERATORS[app.kind as K] as (m: Model, t: TenantSpec, a: typeof app, r: Resolved) => Artifact[])(model, tenant, app, resolved);
}

/** Client configurations of one tenant's applications (they need only its own secrets), in no set order. */
export function compileTenantClientArtifacts(model: Model, tenant: TenantSpec, resolved: Resolved): Artifact[] {
  return [...tenant.applications].sort(byName).flatMap((app) => artifactsOf(model, tenant, app, resolved));
}

/** Client configurations of every application, sorted by path. */
export function compileClientArtifacts(model: Model, resolved: Resolved): Artifact[] {
  const out = [...model.tenants].sort(byName).flatMap((tenant) => compileTenantClientArtifacts(model, tenant, resolved));
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Everything `idforge compile` writes: plan.json plus every client configuration. */
export function compileArtifacts(model: Model, resolved: Resolved): { plan: ProvisioningPlan; artifacts: Artifact[] } {
  const plan = compilePlan(model, resolved);
  const artifacts = [{ path: 'plan.json', content: stableJson(plan), secret: true }, ...compileClientArtifacts(model, resolved)];
  return { plan, artifacts };
}
