/**
 * A client at Authlib's defaults works with the server's default access token lifetime
 * (src/contract/tokens.ts): Authlib treats a token that expires within 60 s as expired and refreshes
 * it before each use (OAuth2Session `leeway=60`), so with tokens shorter than that leeway every
 * token it gets looks expired on arrival. Driven as matrix.test.ts drives its clients: the login
 * form over HTTP, a real server at its defaults, Authlib's Flask client and Authlib's own resource
 * server (test/interop/python/authlib_defaults.py, in the venv that test/support/interop-clients.ts
 * installs from the project's requirements).
 */
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_ACCESS_TOKEN_LIFETIME, routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, fixtureTenant, testServer, type Fixture } from '../server/_support.ts';
import { interopProgram, startInteropClient, type RunningInteropClient } from '../support/interop-clients.ts';
import { REPO_ROOT } from '../support/processes.ts';

/** Authlib's OAuth2Session default: a token expiring within this many seconds is refreshed before use. */
const AUTHLIB_LEEWAY = 60;

let server: Awaited<ReturnType<typeof testServer>>;
let acme: Fixture;
let client: RunningInteropClient;
const CLIENT_ID = 'authlib-defaults';
const SECRET = 'authlib-defaults-secret-0123456789abcdefghijkl';

beforeAll(async () => {
  const program = await interopProgram('python');
  server = await testServer();
  const admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  client = await startInteropClient({ ...program, args: [join(REPO_ROOT, 'test', 'interop', 'python', 'authlib_defaults.py')] }, {
    IDFORGE_ISSUER: server.issuer('acme'), IDFORGE_CLIENT_ID: CLIENT_ID, IDFORGE_CLIENT_SECRET: SECRET,
    IDFORGE_SCOPES: 'openid email profile offline_access', IDFORGE_API_AUDIENCE: acme.api,
  }, 'python-authlib-defaults');
  // Authlib sends a nonce but no PKCE by default (matrix.test.ts shows the refusal under `pkce: required`).
  await admin.put(routePath('getApplication', { tenant: 'acme', application: CLIENT_ID }), {
    kind: 'web', displayName: 'Authlib at its defaults', clientId: CLIENT_ID, clientSecret: SECRET, redirectUris: [`${client.url}/callback`],
    scopes: ['openid', 'email', 'profile', 'offline'], audience: [acme.api], pkce: 'optional',
  });
  await admin.put(routePath('getAssignment', { tenant: 'acme', application: CLIENT_ID, userId: acme.users.alice.id }), {});
}, 1_500_000);

afterAll(async () => {
  await client?.stop();
  await server?.dispose();
});

it('the default lifetime leaves room for Authlib\'s leeway', () => {
  expect(DEFAULT_ACCESS_TOKEN_LIFETIME).toBeGreaterThan(2 * AUTHLIB_LEEWAY);
});

it('Authlib at its defaults sends the token it got to the API as is, and refreshes it as it nears expiry', async () => {
  const browser = new Browser();
  const res = await browser.request(`${client.url}/login`, { redirect: 'manual' });
  expect(res.status, await res.text()).toBe(302);
  const login = await browser.follow(res.headers.get('location')!, 'never:');
  expect(login.html, `no login form at ${login.url}`).toContain('/login');
  const done = await browser.submit(login.url, login.html!, '/login', { email: acme.users.alice.email, password: PASSWORD }, 'never:');
  expect(done.url.startsWith(`${client.url}/callback?`), done.url).toBe(true);
  expect(done.response!.status, done.html).toBe(200);
  const result = JSON.parse(done.html!);

  // The token Authlib got lives the server's default lifetime, longer than Authlib's leeway (read
  // from the token itself, not from a clock).
  const issued = decodeJwt(result.accessToken as string);
  expect(issued.exp! - issued.iat!).toBe(DEFAULT_ACCESS_TOKEN_LIFETIME);
  expect(DEFAULT_ACCESS_TOKEN_LIFETIME).toBeGreaterThan(AUTHLIB_LEEWAY);
  // A fresh token: Authlib sends it without refreshing, and Authlib's resource server accepts it.
  expect(result.fresh).toEqual({ status: 200, body: { sub: acme.users.alice.id, jti: expect.any(String) }, sent: result.accessToken, refreshedByAuthlib: 0 });
  // The same token with 30 s left: Authlib refreshes first (refresh_token grant, offline_access read
  // as offline) and sends the new token, which the API accepts too.
  expect(result.aged).toMatchObject({ status: 200, body: { sub: acme.users.alice.id }, refreshedByAuthlib: 1 });
  expect(result.aged.sent).toBe(result.refreshedAccessToken);
  expect(result.aged.sent).not.toBe(result.accessToken);
  // Every refresh rotates the refresh token.
  expect(result.refreshedRefreshToken).toEqual(expect.any(String));
  expect(result.refreshedRefreshToken).not.toBe(result.refreshToken);
});
