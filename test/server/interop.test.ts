/**
 * What standard clients nobody here wrote expect of the server (issue 12): openid-client over real
 * HTTP, tokens verified with jose against the published JWKS, pages read as a browser reads them.
 */
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ACCESS_TOKEN_LIFETIME, discoveryUrl, endpointUrl, jwksUrl, routePath } from '../../src/contract/index.ts';
import {
  Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, pkceParams, relyingParty, testServer,
  type AdminClient, type Fixture,
} from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
const proxy = { clientId: 'acme-wiki', clientSecret: 'acme-wiki-secret-0123456789abcdefghijkl', redirectUri: 'https://wiki.acme.test/oauth2/callback' };

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  // A reverse proxy naming the API as its audience, as the model now lets it.
  await admin.put(routePath('getApplication', { tenant: 'acme', application: 'wiki' }), {
    kind: 'proxy', clientId: proxy.clientId, clientSecret: proxy.clientSecret, redirectUris: [proxy.redirectUri],
    scopes: ['openid', 'email', 'profile', 'offline'], audience: [acme.api],
  });
  for (const user of [acme.users.alice, acme.users.carol]) {
    await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'wiki', userId: user.id }), {});
  }
});
afterAll(async () => {
  await server?.dispose();
});

const alice = () => ({ email: acme.users.alice.email, password: PASSWORD });

async function verifyForApi(token: string) {
  const keys = createLocalJWKSet((await (await localhostFetch(jwksUrl(server.address, 'acme'))).json()) as JSONWebKeySet);
  return (await jwtVerify(token, keys, { issuer: server.issuer('acme'), audience: acme.api, typ: 'at+jwt' })).payload;
}

/** Signs `login` in through `clientId`'s code flow and redeems the code. */
async function tokensFor(config: oidc.Configuration, redirectUri: string, login: { email: string; password: string } | undefined, params: Record<string, string>, browser = new Browser()) {
  const flow = await authorize(config, browser, redirectUri, login, params);
  expect(flow.callback.searchParams.get('error'), flow.callback.href).toBeNull();
  return oidc.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
}

