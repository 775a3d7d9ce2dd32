/**
 * Pure generators: Model + resolved secrets → provisioning plan and client artifacts.
 * No I/O, no clock, no randomness: the same input gives byte-identical output.
 */
import type { ProvisioningPlan } from '../schema/admin-api.ts';
import type { Model } from '../schema/model.ts';
import type { Artifact } from './_artifact.ts';
import { byName } from './_app-facts.ts';
import { stableJson } from './_serialize.ts';
import { apiArtifacts } from './api.ts';
import { compilePlan } from './plan.ts';
import { proxyArtifacts } from './proxy.ts';
import type { Resolved } from './secrets.ts';
import { spaArtifacts } from './spa.ts';
import { webArtifacts } from './web.ts';

export { compilePlan, tenantSteps } from './plan.ts';
export { requiredSecrets, appKey, type Resolved, type ResolvedSecrets, type ResolvedPasswords, type SecretNeed, type SecretKind } from './secrets.ts';
export { ARTIFACT_SCHEMAS, SpaConfig, ApiConfig, GrantConfig, PlanSchema } from './artifact-schemas.ts';
export { OAUTH2_PROXY_VERSION, OAUTH2_PROXY_IMAGE } from './proxy.ts';
export { stableJson } from './_serialize.ts';
export type { Artifact } from './_artifact.ts';

/** Client configurations of every application, sorted by path. */
export function compileClientArtifacts(model: Model, resolved: Resolved): Artifact[] {
  const out: Artifact[] = [];
  for (const tenant of [...model.tenants].sort(byName)) {
    for (const app of [...tenant.applications].sort(byName)) {
      switch (app.kind) {
        case 'web':
          out.push(...webArtifacts(model, tenant, app, resolved));
          break;
        case 'proxy':
          out.push(...proxyArtifacts(model, tenant, app, resolved));
          break;
        case 'spa':
          out.push(...spaArtifacts(model, tenant, app));
          break;
        case 'api':
          out.push(...apiArtifacts(model, tenant, app));
          break;
      }
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Everything `idforge compile` writes: plan.json plus every client configuration. */
export function compileArtifacts(model: Model, resolved: Resolved): { plan: ProvisioningPlan; artifacts: Artifact[] } {
  const plan = compilePlan(model, resolved);
  const artifacts = [{ path: 'plan.json', content: stableJson(plan), secret: true }, ...compileClientArtifacts(model, resolved)];
  return { plan, artifacts };
}
