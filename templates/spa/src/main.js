// A single-page app without a backend: a public OAuth client using the authorization code flow
// with PKCE (oidc-client-ts does both), configured from spa-config.json.
import { InMemoryWebStorage, UserManager, WebStorageStateStore } from 'oidc-client-ts';
import config from '../spa-config.json';

const WELL_KNOWN = '.well-known/openid-configuration';
const audience = Array.isArray(config.audience) ? config.audience : config.audience ? [config.audience] : [];
const scopes = config.scope.split(' ').filter(Boolean);

// The contract's names, mapped onto oidc-client-ts settings:
//   wellknown_endpoint → metadataUrl (and authority, the issuer, which is the URL without the suffix)
//   audience           → resource (RFC 8707 resource indicators), so access tokens name the API
//   cache_type         → userStore: memory by default, sessionStorage to survive a reload
const settings = {
  authority: config.wellknown_endpoint.endsWith(WELL_KNOWN)
    ? config.wellknown_endpoint.slice(0, -WELL_KNOWN.length)
    : config.wellknown_endpoint,
  metadataUrl: config.wellknown_endpoint,
  client_id: config.client_id,
  redirect_uri: config.redirect_uri,
  // Normalised (the root path written out), as the service registers it.
  post_logout_redirect_uri: new URL(config.redirect_uri).href,
  response_type: 'code',
  scope: config.scope,
  resource: audience.length > 0 ? audience : undefined,
  // The token request names one resource so the access token is issued for that API.
  extraTokenParams: audience.length > 0 ? { resource: audience[0] } : undefined,
  userStore: new WebStorageStateStore({
    store: config.cache_type === 'session_storage' ? window.sessionStorage : new InMemoryWebStorage(),
  }),
  // Login state must survive the round trip through the identity service, whatever the cache.
  stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
  // Renewal is scheduled below (half-way through each access token's life), not by the library:
  // its fixed 60 s before expiry would renew without pause when tokens live less than that.
  automaticSilentRenew: false,
  loadUserInfo: false,
};
const offline = scopes.includes('offline') || scopes.includes('offline_access');

const manager = new UserManager(settings);
const $ = (id) => document.getElementById(id);

async function main() {
  $('api-url').value = localStorage.getItem('api-url') || process.env.API_URL || '';
  $('api-url').addEventListener('change', () => localStorage.setItem('api-url', $('api-url').value));
  $('sign-in').addEventListener('click', () => act(() => manager.signinRedirect()));
  $('sign-out').addEventListener('click', () => act(signOut));
  $('sign-out-everywhere').addEventListener('click', () => act(signOutEverywhere));
  $('refresh').addEventListener('click', () => act(refresh));
  for (const button of document.querySelectorAll('[data-api-path]')) {
    button.addEventListener('click', () => act(() => callApi(button.dataset.apiPath)));
  }
  manager.events.addUserLoaded((user) => {
    render(user);
    scheduleRenewal(user);
  });
  manager.events.addUserUnloaded(() => render(null));
  // Without a refresh token (no `offline`), or when renewing failed, the user is signed out when
  // the access token expires: the API would refuse it from then on anyway.
  manager.events.addAccessTokenExpired(() => manager.removeUser());

  const params = new URLSearchParams(location.search);
  if (params.has('state') && (params.has('code') || params.has('error'))) {
    // The identity service sent the browser back to redirect_uri (this page).
    try {
      await manager.signinRedirectCallback();
    } catch (err) {
      showError(err);
    } finally {
      // Drop the code and state from the address bar and history.
      history.replaceState(null, '', location.pathname);
    }
  }
  const user = await manager.getUser();
  render(user);
  scheduleRenewal(user);
}

/**
 * Access tokens are short-lived JWTs (the API checks them offline), so a signed-in user's token is
 * renewed half-way through its life. The renewal is also how this page learns that the identity
 * service ended the user's access (assignment removed, user disabled): it refuses the refresh
 * token, and the user is signed out here at once.
 */
let renewal;
function scheduleRenewal(user) {
  clearTimeout(renewal);
  if (!offline || !user?.refresh_token || user.expired || user.expires_in === undefined) return;
  renewal = setTimeout(() => act(refresh), Math.max(1, user.expires_in / 2) * 1000);
}

