/**
 * The way back: a live tenant, as the admin API shows it, written as the model that would
 * provision it. `idforge export` writes it to a file so a tenant made in the console (or through
 * the admin API) can move into Git; the console uses it to propose changes to Git-owned objects as
 * a patch of the model. Pure, like the generators it inverts: the same views give the same model.
 *
 * What the server does not keep cannot come back: passwords (only hashes are stored), client
 * secrets, and client-side settings that never reach the server (a web app's callback path, a
 * proxy's upstream, an api's routes). Those are left at the model's defaults, or filled with a
 * placeholder the model accepts, and each such guess is returned as a note at its path, so the
 * writer can put it beside the value and the person can check it.
 */
import type { z } from 'zod';
import {
  KINDS, defaultBackchannelLogoutUri, isLocalHost, jsonEqual, type ApplicationView, type AssignmentView, type Path, type PlanStep, type ServerAddress, type TenantView, type UserView, type WebhookView,
} from '../contract/index.ts';
import { TenantSpec as TenantSchema, type ModelFileSpec, type TenantSpec } from '../schema/model.ts';
import { assembleTenantEntry, identifiedUser, namedApplication } from '../schema/normal-form.ts';
import { mailBodyOf, tenantSteps } from './plan.ts';

export type TenantSpecInput = z.input<typeof TenantSpec>;
export type ModelFileInput = z.input<typeof ModelFileSpec>;
type AppInput = NonNullable<TenantSpecInput['applications']>[number];

/** The live state of one tenant, as listed through the admin API. */
export interface LiveTenant {
  readonly tenant: TenantView;
  readonly applications: readonly ApplicationView[];
  readonly users: readonly UserView[];
  /** Per client application name, its assignments. */
  readonly assignments: Readonly<Record<string, readonly AssignmentView[]>>;
  /** Its webhooks (absent: not read). */
  readonly webhooks?: readonly WebhookView[];
}

/** A value the export had to guess, or a difference the model cannot express, at its path in the tenant. */
export interface ExportNote {
  readonly path: Path;
  readonly message: string;
}

/** Placeholder for a proxy's upstream, which only the proxy's own configuration holds. */
export const UNKNOWN_UPSTREAM = 'http://127.0.0.1:8080';

