/**
 * The provisioning plan: every PUT that makes a server match the model, in dependency order
 * (tenants, APIs, clients, users, assignments) and sorted by name within each, so a reordered
 * model yields the same plan. Deletions need the live state and are planned by `idforge plan`.
 */
import { MANAGED_BY, defaultBackchannelLogoutUri, type ApplicationBody, type TenantInventory, type TenantMailBody, type PlanStep, type ProvisioningPlan, type UserBody } from '../contract/index.ts';
import type { Model, TenantSpec } from '../schema/model.ts';
import { applicationEntry, tenantEntry, userEntry } from '../schema/normal-form.ts';
import { assignmentsOf, audienceOf, byName, clientIdOf, originOf, redirectUrisOf, scopesOf, userScopesOf } from './_app-facts.ts';
import { appKey, type Resolved } from './secrets.ts';

function applicationBody(tenant: TenantSpec, app: TenantSpec['applications'][number], resolved: Resolved): ApplicationBody {
  const displayName = app.displayName;
  // The entry as declared, kept by the server for export and proposals.
  const lastApplied = { entry: applicationEntry(app), index: tenant.applications.indexOf(app) };
  if (app.kind === 'api') {
    const scopes = [...new Set(app.routes.flatMap((r) => r.scopes))].sort();
    return { kind: 'api', displayName, identifier: app.audience, scopes, managedBy: MANAGED_BY, lastApplied };
  }
  const common = {
    displayName,
    clientId: clientIdOf(app),
    redirectUris: redirectUrisOf(tenant, app),
    postLogoutRedirectUris: [`${originOf(app.origin)}/`],
    scopes: scopesOf(app),
    // Only when optional: absent means required, and plans of models that leave it out stay
    // byte-identical to before the field existed.
    ...(app.pkce === 'optional' ? { pkce: app.pkce } : {}),
    managedBy: MANAGED_BY,
    lastApplied,
  };
  if (app.kind === 'spa') {
    return { kind: 'spa', ...common, audience: audienceOf(tenant, app), offline: app.offline };
  }
  // The secret the caller keeps, if any; without one the server keeps the secret it has, or makes one for a new client.
  const clientSecret = resolved.secrets[appKey(tenant.name, app.name)]?.clientSecret;
  // Web apps take logout tokens (the web template serves the default URI); proxies cannot.
  const backchannelLogoutUri = app.kind !== 'web' || app.backchannelLogoutUri === null ? undefined : (app.backchannelLogoutUri ?? defaultBackchannelLogoutUri(originOf(app.origin)));
  const backchannel = backchannelLogoutUri === undefined ? {} : { backchannelLogoutUri };
  return { kind: app.kind, ...common, audience: audienceOf(tenant, app), ...(clientSecret === undefined ? {} : { clientSecret }), ...backchannel };
}

/** The mail settings in one key order, whatever the model's order. */
export const mailBodyOf = (m: TenantMailBody): TenantMailBody => ({
  from: m.from,
  smtp: {
    host: m.smtp.host,
    ...(m.smtp.port === undefined ? {} : { port: m.smtp.port }),
    security: m.smtp.security,
    ...(m.smtp.username === undefined ? {} : { username: m.smtp.username }),
    ...(m.smtp.passwordEnv === undefined ? {} : { passwordEnv: m.smtp.passwordEnv }),
  },
});

/**
 * What the delete guard counts of one tenant (contract's TenantInventory), read off the model without
 * compiling it: tenantSteps makes one application step per application, one user step per user and
 * one assignment step per user in assignmentsOf, so these are the counts of its steps.
 */
export function tenantInventory(tenant: TenantSpec): TenantInventory {
  return {
    applications: tenant.applications.map((a) => a.name).sort(),
    users: tenant.users.length,
    assignments: [...assignmentsOf(tenant).values()].reduce((n, ids) => n + ids.length, 0),
  };
}

export function tenantSteps(tenant: TenantSpec, resolved: Resolved, index = 0): PlanStep[] {
  const t = tenant.name;
  const steps: PlanStep[] = [
    {
      op: 'put',
      kind: 'tenant',
      tenant: t,
      body: {
        displayName: tenant.displayName,
        scopes: [...tenant.scopes].sort(byName),
        // Only when the model sets one: absent means password only, and plans of models without a
        // policy stay byte-identical to before the field existed.
        ...(tenant.login === undefined ? {} : { login: { methods: [...tenant.login.methods], requireSecondFactor: tenant.login.requireSecondFactor } }),
        ...(tenant.passwordPolicy === undefined ? {} : { passwordPolicy: { minLength: tenant.passwordPolicy.minLength } }),
        ...(tenant.events?.retentionDays === undefined ? {} : { events: { retentionDays: tenant.events.retentionDays } }),
        ...(tenant.mail === undefined ? {} : { mail: mailBodyOf(tenant.mail) }),
        managedBy: MANAGED_BY,
        lastApplied: { entry: tenantEntry(tenant), index },
      },
    },
  ];
  const apps = [...tenant.applications].sort(byName);
  // APIs first: clients name them as their audience.
  for (const app of [...apps.filter((a) => a.kind === 'api'), ...apps.filter((a) => a.kind !== 'api')]) {
    steps.push({ op: 'put', kind: 'application', tenant: t, application: app.name, body: applicationBody(tenant, app, resolved) });
  }
  const scopesByUser = userScopesOf(tenant);
  const userIndex = new Map(tenant.users.map((u, i) => [u, i]));
  for (const user of [...tenant.users].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const body: UserBody = {
      email: user.email,
      displayName: user.displayName,
      scopes: scopesByUser.get(user.id) ?? [],
      initialPassword: resolved.passwords?.[appKey(t, user.id)],
      disabled: user.disabled,
      managedBy: MANAGED_BY,
      lastApplied: { entry: userEntry(user), index: userIndex.get(user)! },
    };
    steps.push({ op: 'put', kind: 'user', tenant: t, user: user.id, body });
  }
  const assignments = assignmentsOf(tenant);
  for (const app of [...assignments.keys()].sort()) {
    for (const userId of assignments.get(app)!) {
      steps.push({ op: 'put', kind: 'assignment', tenant: t, application: app, user: userId, body: { managedBy: MANAGED_BY } });
    }
  }
  for (const hook of [...tenant.webhooks].sort(byName)) {
    const secret = resolved.webhookSecrets?.[appKey(t, hook.name)];
    steps.push({
      op: 'put', kind: 'webhook', tenant: t, webhook: hook.name,
      body: { url: hook.url, types: [...hook.types], enabled: hook.enabled, ...(secret === undefined ? {} : { secret }), managedBy: MANAGED_BY },
    });
  }
  return steps;
}

/**
 * The model's tenants in plan order, each compiled when asked: `idforge plan` compiles a tenant just
 * before it sends that tenant's dry run, so compiling the rest overlaps the server's work.
 */
export function compileTenants(model: Model, resolved: Resolved): { readonly name: string; readonly steps: () => PlanStep[] }[] {
  const index = new Map(model.tenants.map((t, i) => [t, i]));
  return [...model.tenants].sort(byName).map((t) => ({ name: t.name, steps: () => tenantSteps(t, resolved, index.get(t)) }));
}

export function compilePlan(model: Model, resolved: Resolved): ProvisioningPlan {
  return { version: 2, steps: compileTenants(model, resolved).flatMap((t) => t.steps()) };
}
