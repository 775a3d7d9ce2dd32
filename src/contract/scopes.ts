/**
 * Scope rules, run by the model loader and the admin API with the same messages: a tenant's scope
 * definitions, and the scopes a client may request.
 */
import { BUILTIN_SCOPES } from './names.ts';
import { didYouMean, problem, type Path, type Problem } from './problems.ts';

/** Custom scopes a tenant defines: each once, none named like a built-in scope. `base` is the list's path. */
export function checkScopeDefinitions(scopes: readonly { readonly name: string }[], base: Path): Problem[] {
  const out: Problem[] = [];
  const first = new Map<string, number>();
  scopes.forEach((s, i) => {
    const seen = first.get(s.name);
    if (seen !== undefined) out.push(problem('duplicate-name', [...base, i, 'name'], `scope ${JSON.stringify(s.name)} is already defined`, { related: [...base, seen, 'name'] }));
    else first.set(s.name, i);
    if (BUILTIN_SCOPES.includes(s.name)) out.push(problem('builtin-scope', [...base, i, 'name'], `scope '${s.name}' is built in and must not be redefined`));
  });
  return out;
}

/**
 * Scopes a client requests: each listed once, each known (`known`: built in, defined by the tenant,
 * or offered by an api of its audience), `openid` among them (sign-in is OpenID Connect). `where`
 * names the tenant in messages, e.g. `tenant 'acme'`.
 */
export function checkRequestedScopes(scopes: readonly string[], known: ReadonlySet<string>, path: Path, where: string): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  scopes.forEach((s, i) => {
    if (seen.has(s)) out.push(problem('duplicate-entry', [...path, i], `scope ${JSON.stringify(s)} is listed twice`));
    seen.add(s);
    if (!known.has(s)) out.push(problem('unknown-reference', [...path, i], `scope ${JSON.stringify(s)} is not defined in ${where}${didYouMean(s, known)}`, { ref: s }));
  });
  if (!seen.has('openid')) out.push(problem('missing-openid', path, "scopes must include 'openid': sign-in is OpenID Connect"));
  return out;
}
