/**
 * The acceptance's provisioning run, every part real: an identity provider's sync through SCIM
 * (1,000 users, 50 groups of 20, concurrent requests, 429s honoured as a provisioning client does)
 * against a running server; a group assigned to an application; then a person from that group
 * signs in to the application in Chromium, and a person from another group is turned away.
 *
 * The application is a small confidential web client (openid-client, code flow with PKCE) on its
 * own port, as a real one would be. Only two users' passwords are synchronised: hashing 1,000
 * passwords with argon2 would measure argon2. The run is made on each backend: SQLite (the default)
 * and PostgreSQL (a real cluster, test/support/postgres.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { jsonOf, launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { adminClient, relyingParty, testServer, type AdminClient } from '../server/_support.ts';
import { GROUP, PATCH_OP, scimClient, scimUser, type ScimAnswer, type ScimClient } from './_support.ts';

const USERS = 1000;
const GROUPS = 50;
const PER_GROUP = USERS / GROUPS;
const CONCURRENCY = 8;
const PASSWORD = 'synchronised by the identity provider';

let app: Server | undefined;
let browser: Browser;
let postgres: TestPostgres;

/** A provisioning client: on 429 it waits as Retry-After says, then sends again. */
async function send(scim: ScimClient, method: string, path: string, body?: unknown): Promise<ScimAnswer> {
  for (;;) {
    const r = await scim.call(method, path, body);
    if (r.status !== 429) return r;
    await new Promise((resolve) => setTimeout(resolve, Number(r.headers.get('retry-after') ?? '1') * 1000));
  }
}

async function inParallel<T, R>(items: readonly T[], fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  }));
  return out;
}

/** The application: /login starts the code flow, /callback finishes it and shows who signed in (or why not). */
async function startApp(issuer: string, clientId: string, clientSecret: string): Promise<{ origin: string; redirectUri: string }> {
  const listening = createServer();
  app = listening;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  const origin = `http://portal.localhost:${(listening.address() as AddressInfo).port}`;
  const redirectUri = `${origin}/callback`;
  const config = await relyingParty(issuer, clientId, clientSecret);
  const pending = new Map<string, string>();
  listening.on('request', (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', origin);
      if (url.pathname === '/login') {
        const verifier = oidc.randomPKCECodeVerifier();
        const state = oidc.randomState();
        pending.set(state, verifier);
        const to = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid email profile', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
        res.writeHead(302, { location: to.href }).end();
        return;
      }
      if (url.pathname === '/callback') {
        const state = url.searchParams.get('state') ?? '';
        const body = url.searchParams.has('error')
          ? { error: url.searchParams.get('error') }
          : (await oidc.authorizationCodeGrant(config, url, { pkceCodeVerifier: pending.get(state)!, expectedState: state })).claims();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        return;
      }
      res.writeHead(404).end();
    })().catch((err: Error) => res.writeHead(500).end(err.message));
  });
  return { origin, redirectUri };
}

beforeAll(async () => {
  browser = await launchBrowser();
  postgres = await startPostgres();
});
afterAll(async () => {
  await browser?.close();
  await postgres?.stop();
});

