/**
 * Semantic checks that run after the schema: unique names, references that resolve, the
 * redirect-URI rules of RFC 9700, kind-specific rules, scopes that are defined. Pure; collects
 * every problem instead of stopping at the first.
 */
import type { LoginPolicyBody } from './admin-api.ts';
import { BUILTIN_SCOPES, type Model, type TenantSpec } from './model.ts';
import { suggest, type PathSegment, type Problem } from './problems.ts';

type Path = readonly PathSegment[];

function problem(code: string, path: Path, message: string, extra: Pick<Problem, 'related' | 'ref'> = {}): Problem {
  return { code, path, message, ...extra };
}

/** Loopback hosts and `*.localhost` (RFC 6761) are the only places plain http is acceptable. */
export function isLocalHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/**
 * An absolute URL fit to be (or to derive) a redirect URI: http(s) only, https unless local, no
 * wildcard, no fragment, no credentials (RFC 9700 §2.1, §4.1.1; RFC 6749 §3.1.2).
 */
export function checkRedirectUrl(value: string, path: Path, opts: { originOnly?: boolean } = {}): Problem[] {
  if (value.includes('*')) return [problem('wildcard-url', path, `redirect URIs are matched exactly: wildcards are not allowed in ${JSON.stringify(value)}`)];
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return [problem('invalid-url', path, `${JSON.stringify(value)} is not an absolute URL`)];
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return [problem('invalid-url', path, `${JSON.stringify(value)} must use https (or http on localhost), not ${u.protocol.slice(0, -1)}`)];
  }
  const out: Problem[] = [];
  if (u.protocol === 'http:' && !isLocalHost(u.hostname)) {
    out.push(problem('insecure-url', path, `${JSON.stringify(value)} must use https: plain http is allowed only for localhost, *.localhost and loopback addresses`));
  }
  if (value.includes('#')) out.push(problem('url-fragment', path, `${JSON.stringify(value)} must not contain a fragment (#...)`));
  if (u.username !== '' || u.password !== '') out.push(problem('url-credentials', path, `${JSON.stringify(value)} must not contain credentials`));
  if (opts.originOnly && (u.pathname !== '/' || u.search !== '' || /^[a-z]+:\/\/[^/]+\/./i.test(value))) {
    out.push(problem('not-an-origin', path, `${JSON.stringify(value)} must be an origin (scheme, host and port) without a path or query`));
  }
  return out;
}

function checkUnique<T>(items: readonly T[], key: (t: T) => string, base: Path, field: string, what: string): Problem[] {
  const seen = new Map<string, number>();
  const out: Problem[] = [];
  items.forEach((item, i) => {
    const k = key(item);
    const first = seen.get(k);
    if (first === undefined) seen.set(k, i);
    // The loader appends where the first one is, as file:line:col.
    else out.push(problem('duplicate-name', [...base, i, field], `${what} ${JSON.stringify(k)} is already defined`, { related: [...base, first, field] }));
  });
  return out;
}

function checkRefs(values: readonly string[], known: ReadonlySet<string>, path: Path, what: string, where: string): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  values.forEach((v, i) => {
    if (seen.has(v)) out.push(problem('duplicate-entry', [...path, i], `${what} ${JSON.stringify(v)} is listed twice`));
    seen.add(v);
    if (!known.has(v)) {
      const hint = suggest(v, known);
      out.push(problem('unknown-reference', [...path, i], `${what} ${JSON.stringify(v)} is not defined in ${where}${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`, { ref: v }));
    }
  });
  return out;
}

/**
 * Rules of a tenant's sign-in policy, beyond its schema. The admin API runs them too, so a policy
 * that would lock everyone out never reaches a server by any path.
 */
