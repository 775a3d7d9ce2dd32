/**
 * A scope refused once (the user did not hold it) is granted in the same browser session as soon
 * as an admin gives it to the user: the refusal recorded in the session's grant must not outlive
 * the reason for it (grants last 14 days).
 */
import * as oidc from 'openid-client';
import { decodeJwt } from 'jose';
import { afterAll, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, testServer } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>> | undefined;
afterAll(async () => {
  await server?.dispose();
});

it('grants a custom scope in an existing session once the user holds it', async () => {
  server = await testServer();
  const admin = await adminClient(server);
  const f = await fixtureTenant(admin, 'acme');
  const web = await relyingParty(server.issuer('acme'), f.web.clientId, f.web.clientSecret);
  const browser = new Browser();
  const scp = async (login: { email: string; password: string } | undefined) => {
    const flow = await authorize(web, browser, f.web.redirectUri, login, { scope: 'openid admin' });
    const tokens = await oidc.authorizationCodeGrant(web, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
    return { pages: flow.pages.length, scp: decodeJwt(tokens.access_token).scp };
  };

  const before = await scp({ email: f.users.carol.email, password: PASSWORD });
  expect(before.scp).toContain('openid');
  expect(before.scp).not.toContain('admin');

  await admin.put(routePath('getUser', { tenant: 'acme', userId: f.users.carol.id }), { email: f.users.carol.email, displayName: 'carol', scopes: ['admin'] });
  const after = await scp(undefined);
  expect(after.pages).toBe(0); // the same session: no login form
  expect(after.scp).toContain('admin');
});
