/**
 * Passkeys (WebAuthn) in Chromium with its virtual authenticator (DevTools protocol): registered
 * after a password sign-in, then used alone to sign in where the policy allows passkeys. Also:
 * the page works without JavaScript for the password, and says why the passkey cannot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { PASSWORD, alice, applyModel, beginSignIn, loginServer, startApp, stopApp, signOut, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId = '';

beforeAll(async () => {
  await startApp();
  server = await loginServer();
  await applyModel(server, tenantYaml('keys', '{ methods: [password, passkey] }') + tenantYaml('other', '{ methods: [password, passkey] }'));
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
  // A platform authenticator that holds discoverable credentials and verifies the user (as a
  // fingerprint reader would), answering every request without a prompt.
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  }));
});
afterAll(async () => {
  await stopApp();
  await browser?.close();
  await server?.dispose();
});

const user = alice('keys');

describe('passkeys', () => {
  it('offers a passkey after a password sign-in and registers it', async () => {
    const flow = await beginSignIn(page, server, 'keys');
    await page.getByLabel('Email', { exact: true }).fill(user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Add a passkey?');
    await screenshot(page, 'login-passkey-offer');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    expect((await flow.finish()).sub).toBe(user.id);

    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'keys.localhost' });
    // The user handle is the user id: how a passkey alone finds its account.
    expect(Buffer.from(credentials[0]!.userHandle!, 'base64').toString()).toBe(user.id);
    expect(server.audit().some((a) => a.audit === 'passkey.registered' && a.user === user.id)).toBe(true);
  });

  it('signs in with the passkey alone, typing nothing', async () => {
    await signOut(page, server, 'keys');
    const flow = await beginSignIn(page, server, 'keys');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    expect((await flow.finish()).sub).toBe(user.id);
    // Having a passkey, the person is not asked to add another.
    expect(server.audit().filter((a) => a.audit === 'login.success' && a.tenant === 'keys')).toHaveLength(2);
  });

  it('is bound to the tenant host: the passkey of keys.localhost does not sign in at other.localhost', async () => {
    await beginSignIn(page, server, 'other');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    // The browser finds no credential for this relying party and the script says so in words.
    await expect.poll(() => page.locator('#passkey-status').textContent(), { timeout: 20_000 }).toMatch(/cancelled or timed out|could not be used/);
  });

  it('keeps the password usable without JavaScript, and says why the passkey is not', async () => {
    const plain = await browser.newContext({ javaScriptEnabled: false });
    const p = await plain.newPage();
    const flow = await beginSignIn(p, server, 'keys');
    expect(await p.getByRole('button', { name: 'Sign in with a passkey' }).isVisible()).toBe(false);
    expect(await visibleText(p)).toContain('Passkeys need JavaScript in this browser. Choose another way to sign in.');
    await p.getByLabel('Email', { exact: true }).fill(alice('keys').email.replace('alice', 'bob'));
    await p.getByLabel('Password').fill(PASSWORD);
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
    await p.getByRole('button', { name: /Not now, continue/ }).click();
    expect((await flow.finish()).sub).toBe('u-bob');
    await plain.close();
  });
});
