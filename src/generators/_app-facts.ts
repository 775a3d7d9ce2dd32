/** Facts derived from the model that several generators share, computed one way only. */
import { KINDS } from '../contract/index.ts';
import type { ApiAppSpec, ClientAppSpec, TenantSpec, WebAppSpec } from '../schema/model.ts';

/** Normalised origin: lowercase host, no default port, no trailing slash. */
export function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * An application's client id: the one it declares, else the name it had before a declared rename
 * (previousName: the rename keeps the client id the application was made with), else its name. The
 * server fixes a client id when it makes the application; the model's normal form writes it out
 * whenever it differs from the name, so `idforge export` keeps it after the previousName is gone.
 */
export function clientIdOf(app: ClientAppSpec): string {
  return app.clientId ?? app.previousName ?? app.name;
}

export function providerOf(tenant: TenantSpec, app: WebAppSpec): string {
  return app.provider ?? tenant.name;
}

/** The contract's redirect URI shape for the app's kind (the kinds table), then any extra ones, deduplicated. */
export function redirectUrisOf(tenant: TenantSpec, app: ClientAppSpec): string[] {
  const derived = KINDS[app.kind].redirectUris(originOf(app.origin), { provider: app.kind === 'web' ? providerOf(tenant, app) : '' });
  return [...new Set([...derived, ...app.redirectUris])];
}

/**
 * Scopes a client requests: the model's, plus `offline` where the kind always uses refresh tokens
 * (KINDS[kind].refreshTokens) or an SPA asks for them.
 */
export function scopesOf(app: ClientAppSpec): string[] {
  const scopes = [...app.scopes];
  const refresh = KINDS[app.kind].refreshTokens;
  const offline = refresh === 'always' || (refresh === 'optional' && 'offline' in app && app.offline);
  if (offline && !scopes.includes('offline')) scopes.push('offline');
  return scopes;
}

export function apiByName(tenant: TenantSpec, name: string): ApiAppSpec {
  const api = tenant.applications.find((a): a is ApiAppSpec => a.kind === 'api' && a.name === name);
  if (api === undefined) throw new Error(`no api '${name}' in tenant '${tenant.name}' (the model was not checked)`);
  return api;
}

/** Resource identifiers (the `aud` of access tokens) for the APIs a client names. */
export function audienceOf(tenant: TenantSpec, app: ClientAppSpec): string[] {
  return app.audience.map((name) => apiByName(tenant, name).audience);
}

/** Per user id, the custom scopes the user holds: its own plus its groups', sorted. */
export function userScopesOf(tenant: TenantSpec): Map<string, string[]> {
  const byUser = new Map<string, Set<string>>(tenant.users.map((u) => [u.id, new Set(u.scopes)]));
  for (const g of tenant.groups) for (const m of g.members) for (const s of g.scopes) byUser.get(m)?.add(s);
  return new Map([...byUser].map(([id, scopes]) => [id, [...scopes].sort()]));
}

/** Per application name, the ids of the users assigned to it (directly or through groups), sorted. */
export function assignmentsOf(tenant: TenantSpec): Map<string, string[]> {
  const members = new Map(tenant.groups.map((g) => [g.name, g.members]));
  const out = new Map<string, string[]>();
  for (const as of tenant.assignments) {
    const users = new Set(as.users);
    for (const gName of as.groups) for (const m of members.get(gName) ?? []) users.add(m);
    out.set(as.application, [...users].sort());
  }
  return out;
}

export function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