async function refresh() {
  const user = await manager.getUser();
  if (!user?.refresh_token) throw new Error('No refresh token: the offline scope was not granted.');
  try {
    // With a refresh token, signinSilent uses the refresh_token grant (no iframe, no redirect).
    await manager.signinSilent({ resource: audience.length > 0 ? audience[0] : undefined });
  } catch (err) {
    // An OAuth error is the service's answer (invalid_grant: access was revoked): sign out. A
    // network failure is not: keep the user until the access token expires.
    if (err?.error) {
      await manager.removeUser();
      throw new Error(`Your session has ended: the identity service refused to renew it (${err.error}${err.error_description ? `: ${err.error_description}` : ''}).`);
    }
    scheduleRenewal(await manager.getUser());
    throw err;
  }
}

async function signOut() {
  clearTimeout(renewal);
  // Revoke the refresh token (the access token is a short-lived JWT, which the service cannot
  // revoke), then forget the user locally.
  await manager.revokeTokens(['refresh_token']).catch(() => undefined);
  await manager.removeUser();
  render(null);
}

async function signOutEverywhere() {
  // Also ends the session at the identity service, which then returns to this page.
  const user = await manager.getUser();
  await manager.removeUser();
  await manager.signoutRedirect({ id_token_hint: user?.id_token });
}

/** The address without trailing slashes (a loop, not /\/+$/, which backtracks quadratically on a run of slashes). */
function trimSlashes(text) {
  let end = text.length;
  while (end > 0 && text[end - 1] === '/') end--;
  return text.slice(0, end);
}

async function callApi(path) {
  const base = trimSlashes($('api-url').value);
  if (!base) throw new Error('Enter the API address first.');
  const user = await manager.getUser();
  const response = await fetch(`${base}${path}`, {
    headers: user ? { Authorization: `Bearer ${user.access_token}` } : {},
  });
  const body = await response.text();
  let shown = body;
  try {
    shown = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // not JSON: show as is
  }
  $('api-result').textContent = `${response.status} ${response.statusText}\n${shown}`;
  $('api-result').dataset.status = String(response.status);
}

function render(user) {
  const signedIn = user != null && !user.expired;
  $('signed-in').hidden = !signedIn;
  $('signed-out').hidden = signedIn;
  $('status').textContent = signedIn ? `Signed in as ${user.profile.email ?? user.profile.sub}` : 'Not signed in';
  $('status').dataset.state = signedIn ? 'signed-in' : 'signed-out';
  if (!signedIn) {
    for (const id of ['profile', 'access-token', 'access-token-claims', 'api-result', 'expires-at', 'scopes', 'has-refresh-token']) $(id).textContent = '';
    return;
  }
  $('profile').textContent = JSON.stringify(user.profile, null, 2);
  $('access-token').textContent = user.access_token;
  $('access-token-claims').textContent = JSON.stringify(decodeJwt(user.access_token), null, 2);
  $('expires-at').textContent = user.expires_at ? new Date(user.expires_at * 1000).toISOString() : 'unknown';
  $('scopes').textContent = user.scope ?? '';
  $('has-refresh-token').textContent = user.refresh_token ? 'yes' : 'no';
  $('refresh').disabled = !user.refresh_token;
}

async function act(fn) {
  $('error').hidden = true;
  try {
    await fn();
  } catch (err) {
    showError(err);
  }
}

function showError(err) {
  // An ErrorResponse from the identity service carries the OAuth error and its description,
  // e.g. access_denied when this user is not assigned to the application.
  const text = err?.error
    ? `Sign-in failed: ${err.error_description ?? err.error} (${err.error})`
    : `Error: ${err?.message ?? String(err)}`;
  $('error').textContent = text;
  $('error').hidden = false;
}

/** For display only: the API, not the SPA, verifies tokens. */
function decodeJwt(token) {
  try {
    const payload = atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(payload, (c) => c.charCodeAt(0))));
  } catch {
    return { note: 'not a JWT' };
  }
}

main().catch(showError);
