/**
 * Guessing defence, in Chromium: N = 5 wrong passwords lock the account for the configured time
 * (30 s or 2 s here, 15 minutes by default); an unknown account gets the same words at every attempt,
 * lockout included; the lock holds against the right password and across factors; backoff
 * refuses quick retries; one address spraying many accounts is locked; every failure and lockout
 * is an audit line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { INVALID_CREDENTIALS } from '../../src/server/login/factors.ts';
import { lockedMessage } from '../../src/server/login/throttle.ts';
import { LOGIN_DEFAULTS } from '../../src/server/index.ts';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { PASSWORD, alertText, expectAccessible, alice, applyModel, beginSignIn, codeFromOutbox, loginServer, signOut, startApp, stopApp, tenantYaml, type LoginServer } from './_support.ts';

// The locking server's lockout lasts 30 s: a whole browser sign-in runs between locking and the
// check that the lock holds, and on a loaded machine that takes seconds, so the lock must outlive
// it by far. The expiring server's lasts 2 s, for the one test that waits the lockout out; the
// slow server's is the default 15 minutes.
const LOCKOUT_SECONDS = 30;
const LOCKED_MESSAGE = lockedMessage(LOCKOUT_SECONDS);
const EXPIRING_SECONDS = 2;
const LOCKED_EXPIRING = lockedMessage(EXPIRING_SECONDS);
const LOCKED_DEFAULT = lockedMessage(LOGIN_DEFAULTS.lockoutSeconds);
let locking: LoginServer;
let expiring: LoginServer;
let slow: LoginServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  await startApp();
  // Backoff off on both, so five quick failures reach the lockout.
  locking = await loginServer({ backoffBaseMs: 0, lockoutSeconds: LOCKOUT_SECONDS });
  await applyModel(locking, tenantYaml('guard', '{ methods: [password, otp] }'));
  expiring = await loginServer({ backoffBaseMs: 0, lockoutSeconds: EXPIRING_SECONDS });
  await applyModel(expiring, tenantYaml('guard', undefined));
  // Backoff of a minute, so "too soon" is certain whatever the machine's speed; address limit 8.
  slow = await loginServer({ backoffBaseMs: 60_000, addressLockoutThreshold: 8 });
  await applyModel(slow, tenantYaml('guard', undefined) + tenantYaml('spray', undefined));
  browser = await launchBrowser();
  page = await (await newContext(browser)).newPage();
});
afterAll(async () => {
  await browser?.close();
  await locking?.dispose();
  await expiring?.dispose();
  await slow?.dispose();
  await stopApp();
});

/** One password attempt on a fresh sign-in page; returns the announced error ('' when none). */
async function attempt(server: LoginServer, tenant: string, email: string, password: string): Promise<string> {
  await beginSignIn(page, server, tenant);
  await page.locator('#email').fill(email);
  await page.locator('#password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForLoadState('load');
  return (await page.getByRole('alert').count()) > 0 ? alertText(page) : '';
}

describe('lockout', () => {
  const user = alice('guard');

  it('locks after the 5th wrong password; an unknown account reads the same at every attempt', async () => {
    expect(LOGIN_DEFAULTS.lockoutThreshold).toBe(5);
    const known: string[] = [];
    const unknown: string[] = [];
    for (let i = 0; i < 5; i++) {
      known.push(await attempt(locking, 'guard', user.email, `wrong password ${i}`));
      unknown.push(await attempt(locking, 'guard', 'nobody@guard.example', `wrong password ${i}`));
    }
    expect(known).toEqual([...Array(4).fill(INVALID_CREDENTIALS), LOCKED_MESSAGE]);
    expect(LOCKED_MESSAGE).toBe('Too many failed attempts. Sign-in is paused for up to 30 seconds to protect the account; try again later.');
    expect(LOCKED_DEFAULT).toBe('Too many failed attempts. Sign-in is paused for up to 15 minutes to protect the account; try again later.');
    expect(unknown).toEqual(known);
    await screenshot(page, 'login-locked');
    await expectAccessible(page);

    // Locked means locked: the right password is refused too, in the same words.
    expect(await attempt(locking, 'guard', user.email, PASSWORD)).toBe(LOCKED_MESSAGE);

    const audit = locking.audit().filter((a) => a.tenant === 'guard');
    expect(audit.filter((a) => a.audit === 'login.failure')).toHaveLength(10);
    expect(audit.filter((a) => a.audit === 'login.lockout').map((a) => [a.key, a.seconds])).toEqual([
      [`account:${user.email}`, LOCKOUT_SECONDS],
      ['account:nobody@guard.example', LOCKOUT_SECONDS],
    ]);
    expect(audit.find((a) => a.audit === 'login.refused')).toMatchObject({ reason: 'locked', key: `account:${user.email}` });
  });

  it('lets the person in once the lockout time has passed', async () => {
    // Its own lock, on the server whose lockout is short enough to wait out.
    const locked: string[] = [];
    for (let i = 0; i < 5; i++) locked.push(await attempt(expiring, 'guard', user.email, `wrong password ${i}`));
    expect(locked).toEqual([...Array(4).fill(INVALID_CREDENTIALS), LOCKED_EXPIRING]);
    // The right password until it gets in: a fixed sleep is either too short on a loaded machine
    // or wasted on a fast one. Until the lock expires every answer must be the lockout's words.
    // The bound only stops a broken server from looping for ever; each try takes a browser
    // round trip plus the pause, so 100 tries outlast a 2 s lockout many times over.
    for (let tries = 1; ; tries++) {
      const flow = await beginSignIn(page, expiring, 'guard');
      await page.locator('#email').fill(user.email);
      await page.locator('#password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForLoadState('load');
      if ((await page.getByRole('alert').count()) === 0) {
        expect((await flow.finish()).sub).toBe(user.id);
        break;
      }
      expect(await alertText(page)).toBe(LOCKED_EXPIRING);
      if (tries === 100) throw new Error(`still locked after ${tries} tries with a ${EXPIRING_SECONDS} s lockout`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await signOut(page, expiring, 'guard');
  });

  it('counts wrong emailed codes against the same account: the password is then locked too', async () => {
    const bob = 'bob@guard.example';
    const seen = new Set<string>();
    await beginSignIn(page, locking, 'guard');
    await page.locator('#otp-email').fill(bob);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    const code = await codeFromOutbox(join(locking.dataDir, 'outbox'), bob, seen);
    const wrong = code === '000000' ? '111111' : '000000';
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) {
      await page.getByLabel('Code from the email (6 digits)').fill(wrong);
      await page.getByRole('button', { name: 'Sign in with the code' }).click();
      await page.waitForLoadState('load');
      answers.push(await alertText(page));
    }
    expect(answers.at(-1)).toBe(LOCKED_MESSAGE);
    expect(await attempt(locking, 'guard', bob, PASSWORD)).toBe(LOCKED_MESSAGE);
  });
});

describe('backoff and address limits', () => {
  it('after a few failures, refuses an immediate retry, even with the right password', async () => {
    const user = alice('guard');
    for (let i = 0; i < LOGIN_DEFAULTS.accountFreeFailures + 1; i++) expect(await attempt(slow, 'guard', user.email, 'wrong password')).toBe(INVALID_CREDENTIALS);
    // The wait counts down from 60 s while the browser works, so the number is whatever is left.
    const refusal = await attempt(slow, 'guard', user.email, PASSWORD);
    const waiting = /^Too many failed attempts in a row\. Wait (\d+) seconds?, then try again\.$/.exec(refusal);
    expect(waiting, refusal).not.toBeNull();
    expect(Number(waiting![1])).toBeGreaterThan(0);
    expect(Number(waiting![1])).toBeLessThanOrEqual(60);
    expect(await attempt(slow, 'guard', 'nobody@guard.example', 'wrong password')).toBe(INVALID_CREDENTIALS);
  });

  it('locks an address that sprays one password over many accounts', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 8; i++) answers.push(await attempt(slow, 'spray', `user${i}@spray.example`, 'Summer2026!'));
    expect(answers).toEqual([...Array(7).fill(INVALID_CREDENTIALS), LOCKED_DEFAULT]);
    // Now every account is refused from this address, existing ones included, in the same words.
    expect(await attempt(slow, 'spray', alice('spray').email, PASSWORD)).toBe(LOCKED_DEFAULT);
    expect(slow.audit().filter((a) => a.audit === 'login.lockout' && a.tenant === 'spray').map((a) => a.key)).toEqual(['address:127.0.0.1']);
  });
});
