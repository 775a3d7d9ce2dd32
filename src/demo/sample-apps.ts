/**
 * The sample apps `npm run demo` runs, one per application of the model: what to open, who may
 * sign in there and who is refused, and the one line the demo prints for each. Pure: facts from
 * the model (the same helpers the generators use), no I/O.
 */
import { assignmentsOf, originOf, providerOf, userScopesOf } from '../generators/_app-facts.ts';
import type { ApiAppSpec, ApplicationSpec, Model, SpaAppSpec, TenantSpec, UserSpec } from '../schema/index.ts';

export interface SampleApp {
  readonly tenant: string;
  readonly name: string;
  /** How the demo names it: the app's name, or <tenant>/<app> when tenants share the name. */
  readonly label: string;
  readonly kind: ApplicationSpec['kind'];
  /** Folder under the demo's apps dir: the app's name, or <tenant>-<app> when tenants share it. */
  readonly dir: string;
  /** What to open: where the login starts (web), the protected app (proxy), the page (spa, api). */
  readonly url: string;
  /** Ports the app's processes listen on, the public one first (a proxy also has its upstream). */
  readonly ports: readonly number[];
  /** Users the service lets in: assigned and not disabled. Empty for an API (no sign-in). */
  readonly allowed: readonly UserSpec[];
  /** The tenant's other users: the service refuses them. Empty for an API. */
  readonly denied: readonly UserSpec[];
  /** What to do there besides signing in; an API's whole story (it has no sign-in). */
  readonly hint: string | undefined;
}

/** An application the demo cannot run, and why. */
export interface SkippedApp {
  readonly tenant: string;
  readonly name: string;
  readonly reason: string;
}

function portOf(url: string): number {
  const u = new URL(url);
  return Number(u.port || (u.protocol === 'https:' ? 443 : 80));
}

/** The SPAs of the tenant whose access tokens are for this API. */
function callersOf(tenant: TenantSpec, api: string): SpaAppSpec[] {
  return tenant.applications.filter((a): a is SpaAppSpec => a.kind === 'spa' && a.audience.includes(api));
}

/** An API has no sign-in: what answers without a token, how to get one, who gets which scope. */
function apiHint(tenant: TenantSpec, app: ApiAppSpec): string {
  const callers = callersOf(tenant, app.name);
  const assigned = assignmentsOf(tenant);
  const scopesOf = userScopesOf(tenant);
  const byId = new Map(tenant.users.map((u) => [u.id, u]));
  const from = callers.length > 0 ? `sign in to ${callers.map((c) => c.name).join(' or ')} and use its GET buttons` : `an access token of ${tenant.name} for ${app.audience}`;
  const parts = [`no sign-in (an API): ${app.publicRoutes.map((r) => `GET ${r}`).join(', ')} needs no token`];
  if (app.routes.length > 0) parts.push(`${app.routes.map((r) => r.path).join(', ')} with a Bearer token: ${from}`);
  for (const route of app.routes.filter((r) => r.scopes.length > 0)) {
    // Who can get a token carrying the route's scopes: holds them, and is assigned to a caller
    // that asks for them.
    const holders = new Set<string>();
    for (const spa of callers) {
      if (!route.scopes.every((s) => spa.scopes.includes(s))) continue;
      for (const id of assigned.get(spa.name) ?? []) {
        const user = byId.get(id);
        if (user !== undefined && !user.disabled && route.scopes.every((s) => scopesOf.get(id)?.includes(s))) holders.add(user.email);
      }
    }
    const who = holders.size > 0 ? [...holders].sort().join(', ') : 'nobody in this model';
    parts.push(`${route.path} needs scope ${route.scopes.join(' and ')} (${who})`);
  }
  return parts.join('; ');
}

