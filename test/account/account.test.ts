/**
 * The account page at <tenant host>/account/, in Chromium against a real server: a person signs in
 * through the tenant itself (password, then their authenticator app), removes a passkey, is refused
 * the removal of the last second factor the tenant requires, ends an application's access and a
 * session (whose refresh tokens are then refused), and changes their password, with field-level
 * messages for every mistake. Every page passes axe-core; CSRF, anti-framing and the CSP are checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from 'otplib';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { axeScan } from '../console/_support.ts';
import { adminClient } from '../server/_support.ts';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { PASSWORD, alertText, alice, applyModel, beginSignIn, loginServer, startApp, stopApp, tenantYaml, type LoginServer } from '../login/_support.ts';

let server: LoginServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId = '';

const TENANT = 'acct';
const user = alice(TENANT);
const nowSeconds = () => Math.floor(Date.now() / 1000);
let totpSecret = '';
let step = 0;
/** A fresh TOTP code each time (one time step later than the last), so none is refused as replayed. */
const nextCode = () => generate({ secret: totpSecret, epoch: nowSeconds() + 30 * step++ });

beforeAll(async () => {
  await startApp();
  server = await loginServer({ backoffBaseMs: 0 });
  await applyModel(server, tenantYaml(TENANT, '{ methods: [password, passkey, totp], requireSecondFactor: true }')
    .replace('        scopes: [openid, email]\n', '        offline: true\n        scopes: [openid, email, offline]\n'));
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
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

const accountUrl = () => `${new URL(server.issuer(TENANT)).origin}/account/`;
let refreshToken = '';
let rp: oidc.Configuration;

/** Signs in to the SPA with `offline`: the first time with password, the authenticator app and a passkey; later through the session. */
async function signInToApp(first: boolean): Promise<void> {
  const flow = await beginSignIn(page, server, TENANT, 'openid email offline');
  rp = flow.config;
  if (first) {
    await page.getByLabel('Email', { exact: true }).fill(user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    totpSecret = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel(/code/i).fill(await nextCode());
    await page.getByRole('button', { name: /finish setup/i }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Add a passkey?');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
  }
  const tokens = await flow.tokens();
  expect(tokens.refresh_token).toBeDefined();
  refreshToken = tokens.refresh_token!;
}

const fieldError = (id: string) => page.locator(`#${id}-error`).textContent();

describe('the account page', () => {
  it('signs the person in through the tenant and shows their factors, sessions and applications', async () => {
    await signInToApp(true);
    const response = await page.goto(accountUrl());
    // Signed in at the tenant already: straight through the code flow to the page.
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Your account');
    expect(page.url()).toBe(accountUrl());
    const headers = (await page.request.get(accountUrl())).headers();
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['x-frame-options']).toBe('DENY');
    expect(response?.status()).toBe(200);
    const text = await page.locator('main').innerText();
    expect(text).toContain(`Signed in as ${user.email}`);
    expect(text).toMatch(/Set up \d{4}-\d\d-\d\d/);
    expect(await page.getByRole('table', { name: 'Your passkeys' }).locator('tbody tr').count()).toBe(1);
    expect(await page.getByRole('table', { name: 'Where you are signed in' }).innerText()).toContain('acct app');
    expect(await page.getByRole('table', { name: 'Applications with access' }).innerText()).toContain('app');
    // Recent sign-ins come from the event log: the one made above, to the app's client, today.
    const signIns = page.getByRole('table', { name: /^Your last/ });
    expect(await signIns.locator('tbody tr').count()).toBe(1);
    const signInRow = await signIns.locator('tbody tr').first().innerText();
    expect(signInRow).toContain(new Date().toISOString().slice(0, 10));
    expect(signInRow).not.toContain('this tenant');
    await axeScan(page, 'account page');
    await screenshot(page, 'account-overview');
  });

  it('refuses a form without its CSRF token, or from another origin', async () => {
    const bare = await page.request.post(`${accountUrl()}totp/remove`, { form: { csrf: 'forged' } });
    expect(bare.status()).toBe(403);
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    const foreign = await page.request.post(`${accountUrl()}totp/remove`, { form: { csrf: csrf! }, headers: { origin: 'http://evil.localhost' } });
    expect(foreign.status()).toBe(403);
    await page.reload();
    expect(await page.locator('main').innerText()).toMatch(/Set up \d{4}/);
  });

  it('removes a passkey, but never the last second factor the tenant requires', async () => {
    await page.getByRole('button', { name: 'Remove passkey 1' }).click();
    await page.waitForURL((u) => u.search === '?done=passkey');
    expect(await page.getByRole('status').textContent()).toContain('The passkey is removed');
    expect(await page.getByRole('table', { name: 'Your passkeys' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Remove the authenticator app' }).click();
    expect(await alertText(page)).toBe('Nothing was changed. See the message below.');
    expect(await fieldError('totp')).toBe('The authenticator app cannot be removed: Acct Inc. requires a second step at sign-in, and this is your last one: add another first.');
    await axeScan(page, 'account page with a refusal');
    expect(await page.locator('body').innerText()).not.toMatch(/\bat \S+ \(|Error:|node_modules/);
  });

  it("ends an application's access: its refresh token is refused at once", async () => {
    await oidc.refreshTokenGrant(rp, refreshToken).then((t) => { refreshToken = t.refresh_token!; });
    await page.goto(accountUrl());
    await page.getByRole('button', { name: 'End access of acct app' }).click();
    await page.waitForURL((u) => u.search === '?done=application');
    await expect(oidc.refreshTokenGrant(rp, refreshToken)).rejects.toHaveProperty('error', 'invalid_grant');
  });

  it('ends a session, and with it the refresh tokens of the applications signed in to in it', async () => {
    await signInToApp(false);
    await page.goto(accountUrl());
    const sessions = page.getByRole('table', { name: 'Where you are signed in' });
    expect(await sessions.locator('tbody tr').count()).toBe(1);
    await page.getByRole('button', { name: 'End session 1' }).click();
    await page.waitForURL((u) => u.search === '?done=session');
    await expect(oidc.refreshTokenGrant(rp, refreshToken)).rejects.toHaveProperty('error', 'invalid_grant');
    expect(await page.getByRole('table', { name: 'Where you are signed in' }).count()).toBe(0);
  });

  it('changes the password: the current one is required, the new one must pass the policy', async () => {
    await page.goto(accountUrl());
    const fill = async (current: string, next: string, again = next) => {
      await page.getByLabel('Current password').fill(current);
      await page.getByLabel('New password', { exact: true }).fill(next);
      await page.getByLabel('New password again').fill(again);
      await page.getByRole('button', { name: 'Change password' }).click();
    };
    await fill('not my password', 'a brand new passphrase');
    expect(await fieldError('currentPassword')).toBe('That is not your current password.');
    await fill(PASSWORD, 'qwertyuiop');
    expect(await fieldError('newPassword')).toBe('The new password is too common: it appears in lists of leaked passwords or is a simple pattern; choose another (a few unrelated words make a good password).');
    await fill(PASSWORD, 'a brand new passphrase', 'something else');
    expect(await fieldError('confirm')).toBe('The two new passwords differ: type the same password twice.');
    await axeScan(page, 'account page with field errors');
    await fill(PASSWORD, 'a brand new passphrase');
    await page.waitForURL((u) => u.search === '?done=password');
    expect(await page.getByRole('status').textContent()).toBe('Your password is changed.');
    expect(server.audit().some((a) => a.audit === 'password.set' && a.via === 'change' && a.user === user.id)).toBe(true);
    expect(server.audit().some((a) => a.audit === 'login.failure' && a.factor === 'password-change')).toBe(true);
  });

  it('sets up an authenticator app from the page: its key as a QR code and as text, confirmed by a code', async () => {
    // A lost phone: the administrator resets the person's factors; the page offers a new app at once.
    await (await adminClient(server)).typed.call('resetUserFactors', { tenant: TENANT, userId: user.id });
    await page.goto(accountUrl());
    await page.getByRole('link', { name: 'Set up an authenticator app' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Set up an authenticator app');
    expect(await page.locator('figure.qr svg').count()).toBe(1);
    const key = (await page.locator('#totp-secret').textContent())!.trim();
    await axeScan(page, 'authenticator app setup');
    // A wrong code sets nothing up and says so at the field; the same key stays on the page.
    await page.getByLabel('Code the app shows (6 digits)').fill('000000' === (await generate({ secret: key, epoch: nowSeconds() })) ? '111111' : '000000');
    await page.getByRole('button', { name: 'Finish setup' }).click();
    expect(await page.locator('#code-error').textContent()).toContain('That code does not match the key');
    expect((await page.locator('#totp-secret').textContent())!.trim()).toBe(key);
    expect((await (await adminClient(server)).typed.call('getUserFactors', { tenant: TENANT, userId: user.id })).totp).toBeNull();
    await page.getByLabel('Code the app shows (6 digits)').fill(await generate({ secret: key, epoch: nowSeconds() }));
    await page.getByRole('button', { name: 'Finish setup' }).click();
    await page.waitForURL((u) => u.search === '?done=totp-added');
    expect(await page.getByRole('status').textContent()).toContain('Your authenticator app is set up');
    expect((await (await adminClient(server)).typed.call('getUserFactors', { tenant: TENANT, userId: user.id })).totp).not.toBeNull();
    // The setup is over: the page offers none while one is set up.
    await page.goto(`${new URL(accountUrl()).origin}/account/totp`);
    await page.waitForURL(accountUrl());
    expect(await page.getByRole('link', { name: 'Set up an authenticator app' }).count()).toBe(0);
  });

  it("adds a passkey from the page: the browser's authenticator makes it, the server verifies and keeps it", async () => {
    await page.goto(accountUrl());
    expect(await page.getByRole('table', { name: 'Your passkeys' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Add a passkey' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Add a passkey');
    await axeScan(page, 'passkey setup');
    // A forged answer (no authenticator behind it) is refused in words; nothing is kept.
    const csrf = await page.locator('form[action="/account/passkeys"] input[name=csrf]').getAttribute('value');
    const forged = await page.request.post(`${accountUrl()}passkeys`, {
      form: { csrf: csrf!, credential: JSON.stringify({ id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', attestationObject: 'oA' }, clientExtensionResults: {} }) },
      headers: { origin: new URL(accountUrl()).origin },
    });
    expect(forged.status()).toBe(400);
    expect(await forged.text()).toContain('The passkey was not saved');
    const admin = await adminClient(server);
    expect((await admin.typed.call('getUserFactors', { tenant: TENANT, userId: user.id })).passkeys).toEqual([]);
    // The real thing: the page's button asks the (virtual) authenticator, and the form posts its answer.
    await page.reload();
    await page.getByRole('button', { name: 'Create the passkey' }).click();
    await page.waitForURL((u) => u.search === '?done=passkey-added');
    expect(await page.getByRole('status').textContent()).toContain('Your passkey is added');
    expect(await page.getByRole('table', { name: 'Your passkeys' }).locator('tbody tr').count()).toBe(1);
    const kept = (await admin.typed.call('getUserFactors', { tenant: TENANT, userId: user.id })).passkeys.map((p) => p.id);
    expect(kept).toHaveLength(1);
    // The one the server keeps is a credential the authenticator holds.
    const held = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials.map((c) => Buffer.from(c.credentialId, 'base64').toString('base64url'));
    expect(held).toContain(kept[0]);
    expect(server.audit().some((a) => a.audit === 'passkey.registered' && a.via === 'account' && a.user === user.id)).toBe(true);
  });

  it('signs out everywhere, and a signed-out browser is sent to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.waitForURL((u) => u.pathname === '/account/signed-out');
    await axeScan(page, 'signed out');
    await page.goto(accountUrl());
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    await axeScan(page, 'sign-in page');
  });
});