export function checkLoginPolicy(policy: LoginPolicyBody, lp: Path): Problem[] {
  const out: Problem[] = [];
  const mp: Path = [...lp, 'methods'];
  const seen = new Set<string>();
  policy.methods.forEach((m, i) => {
    if (seen.has(m)) out.push(problem('duplicate-entry', [...mp, i], `login method '${m}' is listed twice`));
    seen.add(m);
  });
  const has = (m: string) => seen.has(m);
  if (!has('password') && !has('otp') && !has('passkey')) {
    out.push(problem('login-no-first-factor', mp, 'login methods must include password, otp or passkey: totp only confirms a person another method identified'));
  }
  if (policy.requireSecondFactor) {
    // Each identifying method other than a passkey needs a different factor to follow it.
    if (has('password') && !has('totp') && !has('otp')) {
      out.push(problem('login-no-second-factor', [...lp, 'requireSecondFactor'], 'a second factor is required, but nothing can follow a password: allow totp or otp as well (a passkey alone counts as two factors)'));
    }
    // otp can follow a password; it can start only when totp can follow it.
    if (has('otp') && !has('totp') && !has('password')) {
      out.push(problem('login-no-second-factor', [...lp, 'requireSecondFactor'], 'a second factor is required, but nothing can follow an emailed code (otp): allow totp as well, or password for the code to follow'));
    }
  } else if (has('totp')) {
    out.push(problem('login-unused-method', mp, "totp only confirms a person after another method: set 'requireSecondFactor: true' or remove totp"));
  }
  return out;
}

