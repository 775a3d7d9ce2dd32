/**
 * Patterns 3 and 4, single-page app (public client, PKCE, oidc-client-ts) and the protected API
 * it calls (jose), each scaffolded and started as its own process (contract §1, §4, §5.4-6, §7).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { reachableAt, startProcess, waitForPort, waitForPortClosed } from '../support/processes.ts';
import { isLoginPage, signIn, startStack, type Stack, type TestUser } from './_stack.ts';

const ADMIN_MESSAGE = 'Insufficient privileges: this route needs the admin scope.';

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('single-page app (oidc-client-ts) and protected API (jose)', () => {
  let stack: Stack;
  let browser: Browser;
  let api: string;
  let spa: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'spa', apps: ['dashboard', 'orders-api'] });
    browser = await launchBrowser();
    api = stack.app('orders-api').origin;
    spa = stack.app('dashboard').origin;
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** Signs `user` in through the SPA's button and returns the page, signed in. */
  async function signInToSpa(context: BrowserContext, user: TestUser, shots?: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(spa);
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await page.locator('#sign-in').click();
    await page.waitForURL((url) => url.origin !== spa);
    expect(await isLoginPage(page, stack.issuer)).toBe(true);
    if (shots) await screenshot(page, `${shots}-login`);
    await signIn(page, user);
    await page.waitForURL((url) => url.origin === spa && !url.search.includes('code='));
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-in');
    if (shots) await screenshot(page, `${shots}-signed-in`);
    return page;
  }

  const accessToken = async (page: Page) => (await page.locator('#access-token').textContent()) ?? '';

  it('listens on loopback only, as every sample app of a local origin does', async () => {
    for (const name of ['dashboard', 'orders-api']) {
      const port = Number(new URL(stack.app(name as never).origin).port);
      expect(await reachableAt(port), name).toEqual({ loopback: true, otherAddress: false });
    }
  });

  it('signs in with PKCE, keeps the user across a reload, refreshes, calls the API and signs out', async () => {
    const context = await newContext(browser);
    const authorizeRequests: URL[] = [];
    context.on('request', (r) => {
      if (r.url().startsWith(`${stack.issuer}auth`)) authorizeRequests.push(new URL(r.url()));
    });
    const page = await signInToSpa(context, stack.users.alice, 'spa-1');
    // Public client: code flow with an S256 PKCE challenge, redirect back to the SPA's root.
    const authorize = authorizeRequests[0];
    expect(authorize?.searchParams.get('response_type')).toBe('code');
    expect(authorize?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize?.searchParams.get('code_challenge')).toBeTruthy();
    expect(new URL(authorize?.searchParams.get('redirect_uri') ?? '').origin).toBe(spa);
    expect(await page.locator('#status').innerText()).toContain(stack.users.alice.email);

    const first = await accessToken(page);
    const claims = claimsOf(first);
    expect(claims).toMatchObject({ iss: stack.issuer, sub: stack.users.alice.id });
    expect([claims.aud].flat()).toContain(api);
    expect(claims.scp).toEqual(expect.arrayContaining(['admin']));
    expect(await page.locator('#has-refresh-token').innerText()).toBe('yes');

    // cache_type session_storage: the user survives a reload of the tab.
    await page.reload();
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-in');
    expect(await accessToken(page)).toBe(first);

    // The refresh token grant yields a new access token.
    await page.locator('#refresh').click();
    await expect.poll(() => accessToken(page)).not.toBe(first);
    const refreshed = await accessToken(page);
    expect(claimsOf(refreshed)).toMatchObject({ iss: stack.issuer, sub: stack.users.alice.id });

    // The SPA calls the API with its access token (CORS from the SPA's origin).
    await page.locator('[data-api-path="/whoami"]').click();
    await expect.poll(() => page.locator('#api-result').getAttribute('data-status')).toBe('200');
    expect(await page.locator('#api-result').innerText()).toContain(stack.users.alice.id);
    await page.locator('[data-api-path="/admin"]').click();
    await expect.poll(() => page.locator('#api-result').innerText()).toContain('admin scope');
    expect(await page.locator('#api-result').getAttribute('data-status')).toBe('200');
    await screenshot(page, 'spa-2-api-result');

    await page.locator('#sign-out').click();
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await page.reload();
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    const stored = await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('oidc.user:')));
    expect(stored).toEqual([]);
    await screenshot(page, 'spa-3-signed-out');
    await context.close();
  });

  it('API: / is public, /whoami needs a valid token, /admin needs the admin scope', async () => {
    const aliceContext = await newContext(browser);
    const alice = await accessToken(await signInToSpa(aliceContext, stack.users.alice));
    const bobContext = await newContext(browser);
    const bobPage = await signInToSpa(bobContext, stack.users.bob, 'api-1-bob');
    const bob = await accessToken(bobPage);
    const get = (path: string, token?: string) =>
      fetch(`${api}${path}`, { headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });

    expect((await get('/')).status).toBe(200);

    const whoami = await get('/whoami', bob);
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toMatchObject({ iss: stack.issuer, sub: stack.users.bob.id, aud: expect.anything(), scp: expect.any(Array) });

    const forbidden = await get('/admin', bob);
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toEqual({ message: ADMIN_MESSAGE });
    expect(forbidden.headers.get('www-authenticate')).toMatch(/^Bearer .*error="insufficient_scope"/);

    const admin = await get('/admin', alice);
    expect(admin.status).toBe(200);

    const missing = await get('/whoami');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer realm="[^"]+"$/);

    // Credentials of another scheme hold no Bearer token: the same bare challenge, not a 400.
    const basic = await fetch(`${api}/whoami`, { headers: { Authorization: `Basic ${Buffer.from('bob:secret').toString('base64')}` } });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Bearer realm="[^"]+"$/);
    expect(basic.headers.get('www-authenticate')).toBe(missing.headers.get('www-authenticate'));

    // Bob's claims, signed with HS256 under a key of his choosing: the token's header must not
    // pick the algorithm (RFC 8725): refused on the algorithm itself, before any key is looked up.
    const { kid } = JSON.parse(Buffer.from(bob.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid: string };
    const hmac = await new SignJWT(claimsOf(bob)).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid }).sign(randomBytes(32));
    const hs256 = await get('/whoami', hmac);
    expect(hs256.status).toBe(401);
    expect(hs256.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token", error_description="the token is signed with an algorithm this API does not accept"$/);

    // Bob grants himself admin: the signature no longer matches.
    const [header, , signature] = bob.split('.');
    const forged = Buffer.from(JSON.stringify({ ...claimsOf(bob), scp: ['openid', 'admin'] })).toString('base64url');
    for (const token of [`${header}.${forged}.${signature}`, `${bob.slice(0, -4)}AAAA`]) {
      for (const path of ['/whoami', '/admin']) {
        const res = await get(path, token);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
      }
    }

    // An ID token is a signed JWT of the same tenant, but not an access token for this API.
    const idToken = await bobPage.evaluate(() => {
      const key = Object.keys(sessionStorage).find((k) => k.startsWith('oidc.user:'));
      return key === undefined ? '' : (JSON.parse(sessionStorage.getItem(key) ?? '{}') as { id_token?: string }).id_token ?? '';
    });
    expect(idToken).not.toBe('');
    const withIdToken = await get('/whoami', idToken);
    expect(withIdToken.status).toBe(401);
    expect(withIdToken.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);

    // The same 403, seen by Bob in the SPA.
    await bobPage.locator('[data-api-path="/admin"]').click();
    await expect.poll(() => bobPage.locator('#api-result').getAttribute('data-status')).toBe('403');
    expect(await bobPage.locator('#api-result').innerText()).toContain(ADMIN_MESSAGE);
    await screenshot(bobPage, 'api-2-bob-forbidden');
    await aliceContext.close();
    await bobContext.close();
  });

  it('denies a user who is not assigned to the SPA, tells them why, and sends them back to it to sign in as someone else', async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(spa);
    await page.locator('#sign-in').click();
    await page.waitForURL((url) => url.origin !== spa);
    await signIn(page, stack.users.carol);
    expect(await visibleText(page)).toMatch(/not assigned/i);
    await screenshot(page, 'spa-4-denied-at-service');

    // Back to the SPA's origin, signed out, with its Sign in button: another account can get in.
    await page.getByRole('button', { name: /^Return to/ }).click();
    await page.waitForURL((url) => url.origin === spa && !url.search.includes('state='));
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await screenshot(page, 'spa-5-denied-back-at-app');
    await page.locator('#sign-in').click();
    await page.waitForURL((url) => url.origin !== spa);
    await signIn(page, stack.users.alice);
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-in');
    await context.close();
  });

  // Last: it restarts the SPA with another configuration.
  it('without cache_type (in-memory cache, the default) a reload forgets the user', async () => {
    const dashboard = stack.app('dashboard');
    await dashboard.process.stop();
    await waitForPortClosed(Number(new URL(spa).port));
    const configFile = join(dashboard.dir, 'spa-config.json');
    const { cache_type: _persisted, ...config } = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
    const restarted = startProcess('spa-dashboard-in-memory', 'npm', ['start', '--silent'], { cwd: dashboard.dir });
    await waitForPort(Number(new URL(spa).port), { process: restarted });

    const context = await newContext(browser);
    const page = await signInToSpa(context, stack.users.alice);
    expect(await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('oidc.user:')))).toEqual([]);
    await page.reload();
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await screenshot(page, 'spa-6-in-memory-after-reload');
    await context.close();
  });
});