/** Every application of the model as a runnable sample app, in model order. */
export function sampleAppsOf(model: Model): { apps: SampleApp[]; skipped: SkippedApp[] } {
  const count = new Map<string, number>();
  for (const t of model.tenants) for (const a of t.applications) count.set(a.name, (count.get(a.name) ?? 0) + 1);
  const apps: SampleApp[] = [];
  const skipped: SkippedApp[] = [];
  for (const tenant of model.tenants) {
    const assigned = assignmentsOf(tenant);
    for (const app of tenant.applications) {
      const shared = (count.get(app.name) ?? 0) > 1;
      const base = {
        tenant: tenant.name,
        name: app.name,
        label: shared ? `${tenant.name}/${app.name}` : app.name,
        kind: app.kind,
        dir: shared ? `${tenant.name}-${app.name}` : app.name,
      };
      if (app.kind === 'api') {
        if (app.origin === undefined) {
          skipped.push({ tenant: tenant.name, name: app.name, reason: 'no origin in the model, so no port to listen on' });
          continue;
        }
        apps.push({ ...base, url: `${originOf(app.origin)}/`, ports: [portOf(app.origin)], allowed: [], denied: [], hint: apiHint(tenant, app) });
        continue;
      }
      // The printed credentials are a password; say so when the tenant asks for more (or else).
      const login = tenant.login;
      const loginNote =
        login !== undefined && (login.requireSecondFactor || !login.methods.includes('password'))
          ? `sign-in methods: ${login.methods.join(', ')}${login.requireSecondFactor ? ', second factor required' : ''}; `
          : '';
      const ids = new Set(assigned.get(app.name) ?? []);
      const allowed = tenant.users.filter((u) => ids.has(u.id) && !u.disabled);
      const denied = tenant.users.filter((u) => !allowed.includes(u));
      const origin = originOf(app.origin);
      if (app.kind === 'web') {
        apps.push({ ...base, url: `${origin}/connect/${providerOf(tenant, app)}`, ports: [portOf(app.origin)], allowed, denied, hint: `${loginNote}answers ${app.callback} with ${app.response.join(', ')}` });
      } else if (app.kind === 'proxy') {
        apps.push({ ...base, url: `${origin}/`, ports: [portOf(app.origin), portOf(app.upstream)], allowed, denied, hint: `${loginNote}the app behind it echoes X-Forwarded-User` });
      } else {
        const apis = app.audience.filter((name) => tenant.applications.some((a) => a.name === name && a.kind === 'api'));
        const then = apis.length > 0 ? `press Sign in, then call ${apis.join(', ')} with the GET buttons` : 'press Sign in';
        apps.push({ ...base, url: `${origin}/`, ports: [portOf(app.origin)], allowed, denied, hint: `${loginNote}${then}` });
      }
    }
  }
  return { apps, skipped };
}

export interface LineOptions {
  /** How to sign in as a user, e.g. `alice@acme.example / s3cret`. */
  readonly credentials: (tenant: string, user: UserSpec) => string;
  /** Where the app's log is, as it should be shown. */
  readonly log: (app: SampleApp) => string;
}

/**
 * One line per app: name, URL, who signs in (with what), who is refused, what to do there, log.
 * Columns are padded so the URLs line up.
 */
export function formatAppLines(apps: readonly SampleApp[], opts: LineOptions): string[] {
  const nameWidth = Math.max(0, ...apps.map((a) => a.label.length));
  const urlWidth = Math.max(0, ...apps.map((a) => a.url.length));
  return apps.map((app) => {
    const who = (users: readonly UserSpec[]) => users.map((u) => opts.credentials(app.tenant, u)).join(', ');
    const parts: string[] = [];
    if (app.kind !== 'api') {
      parts.push(app.allowed.length > 0 ? `sign in: ${who(app.allowed)}` : 'sign in: nobody is assigned');
      if (app.denied.length > 0) parts.push(`denied: ${who(app.denied)}`);
    }
    if (app.hint !== undefined) parts.push(app.hint);
    parts.push(`log: ${opts.log(app)}`);
    return `  ${app.label.padEnd(nameWidth)}  ${app.url.padEnd(urlWidth)}  ${parts.join('; ')}`;
  });
}
