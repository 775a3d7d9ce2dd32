/**
 * The "not assigned" page sends the person where they can act: the application's home (its
 * registered post-logout redirect URI, which the model makes its origin), through the tenant's
 * sign-out when they hold a session there, so the application's next sign-in lets them pick
 * another account. An application that registered no such URI hears access_denied (oidc.test.ts).
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointUrl, routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, testServer, type AdminClient, type Fixture } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
const wiki = { clientId: 'acme-wiki', clientSecret: 'acme-wiki-secret-0123456789abcdefghijklmn', redirectUri: 'http://wiki.localhost:4180/oauth2/callback', home: 'http://wiki.localhost:4180/' };

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  // As the model registers a proxy: its callback, and its origin as the post-logout redirect URI.
  await admin.put(routePath('getApplication', { tenant: 'acme', application: 'wiki' }), {
    kind: 'proxy', displayName: 'Wiki', clientId: wiki.clientId, clientSecret: wiki.clientSecret, redirectUris: [wiki.redirectUri],
    postLogoutRedirectUris: [wiki.home], scopes: ['openid', 'email'],
  });
  await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'wiki', userId: acme.users.carol.id }), {});
});
afterAll(async () => {
  await server?.dispose();
});

async function wikiAuthorization(): Promise<string> {
  const config = await relyingParty(server.issuer('acme'), wiki.clientId, wiki.clientSecret);
  const verifier = oidc.randomPKCECodeVerifier();
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: wiki.redirectUri, scope: 'openid email', state: oidc.randomState(),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  }).href;
}

describe('Return to <app> on the "not assigned" page', () => {
  it('without a session at the tenant: straight to the application\'s origin, where its sign-in asks again', async () => {
    const browser = new Browser();
    const login = await browser.follow(await wikiAuthorization(), wiki.redirectUri);
    const denied = await browser.submit(login.url, login.html!, '/login', { email: acme.users.bob.email, password: PASSWORD }, wiki.redirectUri);
    expect(denied.response?.status).toBe(403);
    expect(denied.html).toContain('not assigned to <strong>Wiki</strong>');
    expect(denied.html).toContain('return to it and sign in there with that account');
    const back = await browser.submit(denied.url, denied.html!, '/deny', {}, wiki.home);
    expect(back.url).toBe(wiki.home);
    // The interaction is over: the page cannot be replayed into an access_denied later.
    expect((await browser.request(denied.url.replace(/\/login$/, ''))).status).toBe(400);
    // The application's next sign-in shows the form again, and another account gets in.
    const again = await browser.follow(await wikiAuthorization(), wiki.redirectUri);
    expect(again.html).toContain('name="password"');
    const done = await browser.submit(again.url, again.html!, '/login', { email: acme.users.carol.email, password: PASSWORD }, wiki.redirectUri);
    expect(new URL(done.url).searchParams.get('code')).toBeTruthy();
  });

  it('with a session at the tenant: through its sign-out (RP-initiated logout), then the origin; the next sign-in asks who', async () => {
    const browser = new Browser();
    // Bob signs in to the portal, where he is... not assigned either; alice is: sign in as alice to the portal first.
    const portal = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const first = await authorize(portal, browser, acme.web.redirectUri, { email: acme.users.alice.email, password: PASSWORD });
    expect(first.callback.searchParams.get('code')).toBeTruthy();
    // Alice is not assigned to the wiki: the page says so at once (no form: she holds a session).
    const denied = await browser.follow(await wikiAuthorization(), wiki.redirectUri);
    expect(denied.html).toContain('not assigned to <strong>Wiki</strong>');
    expect(denied.html).toContain('you will be signed out of acme Inc. first');
    const signOut = await browser.submit(denied.url, denied.html!, '/deny', {}, wiki.home);
    const endSession = new URL(endpointUrl(server.address, 'acme', 'endSession'));
    expect(signOut.url.startsWith(endSession.href), signOut.url).toBe(true);
    expect(new URL(signOut.url).searchParams.get('post_logout_redirect_uri')).toBe(wiki.home);
    expect(signOut.html).toContain('Yes, sign me out');
    const back = await browser.submit(signOut.url, signOut.html!, 'session/end/confirm', { logout: 'yes' }, wiki.home);
    expect(back.url).toBe(wiki.home);
    const again = await browser.follow(await wikiAuthorization(), wiki.redirectUri);
    expect(again.html).toContain('name="password"');
  });
});
