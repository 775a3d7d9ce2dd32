/**
 * The protocol as relying parties see it: openid-client over real HTTP against a fixture tenant,
 * tokens verified with jose against the tenant's published JWKS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, errors as joseErrors, type JSONWebKeySet } from 'jose';
import { routePath } from '../../src/contract/index.ts';
import { PROXY_ID_TOKEN_LIFETIME, discoveryUrl, jwksUrl } from '../../src/contract/index.ts';
import {
  Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, pkceParams, relyingParty, testServer,
  type AdminClient, type Fixture,
} from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
let globex: Fixture;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  globex = await fixtureTenant(admin, 'globex');
});
afterAll(async () => {
  await server?.dispose();
});

/** Verifies as a resource server would: the tenant's published JWKS, its issuer, the API audience. */
async function verifyAccessToken(token: string, tenant: string, audience: string) {
  const res = await localhostFetch(jwksUrl(server.address, tenant));
  const keys = createLocalJWKSet((await res.json()) as JSONWebKeySet);
  return jwtVerify(token, keys, { issuer: server.issuer(tenant), audience, typ: 'at+jwt' });
}

describe('discovery and keys', () => {
  it('serves discovery and JWKS at the contract paths', async () => {
    const d = await localhostFetch(discoveryUrl(server.address, 'acme'));
    expect(d.status).toBe(200);
    const doc = (await d.json()) as Record<string, unknown>;
    expect(doc.issuer).toBe(`http://acme.localhost:${server.port}/oauth2/`);
    expect(doc.jwks_uri).toBe(`http://acme.localhost:${server.port}/oauth2/.well-known/jwks.json`);
    expect(doc.token_endpoint).toBe(`http://acme.localhost:${server.port}/oauth2/token`);
    expect(doc.authorization_endpoint).toBe(`http://acme.localhost:${server.port}/oauth2/auth`);
    expect(doc.userinfo_endpoint).toBe(`http://acme.localhost:${server.port}/oauth2/me`);
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
    const j = await localhostFetch(jwksUrl(server.address, 'acme'));
    const keys = ((await j.json()) as { keys: { kid: string; d?: string; alg: string }[] }).keys;
    // The active key and the pre-published next key; never private material.
    expect(keys).toHaveLength(2);
    expect(keys.every((k) => k.d === undefined && k.alg === 'RS256')).toBe(true);
  });

  it('tenants publish disjoint key sets', async () => {
    const kids = async (t: string) =>
      (((await (await localhostFetch(jwksUrl(server.address, t))).json()) as { keys: { kid: string }[] }).keys).map((k) => k.kid);
    const a = await kids('acme');
    const g = await kids('globex');
    expect(a.filter((k) => g.includes(k))).toEqual([]);
  });

  it('answers an unknown tenant with a clear 404', async () => {
    const res = await localhostFetch(discoveryUrl(server.address, 'nosuch'));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'unknown_tenant', message: "no tenant named 'nosuch' exists on this server", path: '' });
  });
});

