/**
 * Every login method through a real client of the templates: the web app (express + grant)
 * scaffolded from the example model and started with `npm start` (test/e2e/_stack.ts), in
 * Chromium. The example tenant gets the strictest policy (password, otp, passkey, totp; a second
 * factor required) through the admin API, as `idforge apply` would PUT it.
 */
import { join } from 'node:path';
import { generate } from 'otplib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { jsonOf, launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { startStack, TENANT, type Stack } from '../e2e/_stack.ts';
import { codeFromOutbox } from './_support.ts';

let stack: Stack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let outbox = '';
const seen = new Set<string>();

beforeAll(async () => {
  stack = await startStack({ label: 'login-web', apps: ['portal'] });
  const dataDir = join(stack.dir, 'data');
  outbox = join(dataDir, 'outbox');
  const admin = await AdminClient.forDataDir(dataDir);
  const { displayName, scopes, managedBy } = await admin.call('getTenant', { tenant: TENANT });
  await admin.call('putTenant', { tenant: TENANT }, { body: { displayName, scopes, managedBy, login: { methods: ['password', 'otp', 'passkey', 'totp'], requireSecondFactor: true } } });

  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const connect = () => page.goto(`${stack.app('portal').origin}/connect/${TENANT}`);
async function profile(): Promise<Record<string, unknown>> {
  await page.waitForURL(`${stack.app('portal').origin}/hello`);
  return (await jsonOf<{ profile: Record<string, unknown> }>(page)).profile;
}
async function enrolTotp(): Promise<void> {
  const secret = (await page.locator('#totp-secret').textContent())!.trim();
  await page.getByLabel(/code the app now shows/i).fill(await generate({ secret }));
  await page.getByRole('button', { name: 'Finish setup' }).click();
}

describe('web template with password, otp, passkey and totp', () => {
  it('password, then TOTP enrolment, then a passkey: the app receives alice', async () => {
    const alice = stack.users.alice;
    await connect();
    await page.locator('#email').fill(alice.email);
    await page.locator('#password').fill(alice.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Confirm it is you');
    await enrolTotp();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Add a passkey?');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    expect(await profile()).toMatchObject({ sub: alice.id, email: alice.email });
  });

  it('the passkey alone signs alice in again', async () => {
    await context.clearCookies();
    await connect();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    expect(await profile()).toMatchObject({ sub: stack.users.alice.id });
  });

  it('an emailed code, then TOTP: the app receives bob', async () => {
    const bob = stack.users.bob;
    await context.clearCookies();
    await connect();
    await page.locator('#otp-email').fill(bob.email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.getByLabel('Code from the email (6 digits)').fill(await codeFromOutbox(outbox, bob.email, seen));
    await page.getByRole('button', { name: 'Sign in with the code' }).click();
    await expect.poll(() => page.locator('main').innerText()).toContain('also asks for a second step: authenticator app');
    await screenshot(page, 'login-web-template-second-step');
    await enrolTotp();
    await page.getByRole('button', { name: /Not now, continue/ }).click();
    expect(await profile()).toMatchObject({ sub: bob.id, email: bob.email });
  });
});
