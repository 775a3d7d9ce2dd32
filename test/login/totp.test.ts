/**
 * Password + TOTP, in Chromium, provisioned from a model by `idforge apply`: enrolment at the
 * login page (QR code, key shown once), confirmation with a first code, then a fresh code at
 * each login; a replayed or wrong code is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from 'otplib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { PASSWORD, alertText, expectAccessible, alice, applyModel, beginSignIn, loginServer, startApp, stopApp, signOut, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  await startApp();
  server = await loginServer();
  await applyModel(server, tenantYaml('mfa', '{ methods: [password, totp], requireSecondFactor: true }'));
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
});
afterAll(async () => {
  await stopApp();
  await browser?.close();
  await server?.dispose();
});

const user = alice('mfa');
const codeAt = (secret: string, epochSeconds: number) => generate({ secret, epoch: epochSeconds });
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function password(): Promise<void> {
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function enterCode(code: string): Promise<void> {
  await page.getByLabel(/code/i).fill(code);
  await page.getByRole('button', { name: /verify code|finish setup/i }).click();
}

describe('password + TOTP', () => {
  let secret = '';
  let enrolmentCode = '';

  it('enrols at the first login: QR code and key, confirmed by a first code', async () => {
    const flow = await beginSignIn(page, server, 'mfa');
    await password();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Confirm it is you');
    await expect.poll(() => page.locator('main').innerText()).toContain('also asks for a second step: authenticator app');
    expect(await page.locator('img[src^="data:image/png;base64,"]').getAttribute('alt')).toContain(user.email);
    secret = (await page.locator('#totp-secret').textContent())!.trim();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await screenshot(page, 'login-totp-enrolment');
    await expectAccessible(page);

    // A wrong first code does not confirm the setup; the same key stays on the page.
    const right = await codeAt(secret, nowSeconds());
    await enterCode(right === '000000' ? '111111' : '000000');
    expect(await alertText(page)).toContain('That code is not right');
    expect((await page.locator('#totp-secret').textContent())!.trim()).toBe(secret);

    enrolmentCode = await codeAt(secret, nowSeconds());
    await enterCode(enrolmentCode);
    const claims = await flow.finish();
    expect(claims.sub).toBe(user.id);
  });

  it('after logging out, asks for a fresh code: the key is not shown again, replayed and wrong codes are refused', async () => {
    await signOut(page, server, 'mfa');
    const flow = await beginSignIn(page, server, 'mfa');
    await password();
    await expect.poll(() => page.getByLabel(/code from your authenticator app/i).count()).toBe(1);
    expect(await page.locator('#totp-secret').count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);

    await enterCode(enrolmentCode);
    expect(await alertText(page)).toBe('That code was already used. Wait for the app to show a new code, then enter it.');
    const fresh = await codeAt(secret, nowSeconds() + 30);
    await enterCode(fresh === '000000' ? '111111' : '000000');
    expect(await alertText(page)).toBe('That code is not right. Enter the code your authenticator app shows now.');
    await screenshot(page, 'login-totp-wrong-code');

    // The next period's code: accepted (one step of clock drift is allowed), and recorded.
    await enterCode(fresh);
    expect((await flow.finish()).sub).toBe(user.id);

    await signOut(page, server, 'mfa');
    await beginSignIn(page, server, 'mfa');
    await password();
    await enterCode(fresh);
    expect(await alertText(page)).toBe('That code was already used. Wait for the app to show a new code, then enter it.');
  });

  it('stores the secret sealed, never in the clear', async () => {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(`${server.dataDir}/idforge.db`, { readonly: true });
    const row = db.prepare('SELECT sealed_secret FROM totp_secrets WHERE tenant = ? AND user_id = ?').get('mfa', user.id) as { sealed_secret: string };
    db.close();
    expect(row.sealed_secret).toMatch(/^v1\./);
    expect(row.sealed_secret).not.toContain(secret);
  });

  it('writes an audit line for each failure', () => {
    const failures = server.audit().filter((a) => a.audit === 'login.failure' && a.tenant === 'mfa');
    expect(failures.map((f) => f.reason)).toEqual(['wrong totp (enrolment)', 'replayed totp', 'wrong totp', 'replayed totp']);
    expect(failures[0]).toMatchObject({ factor: 'totp', account: user.email, address: '127.0.0.1' });
  });

  it('answers a secret that no longer unseals with a page in words, not a stack trace', async () => {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(`${server.dataDir}/idforge.db`);
    // As if the master key had changed under the stored secret.
    db.prepare('UPDATE totp_secrets SET sealed_secret = ? WHERE tenant = ? AND user_id = ?').run('v1.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA', 'mfa', user.id);
    db.close();
    // Not signed in: the previous test's last attempt was refused.
    await beginSignIn(page, server, 'mfa');
    await password();
    await enterCode('123456');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Something went wrong');
    expect(await alertText(page)).toContain('a problem on our side, not because of anything you entered');
    expect(await page.locator('body').innerText()).not.toMatch(/\bat \S+ \(|Error:|node_modules/);
    expect(server.audit().find((a) => a.audit === 'login.error')).toMatchObject({ tenant: 'mfa' });
  });
});