describe('confidential client (web)', () => {
  it('authorization code flow: login form, code, JWT access token with scp, ID token with email, userinfo', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const browser = new Browser();
    const { callback, verifier, state, pages } = await authorize(config, browser, acme.web.redirectUri, { email: acme.users.alice.email, password: PASSWORD }, {
      scope: 'openid profile email admin',
    });
    expect(pages[0]).toContain('acme Inc.');
    expect(pages[0]).toContain('name="csrf"');
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const claims = tokens.claims()!;
    expect(claims.sub).toBe('u-alice');
    expect(claims.email).toBe(acme.users.alice.email);
    expect(claims.email_verified).toBe(true);
    expect(claims.name).toBe('alice');
    expect(claims.exp - claims.iat).toBe(60 * 60);
    const { payload, protectedHeader } = await verifyAccessToken(tokens.access_token, 'acme', acme.api);
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload.sub).toBe('u-alice');
    expect(payload.client_id).toBe(acme.web.clientId);
    expect(payload.scp).toEqual(expect.arrayContaining(['openid', 'profile', 'email', 'admin']));
    expect(Array.isArray(payload.scp)).toBe(true);
    for (const c of ['iss', 'sub', 'aud', 'client_id', 'exp', 'iat', 'jti']) expect(payload).toHaveProperty(c);
    // No `offline` asked, no refresh token.
    expect(tokens.refresh_token).toBeUndefined();
  });

  it('a client without an audience (reverse proxy) gets a userinfo token; userinfo serves sub, email, name', async () => {
    const secret = 'acme-proxy-secret-0123456789abcdefghijkl';
    await admin.put(routePath('getApplication', { tenant: 'acme', application: 'wiki' }), {
      kind: 'proxy', clientId: 'acme-wiki', clientSecret: secret, redirectUris: ['https://wiki.acme.test/oauth2/callback'], scopes: ['openid', 'email', 'profile'],
    });
    await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'wiki', userId: acme.users.alice.id }), {});
    const config = await relyingParty(server.issuer('acme'), 'acme-wiki', secret);
    const { callback, verifier, state } = await authorize(config, new Browser(), 'https://wiki.acme.test/oauth2/callback', { email: acme.users.alice.email, password: PASSWORD }, {
      scope: 'openid email profile',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()).toMatchObject({ sub: 'u-alice', email: acme.users.alice.email, email_verified: true });
    // A proxy's ID token is short-lived, so a refused refresh ends its session (contract/tokens.ts); other clients' live an hour.
    const claims = tokens.claims()!;
    expect(claims.exp - claims.iat).toBe(PROXY_ID_TOKEN_LIFETIME);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'u-alice');
    expect(info).toMatchObject({ sub: 'u-alice', email: acme.users.alice.email, email_verified: true, name: 'alice' });
  });

  it('accepts client_secret_post too, and rejects a wrong secret', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret, 'post');
    const browser = new Browser();
    const { callback, verifier, state } = await authorize(config, browser, acme.web.redirectUri, { email: acme.users.carol.email, password: PASSWORD });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()!.sub).toBe('u-carol');

    const wrong = await relyingParty(server.issuer('acme'), acme.web.clientId, `${acme.web.clientSecret}x`);
    const again = await authorize(wrong, new Browser(), acme.web.redirectUri, { email: acme.users.carol.email, password: PASSWORD });
    const err = await oidc.authorizationCodeGrant(wrong, again.callback, { pkceCodeVerifier: again.verifier, expectedState: again.state })
      .then(() => undefined, (e: unknown) => e as { status?: number; cause?: { parameters?: { error?: string } }[] });
    // A 401 with a WWW-Authenticate challenge (RFC 6749 §5.2 for client_secret_basic).
    expect(err?.status).toBe(401);
    expect(err?.cause?.[0]?.parameters?.error).toBe('invalid_client');
  });

  it('grants a custom scope only to users who hold it', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const { callback, verifier, state } = await authorize(config, new Browser(), acme.web.redirectUri, { email: acme.users.carol.email, password: PASSWORD }, {
      scope: 'openid email admin',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const { payload } = await verifyAccessToken(tokens.access_token, 'acme', acme.api);
    expect(payload.scp).toContain('openid');
    expect(payload.scp).not.toContain('admin');
  });

  it('does not tell which part of the credentials was wrong', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const pagesFor = async (email: string, password: string) => {
      const browser = new Browser();
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: oidc.randomState(), ...(await pkceParams()) });
      const login = await browser.follow(url.href, acme.web.redirectUri);
      const after = await browser.submit(login.url, login.html!, '/login', { email, password }, acme.web.redirectUri);
      return { status: after.response?.status, html: after.html! };
    };
    const unknownUser = await pagesFor('nobody@acme.test', PASSWORD);
    const wrongPassword = await pagesFor(acme.users.alice.email, 'wrong password!');
    expect(unknownUser.status).toBe(401);
    expect(wrongPassword.status).toBe(401);
    const message = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
    expect(message(unknownUser.html)).toBe('Invalid email or password.');
    expect(message(wrongPassword.html)).toBe(message(unknownUser.html));
  });

  it('refuses a login form without its CSRF token', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const browser = new Browser();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: oidc.randomState(), ...(await pkceParams()) });
    const login = await browser.follow(url.href, acme.web.redirectUri);
    const after = await browser.submit(login.url, login.html!, '/login', { email: acme.users.alice.email, password: PASSWORD, csrf: 'forged' }, acme.web.redirectUri);
    expect(after.response?.status).toBe(403);
    expect(after.html).toContain('could not be verified');
  });
});

