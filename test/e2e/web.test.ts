/**
 * Pattern 1, server-side web app with the grant login helper (contract §1, §4, §5.9): scaffolded
 * from the example model, started with `npm start`, signed in through a real Chromium.
 */
import type { Browser } from 'playwright-core';
import { reachableAt } from '../support/processes.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf, launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { isLoginPage, signIn, startStack, type Stack } from './_stack.ts';

const PROVIDER = 'acme';

describe('web app (express + express-session + grant)', () => {
  let stack: Stack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startStack({ label: 'web', apps: ['portal', 'orders-api'] });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('listens on loopback only, as every sample app of a local origin does', async () => {
    for (const name of ['portal']) {
      const port = Number(new URL(stack.app(name as never).origin).port);
      expect(await reachableAt(port), name).toEqual({ loopback: true, otherAddress: false });
    }
  });

  it('redirects /connect/<provider> to the login page with the registered redirect URI', async () => {
    const portal = stack.app('portal');
    const res = await fetch(`${portal.origin}/connect/${PROVIDER}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(`${stack.issuer}auth`);
    expect(location.searchParams.get('redirect_uri')).toBe(`${portal.origin}/connect/${PROVIDER}/callback`);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('scope')?.split(' ')).toContain('openid');
    expect(location.searchParams.get('state')).toBeTruthy();
  });

  it('signs an assigned user in and answers the callback path with tokens, raw and profile', async () => {
    const portal = stack.app('portal');
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${portal.origin}/connect/${PROVIDER}`);
    expect(await isLoginPage(page, stack.issuer)).toBe(true);
    await screenshot(page, 'web-1-login');

    await signIn(page, stack.users.alice);
    await page.waitForURL(`${portal.origin}/hello`);
    await screenshot(page, 'web-2-result');
    const result = await jsonOf<Record<string, any>>(page);
    expect(result.access_token).toEqual(expect.any(String));
    expect(result.id_token).toEqual(expect.any(String));
    expect(result.raw).toMatchObject({ access_token: result.access_token, token_type: expect.stringMatching(/^bearer$/i) });
    expect(result.profile).toMatchObject({ sub: stack.users.alice.id, email: stack.users.alice.email });
    await context.close();
  });

  it('gets a JWT access token for orders-api (its audience) and calls the scaffolded API with it', async () => {
    const portal = stack.app('portal');
    const api = stack.app('orders-api').origin;
    const tokenOf = async (user: typeof stack.users.alice) => {
      const context = await newContext(browser);
      const page = await context.newPage();
      await page.goto(`${portal.origin}/connect/${PROVIDER}`);
      await signIn(page, user);
      await page.waitForURL(`${portal.origin}/hello`);
      const result = await jsonOf<Record<string, any>>(page);
      await context.close();
      return result;
    };
    const alice = await tokenOf(stack.users.alice);
    expect(alice.access_token.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(alice.access_token.split('.')[1], 'base64url').toString('utf8'));
    expect(claims).toMatchObject({ iss: stack.issuer, sub: stack.users.alice.id, client_id: 'portal', scp: expect.arrayContaining(['openid', 'admin']) });
    expect([claims.aud].flat()).toContain(api);
    // The refresh token the session check renews with.
    expect(alice.refresh_token).toEqual(expect.any(String));

    const call = (path: string, token: string) => fetch(`${api}${path}`, { headers: { Authorization: `Bearer ${token}` } });
    const whoami = await call('/whoami', alice.access_token);
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toMatchObject({ sub: stack.users.alice.id, client_id: 'portal' });
    expect((await call('/admin', alice.access_token)).status).toBe(200);
    // Bob holds no admin scope: the web app's token opens /whoami, not /admin.
    const bob = await tokenOf(stack.users.bob);
    expect((await call('/whoami', bob.access_token)).status).toBe(200);
    expect((await call('/admin', bob.access_token)).status).toBe(403);
  });

  it('denies a user who is not assigned to the app, tells them why, and sends them back to the app to sign in as someone else', async () => {
    const portal = stack.app('portal');
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${portal.origin}/connect/${PROVIDER}`);
    await signIn(page, stack.users.carol);
    // The service's own page explains the refusal before sending the person back.
    expect(await visibleText(page)).toMatch(/not assigned/i);
    await screenshot(page, 'web-3-denied-at-service');

    // Back to the app's origin, where its sign-in link starts over and another account gets in.
    const back = page.waitForURL(`${portal.origin}/`);
    await page.getByRole('button', { name: /^Return to/ }).click();
    await back;
    await screenshot(page, 'web-4-denied-back-at-app');
    await page.getByRole('link', { name: `Sign in with ${PROVIDER}` }).click();
    await expect.poll(() => isLoginPage(page, stack.issuer)).toBe(true);
    await signIn(page, stack.users.alice);
    await page.waitForURL(`${portal.origin}/hello`);
    expect(await jsonOf(page)).toMatchObject({ profile: { sub: stack.users.alice.id } });
    await context.close();
  });
});
