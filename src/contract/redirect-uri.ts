/**
 * The redirect-URI rule (RFC 9700 §2.1 and §4.1.1, RFC 6749 §3.1.2): one function, run by every door
 * with the same messages: the model loader on origins and extra redirect URIs, the admin API on
 * every body's redirectUris and postLogoutRedirectUris, the Pulumi providers' check, the console.
 */
import { isLocalHost } from './hosts.ts';
import { problem, type Path, type Problem } from './problems.ts';

/** Longest URL accepted anywhere a redirect URI goes. */
export const MAX_URL_LENGTH = 2048;

/**
 * An absolute URL fit to be (or to derive) a redirect URI: http(s) only, https unless local, matched
 * exactly (no wildcard), no fragment, no credentials, written in normal form (no dot segments, which
 * a browser would resolve to another path than the one registered). With `originOnly`, scheme, host
 * and port only.
 */
export function checkRedirectUrl(value: string, path: Path, opts: { readonly originOnly?: boolean } = {}): Problem[] {
  const shown = JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}...` : value);
  if (value.length > MAX_URL_LENGTH) return [problem('invalid-url', path, `${shown} is longer than ${MAX_URL_LENGTH} characters`)];
  if (value.includes('*')) return [problem('wildcard-url', path, `redirect URIs are matched exactly: wildcards are not allowed in ${shown}`)];
  // `portal.localhost:3000` parses as a URL of scheme "portal.localhost:", so look before parsing.
  if (/^[a-z0-9][a-z0-9.-]*(?::\d+)?(?:[/?]|$)/i.test(value)) {
    const scheme = isLocalHost(value.split(/[:/?]/)[0]!) ? 'http' : 'https';
    return [problem('missing-scheme', path, `${shown} has no scheme: write ${scheme}://${value}`)];
  }
  const u = URL.parse(value);
  if (u === null) return [problem('invalid-url', path, `${shown} is not an absolute URL`)];
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return [problem('invalid-url', path, `${shown} must use https (or http on localhost), not ${u.protocol.slice(0, -1)}`)];
  }
  const out: Problem[] = [];
  if (u.protocol === 'http:' && !isLocalHost(u.hostname)) {
    out.push(problem('insecure-url', path, `${shown} must use https: plain http is allowed only for localhost, *.localhost and loopback addresses`));
  }
  if (value.includes('#')) out.push(problem('url-fragment', path, `${shown} must not contain a fragment (#...)`));
  if (u.username !== '' || u.password !== '') out.push(problem('url-credentials', path, `${shown} must not contain credentials`));
  if (/\/\.{1,2}(?:[/?#]|$)/.test(value.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, ''))) {
    out.push(problem('url-dot-segments', path, `${shown} must not contain "." or ".." path segments: redirect URIs are compared as written`));
  }
  if (opts.originOnly && (u.pathname !== '/' || u.search !== '' || /^[a-z]+:\/\/[^/]+\/./i.test(value))) {
    out.push(problem('not-an-origin', path, `${shown} must be an origin (scheme, host and port) without a path or query`));
  }
  return out;
}