describe('public client (SPA)', () => {
  it('requires PKCE', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.spa.redirectUri, scope: 'openid', state: 'x' });
    const step = await new Browser().follow(url.href, acme.spa.redirectUri);
    const back = new URL(step.url);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toMatch(/PKCE|code_challenge/);
  });

  it('code + PKCE, refresh tokens with `offline`, rotated on every use', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const browser = new Browser();
    const { callback, verifier, state } = await authorize(config, browser, acme.spa.redirectUri, { email: acme.users.alice.email, password: PASSWORD }, {
      scope: 'openid profile email offline admin',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toBeTypeOf('string');
    const { payload } = await verifyAccessToken(tokens.access_token, 'acme', acme.api);
    expect(payload.scp).toEqual(expect.arrayContaining(['openid', 'offline', 'admin']));
    expect(payload.client_id).toBe(acme.spa.clientId);

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTypeOf('string');
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const again = await verifyAccessToken(refreshed.access_token, 'acme', acme.api);
    expect(again.payload.sub).toBe('u-alice');
    // Replaying the used token (test/server/refresh-reuse.test.ts: within the reuse grace it
    // works once more; later it is taken for theft and ends the grant).
  });

  it('no refresh token without `offline`', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const { callback, verifier, state } = await authorize(config, new Browser(), acme.spa.redirectUri, { email: acme.users.carol.email, password: PASSWORD }, {
      scope: 'openid',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toBeUndefined();
  });
});

describe('tenant isolation', () => {
  it("a token of tenant A fails against tenant B's JWKS and issuer", async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const { callback, verifier, state } = await authorize(config, new Browser(), acme.web.redirectUri, { email: acme.users.alice.email, password: PASSWORD });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const res = await localhostFetch(jwksUrl(server.address, 'globex'));
    const globexKeys = createLocalJWKSet((await res.json()) as JSONWebKeySet);
    await expect(jwtVerify(tokens.access_token, globexKeys)).rejects.toBeInstanceOf(joseErrors.JWKSNoMatchingKey);
    // And the issuer differs too, so even a verifier that ignores kid would refuse it.
    expect(decodeJwt(tokens.access_token).iss).not.toBe(server.issuer('globex'));
    await expect(verifyAccessToken(tokens.access_token, 'globex', globex.api)).rejects.toThrow();
  });

  it('a client of tenant A does not exist at tenant B', async () => {
    const config = await relyingParty(server.issuer('globex'), acme.web.clientId, acme.web.clientSecret);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: 'x' });
    const step = await new Browser().follow(url.href, acme.web.redirectUri);
    expect(step.response?.status).toBe(400);
    expect(step.html).toContain('invalid_client');
  });
});