describe('JWT access tokens for web apps and proxies (1)', () => {
  it('a proxy with an audience gets a JWT with scp for its API, and a refresh token', async () => {
    const config = await relyingParty(server.issuer('acme'), proxy.clientId, proxy.clientSecret);
    const tokens = await tokensFor(config, proxy.redirectUri, alice(), { scope: 'openid email profile offline' });
    expect(tokens.access_token.split('.')).toHaveLength(3);
    const claims = await verifyForApi(tokens.access_token);
    expect(claims).toMatchObject({ sub: acme.users.alice.id, client_id: proxy.clientId, scp: expect.arrayContaining(['openid', 'email']) });
    expect(tokens.refresh_token).toBeTypeOf('string');
    // A refresh brings a fresh JWT for the same API.
    expect(await verifyForApi((await oidc.refreshTokenGrant(config, tokens.refresh_token!)).access_token)).toMatchObject({ sub: acme.users.alice.id });
  });

  it('accepts resource= naming the audience, and refuses one the client may not name', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const tokens = await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid offline', resource: acme.api });
    expect(await verifyForApi(tokens.access_token)).toMatchObject({ client_id: acme.web.clientId });
    const flow = await authorize(config, new Browser(), acme.web.redirectUri, alice(), { scope: 'openid', resource: 'https://other.acme.test' });
    expect(flow.callback.searchParams.get('error')).toBe('invalid_target');
  });

  it('the same JWT reads userinfo (grant fetches the profile with it), only for the scopes it holds', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const tokens = await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid email' });
    const aud = [decodeJwt(tokens.access_token).aud].flat();
    expect(aud).toEqual([acme.api, endpointUrl(server.address, 'acme', 'userinfo')]);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, acme.users.alice.id);
    expect(info).toEqual({ sub: acme.users.alice.id, email: acme.users.alice.email, email_verified: true });

    // Forged or foreign tokens are refused as invalid_token.
    const forged = `${tokens.access_token.slice(0, -4)}AAAA`;
    const res = await localhostFetch(endpointUrl(server.address, 'acme', 'userinfo'), { headers: { authorization: `Bearer ${forged}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('a JWT of a user whose assignment was removed no longer reads userinfo', async () => {
    const config = await relyingParty(server.issuer('acme'), proxy.clientId, proxy.clientSecret);
    const tokens = await tokensFor(config, proxy.redirectUri, { email: acme.users.carol.email, password: PASSWORD }, { scope: 'openid email' });
    await admin.call('DELETE', routePath('getAssignment', { tenant: 'acme', application: 'wiki', userId: acme.users.carol.id }));
    const res = await localhostFetch(endpointUrl(server.address, 'acme', 'userinfo'), { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(res.status).toBe(401);
    await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'wiki', userId: acme.users.carol.id }), {});
  });
});

describe('offline_access (4)', () => {
  it('is the standard name of offline: a refresh token without prompt=consent', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const tokens = await tokensFor(config, acme.spa.redirectUri, alice(), { scope: 'openid offline_access' });
    expect(tokens.refresh_token).toBeTypeOf('string');
    expect(tokens.scope?.split(' ')).toContain('offline');
  });

  it('at the token endpoint too: a refresh that repeats the scope it asked for, offline_access included (as Authlib sends it)', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const tokens = await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid email offline_access' });
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, { scope: 'openid email offline_access' });
    expect(refreshed.scope?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email', 'offline']));
    // A scope it was not granted is still refused.
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!, { scope: 'openid admin' })).rejects.toMatchObject({ error: 'invalid_scope' });
  });

  it('in an authorization request sent by POST too', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const body = new URLSearchParams({
      client_id: acme.web.clientId, response_type: 'code', redirect_uri: acme.web.redirectUri, scope: 'openid offline_access', state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    });
    const browser = new Browser();
    const login = await browser.follow(config.serverMetadata().authorization_endpoint!, acme.web.redirectUri, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString(),
    });
    const back = await browser.submit(login.url, login.html!, '/login', alice(), acme.web.redirectUri);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toBeTypeOf('string');
  });
});

describe('prompt=consent (3)', () => {
  it('signs an assigned user in and returns a code: the assignment is the consent', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const browser = new Browser();
    const first = await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid email', prompt: 'consent' }, browser);
    expect(first.claims()?.sub).toBe(acme.users.alice.id);
    // Signed in already: no page at all, straight back with a code.
    const again = await authorize(config, browser, acme.web.redirectUri, undefined, { scope: 'openid email offline_access', prompt: 'consent' });
    expect(again.pages).toEqual([]);
    expect(again.callback.searchParams.get('code')).toBeTruthy();
  });

  it('still denies a user who is not assigned, and says why', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const flow = await authorize(config, new Browser(), acme.web.redirectUri, { email: acme.users.bob.email, password: PASSWORD }, { prompt: 'consent' });
    expect(flow.pages[1]).toContain('not assigned');
    expect(flow.callback.searchParams.get('error')).toBe('access_denied');
  });
});

describe('parallel refreshes (5)', () => {
  it('two refreshes with one refresh token both succeed and the session goes on', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const tokens = await tokensFor(config, acme.spa.redirectUri, alice(), { scope: 'openid offline' });
    const [a, b] = await Promise.all([oidc.refreshTokenGrant(config, tokens.refresh_token!), oidc.refreshTokenGrant(config, tokens.refresh_token!)]);
    expect(a.refresh_token).not.toBe(b.refresh_token);
    // Neither tab was signed out: each goes on with its own token.
    await oidc.refreshTokenGrant(config, a.refresh_token!);
    await oidc.refreshTokenGrant(config, b.refresh_token!);
  });
});

describe('discovery (6)', () => {
  it('lists only what clients can use', async () => {
    const doc = (await (await localhostFetch(discoveryUrl(server.address, 'acme'))).json()) as Record<string, unknown>;
    expect(doc.response_types_supported).toEqual(['code']);
    expect(doc.grant_types_supported).not.toContain('implicit');
    expect(doc.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post', 'none']);
    expect(doc).not.toHaveProperty('token_endpoint_auth_signing_alg_values_supported');
    expect(doc).not.toHaveProperty('pushed_authorization_request_endpoint');
    expect(doc).not.toHaveProperty('dpop_signing_alg_values_supported');
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
    expect(doc.scopes_supported).toEqual(expect.arrayContaining(['openid', 'offline', 'offline_access']));
  });
});

describe('introspection (6)', () => {
  it("a confidential client may introspect its own tokens, not another client's", async () => {
    const web = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const wiki = await relyingParty(server.issuer('acme'), proxy.clientId, proxy.clientSecret);
    const tokens = await tokensFor(web, acme.web.redirectUri, alice(), { scope: 'openid offline' });
    expect(await oidc.tokenIntrospection(web, tokens.refresh_token!)).toMatchObject({ active: true, sub: acme.users.alice.id, client_id: acme.web.clientId });
    expect(await oidc.tokenIntrospection(wiki, tokens.refresh_token!)).toEqual({ active: false });
  });
});

describe('PKCE (6)', () => {
  it('is required of confidential clients too', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: 'x' });
    const step = await new Browser().follow(url.href, acme.web.redirectUri);
    const back = new URL(step.url);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toMatch(/PKCE|code_challenge/);
  });
});

describe('pages the server renders (6)', () => {
  const antiFraming = (res: Response) => {
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
  };

  it('the error page refuses to be framed', async () => {
    const res = await localhostFetch(`${server.issuer('acme')}auth?client_id=nobody&response_type=code&scope=openid`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    antiFraming(res);
  });

  it('the logout confirmation and the signed-out page refuse to be framed and load nothing from elsewhere', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const browser = new Browser();
    await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid' }, browser);
    const confirm = await browser.request(`${server.issuer('acme')}session/end`);
    expect(confirm.status).toBe(200);
    antiFraming(confirm);
    const html = await confirm.text();
    expect(html).not.toMatch(/https?:\/\/(?!acme\.localhost)/);
    const done = await browser.submit(`${server.issuer('acme')}session/end`, html, 'session/end/confirm', { logout: 'yes' }, 'https://never.test/');
    expect(done.response?.status).toBe(200);
    antiFraming(done.response!);
    expect(done.html).toContain('signed out');
  });

  it('the form_post answer refuses framing and still runs its own auto-submit script', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const browser = new Browser();
    await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid' }, browser);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: 'x', response_mode: 'form_post', ...(await pkceParams()) });
    const res = await browser.request(url.href);
    expect(res.status).toBe(200);
    antiFraming(res);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self' 'sha256-/);
    expect(await res.text()).toContain('document.forms[0].submit()');
  });
});

describe('access token lifetime', () => {
  it('is 5 minutes by default: clients with a 60 s expiry margin (Authlib, Spring Security) can use a token', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const tokens = await tokensFor(config, acme.web.redirectUri, alice(), { scope: 'openid' });
    const { exp, iat } = decodeJwt(tokens.access_token);
    expect(exp! - iat!).toBe(DEFAULT_ACCESS_TOKEN_LIFETIME);
    expect(DEFAULT_ACCESS_TOKEN_LIFETIME).toBe(300);
  });
});
