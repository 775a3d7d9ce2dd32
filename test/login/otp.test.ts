/**
 * One-time codes by email, in Chromium: the code read from the file outbox signs the person in;
 * using it again is refused; an expired code is refused; a code can also be the second factor
 * after a password. Codes live 2 s on the expiry server so the test waits only briefly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { PASSWORD, alertText, expectAccessible, alice, applyModel, beginSignIn, codeFromOutbox, loginServer, startApp, stopApp, signOut, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let short: LoginServer;
let browser: Browser;
let page: Page;
const seen = new Set<string>();

beforeAll(async () => {
  await startApp();
  server = await loginServer();
  await applyModel(server, tenantYaml('mail', '{ methods: [password, otp] }') + tenantYaml('both', '{ methods: [password, otp], requireSecondFactor: true }'));
  short = await loginServer({ otpLifetimeSeconds: 2 });
  await applyModel(short, tenantYaml('mail', '{ methods: [otp] }'));
  browser = await launchBrowser();
  const context = await newContext(browser);
  page = await context.newPage();
});
afterAll(async () => {
  await stopApp();
  await browser?.close();
  await server?.dispose();
  await short?.dispose();
});

const outbox = (s: LoginServer) => join(s.dataDir, 'outbox');

async function requestCode(email: string): Promise<void> {
  await page.locator('#otp-email').fill(email);
  await page.getByRole('button', { name: 'Email me a code' }).click();
}

async function enterCode(code: string): Promise<void> {
  await page.getByLabel('Code from the email (6 digits)').fill(code);
  await page.getByRole('button', { name: 'Sign in with the code' }).click();
}

describe('code by email', () => {
  const user = alice('mail');
  let used = '';

  it('signs in with the code from the outbox; the page says where it went and for how long', async () => {
    const flow = await beginSignIn(page, server, 'mail');
    await expect.poll(() => page.getByRole('heading', { name: 'Code by email' }).count()).toBe(1);
    await requestCode(user.email);
    expect(await page.getByRole('status').first().textContent()).toBe(`If ${user.email} has an account here, we sent it a code. It expires in 10 minutes.`);
    used = await codeFromOutbox(outbox(server), user.email, seen);
    await screenshot(page, 'login-otp-sent');
    await expectAccessible(page);
    await enterCode(used);
    expect((await flow.finish()).sub).toBe(user.id);
  });

  it('refuses the same code a second time', async () => {
    await signOut(page, server, 'mail');
    await beginSignIn(page, server, 'mail');
    await page.locator('#otp-email').fill(user.email);
    await enterCode(used);
    expect(await alertText(page)).toBe('That code is not valid: it may be mistyped, already used or expired. Ask for a new code.');
  });

  it('answers a request for an unknown address exactly as for a known one, and sends nothing', async () => {
    await beginSignIn(page, server, 'mail');
    await requestCode('nobody@mail.example');
    expect(await page.getByRole('status').first().textContent()).toBe('If nobody@mail.example has an account here, we sent it a code. It expires in 10 minutes.');
    // Delivery is not awaited by the server: give a message that would exist time to appear.
    await expect(codeFromOutbox(outbox(server), 'nobody@mail.example', seen, 1_500)).rejects.toThrow(/no message/);
  });

  it('mails a new code at most every 30 seconds, answering the same', async () => {
    const bob = 'bob@mail.example';
    const flow = await beginSignIn(page, server, 'mail');
    await requestCode(bob);
    const first = await codeFromOutbox(outbox(server), bob, seen);
    await page.getByRole('button', { name: 'Send a new code' }).click();
    expect(await page.getByRole('status').first().textContent()).toBe(`If ${bob} has an account here, we sent it a code. It expires in 10 minutes.`);
    await expect(codeFromOutbox(outbox(server), bob, seen, 1_500)).rejects.toThrow(/no message/);
    // The code already sent still works.
    await enterCode(first);
    expect((await flow.finish()).sub).toBe('u-bob');
  });

  it('refuses an expired code', async () => {
    const u = alice('mail');
    await beginSignIn(page, short, 'mail');
    await requestCode(u.email);
    const code = await codeFromOutbox(outbox(short), u.email, seen);
    // Lifetime 2 s on this server: wait it out (no assertion on timing, only on the refusal).
    await new Promise((r) => setTimeout(r, 2500));
    await enterCode(code);
    expect(await alertText(page)).toBe('That code is not valid: it may be mistyped, already used or expired. Ask for a new code.');
    expect(short.audit().some((a) => a.audit === 'login.failure' && a.reason === 'expired code')).toBe(true);
  });

  it('is the second step after a password where the policy requires one', async () => {
    const u = alice('both');
    const flow = await beginSignIn(page, server, 'both');
    await page.getByLabel('Email', { exact: true }).fill(u.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.locator('main').innerText()).toContain('also asks for a second step: code by email');
    // The factor of the first step is not offered again: only the emailed code remains.
    expect(await page.locator('#password').count()).toBe(0);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    expect(await page.getByRole('status').first().textContent()).toBe(`We sent a code to ${u.email}. It expires in 10 minutes.`);
    await enterCode(await codeFromOutbox(outbox(server), u.email, seen));
    expect((await flow.finish()).sub).toBe(u.id);
  });
});
