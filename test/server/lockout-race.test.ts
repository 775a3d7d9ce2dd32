/**
 * The guessing defence under a burst: parallel wrong passwords for one account must not all pass
 * the lockout check before the first (slow, argon2) verification records its failure. At most
 * `lockoutThreshold` guesses are verified and counted; the rest are refused as locked.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { LOGIN_DEFAULTS } from '../../src/server/index.ts';
import { lockedMessage } from '../../src/server/login/throttle.ts';
import { Browser, adminClient, fixtureTenant, pkceParams, relyingParty, testServer, type Fixture } from './_support.ts';

const BURST = 20;
const lines: string[] = [];
let server: Awaited<ReturnType<typeof testServer>>;
let acme: Fixture;

beforeAll(async () => {
  // Backoff off, so only the lockout stands between a burst and the password check.
  server = await testServer({ login: { backoffBaseMs: 0 }, log: (l) => lines.push(l) });
  acme = await fixtureTenant(await adminClient(server), 'acme');
});
afterAll(async () => {
  await server?.dispose();
});

it(`${BURST} parallel wrong passwords for one account: at most the threshold are verified, the rest refused as locked`, async () => {
  const config = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
  const browser = new Browser();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: oidc.randomState(), ...(await pkceParams()) });
  // One login form (its CSRF token and interaction cookie), posted BURST times at once.
  const login = await browser.follow(url.href, acme.web.redirectUri);
  const answers = await Promise.all(Array.from({ length: BURST }, (_, i) =>
    browser.submit(login.url, login.html!, '/login', { email: acme.users.alice.email, password: `wrong password ${i}` }, acme.web.redirectUri)));

  const threshold = LOGIN_DEFAULTS.lockoutThreshold;
  const audit = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).filter((a) => a.tenant === 'acme');
  expect(audit.filter((a) => a.audit === 'login.failure')).toHaveLength(threshold);
  expect(audit.filter((a) => a.audit === 'login.refused' && a.reason === 'locked')).toHaveLength(BURST - threshold);
  const statuses = answers.map((a) => a.response?.status).sort();
  expect(statuses).toEqual([...Array(threshold - 1).fill(401), ...Array(BURST - threshold + 1).fill(429)]);
  const message = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
  expect(answers.filter((a) => message(a.html!) === lockedMessage(LOGIN_DEFAULTS.lockoutSeconds))).toHaveLength(BURST - threshold + 1);
});
