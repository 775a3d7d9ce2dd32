/**
 * Behind a reverse proxy, the client address for per-address limits is the one the proxy saw:
 * X-Forwarded-For entries further left are the client's own words and must not decide it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { INVALID_CREDENTIALS } from '../../src/server/login/factors.ts';
import { lockedMessage } from '../../src/server/login/throttle.ts';
import { LOGIN_DEFAULTS } from '../../src/server/index.ts';
import { launchBrowser, newContext } from '../support/browser.ts';
import { alertText, applyModel, beginSignIn, loginServer, startApp, stopApp, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let browser: Browser;

beforeAll(async () => {
  await startApp();
  // One trusted proxy in front; backoff off so only the address limit (4) is in play.
  server = await loginServer({ backoffBaseMs: 0, addressLockoutThreshold: 4 }, { trustedProxies: 1 });
  await applyModel(server, tenantYaml('proxied', undefined));
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await stopApp();
});

describe('client address behind a trusted proxy', () => {
  it('locks the address the proxy saw, however the client forges the entries before it', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const page = await (await newContext(browser)).newPage();
      // What a proxy appends (10.9.8.7, the real client) after what the client sent (forged, new each time).
      await page.setExtraHTTPHeaders({ 'x-forwarded-for': `203.0.113.${i}, 10.9.8.7` });
      await beginSignIn(page, server, 'proxied');
      await page.locator('#email').fill(`nobody${i}@proxied.example`);
      await page.locator('#password').fill('Winter2026!');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForLoadState('load');
      answers.push((await page.getByRole('alert').count()) > 0 ? await alertText(page) : '');
      await page.context().close();
    }
    expect(answers).toEqual([...Array(3).fill(INVALID_CREDENTIALS), lockedMessage(LOGIN_DEFAULTS.lockoutSeconds)]);
    expect(server.audit().filter((a) => a.audit === 'login.lockout').map((a) => a.key)).toEqual(['address:10.9.8.7']);
  });
});