const origin = (url: string) => URL.parse(url)?.origin ?? url;
const sorted = <T>(xs: readonly T[], key: (x: T) => string) => [...xs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

/**
 * The redirect URI the kind's contract shape derives, matched back to its origin (and provider for
 * a web app): the first registered URI that has that shape.
 */
function derivedOrigin(kind: 'web' | 'proxy' | 'spa', uris: readonly string[], tenant: string): { origin: string; provider?: string } | undefined {
  for (const u of uris) {
    const url = URL.parse(u);
    if (url === null || url.search !== '' || url.hash !== '') continue;
    if (kind === 'web') {
      const m = /^\/connect\/([^/]+)\/callback$/.exec(url.pathname);
      if (m !== null) return { origin: url.origin, ...(m[1] === tenant ? {} : { provider: m[1] }) };
    } else if (kind === 'proxy') {
      if (url.pathname === '/oauth2/callback') return { origin: url.origin };
    } else if (url.pathname === '/' || url.pathname === '') return { origin: url.origin };
  }
  return undefined;
}

function applicationSpec(live: LiveTenant, app: ApplicationView, at: Path, notes: ExportNote[]): AppInput {
  const note = (path: Path, message: string) => notes.push({ path: [...at, ...path], message });
  const base = { name: app.name, ...(app.displayName === undefined ? {} : { displayName: app.displayName }) };
  if (app.kind === 'api') {
    // The server keeps the union of the routes' scopes; one route per scope gives the same union.
    const routes = app.scopes.map((s) => ({ path: `/${s}`, scopes: [s] }));
    if (routes.length > 0) note(['routes'], 'routes are not kept by the server: one route per scope the api offers; set the real paths');
    return { ...base, kind: 'api', audience: app.identifier, ...(routes.length > 0 ? { routes } : {}) };
  }
  const kind = app.kind;
  const found = derivedOrigin(kind, app.redirectUris, live.tenant.name);
  const first = app.redirectUris[0] ?? 'http://localhost';
  const appOrigin = found?.origin ?? origin(first);
  const derived = KINDS[kind].redirectUris(appOrigin, { provider: found?.provider ?? live.tenant.name });
  const extra = app.redirectUris.filter((u) => !derived.includes(u));
  if (found === undefined) note(['origin'], `no redirect URI has the ${KINDS[kind].title}'s shape; the origin is taken from ${first}`);
  const client = {
    ...base,
    ...(app.clientId === app.name ? {} : { clientId: app.clientId }),
    origin: appOrigin,
    ...(extra.length > 0 ? { redirectUris: extra } : {}),
    ...(app.pkce === 'optional' ? { pkce: app.pkce } : {}),
  };
  if (app.postLogoutRedirectUris.length !== 1 || app.postLogoutRedirectUris[0] !== `${appOrigin}/`) {
    note(['origin'], `the model registers ${appOrigin}/ as the only post-logout redirect URI; the server has ${JSON.stringify(app.postLogoutRedirectUris)}`);
  }
  const apis = new Map(live.applications.flatMap((a) => (a.kind === 'api' ? [[a.identifier, a.name] as const] : [])));
  const audience = app.audience.flatMap((id, i) => {
    const name = apis.get(id);
    if (name === undefined) note(['audience'], `audience ${id} (entry ${i}) is not the identifier of an api of this tenant; left out`);
    return name === undefined ? [] : [name];
  });
  const aud = audience.length > 0 ? { audience } : {};
  if (kind === 'spa' && app.kind === 'spa') {
    const scopes = app.offline ? app.scopes.filter((s) => s !== 'offline') : app.scopes;
    if (!app.offline && app.scopes.includes('offline')) note(['scopes'], "the server lists scope 'offline' without offline: true; the model asks for offline: true instead");
    return { ...client, kind: 'spa', scopes, ...aud, ...(app.offline ? { offline: true } : {}) };
  }
  // Kinds that always use refresh tokens get `offline` from the generators (KINDS[kind].refreshTokens).
  const scopes = KINDS[kind].refreshTokens === 'always' ? app.scopes.filter((s) => s !== 'offline') : [...app.scopes];
  const backchannel = 'backchannelLogoutUri' in app ? app.backchannelLogoutUri : undefined;
  if (kind === 'web') {
    // The model's default is <origin>/backchannel-logout; a web app without one says so (null).
    const own = backchannel === defaultBackchannelLogoutUri(appOrigin) ? {} : { backchannelLogoutUri: backchannel ?? null };
    return { ...client, kind: 'web', ...(found?.provider === undefined ? {} : { provider: found.provider }), scopes, ...aud, ...own };
  }
  if (backchannel !== undefined) note(['backchannelLogoutUri'], `the server has back-channel logout URI ${backchannel}; the model registers none for a proxy`);
  note(['upstream'], 'the app behind the proxy is not kept by the server: set it');
  return { ...client, kind: 'proxy', upstream: UNKNOWN_UPSTREAM, scopes, ...aud };
}

/**
 * One tenant of the model, from its live state; `at` is where the tenant sits in the file (for
 * notes). Objects last applied from a model come back as their entries were declared (normal form,
 * declared order), as long as the live object is still what its entry makes; an object changed
 * since (or made elsewhere, in the console or through the admin API) is read from its live state,
 * with a note.
 */
export function tenantSpecOfLive(live: LiveTenant, at: Path = []): { spec: TenantSpecInput; notes: ExportNote[] } {
  return declaredSpecOfLive(live, at) ?? liveSpecOf(live, at);
}

/** The fields of a PUT body the server keeps as state (not who manages it, nor the declared entry, nor secrets). */
function served(body: object): Record<string, unknown> {
  const { managedBy: _m, stack: _s, lastApplied: _l, clientSecret: _c, initialPassword: _p, ...rest } = body as Record<string, unknown>;
  return rest;
}
const sameServed = (compiled: object, view: object): boolean => {
  const want = served(compiled);
  const have = view as Record<string, unknown>;
  return Object.keys(want).every((k) => want[k] === undefined || jsonEqual(want[k], have[k]));
};

function declaredSpecOfLive(live: LiveTenant, at: Path): { spec: TenantSpecInput; notes: ExportNote[] } | undefined {
  const declared = live.tenant.lastApplied;
  if (declared === undefined) return undefined;
  const notes: ExportNote[] = [];
  const fromLive = liveSpecOf(live, at);
  const liveApps = fromLive.spec.applications ?? [];
  const liveUsers = fromLive.spec.users ?? [];
  const byIndex = <T extends { lastApplied?: { index: number } | undefined }>(xs: readonly T[]) =>
    [...xs].sort((a, b) => (a.lastApplied?.index ?? Number.MAX_SAFE_INTEGER) - (b.lastApplied?.index ?? Number.MAX_SAFE_INTEGER));
  const apps = byIndex(live.applications);
  const users = byIndex(live.users);
  const appEntry = (a: ApplicationView) => (a.lastApplied === undefined ? liveApps.find((x) => x.name === a.name)! : namedApplication(a.name, a.lastApplied.entry) as AppInput);
  const userEntry = (u: UserView) => (u.lastApplied === undefined ? liveUsers.find((x) => x.id === u.id)! : identifiedUser(u.id, u.lastApplied.entry) as NonNullable<TenantSpecInput['users']>[number]);
  const candidate = assembleTenantEntry(live.tenant.name, declared.entry, apps.map(appEntry) as never[], users.map(userEntry) as never[]);
  const parsed = TenantSchema.safeParse(candidate);
  if (!parsed.success) return undefined;
  // What the declared entries make, object by object, against what the server holds now.
  const steps = tenantSteps(parsed.data, { secrets: {} });
  const step = (kind: PlanStep['kind'], key: (s: PlanStep) => string | undefined, name: string) => steps.find((s) => s.kind === kind && key(s) === name);
  const appsOut = apps.map((a, i) => {
    const compiled = step('application', (s) => (s as { application?: string }).application, a.name);
    if (a.lastApplied !== undefined && compiled?.op === 'put' && sameServed(compiled.body, a)) return appEntry(a);
    const why = a.lastApplied === undefined ? 'made outside the model (the console or the admin API)' : 'changed on the server since it was last applied';
    notes.push({ path: [...at, 'applications', i], message: `${why}: written from its live state` });
    return liveApps.find((x) => x.name === a.name)!;
  });
  const usersOut = users.map((u, i) => {
    const compiled = step('user', (s) => (s as { user?: string }).user, u.id);
    if (u.lastApplied !== undefined && compiled?.op === 'put' && sameServed(compiled.body, u)) return userEntry(u);
    const why = u.lastApplied === undefined ? 'made outside the model' : 'changed on the server since it was last applied';
    notes.push({ path: [...at, 'users', i], message: `${why}: written from its live state` });
    return liveUsers.find((x) => x.id === u.id)!;
  });
  // The tenant itself, and the assignments its groups and lists make, against the live ones.
  let tenantPart: Record<string, unknown> = { ...declared.entry };
  const t = steps.find((s) => s.kind === 'tenant');
  if (!(t?.op === 'put' && sameServed(t.body, live.tenant))) {
    notes.push({ path: at, message: 'the tenant changed on the server since it was last applied: its settings are written from its live state' });
    const { scopes, login, passwordPolicy, events, mail, displayName } = fromLive.spec;
    tenantPart = { ...tenantPart, displayName, scopes, login, passwordPolicy, events, mail };
  }
  // Webhooks: the declared ones (their secret references with them) while the server has just those.
  const liveHooks = (live.webhooks ?? []).map(webhookSpecOf);
  const declaredHooks = parsed.data.webhooks.map(({ secret: _s, ...w }) => webhookSpecOf({ ...w }));
  if (live.webhooks !== undefined && !jsonEqual(sorted(liveHooks, (w) => w.name), sorted(declaredHooks, (w) => w.name))) {
    notes.push({ path: [...at, 'webhooks'], message: 'webhooks changed on the server since they were last applied: written from the live webhooks (their signing secrets are not exported)' });
    tenantPart = { ...tenantPart, webhooks: fromLive.spec.webhooks };
  }
  const madeAssignments = new Set(steps.flatMap((s) => (s.kind === 'assignment' ? [`${s.application}/${s.user}`] : [])));
  const liveAssignments = new Set(Object.entries(live.assignments).flatMap(([app, xs]) => xs.map((x) => `${app}/${x.userId}`)));
  if (madeAssignments.size !== liveAssignments.size || [...madeAssignments].some((x) => !liveAssignments.has(x))) {
    notes.push({ path: [...at, 'assignments'], message: 'assignments changed on the server since they were last applied: written from the live assignments' });
    // Groups stay (they fold their scopes into their members'), the assignments are the live ones, per user.
    tenantPart = { ...tenantPart, assignments: fromLive.spec.assignments };
  }
  const spec = assembleTenantEntry(live.tenant.name, tenantPart as never, appsOut as never[], usersOut as never[]) as TenantSpecInput;
  return { spec, notes };
}

/** A webhook as the model writes it: defaults left out. The secret is never answered, so never written. */
function webhookSpecOf(w: Pick<WebhookView, 'name' | 'url' | 'types' | 'enabled'>): NonNullable<TenantSpecInput['webhooks']>[number] {
  return { name: w.name, url: w.url, ...(w.types.length > 0 ? { types: [...w.types] } : {}), ...(w.enabled ? {} : { enabled: false }) };
}

function liveSpecOf(live: LiveTenant, at: Path): { spec: TenantSpecInput; notes: ExportNote[] } {
  const notes: ExportNote[] = [];
  const t = live.tenant;
  const apps = sorted(live.applications, (a) => a.name);
  const users = sorted(live.users, (u) => u.id);
  const applications = apps.map((a, i) => {
    const spec = applicationSpec(live, a, [...at, 'applications', i], notes);
    // name and kind first, as people write them.
    return Object.assign({ name: spec.name, kind: spec.kind }, spec) as AppInput;
  });
  const assignments = apps.flatMap((a) => {
    const ids = (live.assignments[a.name] ?? []).map((x) => x.userId).sort();
    return a.kind === 'api' || ids.length === 0 ? [] : [{ application: a.name, users: ids }];
  });
  const userSpecs = users.map((u, i) => {
    if (u.hasPassword) notes.push({ path: [...at, 'users', i, 'id'], message: 'has a password on the server (kept there as a hash; not exported)' });
    return {
      id: u.id,
      email: u.email,
      ...(u.displayName === undefined ? {} : { displayName: u.displayName }),
      ...(u.scopes.length > 0 ? { scopes: [...u.scopes] } : {}),
      ...(u.disabled ? { disabled: true } : {}),
    };
  });
  const spec: TenantSpecInput = {
    name: t.name,
    displayName: t.displayName,
    ...(t.scopes.length > 0 ? { scopes: sorted(t.scopes, (s) => s.name).map((s) => ({ name: s.name, ...(s.description === undefined ? {} : { description: s.description }) })) } : {}),
    ...(t.login === undefined ? {} : { login: { methods: [...t.login.methods], requireSecondFactor: t.login.requireSecondFactor } }),
    ...(t.passwordPolicy === undefined ? {} : { passwordPolicy: { minLength: t.passwordPolicy.minLength } }),
    ...(t.events?.retentionDays === undefined ? {} : { events: { retentionDays: t.events.retentionDays } }),
    ...(t.mail === undefined ? {} : { mail: mailBodyOf(t.mail) }),
    ...(userSpecs.length > 0 ? { users: userSpecs } : {}),
    ...(applications.length > 0 ? { applications } : {}),
    ...(assignments.length > 0 ? { assignments } : {}),
  };
  const hooks = sorted(live.webhooks ?? [], (w) => w.name).map(webhookSpecOf);
  if (hooks.length > 0) {
    spec.webhooks = hooks;
    notes.push({ path: [...at, 'webhooks'], message: 'the signing secrets are not exported: the server keeps them (add secret: {env: VAR} to rotate one)' });
  }
  return { spec, notes };
}

/** The model's server section for a server address (the scheme only when the model would not infer it). */
export function serverSpecOf(addr: ServerAddress): NonNullable<ModelFileInput['server']> {
  const inferred = isLocalHost(addr.baseDomain) ? 'http' : 'https';
  return {
    baseDomain: addr.baseDomain,
    ...(addr.scheme === inferred ? {} : { scheme: addr.scheme }),
    ...(addr.port === undefined ? {} : { port: addr.port }),
  };
}

/** A whole model file holding one live tenant, with the notes at their paths in the file. */
export function modelFileOfLive(addr: ServerAddress, live: LiveTenant): { file: ModelFileInput; notes: ExportNote[] } {
  const { spec, notes } = tenantSpecOfLive(live, ['tenants', 0]);
  return { file: { server: serverSpecOf(addr), tenants: [spec] }, notes };
}