function checkTenant(t: TenantSpec, tp: Path): Problem[] {
  const out: Problem[] = [];
  const where = `tenant '${t.name}'`;
  if (t.login !== undefined) out.push(...checkLoginPolicy(t.login, [...tp, 'login']));
  out.push(...checkUnique(t.scopes, (s) => s.name, [...tp, 'scopes'], 'name', 'scope'));
  t.scopes.forEach((s, i) => {
    if (BUILTIN_SCOPES.includes(s.name)) out.push(problem('builtin-scope', [...tp, 'scopes', i, 'name'], `scope '${s.name}' is built in and must not be redefined`));
  });
  out.push(...checkUnique(t.users, (u) => u.id, [...tp, 'users'], 'id', 'user id'));
  out.push(...checkUnique(t.users, (u) => u.email.toLowerCase(), [...tp, 'users'], 'email', 'email'));
  out.push(...checkUnique(t.groups, (g) => g.name, [...tp, 'groups'], 'name', 'group'));
  out.push(...checkUnique(t.applications, (a) => a.name, [...tp, 'applications'], 'name', 'application'));
  out.push(...checkUnique(t.applications.filter((a) => a.kind !== 'api'), (a) => a.clientId ?? a.name, [...tp, 'applications'], 'clientId', 'client id'));

  const custom = new Set(t.scopes.map((s) => s.name));
  const allScopes = new Set([...BUILTIN_SCOPES, ...custom]);
  const userIds = new Set(t.users.map((u) => u.id));
  const groupNames = new Set(t.groups.map((g) => g.name));
  const appsByName = new Map(t.applications.map((a) => [a.name, a]));
  const apiNames = new Set(t.applications.filter((a) => a.kind === 'api').map((a) => a.name));

  t.users.forEach((u, i) => out.push(...checkRefs(u.scopes, custom, [...tp, 'users', i, 'scopes'], 'scope', where)));
  t.groups.forEach((g, i) => {
    out.push(...checkRefs(g.members, userIds, [...tp, 'groups', i, 'members'], 'user', where));
    out.push(...checkRefs(g.scopes, custom, [...tp, 'groups', i, 'scopes'], 'scope', where));
  });

  t.applications.forEach((a, i) => {
    const ap: Path = [...tp, 'applications', i];
    if (a.clientSecret !== undefined) {
      out.push(
        problem(
          'secret-in-model',
          [...ap, 'clientSecret'],
          a.kind === 'spa'
            ? 'a single-page app is a public client and never has a client secret'
            : a.kind === 'api'
              ? 'an api is a resource server and has no client secret'
              : 'client secrets never belong in the model (it lives in Git): idforge generates them and keeps them out of Git',
        ),
      );
    }
    if (a.kind === 'api') {
      out.push(...checkRefs(a.routes.flatMap((r) => r.scopes), allScopes, [...ap, 'routes'], 'scope', where).map((p) => routeScopePath(p, a.routes, ap)));
      out.push(...checkUnique(a.routes, (r) => r.path, [...ap, 'routes'], 'path', 'route'));
      a.routes.forEach((r, j) => {
        if (a.publicRoutes.includes(r.path)) out.push(problem('route-conflict', [...ap, 'routes', j, 'path'], `route ${r.path} is also listed in publicRoutes: a route is either public or protected`));
      });
      if (a.origin !== undefined) out.push(...checkRedirectUrl(a.origin, [...ap, 'origin'], { originOnly: true }));
      return;
    }
    out.push(...checkRedirectUrl(a.origin, [...ap, 'origin'], { originOnly: true }));
    a.redirectUris.forEach((r, j) => out.push(...checkRedirectUrl(r, [...ap, 'redirectUris', j])));
    out.push(...checkRefs(a.scopes, allScopes, [...ap, 'scopes'], 'scope', where));
    if (!a.scopes.includes('openid')) out.push(problem('missing-openid', [...ap, 'scopes'], "scopes must include 'openid': sign-in is OpenID Connect"));
    if (a.kind === 'proxy') {
      try {
        const up = new URL(a.upstream);
        if (up.protocol !== 'http:' && up.protocol !== 'https:') throw new Error();
      } catch {
        out.push(problem('invalid-url', [...ap, 'upstream'], `${JSON.stringify(a.upstream)} is not an absolute http(s) URL`));
      }
    }
    if (a.kind === 'spa') {
      a.audience.forEach((name, j) => {
        const target = appsByName.get(name);
        if (target === undefined) {
          const hint = suggest(name, apiNames);
          out.push(problem('unknown-reference', [...ap, 'audience', j], `audience ${JSON.stringify(name)} is not an application of ${where}${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`, { ref: name }));
        } else if (target.kind !== 'api') {
          out.push(problem('wrong-kind', [...ap, 'audience', j], `audience ${JSON.stringify(name)} is a ${target.kind} application; an audience must name an api application`));
        }
      });
      if (a.scopes.includes('offline') && !a.offline) {
        out.push(problem('offline-mismatch', [...ap, 'scopes'], "scope 'offline' asks for refresh tokens: set 'offline: true' instead of listing it"));
      }
    }
  });

  const assigned = new Map<string, number>();
  t.assignments.forEach((as, i) => {
    const asp: Path = [...tp, 'assignments', i];
    const app = appsByName.get(as.application);
    if (app === undefined) {
      const hint = suggest(as.application, appsByName.keys());
      out.push(problem('unknown-reference', [...asp, 'application'], `application ${JSON.stringify(as.application)} is not defined in ${where}${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`, { ref: as.application }));
    } else if (app.kind === 'api') {
      out.push(problem('wrong-kind', [...asp, 'application'], `'${app.name}' is an api: users are assigned to the applications they sign in to (web, proxy, spa), not to APIs`));
    }
    const firstEntry = assigned.get(as.application);
    if (firstEntry !== undefined) {
      out.push(problem('duplicate-name', [...asp, 'application'], `application '${as.application}' already has an assignment entry (list all its users and groups in one)`, { related: [...tp, 'assignments', firstEntry, 'application'] }));
    } else assigned.set(as.application, i);
    out.push(...checkRefs(as.users, userIds, [...asp, 'users'], 'user', where));
    out.push(...checkRefs(as.groups, groupNames, [...asp, 'groups'], 'group', where));
    if (as.users.length === 0 && as.groups.length === 0) out.push(problem('empty-assignment', asp, `assignment of '${as.application}' names no users and no groups`));
  });
  return out;
}

/** Route scope problems were computed on a flattened list; point them back at routes[j].scopes[k]. */
function routeScopePath(p: Problem, routes: ReadonlyArray<{ scopes: readonly string[] }>, ap: Path): Problem {
  let flat = p.path.at(-1) as number;
  for (let j = 0; j < routes.length; j++) {
    const n = routes[j]!.scopes.length;
    if (flat < n) return { ...p, path: [...ap, 'routes', j, 'scopes', flat] };
    flat -= n;
  }
  return p;
}

export function checkModel(model: Model): Problem[] {
  const out: Problem[] = [];
  const { server } = model;
  if (server.scheme === 'http' && !isLocalHost(server.baseDomain)) {
    out.push(problem('insecure-url', ['server', 'scheme'], `scheme http is allowed only when baseDomain is localhost; '${server.baseDomain}' needs https`));
  }
  out.push(...checkUnique(model.tenants, (t) => t.name, ['tenants'], 'name', 'tenant'));
  model.tenants.forEach((t, i) => out.push(...checkTenant(t, ['tenants', i])));
  return out;
}