describe('assignments', () => {
  it('an unassigned user sees why, then the client gets access_denied', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const { callback, state, pages } = await authorize(config, new Browser(), acme.web.redirectUri, { email: acme.users.bob.email, password: PASSWORD });
    expect(pages[1]).toContain('not assigned');
    expect(pages[1]).toContain('Portal');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(state);
  });

  it('a user signed in for one app is still denied an app they are not assigned to', async () => {
    // alice is assigned to web; make a third client she is not assigned to.
    await admin.put(routePath('getApplication', { tenant: 'acme', application: 'other' }), {
      kind: 'web', clientId: 'acme-other', clientSecret: 'acme-other-secret-0123456789abcdefghijkl', redirectUris: ['https://other.acme.test/cb'],
    });
    const browser = new Browser();
    const web = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    await authorize(web, browser, acme.web.redirectUri, { email: acme.users.alice.email, password: PASSWORD });
    const other = await relyingParty(server.issuer('acme'), 'acme-other', 'acme-other-secret-0123456789abcdefghijkl');
    // Same browser, existing session: no login form, straight to the explanation page.
    const { callback, pages } = await authorize(other, browser, 'https://other.acme.test/cb', undefined);
    expect(pages[0]).toContain('not assigned');
    expect(callback.searchParams.get('error')).toBe('access_denied');
  });

  it('removing an assignment ends that user\'s refresh tokens for that application', async () => {
    const config = await relyingParty(server.issuer('globex'), globex.spa.clientId);
    const { callback, verifier, state } = await authorize(config, new Browser(), globex.spa.redirectUri, { email: globex.users.carol.email, password: PASSWORD }, {
      scope: 'openid offline',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const first = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const del = await admin.call('DELETE', routePath('getAssignment', { tenant: 'globex', application: 'spa', userId: globex.users.carol.id }));
    expect(del.status).toBe(204);
    await expect(oidc.refreshTokenGrant(config, first.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
  });
});

describe('key rotation', () => {
  it('after a rotation new tokens are signed by the key published before; old tokens still verify', async () => {
    const config = await relyingParty(server.issuer('globex'), globex.web.clientId, globex.web.clientSecret);
    const login = { email: globex.users.alice.email, password: PASSWORD };
    const before = await authorize(config, new Browser(), globex.web.redirectUri, login);
    const oldTokens = await oidc.authorizationCodeGrant(config, before.callback, { pkceCodeVerifier: before.verifier, expectedState: before.state });
    const keys = (await admin.call('GET', '/admin/v1/tenants/globex/keys')).body.items as { kid: string; state: string }[];
    const next = keys.find((k) => k.state === 'next')!.kid;
    expect((await admin.call('POST', '/admin/v1/tenants/globex/keys/rotate')).status).toBe(200);

    const after = await authorize(config, new Browser(), globex.web.redirectUri, login);
    const newTokens = await oidc.authorizationCodeGrant(config, after.callback, { pkceCodeVerifier: after.verifier, expectedState: after.state });
    expect(decodeProtectedHeader(newTokens.access_token).kid).toBe(next);
    expect(decodeProtectedHeader(newTokens.id_token!).kid).toBe(next);
    await verifyAccessToken(oldTokens.access_token, 'globex', globex.api);
    await verifyAccessToken(newTokens.access_token, 'globex', globex.api);
  });
});

describe('disabled users', () => {
  it('disabling a user ends their refresh tokens, and they cannot sign in', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.spa.clientId);
    const login = { email: acme.users.carol.email, password: PASSWORD };
    const { callback, verifier, state } = await authorize(config, new Browser(), acme.spa.redirectUri, login, { scope: 'openid offline' });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    await admin.put(routePath('getUser', { tenant: 'acme', userId: acme.users.carol.id }), { email: acme.users.carol.email, displayName: 'carol', disabled: true });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    const again = await authorize(config, new Browser(), acme.spa.redirectUri, login, { scope: 'openid' });
    // The login page answered "invalid credentials" (no hint that the account exists), then the
    // person cancelled: the client hears access_denied.
    expect(again.pages[1]).toContain('Invalid email or password.');
    expect(again.callback.searchParams.get('error')).toBe('access_denied');
  });
});
