/**
 * Recovery and invitations, end to end: Chromium against a real server whose mail goes over SMTP to
 * a real SMTP server on loopback (test/support/smtp.ts), read back as a mail client would.
 *
 * - "Forgot password?" answers the same for an address with and without an account, and mails a
 *   single-use link only to the account; the new password passes the tenant's policy; the person is
 *   still asked for their second factor when they sign in with it.
 * - An administrator invites a person made without a password (admin API; SCIM-made people too);
 *   the link sets one.
 * - Mail names the tenant, in text and HTML; a mail server that refuses is a clear error to the admin.
 * - Bad links count as guesses against the address, which the guessing defence locks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from 'otplib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { routePath } from '../../src/contract/index.ts';
import { axeScan } from '../console/_support.ts';
import { scimTenant, scimUser } from '../scim/_support.ts';
import { adminClient, testServer, type AdminClient } from '../server/_support.ts';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { linkIn, smtpSink, type SmtpSink } from '../support/smtp.ts';
import { PASSWORD, alertText, alice, applyModel, beginSignIn, loginServer, signOut, startApp, stopApp, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let smtp: SmtpSink;
let admin: AdminClient;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const TENANT = 'rec';
const user = alice(TENANT);
const NEW_PASSWORD = 'marmalade tugboat lantern';

beforeAll(async () => {
  await startApp();
  smtp = await smtpSink();
  // Backoff off, and an address lock after 12 failures: the last test reaches it on purpose.
  server = await loginServer({ smtpUrl: smtp.url, mailFrom: 'Rec sign-in <signin@localhost>', backoffBaseMs: 0, addressLockoutThreshold: 12 });
  await applyModel(server, tenantYaml(TENANT, '{ methods: [password, totp], requireSecondFactor: true }')
    .replace('    displayName: Rec Inc.\n', '    displayName: Rec Inc.\n    passwordPolicy: { minLength: 12 }\n'));
  admin = await adminClient(server);
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
});
afterAll(async () => {
  await stopApp();
  await browser?.close();
  await server?.dispose();
  await smtp?.close();
});

const nowSeconds = () => Math.floor(Date.now() / 1000);
let totpSecret = '';

async function signInWithPassword(password: string): Promise<void> {
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe('recovery', () => {
  it('(setup) alice signs in once and enrols her authenticator app, the second factor the tenant requires', async () => {
    const flow = await beginSignIn(page, server, TENANT);
    await signInWithPassword(PASSWORD);
    totpSecret = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel(/code/i).fill(await generate({ secret: totpSecret, epoch: nowSeconds() }));
    await page.getByRole('button', { name: /finish setup/i }).click();
    expect((await flow.finish()).sub).toBe(user.id);
    await signOut(page, server, TENANT);
  });

  it('"Forgot password?" answers the same whether or not the account exists, and mails only the account', async () => {
    await beginSignIn(page, server, TENANT);
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Forgot password?');
    const headers = (await page.request.get(page.url())).headers();
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options']).toBe('DENY');
    await axeScan(page, 'forgot password');

    // An empty form: a field-level message.
    await page.getByLabel('Email').fill('');
    await page.locator('form').evaluate((f: HTMLFormElement) => { f.noValidate = true; });
    await page.getByRole('button', { name: 'Email me a link' }).click();
    expect(await page.locator('#email-error').textContent()).toBe('Enter your email address.');

    const before = smtp.messages.length;
    await page.getByLabel('Email').fill('nobody@rec.example');
    await page.getByRole('button', { name: 'Email me a link' }).click();
    const unknown = (await page.getByRole('status').textContent())!;
    await page.getByLabel('Email').fill(user.email);
    await page.getByRole('button', { name: 'Email me a link' }).click();
    const known = (await page.getByRole('status').textContent())!;
    expect(known.replace(user.email, 'X')).toBe(unknown.replace('nobody@rec.example', 'X'));
    expect(known).toBe(`If ${user.email} has an account here, we sent it a link to choose a new password. It expires in 30 minutes.`);
    await screenshot(page, 'recovery-requested');

    const mail = await smtp.next(user.email);
    expect(mail.subject).toBe('Reset your password for Rec Inc.');
    expect(mail.from).toBe('signin@localhost');
    expect(mail.text).toContain('at Rec Inc.');
    expect(mail.html).toContain('Rec Inc.');
    expect(mail.html).toContain(linkIn(mail, '/password/'));
    // Nothing went to the address without an account.
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.messages.slice(before).map((m) => m.to)).toEqual([[user.email]]);
  });

  it('the link sets a new password the policy accepts; signing in with it still asks for the second factor', async () => {
    const mail = await smtp.next(user.email);
    const link = linkIn(mail, '/password/');
    await page.goto(link);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Choose a new password');
    await axeScan(page, 'choose a new password');

    // Field-level answers: the policy's words, then two passwords that differ.
    await page.getByLabel('New password', { exact: true }).fill('password1234');
    await page.getByLabel('New password again').fill('password1234');
    await page.getByRole('button', { name: 'Set password' }).click();
    expect(await page.locator('#password-error').textContent()).toMatch(/^Password is too common/);
    await page.getByLabel('New password', { exact: true }).fill('short one');
    await page.getByLabel('New password again').fill('short one');
    await page.getByRole('button', { name: 'Set password' }).click();
    expect(await page.locator('#password-error').textContent()).toBe('Password must be at least 12 characters long');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill(`${NEW_PASSWORD}!`);
    await page.getByRole('button', { name: 'Set password' }).click();
    expect(await page.locator('#confirm-error').textContent()).toBe('The two passwords differ: type the same password twice.');
    expect(await page.locator('body').innerText()).not.toMatch(/\bat \S+ \(|Error:|node_modules/);

    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    // POST, redirect, GET.
    await page.waitForURL((u) => u.pathname === '/password/done');
    expect(await page.getByRole('status').textContent()).toBe('Your password is set.');
    await axeScan(page, 'password set');

    // Back to the sign-in it was asked from: the old password is refused, the new one leads to the second factor.
    await page.getByRole('link', { name: 'Continue signing in' }).click();
    await signInWithPassword(PASSWORD);
    expect(await alertText(page)).toBe('Invalid email or password.');
    const flow = await beginSignIn(page, server, TENANT);
    await signInWithPassword(NEW_PASSWORD);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Confirm it is you');
    expect(await page.getByLabel(/code from your authenticator app/i).count()).toBe(1);
    await screenshot(page, 'recovery-second-factor');
    await page.getByLabel(/code/i).fill(await generate({ secret: totpSecret, epoch: nowSeconds() + 30 }));
    await page.getByRole('button', { name: /verify code/i }).click();
    expect((await flow.finish()).sub).toBe(user.id);
    expect(server.audit().find((a) => a.audit === 'password.set')).toMatchObject({ via: 'recovery', tenant: TENANT, user: user.id });
  });

  it('a link works once', async () => {
    const link = linkIn(await smtp.next(user.email), '/password/');
    const again = await page.goto(link);
    expect(again?.status()).toBe(400);
    expect(await alertText(page)).toContain('This link does not work');
  });
});

describe('invitations', () => {
  it('an administrator invites a person made without a password; the link sets one, and the sign-in asks for the second factor', async () => {
    const id = 'u-nina';
    const email = 'nina@rec.example';
    await admin.typed.call('putUser', { tenant: TENANT, userId: id }, { body: { email, displayName: 'Nina' } });
    await admin.typed.call('putAssignment', { tenant: TENANT, application: 'app', userId: id }, { body: {} });
    const sent = await admin.typed.call('inviteUser', { tenant: TENANT, userId: id });
    expect(sent).toMatchObject({ kind: 'invitation', email, sent: true });
    // A second press moments later mails nothing new: the first link stands.
    expect(await admin.typed.call('inviteUser', { tenant: TENANT, userId: id })).toMatchObject({ sent: false });

    const mail = await smtp.next(email);
    expect(mail.subject).toBe('You are invited to Rec Inc.');
    expect(mail.html).toContain('Rec Inc.');
    await page.goto(linkIn(mail, '/password/'));
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Choose your password');
    await page.getByLabel('New password', { exact: true }).fill('nina chooses her own words');
    await page.getByLabel('New password again').fill('nina chooses her own words');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL((u) => u.pathname === '/password/done');
    expect(server.audit().find((a) => a.audit === 'password.set' && a.user === id)).toMatchObject({ via: 'invitation' });

    expect((await admin.typed.call('getUser', { tenant: TENANT, userId: id })).hasPassword).toBe(true);
    // Now she has one: an invitation is refused, with the way forward.
    const again = await admin.call('POST', routePath('inviteUser', { tenant: TENANT, userId: id }));
    expect(again.status).toBe(409);
    expect(again.body.message).toBe("user 'u-nina' has a password already: send a recovery link instead");

    await signOut(page, server, TENANT);
    await beginSignIn(page, server, TENANT);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('nina chooses her own words');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Confirm it is you');
  });

  it('a person SCIM made without a password can be invited; a disabled one cannot', async () => {
    const { scim } = await scimTenant(admin, server, 'recscim');
    const made = await scim.call('POST', '/Users', scimUser('omar', 'omar@recscim.example'));
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    expect(await admin.typed.call('inviteUser', { tenant: 'recscim', userId: id })).toMatchObject({ sent: true, email: 'omar@recscim.example' });
    const mail = await smtp.next('omar@recscim.example');
    expect(mail.subject).toBe('You are invited to recscim Inc.');
    await scim.call('PATCH', `/Users/${id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] });
    const refused = await admin.call('POST', routePath('sendRecovery', { tenant: 'recscim', userId: id }));
    expect(refused.status).toBe(409);
    // Disabling ended the invitation too.
    await page.goto(linkIn(mail, '/password/'));
    expect(await alertText(page)).toContain('This link does not work');
  });

  it('a mail server that cannot be reached is a clear error to the administrator, and nothing is left behind', async () => {
    const offline = await testServer({ login: { smtpUrl: 'smtp://127.0.0.1:9' } });
    try {
      const a = await adminClient(offline);
      await a.put(routePath('getTenant', { tenant: 'nomail' }), { displayName: 'No Mail' });
      await a.put(routePath('getUser', { tenant: 'nomail', userId: 'u-x' }), { email: 'x@nomail.example' });
      const r = await a.call('POST', routePath('inviteUser', { tenant: 'nomail', userId: 'u-x' }));
      expect(r.status).toBe(502);
      expect(r.body).toMatchObject({ error: 'mail_not_sent' });
      expect(r.body.message).toBe('the invitation could not be mailed to x@nomail.example: the mail server (smtp://127.0.0.1:9) refused or could not be reached; nothing was sent, try again');
    } finally {
      await offline.dispose();
    }
  });
});

describe('guessing', () => {
  it('links that are no links count against the address, which the guessing defence locks', async () => {
    const origin = new URL(server.issuer(TENANT)).origin;
    let last = 0;
    for (let i = 0; i < 14; i++) {
      const r = await page.goto(`${origin}/password/${'A'.repeat(42)}${i % 10}`);
      last = r!.status();
    }
    expect(last).toBe(429);
    expect(await alertText(page)).toMatch(/^Too many failed attempts/);
    expect(server.audit().filter((a) => a.audit === 'login.lockout' && a.factor === 'password-link').length).toBeGreaterThan(0);
  });
});
