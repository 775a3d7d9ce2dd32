/**
 * Pattern 2, identity-aware reverse proxy (contract §1, §5.7, §5.8): the scaffolded project's
 * run.sh starts oauth2-proxy (built from its Go module) in front of the echo upstream.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { reachableAt } from '../support/processes.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf, launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { toolPath } from '../support/tools.ts';
import { isLoginPage, signIn, startStack, type Stack } from './_stack.ts';

describe('reverse proxy (oauth2-proxy + upstream echo app)', () => {
  let stack: Stack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startStack({ label: 'proxy', apps: ['wiki', 'orders-api'], oauth2ProxyBin: toolPath('oauth2-proxy') });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('listens on loopback only, as every sample app of a local origin does', async () => {
    for (const name of ['wiki', 'orders-api']) {
      const port = Number(new URL(stack.app(name as never).origin).port);
      expect(await reachableAt(port), name).toEqual({ loopback: true, otherAddress: false });
    }
  });

  it('sends an anonymous request straight to the login page', async () => {
    const wiki = stack.app('wiki');
    const res = await fetch(`${wiki.origin}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(`${stack.issuer}auth`);
    expect(location.searchParams.get('redirect_uri')).toBe(`${wiki.origin}/oauth2/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('runs with the generated settings: cookie secret of 16 random bytes, Secure cookie, any email domain', () => {
    const env = readFileSync(join(stack.app('wiki').dir, 'oauth2-proxy.env'), 'utf8');
    const value = (key: string) => new RegExp(`^${key}='?([^'\\n]*)'?$`, 'm').exec(env)?.[1];
    expect(Buffer.from(value('OAUTH2_PROXY_COOKIE_SECRET') ?? '', 'base64url')).toHaveLength(16);
    expect(value('OAUTH2_PROXY_COOKIE_SECRET')).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(value('OAUTH2_PROXY_COOKIE_SECURE')).toBe('true');
    expect(value('OAUTH2_PROXY_EMAIL_DOMAINS')).toBe('*');
  });

  it('forwards the signed-in user as X-Forwarded-User and X-Forwarded-Email, with a Secure session cookie', async () => {
    const wiki = stack.app('wiki');
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${wiki.origin}/some/page?x=1`);
    expect(await isLoginPage(page, stack.issuer)).toBe(true);
    await screenshot(page, 'proxy-1-login');

    await signIn(page, stack.users.alice);
    await page.waitForURL(`${wiki.origin}/some/page?x=1`);
    await screenshot(page, 'proxy-2-result');
    const echo = await jsonOf<{ url: string; headers: Record<string, string> }>(page);
    expect(echo.url).toBe('/some/page?x=1');
    expect(echo.headers['x-forwarded-user']).toBe(stack.users.alice.id);
    expect(echo.headers['x-forwarded-email']).toBe(stack.users.alice.email);

    // The upstream only answered because the browser sent the session cookie back: on
    // http://*.localhost Chromium stores and sends Secure cookies (a secure context).
    const cookies = await context.cookies(wiki.origin);
    const session = cookies.find((c) => c.name.startsWith('_oauth2_proxy') && !c.name.endsWith('_csrf'));
    expect(session).toMatchObject({ secure: true, httpOnly: true });

    await page.reload();
    expect((await jsonOf<{ headers: Record<string, string> }>(page)).headers['x-forwarded-email']).toBe(stack.users.alice.email);
    await context.close();
  });

  it('passes the upstream a JWT for orders-api (its audience), which the scaffolded API accepts', async () => {
    const wiki = stack.app('wiki');
    const api = stack.app('orders-api').origin;
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${wiki.origin}/`);
    await signIn(page, stack.users.alice);
    await page.waitForURL(`${wiki.origin}/`);
    const token = (await jsonOf<{ headers: Record<string, string> }>(page)).headers['x-forwarded-access-token'] ?? '';
    expect(token.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    expect(claims).toMatchObject({ iss: stack.issuer, sub: stack.users.alice.id, client_id: 'wiki', scp: expect.arrayContaining(['openid', 'email']) });
    // What the app behind the proxy does with it (contract §5.10): call the API for the user.
    const whoami = await fetch(`${api}/whoami`, { headers: { Authorization: `Bearer ${token}` } });
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toMatchObject({ sub: stack.users.alice.id, client_id: 'wiki' });
    // The proxy's token carries no admin scope (the wiki does not ask for it).
    expect((await fetch(`${api}/admin`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(403);
    await context.close();
  });

  it('denies a user who is not assigned to the app, tells them why, and sends them back where they can sign in as someone else', async () => {
    const wiki = stack.app('wiki');
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${wiki.origin}/`);
    await signIn(page, stack.users.bob);
    expect(await visibleText(page)).toMatch(/not assigned/i);
    expect(await visibleText(page)).toMatch(/return to it and sign in there with that account/i);
    await screenshot(page, 'proxy-3-denied-at-service');

    // "Return to" leads to the wiki's origin, not to oauth2-proxy's bare 403 page for access_denied:
    // the proxy starts a new sign-in, and the service asks who is signing in.
    const home = page.waitForResponse((r) => r.url() === `${wiki.origin}/`);
    await page.getByRole('button', { name: /^Return to/ }).click();
    expect((await home).status()).toBe(302);
    // The denied page has no password field; the new sign-in page does.
    await expect.poll(() => isLoginPage(page, stack.issuer)).toBe(true);
    await screenshot(page, 'proxy-4-denied-back-at-sign-in');
    expect(await visibleText(page)).not.toMatch(/Forbidden|access_denied/);

    // Someone who is assigned signs in from there and reaches the app.
    await signIn(page, stack.users.alice);
    await page.waitForURL(`${wiki.origin}/`);
    const echo = await jsonOf<{ headers: Record<string, string> }>(page);
    expect(echo.headers['x-forwarded-user']).toBe(stack.users.alice.id);
    await screenshot(page, 'proxy-5-other-account-in');
    await context.close();
  });
});
