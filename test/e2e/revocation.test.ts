/**
 * Removing an assignment, a user or an application ends that user's access in every pattern
 * (src/contract/tokens.ts): the web template's session (the server's back-channel logout token),
 * the oauth2-proxy session (its cookie refresh), the SPA (its renewal). Measured in Chromium against the real server, oauth2-proxy and
 * scaffolded apps: the test asserts that access ends, and prints how long it took. The delays are
 * figures, not assertions (a loaded machine stretches them): `node bin/run.js tsx
 * bench/e2e/revocation.ts` prints each beside the contract's bound.
 *
 * The periods are shortened so the file runs quickly, through the same settings an operator has:
 * `idforge serve --access-token-lifetime 20` (default 300) and the proxy's `cookieRefresh: 10` in
 * the model (default 30). With them the expected delays are: web within seconds (back-channel
 * logout, whatever the lifetime), SPA at most 10 s (it renews at half the token's life), proxy at
 * most 10 s (its refresh is refused, and its ID token, which lives PROXY_ID_TOKEN_LIFETIME, has
 * expired by then, so the session ends). REVOCATION_ACCESS_TOKEN_LIFETIME and REVOCATION_COOKIE_REFRESH set
 * others (the bench uses them to measure the shipped defaults).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { toolPath } from '../support/tools.ts';
import { signIn, startStack, TENANT, type Stack, type TestUser } from './_stack.ts';

const ACCESS_TOKEN_LIFETIME = Number(process.env.REVOCATION_ACCESS_TOKEN_LIFETIME ?? 20);
const PROXY_COOKIE_REFRESH = Number(process.env.REVOCATION_COOKIE_REFRESH ?? 10);
/** Past this, access that has not ended fails the test: every pattern ends by its token's expiry. */
const GIVE_UP_SECONDS = ACCESS_TOKEN_LIFETIME + 15;

/** Measured delays, printed at the end. */
const measured: { pattern: string; removed: string; seconds: number }[] = [];

