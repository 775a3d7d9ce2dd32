/**
 * Per-application PKCE (src/contract/pkce.ts): `required` by default for every client; `optional`
 * only for confidential clients, which must then send a nonce in each OpenID Connect request
 * without PKCE (RFC 9700 §2.1.1). The same rule at every door: model, admin API (single PUT and
 * tenant batch), and the authorization endpoint.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { formatProblems, validateSources } from '../../src/schema/index.ts';
import { Browser, PASSWORD, adminClient, fixtureTenant, relyingParty, testServer, type AdminClient, type Fixture } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
const optional = { clientId: 'acme-nonce', clientSecret: 'acme-nonce-secret-0123456789abcdefghijklm', redirectUri: 'https://nonce.acme.test/callback' };

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  await admin.put(routePath('getApplication', { tenant: 'acme', application: 'nonce' }), {
    kind: 'web', clientId: optional.clientId, clientSecret: optional.clientSecret, redirectUris: [optional.redirectUri],
    scopes: ['openid', 'email', 'offline'], audience: [acme.api], pkce: 'optional',
  });
  await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'nonce', userId: acme.users.alice.id }), {});
});
afterAll(async () => {
  await server?.dispose();
});

/** Sends `params` (no PKCE unless given) as alice, and answers where the browser came back. */
async function signIn(config: oidc.Configuration, redirectUri: string, params: Record<string, string>): Promise<URL> {
  const browser = new Browser();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, ...params });
  let step = await browser.follow(url.href, redirectUri);
  if (step.html !== undefined) step = await browser.submit(step.url, step.html, '/login', { email: acme.users.alice.email, password: PASSWORD }, redirectUri);
  if (step.html !== undefined) throw new Error(`did not come back:\n${step.html}`);
  return new URL(step.url);
}

describe('pkce: optional (a confidential OpenID Connect client)', () => {
  it('signs in with a nonce and no PKCE; the ID token carries the nonce back', async () => {
    const config = await relyingParty(server.issuer('acme'), optional.clientId, optional.clientSecret);
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const back = await signIn(config, optional.redirectUri, { scope: 'openid email', state, nonce });
    const tokens = await oidc.authorizationCodeGrant(config, back, { expectedState: state, expectedNonce: nonce });
    expect(tokens.claims()).toMatchObject({ sub: acme.users.alice.id, nonce });
  });

  it('refuses an OpenID Connect request with neither nonce nor PKCE, saying what is missing', async () => {
    const config = await relyingParty(server.issuer('acme'), optional.clientId, optional.clientSecret);
    const back = await signIn(config, optional.redirectUri, { scope: 'openid email', state: 's' });
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      error: 'invalid_request', error_description: expect.stringMatching(/^send a nonce \(or PKCE\).*RFC 9700 §2\.1\.1/), state: 's',
    });
  });

  it('still requires PKCE of a request without scope openid (no ID token to carry a nonce)', async () => {
    const config = await relyingParty(server.issuer('acme'), optional.clientId, optional.clientSecret);
    const back = await signIn(config, optional.redirectUri, { scope: 'email', state: 's' });
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toMatch(/^PKCE is required in requests without scope openid/);
  });

  it('enforces PKCE that such a client does send, and refuses a verifier without a challenge (downgrade)', async () => {
    const config = await relyingParty(server.issuer('acme'), optional.clientId, optional.clientSecret);
    const verifier = oidc.randomPKCECodeVerifier();
    const withPkce = await signIn(config, optional.redirectUri, { scope: 'openid', state: 'a', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    await expect(oidc.authorizationCodeGrant(config, withPkce, { expectedState: 'a', pkceCodeVerifier: oidc.randomPKCECodeVerifier() })).rejects.toMatchObject({ error: 'invalid_grant' });
    const nonce = oidc.randomNonce();
    const withoutPkce = await signIn(config, optional.redirectUri, { scope: 'openid', state: 'b', nonce });
    await expect(oidc.authorizationCodeGrant(config, withoutPkce, { expectedState: 'b', expectedNonce: nonce, pkceCodeVerifier: verifier })).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('pkce: required (the default)', () => {
  it('refuses a confidential client that sends a nonce but no PKCE', async () => {
    const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
    const back = await signIn(config, acme.web.redirectUri, { scope: 'openid', nonce: 'n', state: 's' });
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toBe('PKCE is required: send code_challenge and code_challenge_method=S256');
  });
});

describe('one rule at every door', () => {
  const message = 'pkce: optional is allowed only for confidential clients (web, proxy): kind spa is a public client, and public clients must use PKCE (RFC 9700 §2.1.1)';

  it('the admin API refuses pkce: optional for an SPA at the field, and the batch with the same words', async () => {
    const body = { kind: 'spa', clientId: 'acme-spa2', redirectUris: ['https://spa2.acme.test'], pkce: 'optional' };
    const one = await admin.call('PUT', routePath('getApplication', { tenant: 'acme', application: 'spa2' }), body);
    expect(one.status).toBe(400);
    expect(one.body.problems).toEqual([expect.objectContaining({ path: 'pkce', message })]);
    const batch = await admin.call('POST', routePath('applyTenantBatch', { tenant: 'acme' }), { applications: [{ name: 'spa2', body }] });
    expect(batch.status).toBe(400);
    expect(JSON.stringify(batch.body)).toContain(message);
  });

  it('the model refuses it at the application, located', () => {
    const result = validateSources([{ file: 'model.yaml', content: `tenants:
  - name: acme
    displayName: Acme
    applications:
      - { name: dash, kind: spa, origin: http://dash.localhost:5173, pkce: optional }
      - { name: portal, kind: web, origin: http://portal.localhost:3000, pkce: optional }
` }]);
    expect(result.ok).toBe(false);
    expect(formatProblems(result.ok ? [] : result.problems)).toBe(`model.yaml:5:76  ${message}  (at tenants[0].applications[0].pkce)`);
  });
});
