/**
 * Semantic checks that run after the schema: unique names, references that resolve, the
 * redirect-URI rules of RFC 9700, kind-specific rules, scopes that are defined. Pure; collects
 * every problem instead of stopping at the first.
 */
import {
  BUILTIN_SCOPES, DNS_LABEL, tenantNameProblem, checkEnvValue, checkLoginPolicy, checkPkcePolicy, checkRedirectUrl, checkRequestedScopes, checkScopeDefinitions, didYouMean,
  isLocalHost, problem, type Path,
} from '../contract/index.ts';
import type { Model, TenantSpec } from './model.ts';
import type { Problem } from './problems.ts';

export { checkRedirectUrl, isLocalHost, checkLoginPolicy };

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
      out.push(problem('unknown-reference', [...path, i], `${what} ${JSON.stringify(v)} is not defined in ${where}${didYouMean(v, known)}`, { ref: v }));
    }
  });
  return out;
}

function checkTenant(t: TenantSpec, tp: Path): Problem[] {
  const out: Problem[] = [];
  const where = `tenant '${t.name}'`;
  if (t.login !== undefined) out.push(...checkLoginPolicy(t.login, [...tp, 'login']));
  out.push(...checkScopeDefinitions(t.scopes, [...tp, 'scopes']));
  out.push(...checkUnique(t.users, (u) => u.id, [...tp, 'users'], 'id', 'user id'));
  out.push(...checkUnique(t.users, (u) => u.email.toLowerCase(), [...tp, 'users'], 'email', 'email'));
  out.push(...checkUnique(t.groups, (g) => g.name, [...tp, 'groups'], 'name', 'group'));
  out.push(...checkUnique(t.applications, (a) => a.name, [...tp, 'applications'], 'name', 'application'));
  out.push(...checkUnique(t.webhooks, (w) => w.name, [...tp, 'webhooks'], 'name', 'webhook'));
  out.push(...checkRenames(t.applications, [...tp, 'applications'], 'application'));
  out.push(...checkUnique(t.applications.filter((a) => a.kind !== 'api'), (a) => a.clientId ?? a.name, [...tp, 'applications'], 'clientId', 'client id'));
  // An api's audience is the resource it stands for: two apis with one audience would be one resource.
  const apis = t.applications.map((a, i) => ({ a, i })).filter((x) => x.a.kind === 'api');
  const firstApi = new Map<string, number>();
  for (const { a, i } of apis) {
    if (a.kind !== 'api') continue;
    const seen = firstApi.get(a.audience);
    if (seen === undefined) firstApi.set(a.audience, i);
    else out.push(problem('duplicate-audience', [...tp, 'applications', i, 'audience'], `audience ${JSON.stringify(a.audience)} is already the audience of api '${t.applications[seen]!.name}': each api needs an audience of its own`, { related: [...tp, 'applications', seen, 'audience'] }));
  }

  // The tenant's display name is oauth2-proxy's provider name in every proxy's oauth2-proxy.env.
  if (t.applications.some((a) => a.kind === 'proxy')) out.push(...checkEnvValue(t.displayName, [...tp, 'displayName'], "its proxy applications' oauth2-proxy.env"));

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
    if (a.kind === 'web' && typeof a.backchannelLogoutUri === 'string') out.push(...checkRedirectUrl(a.backchannelLogoutUri, [...ap, 'backchannelLogoutUri']));
    out.push(...checkPkcePolicy(a.kind, a.pkce, [...ap, 'pkce']));
    out.push(...checkRequestedScopes(a.scopes, allScopes, [...ap, 'scopes'], where));
    if (a.kind === 'proxy') {
      try {
        const up = new URL(a.upstream);
        if (up.protocol !== 'http:' && up.protocol !== 'https:') throw new Error();
      } catch {
        out.push(problem('invalid-url', [...ap, 'upstream'], `${JSON.stringify(a.upstream)} is not an absolute http(s) URL`));
      }
      // The model's words that generators/proxy.ts writes into oauth2-proxy.env, unquoted.
      out.push(...checkEnvValue(a.upstream, [...ap, 'upstream'], 'oauth2-proxy.env'));
      a.emailDomains.forEach((d, j) => out.push(...checkEnvValue(d, [...ap, 'emailDomains', j], 'oauth2-proxy.env')));
    }
    a.audience.forEach((name, j) => {
      const target = appsByName.get(name);
      if (target === undefined) {
        out.push(problem('unknown-reference', [...ap, 'audience', j], `audience ${JSON.stringify(name)} is not an application of ${where}${didYouMean(name, apiNames)}`, { ref: name }));
      } else if (target.kind !== 'api') {
        out.push(problem('wrong-kind', [...ap, 'audience', j], `audience ${JSON.stringify(name)} is a ${target.kind} application; an audience must name an api application`));
      }
    });
    if (a.kind === 'spa') {
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
      out.push(problem('unknown-reference', [...asp, 'application'], `application ${JSON.stringify(as.application)} is not defined in ${where}${didYouMean(as.application, appsByName.keys())}`, { ref: as.application }));
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

/** Declared renames (previousName): from a name nothing of the list has any more, and each only once. */
function checkRenames(items: readonly { readonly name: string; readonly previousName?: string | undefined }[], listPath: Path, noun: string): Problem[] {
  const out: Problem[] = [];
  const current = new Set(items.map((x) => x.name));
  const renamedFrom = new Map<string, number>();
  items.forEach((x, i) => {
    if (x.previousName === undefined) return;
    const at = [...listPath, i, 'previousName'];
    if (current.has(x.previousName)) {
      out.push(problem('rename-clash', at, x.previousName === x.name
        ? `previousName is the ${noun}'s own name: drop it, or give the old name`
        : `${noun} '${x.previousName}' is still in the model: a rename leaves its old name behind`));
    }
    const first = renamedFrom.get(x.previousName);
    if (first !== undefined) out.push(problem('duplicate-name', at, `'${x.previousName}' is already the previous name of another ${noun}`, { related: [...listPath, first, 'previousName'] }));
    else renamedFrom.set(x.previousName, i);
  });
  return out;
}

export function checkModel(model: Model): Problem[] {
  const out: Problem[] = [];
  const { server } = model;
  if (server.scheme === 'http' && !isLocalHost(server.baseDomain)) {
    out.push(problem('insecure-url', ['server', 'scheme'], `scheme http is allowed only when baseDomain is localhost; '${server.baseDomain}' needs https`));
  }
  out.push(...checkUnique(model.tenants, (t) => t.name, ['tenants'], 'name', 'tenant'));
  out.push(...checkRenames(model.tenants, ['tenants'], 'tenant'));
  model.tenants.forEach((t, i) => {
    const bad = DNS_LABEL.test(t.name) ? tenantNameProblem(t.name) : undefined;
    if (bad !== undefined) out.push(problem(bad.code, ['tenants', i, 'name'], bad.message));
  });
  model.tenants.forEach((t, i) => out.push(...checkTenant(t, ['tenants', i])));
  return out;
}