// Each test signs in, waits for a renewal, then up to the deadline and a little more.
describe('removing access ends it in every pattern', { timeout: Math.max(180_000, (2 * ACCESS_TOKEN_LIFETIME + 60) * 1000) }, () => {
  let stack: Stack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startStack({
      label: 'revocation',
      apps: ['portal', 'wiki', 'dashboard', 'orders-api'],
      oauth2ProxyBin: toolPath('oauth2-proxy'),
      serverArgs: ['--access-token-lifetime', String(ACCESS_TOKEN_LIFETIME)],
      patchModel: (doc) => {
        const apps = doc.getIn(['tenants', 0, 'applications']) as { items: { get(k: string): unknown; set(k: string, v: unknown): void }[] };
        apps.items.find((a) => a.get('name') === 'wiki')!.set('cookieRefresh', PROXY_COOKIE_REFRESH);
      },
    });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    if (measured.length > 0) {
      console.log(
        `revocation delays (access tokens ${ACCESS_TOKEN_LIFETIME} s, proxy cookie refresh ${PROXY_COOKIE_REFRESH} s; token lifetime ${ACCESS_TOKEN_LIFETIME} s):\n` +
          measured.map((m) => `  ${m.pattern.padEnd(6)} ${m.removed.padEnd(28)} ${m.seconds.toFixed(1)} s`).join('\n'),
      );
    }
  });

  /**
   * Runs `remove`, then asks `stillIn` every quarter second (so a figure overstates the delay by at
   * most that, plus one request) until it answers false; records and returns
   * the seconds between the removal and the first refusal. Gives up 15 s after the token lifetime:
   * access that has not ended by then fails the test.
   */
  async function measure(pattern: string, removed: string, remove: () => Promise<void>, stillIn: () => Promise<boolean>): Promise<number> {
    expect(await stillIn(), `${pattern}: signed in before the removal`).toBe(true);
    await remove();
    const start = performance.now();
    let seconds = Number.POSITIVE_INFINITY;
    while (performance.now() - start < GIVE_UP_SECONDS * 1000) {
      if (!(await stillIn())) {
        seconds = (performance.now() - start) / 1000;
        break;
      }
      await sleep(250);
    }
    measured.push({ pattern, removed, seconds });
    console.log(`${pattern}: access ended ${seconds.toFixed(1)} s after ${removed} was removed`);
    expect(Number.isFinite(seconds), `${pattern}: still signed in ${GIVE_UP_SECONDS} s after ${removed} was removed`).toBe(true);
    return seconds;
  }

  const removeAssignment = (application: string, user: TestUser) => async () =>
    (await stack.admin()).remove('deleteAssignment', { tenant: TENANT, application, userId: user.id });

  /**
   * Signs `user` in to the portal; returns the context, whether /hello still answers with tokens,
   * and the last answer (the one that said no, once access has ended).
   */
  async function portalSession(user: TestUser): Promise<{ context: BrowserContext; stillIn: () => Promise<boolean>; last: () => unknown }> {
    const portal = stack.app('portal').origin;
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${portal}/connect/acme`);
    await signIn(page, user);
    await page.waitForURL(`${portal}/hello`);
    let last: { status: number; body: Record<string, unknown> } | undefined;
    const stillIn = async () => {
      const res = await context.request.get(`${portal}/hello`);
      last = { status: res.status(), body: (await res.json()) as Record<string, unknown> };
      return last.status === 200 && typeof last.body.access_token === 'string';
    };
    return { context, stillIn, last: () => last };
  }

  /** Signs `user` in to the dashboard SPA; returns the page and whether it still shows the user. */
  async function dashboardSession(user: TestUser) {
    const spa = stack.app('dashboard').origin;
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(spa);
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await page.locator('#sign-in').click();
    await page.waitForURL((url) => url.origin !== spa);
    await signIn(page, user);
    await page.waitForURL((url) => url.origin === spa && !url.search.includes('code='));
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-in');
    return { context, page, stillIn: async () => (await page.locator('#status').getAttribute('data-state')) === 'signed-in' };
  }

  const accessToken = async (page: Page) => (await page.locator('#access-token').textContent()) ?? '';

  it('web app: removing the assignment ends the session by back-channel logout', async () => {
    const { context, stillIn, last } = await portalSession(stack.users.alice);
    // While the user is assigned, the session renews its tokens past half their life.
    await stillIn();
    const first = (last() as { body: { access_token: string } }).body.access_token;
    await sleep((ACCESS_TOKEN_LIFETIME / 2 + 1) * 1000);
    expect(await stillIn()).toBe(true);
    expect((last() as { body: { access_token: string } }).body.access_token).not.toBe(first);
    await measure('web', 'the assignment portal/u-alice', removeAssignment('portal', stack.users.alice), stillIn);
    // The session is gone from the template's store (the logout token), not refused a renewal.
    expect(last()).toEqual({ status: 401, body: { error: 'login_required', message: expect.stringContaining('Not signed in') } });
    // Signing in again: the service says why not.
    const page = await context.newPage();
    await page.goto(`${stack.app('portal').origin}/connect/acme`);
    expect(await visibleText(page)).toMatch(/not assigned/i);
    await screenshot(page, 'revocation-web-not-assigned');
    await context.close();
  });

  it('reverse proxy: removing the assignment ends the oauth2-proxy session', async () => {
    const wiki = stack.app('wiki').origin;
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${wiki}/`);
    await signIn(page, stack.users.alice);
    await page.waitForURL(`${wiki}/`);
    let token = '';
    const stillIn = async () => {
      const res = await context.request.get(`${wiki}/`, { maxRedirects: 0 });
      if (res.status() !== 200) return false;
      const headers = (JSON.parse(await res.text()) as { headers: Record<string, string> }).headers;
      token = headers['x-forwarded-access-token'] ?? '';
      return headers['x-forwarded-user'] === stack.users.alice.id;
    };
    // The session outlives refreshes while the user is assigned (the cookie refresh runs every
    // PROXY_COOKIE_REFRESH s; the ID token of the sign-in has expired by the first), and the
    // upstream gets the refreshed token.
    expect(await stillIn()).toBe(true);
    const first = token;
    await sleep((PROXY_COOKIE_REFRESH + 1) * 1000);
    expect(await stillIn()).toBe(true);
    expect(token).not.toBe(first);
    await measure('proxy', 'the assignment wiki/u-alice', removeAssignment('wiki', stack.users.alice), stillIn);
    await page.goto(`${wiki}/`);
    expect(await visibleText(page)).toMatch(/not assigned/i);
    await screenshot(page, 'revocation-proxy-not-assigned');
    await context.close();
  });

  it('single-page app: removing the assignment signs the user out at the next renewal', async () => {
    const { context, page, stillIn } = await dashboardSession(stack.users.alice);
    // While the user is assigned, the page renews the token half-way through its life.
    const first = await accessToken(page);
    await expect.poll(() => accessToken(page), { timeout: ACCESS_TOKEN_LIFETIME * 1000 }).not.toBe(first);
    expect(await stillIn()).toBe(true);
    await measure('spa', 'the assignment dashboard/u-alice', removeAssignment('dashboard', stack.users.alice), stillIn);
    expect(await page.locator('#error').innerText()).toContain('Your session has ended');
    await screenshot(page, 'revocation-spa-signed-out');
    await context.close();
  });

  it('removing the application signs its users out (SPA)', async () => {
    const { context, stillIn } = await dashboardSession(stack.users.bob);
    await measure('spa', 'the application dashboard', async () => (await stack.admin()).remove('deleteApplication', { tenant: TENANT, application: 'dashboard' }), stillIn);
    await context.close();
  });

  it('removing the user ends their sessions (web app)', async () => {
    const { context, stillIn } = await portalSession(stack.users.bob);
    await measure('web', 'the user u-bob', async () => (await stack.admin()).remove('deleteUser', { tenant: TENANT, userId: stack.users.bob.id }), stillIn);
    await context.close();
  });
});