describe.each(['sqlite', 'postgres'] as const)('on %s', (backend) => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;
  beforeAll(async () => {
    server = await testServer(backend === 'postgres' ? { database: (await postgres.createDatabase('provisioning')).url } : {});
    admin = await adminClient(server);
  });
  afterAll(async () => {
    await new Promise((resolve) => (app === undefined ? resolve(undefined) : app.close(resolve)));
    app = undefined;
    await server?.dispose();
  });

  it('an identity provider provisions 1,000 users and 50 groups; a member of the group assigned to the portal signs in there, another is turned away', async () => {
    await admin.put('/admin/v1/tenants/bigco', { displayName: 'BigCo' });
    const secret = 'portal-secret-0123456789-abcdefghijklmnop';
    const placeholder = 'http://portal.localhost/callback';
    await admin.put('/admin/v1/tenants/bigco/applications/portal', { kind: 'web', displayName: 'BigCo Portal', clientId: 'portal', clientSecret: secret, redirectUris: [placeholder], scopes: ['openid', 'email', 'profile'] });
    const { origin, redirectUri } = await startApp(server.issuer('bigco'), 'portal', secret);
    await admin.put('/admin/v1/tenants/bigco/applications/portal', { kind: 'web', displayName: 'BigCo Portal', clientId: 'portal', clientSecret: secret, redirectUris: [redirectUri], scopes: ['openid', 'email', 'profile'] });
    const { token } = await admin.typed.call('createScimToken', { tenant: 'bigco' }, { body: { description: 'HR system' } });
    const scim = scimClient(server, 'bigco', token);

    const started = Date.now();
    const n = Array.from({ length: USERS }, (_, i) => String(i).padStart(4, '0'));
    const users = await inParallel(n, async (k) => {
      const r = await send(scim, 'POST', '/Users', scimUser(`employee.${k}`, `employee.${k}@bigco.test`, {
        externalId: `hr-${k}`, name: { givenName: 'Employee', familyName: k }, displayName: `Employee ${k}`, active: true,
      }));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.id as string;
    });
    const groups = await inParallel(Array.from({ length: GROUPS }, (_, g) => g), async (g) => {
      const r = await send(scim, 'POST', '/Groups', {
        schemas: [GROUP], displayName: `Team ${g}`, externalId: `hr-team-${g}`,
        members: users.slice(g * PER_GROUP, (g + 1) * PER_GROUP).map((value) => ({ value })),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.id as string;
    });
    const seconds = (Date.now() - started) / 1000;
    process.stdout.write(`provisioning on ${backend}: ${USERS} users and ${GROUPS} groups through SCIM in ${seconds.toFixed(1)} s (${CONCURRENCY} requests at a time)\n`);

    expect((await scim.call('GET', '/Users?count=0')).body.totalResults).toBe(USERS);
    expect((await scim.call('GET', '/Groups?count=0')).body.totalResults).toBe(GROUPS);
    const found = await scim.call('GET', `/Users?filter=${encodeURIComponent('userName eq "Employee.0777"')}`);
    expect(found.body.Resources).toEqual([expect.objectContaining({ id: users[777], externalId: 'hr-0777', groups: [expect.objectContaining({ value: groups[38], display: 'Team 38' })] })]);

    // The identity provider synchronises two people's passwords; Git (or an operator) assigns Team 38 to the portal.
    for (const i of [777, 5]) {
      expect((await send(scim, 'PATCH', `/Users/${users[i]}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'password', value: PASSWORD }] })).status).toBe(200);
    }
    expect((await admin.call('PUT', `/admin/v1/tenants/bigco/applications/portal/group-assignments/${groups[38]}`, { managedBy: 'console' })).status).toBe(201);

    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${origin}/login`);
    await page.locator('input[name="email"]').fill('employee.0777@bigco.test');
    await page.locator('input[name="password"]').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${redirectUri}?**`);
    await screenshot(page, `scim-provisioned-member-signed-in-${backend}`);
    expect(await jsonOf(page)).toMatchObject({ sub: users[777], email: 'employee.0777@bigco.test', name: 'Employee 0777' });
    await context.close();

    // Employee 0005 is in Team 0, which is not assigned: the service says why, the portal gets access_denied.
    const other = await newContext(browser);
    const denied = await other.newPage();
    await denied.goto(`${origin}/login`);
    await denied.locator('input[name="email"]').fill('employee.0005@bigco.test');
    await denied.locator('input[name="password"]').fill(PASSWORD);
    await denied.getByRole('button', { name: 'Sign in' }).click();
    expect(await visibleText(denied)).toMatch(/not assigned to BigCo Portal/);
    await denied.getByRole('button', { name: /^Return to/ }).click();
    await denied.waitForURL(`${redirectUri}?**`);
    expect(await jsonOf(denied)).toEqual({ error: 'access_denied' });
    await other.close();
  });
});
