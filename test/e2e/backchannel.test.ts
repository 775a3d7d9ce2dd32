/**
 * The web template and OpenID Connect Back-Channel Logout 1.0, as a developer runs them: the real
 * server at its default token lifetime (5 minutes, so the template's own renewal at half of it
 * cannot be what ends a session here), `idforge apply`, the scaffolded web template, Chromium.
 *
 * - Removing the assignment ends the template's session at once: the server's logout token reaches
 *   /backchannel-logout, which verifies it and destroys the user's sessions in its store.
 * - Signing out at the server ends the session it names (`sid`).
 * - What is not a valid logout token is refused with 400, and ends nothing.
 *
 * A session that does not end is caught by a deadline that fails the test, not by a timing
 * assertion; bench/e2e/revocation.ts prints how long it took.
 */
import { generateKeyPair, SignJWT } from 'jose';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKCHANNEL_LOGOUT_EVENT, BACKCHANNEL_LOGOUT_PATH } from '../../src/contract/index.ts';
import { launchBrowser, newContext } from '../support/browser.ts';
import { signIn, startStack, TENANT, type Stack, type TestUser } from './_stack.ts';

/** Past this after the change, a session still open fails the test (a lost or ignored logout). */
const DEADLINE_MS = 30_000;

describe('web template: back-channel logout', { timeout: 180_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let portal: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'backchannel', apps: ['portal'] });
    browser = await launchBrowser();
    portal = stack.app('portal').origin;
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** Signs `user` in to the portal; `hello()` is the callback path's answer for this browser. */
  async function session(user: TestUser): Promise<{ context: BrowserContext; hello: () => Promise<{ status: number; body: Record<string, unknown> }> }> {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${portal}/connect/${TENANT}`);
    await signIn(page, user);
    await page.waitForURL(`${portal}/hello`);
    const hello = async () => {
      const res = await context.request.get(`${portal}/hello`);
      return { status: res.status(), body: (await res.json()) as Record<string, unknown> };
    };
    return { context, hello };
  }

  /** Asks until the session is gone; the deadline fails the test. */
  async function ended(hello: () => Promise<{ status: number; body: Record<string, unknown> }>) {
    const until = Date.now() + DEADLINE_MS;
    for (;;) {
      const answer = await hello();
      if (answer.status !== 200) return answer;
      if (Date.now() > until) throw new Error(`the portal session is still open ${DEADLINE_MS / 1000} s after the change`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const post = (body: string) =>
    fetch(`${portal}${BACKCHANNEL_LOGOUT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

  it('refuses what is not a valid logout token with 400, and ends no session', async () => {
    const { context, hello } = await session(stack.users.bob);
    const first = await hello();
    expect(first.status).toBe(200);
    const idToken = String(first.body.id_token);
    const claims = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    // A token exactly as the server would make it, but signed by a key that is not the tenant's.
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, sid: claims.sid })
      .setProtectedHeader({ alg: 'ES256', typ: 'logout+jwt', kid: 'not-the-tenants' })
      .setIssuer(stack.issuer).setAudience('portal').setSubject(stack.users.bob.id).setIssuedAt().setJti('forged-1').setExpirationTime('2m')
      .sign(privateKey);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'logout+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify({
      iss: stack.issuer, aud: 'portal', sub: stack.users.bob.id, iat: Math.floor(Date.now() / 1000), jti: 'none-1', events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    })).toString('base64url')}.`;
    for (const [what, body] of [
      ['no token', ''],
      ['not a JWT', 'logout_token=hello'],
      ['signed by another key', `logout_token=${forged}`],
      ['unsigned (alg none)', `logout_token=${unsigned}`],
      // The tenant's own signature, but an ID token: typ JWT, a nonce, no logout event.
      ['an ID token', `logout_token=${idToken}`],
    ] as const) {
      const res = await post(body);
      expect(res.status, what).toBe(400);
      expect(await res.json(), what).toMatchObject({ error: 'invalid_request', error_description: expect.any(String) });
    }
    expect((await hello()).status).toBe(200);
    await context.close();
  });

  it('signing out at the server ends the session it names', async () => {
    const { context, hello } = await session(stack.users.bob);
    const other = await session(stack.users.bob);
    const idToken = String((await hello()).body.id_token);
    const page = await context.newPage();
    await page.goto(`${stack.issuer}session/end?${new URLSearchParams({ id_token_hint: idToken, client_id: 'portal' })}`);
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.getByText('You are signed out').waitFor();
    expect(await ended(hello)).toMatchObject({ status: 401, body: { error: 'login_required' } });
    // Bob's session in the other browser is another session at the server (another sid): it stays.
    expect((await other.hello()).status).toBe(200);
    await other.context.close();
    await context.close();
  });

  it('removing the assignment ends the session at once (no renewal is due: tokens live 5 minutes)', async () => {
    const { context, hello } = await session(stack.users.alice);
    expect((await hello()).status).toBe(200);
    await (await stack.admin()).remove('deleteAssignment', { tenant: TENANT, application: 'portal', userId: stack.users.alice.id });
    // The session is gone from the store, not refused a renewal: the callback path says "not signed in".
    expect(await ended(hello)).toEqual({ status: 401, body: { error: 'login_required', message: expect.stringContaining('Not signed in') } });
    expect(stack.app('portal').process.output()).toMatch(/back-channel logout: ended 1 session\(s\) of sub u-alice/);
    await context.close();
  });
});
