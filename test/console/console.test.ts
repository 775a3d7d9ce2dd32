/**
 * The admin console in Chromium, as a tenant administrator would use it, against the real server:
 * sign-in through the tenant (and a non-admin refused), Integrations, the Marketplace's four kinds
 * with the model's validation at the field, the one-time secret with the files `idforge compile`
 * writes, the Users tab (search, add, remove, save together; a failed save that loses nothing),
 * Git-owned objects read only with "propose this change", the security headers, cookies and CSRF,
 * and the move into Git: export, validate, plan with no changes. axe-core scans every page, and
 * every page is saved as a screenshot in test-output/screenshots/console-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { adminClient, localhostFetch, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { axeScan, tabTo } from './_support.ts';

const PASSWORD = 'console-test-password-1';
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const work = tempDir('idforge-console-');
let consoleUrl: string;
const stateFile = () => join(work.path, 'state.json');

async function idforge(args: string[]) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    env: { ACME_PASSWORD: PASSWORD, IDFORGE_STATE: stateFile() },
    cwd: work.path,
    color: false,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/** The model file as `git apply` of `patch` leaves it (the file itself is put back). */
function gitApplied(patch: string): string {
  const file = join(work.path, 'acme.yaml');
  const original = readFileSync(file, 'utf8');
  writeFileSync(join(work.path, 'proposed-change.patch'), patch);
  try {
    execFileSync('git', ['apply', 'proposed-change.patch'], { cwd: work.path, stdio: ['ignore', 'ignore', 'pipe'] });
    return readFileSync(file, 'utf8');
  } finally {
    writeFileSync(file, original);
  }
}

/** Screenshot and axe scan of the page as it is now. */
async function check(name: string): Promise<void> {
  await screenshot(page, `console-${name}`);
  await axeScan(page, name);
}

async function signIn(p: Page, email: string): Promise<void> {
  await p.locator('input[name="email"]').fill(email);
  await p.locator('input[name="password"]').fill(PASSWORD);
  await p.getByRole('button', { name: 'Sign in' }).click();
}

const MODEL = (port: number) => `server: { baseDomain: localhost, port: ${port} }
tenants:
  - name: acme
    displayName: Acme Corporation
    scopes: [{ name: admin, description: administer the tenant }]
    users:
      - { id: u-alice, email: alice@acme.test, displayName: Alice, scopes: [admin], password: { env: ACME_PASSWORD } }
      - { id: u-bob, email: bob@acme.test, displayName: Bob, password: { env: ACME_PASSWORD } }
      - { id: u-carol, email: carol@acme.test, displayName: Carol }
      - { id: u-dave, email: dave@acme.test }
      - { id: u-erin, email: erin@acme.test }
    applications:
      - { name: portal, kind: web, displayName: Acme Portal, origin: "http://portal.localhost:3000" }
      - { name: orders, kind: api, displayName: Orders API, audience: "https://orders.acme.test", routes: [{ path: /admin, scopes: [admin] }] }
    assignments:
      - { application: portal, users: [u-alice] }
`;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  // Part of the tenant comes from Git (a repository): applied from a model, so it is managed by idforge.
  execFileSync('git', ['init', '-q'], { cwd: work.path });
  writeFileSync(join(work.path, 'acme.yaml'), MODEL(server.port));
  const applied = await idforge(['apply', 'acme.yaml', '--data-dir', server.dataDir]);
  expect(applied.code, applied.stderr).toBe(0);
  consoleUrl = `http://acme.localhost:${server.port}/console/`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  work.remove();
});

describe('admin console', () => {
  it('the accessibility scan is real: it fails a page with a critical violation', async () => {
    const ctx = await newContext(browser);
    const p = await ctx.newPage();
    await p.setContent('<!doctype html><html lang="en"><head><title>t</title></head><body><main><img src="data:,"><button></button></main></body></html>');
    await expect(axeScan(p, 'a broken page')).rejects.toThrow(/axe on a broken page/);
    await ctx.close();
  });

  it('refuses a signed-in person without the admin scope, on a page that says why', async () => {
    const ctx = await newContext(browser);
    ctx.setDefaultTimeout(15_000);
    const p = await ctx.newPage();
    await p.goto(consoleUrl);
    expect(new URL(p.url()).pathname).toMatch(/^\/interaction\//);
    await expect.poll(() => p.locator('input[name="password"]').count()).toBe(1);
    expect(await visibleText(p)).toContain('Admin console');
    page = p;
    await check('01-sign-in');
    await signIn(p, 'bob@acme.test');
    await p.waitForURL(/\/console\/callback/);
    const text = await visibleText(p);
    expect(text).toContain('Not an administrator');
    expect(text).toContain('You are signed in as bob@acme.test, but you do not hold the admin scope of Acme Corporation');
    await check('02-refused-non-admin');
    // Nothing of the console opens for him.
    const res = await p.goto(consoleUrl);
    expect(new URL(p.url()).pathname).not.toBe('/console/');
    expect(res?.status()).not.toBe(200);
    await ctx.close();
  });

  it('signs the administrator in and lists the integrations', async () => {
    context = await newContext(browser);
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    await page.goto(consoleUrl);
    await signIn(page, 'alice@acme.test');
    await page.waitForURL(consoleUrl);
    const text = await visibleText(page);
    expect(text).toContain('Integrations');
    expect(text).toContain('Signed in as alice@acme.test');
    const portal = page.getByRole('row', { name: /Acme Portal/ });
    await expect.poll(() => portal.innerText()).toMatch(/Web App\s+portal\s+http:\/\/portal\.localhost:3000\/connect\/acme\/callback\s+1\s+users assigned to portal\s+Managed in Git/);
    expect(await page.getByRole('row', { name: /Orders API/ }).innerText()).toContain('Protected API');
    await check('03-integrations');

    const headers = (await page.request.get(consoleUrl)).headers();
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options']).toBe('DENY');
    const cookie = (await context.cookies()).find((c) => c.name === 'idforge_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
  });

  it("shows no notice a link writes: ?done= names a fixed message, never the text", async () => {
    const injected = 'Your account is suspended. Call +1 555 0100 now';
    await page.goto(`${consoleUrl}?done=${encodeURIComponent(injected)}`);
    const text = await visibleText(page);
    expect(text).toContain('Integrations');
    expect(text).not.toContain('suspended');
    expect(await page.locator('[role="status"], .notice').count()).toBe(0);
  });

  it('Marketplace: the Web App form shows the model\'s rule next to the field, then shows the secret once with the compiled configuration', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Marketplace' }).click();
    await page.waitForURL(`${consoleUrl}marketplace`);
    for (const title of ['Web App', 'Reverse proxy', 'Single-page app', 'Protected API']) expect(await visibleText(page)).toContain(`Add a ${title}`);
    await check('04-marketplace');
    await page.getByRole('link', { name: 'Add a Web App' }).click();
    await check('05-web-app-form');

    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('crm');
    await page.getByLabel('Display name').fill('Acme CRM');
    await page.getByLabel('Origin').fill('http://crm.acme.example');
    await page.getByLabel('Scopes').fill('openid profile email billing');
    await page.getByRole('button', { name: 'Add Web App' }).click();
    const origin = page.getByLabel('Origin');
    expect(await origin.getAttribute('aria-invalid')).toBe('true');
    const originError = await page.locator('#f-origin-error').innerText();
    expect(originError).toContain('must use https');
    expect(await page.locator('#f-scopes-error').innerText()).toContain('"billing"');
    expect(await page.getByRole('alert').innerText()).toContain('The application was not saved');
    await check('06-web-app-invalid');

    await origin.fill('http://crm.localhost:3001');
    await page.getByLabel('Scopes').fill('');
    await page.getByRole('button', { name: 'Add Web App' }).click();
    await expect.poll(() => visibleText(page)).toContain('Copy the client secret now: it is shown only this once.');
    const secret = await page.locator('#client-secret').innerText();
    expect(secret.length).toBeGreaterThanOrEqual(43);
    const grant = JSON.parse(await page.getByLabel('Contents of grant.json').inputValue());
    expect(grant.acme).toMatchObject({ key: 'crm', secret, subdomain: 'acme', pkce: true });
    expect(grant.defaults.origin).toBe('http://crm.localhost:3001');
    expect(await page.getByLabel('Contents of session.env').inputValue()).toMatch(/^SESSION_SECRET=/m);
    const state = JSON.parse(await page.getByLabel('Contents of idforge-state.json').inputValue());
    expect(state.secrets['acme/crm'].clientSecret).toBe(secret);
    writeFileSync(join(work.path, 'console-crm-state.json'), JSON.stringify(state));
    await check('07-web-app-created');
    // The server agrees: made in the console, the secret works at the token endpoint (checked as a hash).
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'crm' })).toMatchObject({ managedBy: 'console', clientId: 'crm' });
    // The POST redirected to the page that shows the secret: a reload never posts the form again,
    // and never shows the secret again.
    expect(page.url()).toBe(`${consoleUrl}applications/crm/created`);
    await page.reload();
    await page.waitForURL(`${consoleUrl}applications/crm?done=secret-shown`);
    expect(await visibleText(page)).toContain('The client secret was shown once');
    expect(await visibleText(page)).not.toContain(secret);
    expect((await admin.typed.listAll('listApplications', { tenant: 'acme' }))!.filter((x) => x.name === 'crm')).toHaveLength(1);
  });

  it('Marketplace: a reverse proxy, a single-page app and a protected API, each with its own fields', async () => {
    await page.goto(`${consoleUrl}marketplace/proxy`);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('wiki');
    await page.getByLabel('Origin').fill('http://wiki.localhost:4180');
    await page.getByLabel('Upstream').fill('http://127.0.0.1:4181');
    await page.getByRole('button', { name: 'Add Reverse proxy' }).click();
    await expect.poll(() => visibleText(page)).toContain('Copy the client secret now');
    const env = await page.getByLabel('Contents of oauth2-proxy.env').inputValue();
    expect(env).toMatch(/OAUTH2_PROXY_REDIRECT_URL=http:\/\/wiki\.localhost:4180\/oauth2\/callback/);
    expect(env).toMatch(/OAUTH2_PROXY_UPSTREAMS=http:\/\/127\.0\.0\.1:4181/);
    expect(await page.getByLabel('Contents of docker-compose.yml').inputValue()).toContain('oauth2-proxy');
    writeFileSync(join(work.path, 'console-wiki-state.json'), await page.getByLabel('Contents of idforge-state.json').inputValue());
    await check('08-proxy-created');

    await page.goto(`${consoleUrl}marketplace/spa`);
    await check('09-spa-form');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('dashboard');
    await page.getByLabel('Origin').fill('http://dashboard.localhost:5173');
    await page.getByLabel('orders').check();
    await page.getByLabel('Refresh tokens (scope offline)').check();
    await page.getByRole('button', { name: 'Add Single-page app' }).click();
    await expect.poll(() => visibleText(page)).toContain('Single-page app added');
    const spa = JSON.parse(await page.getByLabel('Contents of spa-config.json').inputValue());
    expect(spa).toMatchObject({ client_id: 'dashboard', audience: ['https://orders.acme.test'], redirect_uri: 'http://dashboard.localhost:5173' });
    expect(await visibleText(page)).not.toContain('client secret');
    await check('10-spa-created');

    await page.goto(`${consoleUrl}marketplace/api`);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('invoices');
    await page.getByLabel('Audience (identifier)').fill('https://orders.acme.test');
    await page.getByLabel('Protected routes').fill('/admin admin');
    await page.getByRole('button', { name: 'Add Protected API' }).click();
    expect(await page.locator('#f-audience-error').innerText()).toContain("is already the audience of api 'orders'");
    await check('11-api-invalid');
    await page.getByLabel('Audience (identifier)').fill('https://invoices.acme.test');
    await page.getByRole('button', { name: 'Add Protected API' }).click();
    await expect.poll(() => visibleText(page)).toContain('Protected API added');
    expect(JSON.parse(await page.getByLabel('Contents of api-config.json').inputValue())).toMatchObject({ audience: 'https://invoices.acme.test' });
    await check('12-api-created');

    await page.goto(consoleUrl);
    for (const name of ['crm', 'wiki', 'dashboard', 'invoices']) expect(await page.getByRole('row', { name: new RegExp(name) }).innerText()).toContain('Made in the console');
  });

  it('Users tab, by keyboard: search by email or id, add assignments, remove one, save them together', async () => {
    await page.goto(`${consoleUrl}applications/crm/users`);
    await check('13-users-tab-empty');
    await page.locator('body').focus();
    await tabTo(page, '#q');
    await page.keyboard.type('carol@');
    await page.keyboard.press('Enter');
    await expect.poll(() => visibleText(page)).toContain('Users matching “carol@”');
    await tabTo(page, 'button[value="add:u-carol"]');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('input[type=hidden][name=add]').count()).toBe(1);
    await page.getByLabel('Search users by email or id').fill('u-da');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Add assignment for dave@acme.test' }).click();
    await page.getByLabel('Search users by email or id').fill('alice');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Add assignment for alice@acme.test' }).click();
    expect(await visibleText(page)).toContain('3 unsaved changes.');
    await check('14-users-tab-pending');
    await page.locator('body').focus();
    await tabTo(page, 'button[value="save"]');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/users\?saved=3$/);
    expect(await visibleText(page)).toContain('Saved: 3 changes applied together.');
    await check('15-users-tab-saved');
    const assigned = async () => ((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'crm' })) ?? []).map((a) => `${a.userId}:${a.managedBy}`).sort();
    expect(await assigned()).toEqual(['u-alice:console', 'u-carol:console', 'u-dave:console']);

    await page.getByRole('button', { name: 'Remove u-dave' }).click();
    expect(await visibleText(page)).toContain('Will be removed');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.waitForURL(/\/users\?saved=1$/);
    expect(await assigned()).toEqual(['u-alice:console', 'u-carol:console']);
  });

  it('Users tab: a failed save changes nothing, says what failed, and keeps every pending change', async () => {
    await page.getByLabel('Search users by email or id').fill('erin');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Add assignment for erin@acme.test' }).click();
    await page.getByRole('button', { name: 'Remove u-carol' }).click();
    // Meanwhile, someone deletes erin.
    await admin.typed.remove('deleteUser', { tenant: 'acme', userId: 'u-erin' });
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const alertText = await page.getByRole('alert').innerText();
    expect(alertText).toContain('Nothing was saved');
    expect(alertText).toContain("Could not add u-erin: user 'u-erin' does not exist in tenant 'acme'");
    expect(await page.locator('input[type=hidden][name=add]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value))).toEqual(['u-erin']);
    expect(await page.locator('input[type=hidden][name=remove]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value))).toEqual(['u-carol']);
    expect(await visibleText(page)).toContain('2 unsaved changes.');
    await check('16-users-tab-failed-save');
    const assigned = ((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'crm' })) ?? []).map((a) => a.userId).sort();
    expect(assigned).toEqual(['u-alice', 'u-carol']);
    // Undo the failed entry; the rest saves.
    await page.getByRole('button', { name: 'Undo adding u-erin' }).click();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.waitForURL(/\/users\?saved=1$/);
    expect(((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'crm' })) ?? []).map((a) => a.userId)).toEqual(['u-alice']);
  });

  it('Git knows best: a Git-managed application is read only; a change to it comes out as a patch to the model', async () => {
    await page.goto(`${consoleUrl}applications/portal`);
    const text = await visibleText(page);
    expect(text).toContain('Managed in Git');
    expect(text).toContain('Propose a change');
    await check('17-git-application');
    await page.getByLabel('Display name').fill('Acme Staff Portal');
    await page.getByRole('button', { name: 'Propose this change' }).click();
    await expect.poll(() => visibleText(page)).toContain('Proposed change');
    // A page of its own after the POST: reloading it shows the same proposal, and changes nothing.
    expect(page.url()).toMatch(new RegExp(`^${consoleUrl}applications/portal/proposal\\?`));
    await page.reload();
    const patch = await page.getByLabel('Contents of proposed-change.patch').inputValue();
    // A patch of the file the entry was applied from: git apply takes it, and only the field changes.
    expect(await visibleText(page)).toContain('a patch to acme.yaml (tenants[0].applications[0], line 13), as it was last applied');
    expect(gitApplied(patch)).toBe(MODEL(server.port).replace('displayName: Acme Portal,', 'displayName: Acme Staff Portal,'));
    await check('18-proposal-application');
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({ displayName: 'Acme Portal', managedBy: 'idforge' });

    await page.goto(`${consoleUrl}applications/portal/users`);
    // The tab proposes instead of saving.
    expect(await page.getByRole('button', { name: 'Save', exact: true }).count()).toBe(0);
    await page.getByLabel('Search users by email or id').fill('carol');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Add assignment for carol@acme.test' }).click();
    await check('19-git-users-tab');
    await page.getByRole('button', { name: 'Propose this change' }).click();
    await page.waitForURL(`${consoleUrl}applications/portal/users/proposal?add=u-carol`);
    const assignmentPatch = await page.getByLabel('Contents of proposed-change.patch').inputValue();
    expect(gitApplied(assignmentPatch)).toBe(MODEL(server.port).replace('{ application: portal, users: [u-alice] }', '{ application: portal, users: [ u-alice, u-carol ] }'));
    expect(await page.getByLabel('Contents of changed-entry.yaml').inputValue()).toBe('application: portal\nusers:\n  - u-alice\n  - u-carol\n');
    await check('20-proposal-assignments');
    expect(((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'portal' })) ?? []).map((a) => a.userId)).toEqual(['u-alice']);
  });

  it("a Git-managed person is read only too: a change to them comes out as a patch of their entry", async () => {
    await page.goto(`${consoleUrl}people/u-carol`);
    expect(await visibleText(page)).toContain('Managed in Git: this person is read only here');
    // Field-level messages first; nothing is proposed from a bad address.
    await page.getByLabel('Email').fill('not an address');
    await page.getByRole('button', { name: 'Propose the change' }).click();
    expect(await page.locator('#email-error').textContent()).toBeTruthy();
    expect(await page.getByRole('alert').first().textContent()).toBe('Nothing was proposed. See the messages below.');
    await page.getByLabel('Email').fill('carol.c@acme.test');
    await page.getByLabel('Name (optional)').fill('Carol C.');
    await page.getByLabel('Disabled: they cannot sign in').check();
    await page.getByRole('button', { name: 'Propose the change' }).click();
    await expect.poll(() => visibleText(page)).toContain('Proposed change');
    expect(await visibleText(page)).toContain('a patch to acme.yaml (tenants[0].users[2], line 9), as it was last applied');
    const patch = await page.getByLabel('Contents of proposed-change.patch').inputValue();
    expect(gitApplied(patch)).toBe(MODEL(server.port).replace('{ id: u-carol, email: carol@acme.test, displayName: Carol }', '{ id: u-carol, email: carol.c@acme.test, displayName: Carol C., disabled: true }'));
    await check('18b-proposal-person');
    // The server is as Git declares: nothing changed.
    expect(await admin.typed.find('getUser', { tenant: 'acme', userId: 'u-carol' })).toMatchObject({ email: 'carol@acme.test', displayName: 'Carol', disabled: false });
  });

  it('a console-made application is edited and saved in place', async () => {
    await page.goto(`${consoleUrl}applications/dashboard`);
    expect(await visibleText(page)).toContain('Made in the console');
    await page.getByLabel('Display name').fill('Acme Dashboard');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(/\/applications\/dashboard\?saved=1$/);
    expect(await visibleText(page)).toContain('Your changes were saved.');
    await check('21-console-application');
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'dashboard' })).toMatchObject({ displayName: 'Acme Dashboard', managedBy: 'console' });
  });

  it('refuses forged and cross-site posts, and keeps the tenant\'s data to its own tenant', async () => {
    const url = `${consoleUrl}applications/crm/users`;
    const noToken = await page.request.post(url, { form: { op: 'save', add: 'u-bob' } });
    expect(noToken.status()).toBe(403);
    const token = await page.locator('input[name=csrf]').first().inputValue();
    const crossSite = await page.request.post(url, { form: { csrf: token, op: 'save', add: 'u-bob' }, headers: { origin: 'http://evil.localhost:9999' } });
    expect(crossSite.status()).toBe(403);
    expect(((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'crm' })) ?? []).map((a) => a.userId)).toEqual(['u-alice']);
    // The session cookie of acme opens nothing at another tenant.
    await admin.typed.call('putTenant', { tenant: 'globex' }, { body: { displayName: 'Globex', scopes: [{ name: 'admin' }] } });
    const cookie = (await context.cookies()).find((c) => c.name === 'idforge_console')!;
    const other = await localhostFetch(`http://globex.localhost:${server.port}/console/`, { headers: { cookie: `idforge_console=${cookie.value}` } });
    expect(other.status).toBe(303);
    expect(other.headers.get('location')).toMatch(/^\/console\/login/);
  });

  it('moves into Git: export, validate, and plan shows no changes', async () => {
    // The secrets the console showed once go into the state file, as its page says.
    const state = JSON.parse(readFileSync(stateFile(), 'utf8'));
    for (const f of ['console-crm-state.json', 'console-wiki-state.json']) Object.assign(state.secrets, JSON.parse(readFileSync(join(work.path, f), 'utf8')).secrets);
    writeFileSync(stateFile(), JSON.stringify(state));
    const exported = await idforge(['export', 'acme', '--data-dir', server.dataDir, '--out', 'acme-exported.yaml']);
    expect(exported.code, exported.stderr).toBe(0);
    const v = await idforge(['validate', join(work.path, 'acme-exported.yaml')]);
    expect(v.code, v.stderr).toBe(0);
    const plan = await idforge(['plan', 'acme-exported.yaml', '--data-dir', server.dataDir, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    const p = JSON.parse(plan.stdout);
    // Nothing changes: the tenant's entry only records the assignments the console made (the model now declares them).
    expect(p.changes).toEqual([]);
    expect(p.summary).toMatchObject({ create: 0, update: 0, delete: 0 });
    // The console's objects stay the console's (declared exactly as they are); --force-conflicts takes them into Git.
    expect(p.outsideGit.map((o: { name: string; action: string }) => `${o.action} ${o.name}`)).toEqual(expect.arrayContaining(['held acme/crm', 'held acme/wiki', 'held acme/dashboard', 'held acme/invoices', 'held acme/crm/u-alice']));
    const forced = JSON.parse((await idforge(['plan', 'acme-exported.yaml', '--data-dir', server.dataDir, '--json', '--force-conflicts'])).stdout);
    expect(forced.outsideGit.map((o: { name: string; action: string }) => `${o.action} ${o.name}`)).toEqual(expect.arrayContaining(['adopt acme/crm', 'adopt acme/wiki', 'adopt acme/dashboard', 'adopt acme/invoices', 'adopt acme/crm/u-alice']));
    // What the console showed is what compile writes from the exported model and the state.
    const compiled = await idforge(['compile', join(work.path, 'acme-exported.yaml'), '--out', join(work.path, 'out')]);
    expect(compiled.code, compiled.stderr).toBe(0);
    const grant = JSON.parse(readFileSync(join(work.path, 'out/acme/crm/grant.json'), 'utf8'));
    expect(grant.acme.secret).toBe(state.secrets['acme/crm'].clientSecret);
  });

  it('says so, in a page, when a page does not exist or a sign-in is stale', async () => {
    const missing = await page.goto(`${consoleUrl}applications/nope`);
    expect(missing?.status()).toBe(404);
    expect(await visibleText(page)).toContain('This tenant has no such application.');
    await check('23-not-found');
    const stale = await page.goto(`${consoleUrl}callback?code=x&state=y`);
    expect(stale?.status()).toBe(400);
    expect(await visibleText(page)).toContain('This sign-in took too long or was already used.');
    await check('24-sign-in-expired');
  });

  it('signs out: the server ends the console session and, once confirmed, the sign-in at the tenant; a copy of the old cookie opens nothing', async () => {
    await page.goto(consoleUrl);
    const kept = (await context.cookies()).find((c) => c.name === 'idforge_console');
    expect(kept).toBeDefined();
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The tenant asks before it ends its own sign-in session (RP-initiated logout).
    await expect.poll(() => visibleText(page)).toContain('Do you want to sign out of Acme Corporation?');
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await expect.poll(() => visibleText(page)).toContain('You are signed out of the admin console.');
    await check('22-signed-out');
    expect((await context.cookies()).find((c) => c.name === 'idforge_console')).toBeUndefined();

    // The old cookie, replayed (as by someone who copied it): neither read nor write gets through.
    const cookie = `idforge_console=${kept!.value}`;
    const read = await localhostFetch(consoleUrl, { headers: { cookie }, redirect: 'manual' });
    expect(read.status).toBe(303);
    expect(read.headers.get('location')).toContain('/console/login');
    const write = await localhostFetch(`${consoleUrl}marketplace/web`, {
      method: 'POST', redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: new URL(consoleUrl).origin },
      body: new URLSearchParams({ name: 'sneaky', origin: 'http://sneaky.localhost:3000', csrf: 'x' }).toString(),
    });
    expect(write.status).toBe(403);
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'sneaky' })).toBeUndefined();

    // Signing in again asks for the password: the tenant's session ended too.
    await page.goto(consoleUrl);
    await page.locator('input[name="password"]').waitFor({ state: 'visible', timeout: 15_000 });
    await context.close();
  });

  it('taking the admin scope away ends console access at the next request', async () => {
    const ctx = await newContext(browser);
    ctx.setDefaultTimeout(15_000);
    const p = await ctx.newPage();
    await p.goto(consoleUrl);
    await signIn(p, 'alice@acme.test');
    await p.waitForURL(consoleUrl);
    const alice = (await admin.typed.find('getUser', { tenant: 'acme', userId: 'u-alice' }))!;
    const { id: _, hasPassword: _h, createdAt: _c, updatedAt: _u, ...body } = alice;
    await admin.typed.call('putUser', { tenant: 'acme', userId: 'u-alice' }, { body: { ...body, scopes: [] } });
    try {
      // The change of her scopes ended her sessions (the console's among them): the next request
      // asks her to sign in, and signed in she is told why she cannot come back in.
      const res = await p.goto(`${consoleUrl}marketplace`);
      if (res?.status() !== 403) {
        await signIn(p, 'alice@acme.test');
        await expect.poll(() => visibleText(p)).toContain('Not an administrator');
      }
      expect(await visibleText(p)).toContain('you do not hold the admin scope of Acme Corporation');
    } finally {
      await admin.typed.call('putUser', { tenant: 'acme', userId: 'u-alice' }, { body });
      await ctx.close();
    }
  });
});
