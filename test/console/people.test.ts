/**
 * The console's People pages in Chromium, against a real server: an administrator pages through
 * and searches 1,200 people, disables and enables one (their refresh token ends), unlocks a locked
 * account, makes a person (field-level messages first) and invites them; a Git-owned person's page
 * offers only recovery and unlock, and the server refuses the rest. axe-core scans every page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { routePath } from '../../src/contract/index.ts';
import { launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { Browser as HttpBrowser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, testServer, type AdminClient, type Fixture } from '../server/_support.ts';
import { axeScan } from './_support.ts';
import { GROUP, scimClient, scimUser } from '../scim/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let f: Fixture;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const T = 'ppl';
/** People in the directory besides the fixture's: the issue's 100k. */
const FILLER = 100_000;

beforeAll(async () => {
  server = await testServer({ login: { lockoutThreshold: 2, backoffBaseMs: 0 } });
  admin = await adminClient(server);
  f = await fixtureTenant(admin, T);
  // Tenant batches of 20,000 (the batch's bound), without passwords, as an identity provider's import would make them.
  for (let from = 0; from < FILLER; from += 20_000) {
    const users = Array.from({ length: Math.min(20_000, FILLER - from) }, (_, i) => ({ id: `u-${String(from + i).padStart(6, '0')}`, body: { email: `person${from + i}@${T}.test`, displayName: `Person ${from + i}` } }));
    if (from + 20_000 >= FILLER) users.push({ id: 'u-git', body: { email: `gwen@${T}.test`, displayName: 'Gwen from Git', managedBy: 'idforge', initialPassword: 'gwen keeps her own words' } as never });
    const r = await admin.call('POST', routePath('applyTenantBatch', { tenant: T }), { users });
    expect(r.status).toBe(200);
  }
  browser = await launchBrowser();
  context = await newContext(browser);
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
});

const people = () => `${new URL(server.issuer(T)).origin}/console/people`;

async function check(name: string): Promise<void> {
  await screenshot(page, `console-people-${name}`);
  await axeScan(page, `people: ${name}`);
}

describe('People', () => {
  it('pages through the directory and finds a person among 100,000', async () => {
    await page.goto(people());
    await page.locator('input[name="email"]').fill(f.users.alice.email);
    await page.locator('input[name="password"]').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('People');
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'People' }).getAttribute('aria-current')).toBe('page');
    expect(await page.locator('tbody tr').count()).toBe(50);
    await check('list');
    await page.getByRole('link', { name: 'Next page' }).click();
    expect(await page.locator('tbody tr').count()).toBe(50);

    // The last of them, found by one search (the directory searches itself, whatever its size).
    await page.getByLabel('Search by name, email or id').fill('PERSON99999@');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    expect(await page.locator('tbody').innerText()).toContain('Person 99999');
    await check('search');
    // Many matches page like the list, the search kept across pages.
    await page.goto(`${people()}?q=${encodeURIComponent('Person 4242')}`);
    expect(await page.locator('tbody tr').allInnerTexts()).toHaveLength(11); // 4242 and 42420 to 42429
    await page.goto(`${people()}?q=person7`);
    expect(await page.locator('tbody tr').count()).toBe(50);
    await page.getByRole('link', { name: 'Next page' }).click();
    const second = await page.locator('tbody th').allInnerTexts();
    expect(second).toHaveLength(50);
    expect(second.every((n) => n.startsWith('Person 7'))).toBe(true);
    // The admin API's own search, and its bound.
    const found = await admin.typed.call('listUsers', { tenant: T }, { query: { q: 'gwen@', limit: 5 } });
    expect(found.items.map((u) => u.id)).toEqual(['u-git']);
    expect((await admin.call('GET', `${routePath('listUsers', { tenant: T })}?q=${'x'.repeat(201)}`)).status).toBe(400);
  });

  it('disables a person (their refresh token ends at once) and enables them again', async () => {
    const rp = await relyingParty(server.issuer(T), f.spa.clientId);
    const flow = await authorize(rp, new HttpBrowser(), f.spa.redirectUri, { email: f.users.carol.email, password: PASSWORD }, { scope: 'openid offline' });
    const tokens = await oidc.authorizationCodeGrant(rp, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });

    await page.goto(`${people()}?q=carol`);
    await page.getByRole('link', { name: 'carol' }).click();
    // Her applications (web and spa, assigned directly), and her sign-in to the SPA from the event log.
    await expect.poll(() => page.getByRole('heading', { name: 'Applications' }).count()).toBe(1);
    expect(await page.locator('ul.assigned li').allInnerTexts()).toEqual(['spa', 'web']);
    const signIns = page.getByRole('table', { name: /^Last / });
    expect(await signIns.locator('tbody tr').count()).toBe(1);
    expect(await signIns.innerText()).toContain(f.spa.clientId);
    expect(await page.getByRole('link', { name: 'Everything that happened to this person' }).getAttribute('href')).toBe(`/console/activity?object=${encodeURIComponent(`user:${f.users.carol.id}`)}`);
    await check('person');
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.waitForURL((u) => u.search === '?done=disabled');
    expect(await page.getByRole('status').textContent()).toContain('The person is disabled');
    expect((await admin.typed.call('getUser', { tenant: T, userId: f.users.carol.id })).disabled).toBe(true);
    await expect(oidc.refreshTokenGrant(rp, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.waitForURL((u) => u.search === '?done=enabled');
    expect((await admin.typed.call('getUser', { tenant: T, userId: f.users.carol.id })).disabled).toBe(false);
  });

  it('unlocks an account the guessing defence locked', async () => {
    const rp = await relyingParty(server.issuer(T), f.spa.clientId);
    for (let i = 0; i < 2; i++) {
      await authorize(rp, new HttpBrowser(), f.spa.redirectUri, { email: f.users.bob.email, password: 'not the password' }).catch(() => undefined);
    }
    // bob is assigned to no application: a password accepted shows the "not assigned" page, a locked account the lock.
    const locked = await authorize(rp, new HttpBrowser(), f.spa.redirectUri, { email: f.users.bob.email, password: PASSWORD });
    expect(locked.pages.join('\n')).toContain('Too many failed attempts');

    await page.goto(`${people()}/${f.users.bob.id}`);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.waitForURL((u) => u.search === '?done=unlocked');
    expect(await page.getByRole('status').textContent()).toBe('The lock is lifted: they can try to sign in again.');
    const after = await authorize(rp, new HttpBrowser(), f.spa.redirectUri, { email: f.users.bob.email, password: PASSWORD });
    expect(after.pages.join('\n')).not.toContain('Too many failed attempts');
    expect(after.pages.join('\n')).toContain('you are not assigned');
  });

  it("a Git-owned person's page offers only recovery and unlock; the rest is refused", async () => {
    await page.goto(`${people()}/u-git`);
    expect(await page.locator('.warning').innerText()).toContain('Managed in Git: this person is read only here');
    const buttons = await page.locator('main form button').allTextContents();
    // Changes to what Git declares are proposed, never made.
    expect(buttons).toEqual(['Send a recovery link', 'Unlock', 'Propose the change']);
    await check('git-owned');
    await page.getByRole('button', { name: 'Send a recovery link' }).click();
    await page.waitForURL((u) => u.search === '?done=recovery');
    // A forged disable is refused by the console; the person stays as Git declares them.
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    const forged = await page.request.post(`${people()}/u-git/disable`, { form: { csrf: csrf! } });
    expect(forged.status()).toBe(409);
    expect((await admin.typed.call('getUser', { tenant: T, userId: 'u-git' })).disabled).toBe(false);
    // Made without a record of its model entry (a batch, as Pulumi's): the proposal is the changed entry alone.
    await page.goto(`${people()}/u-git`);
    await page.getByLabel('Disabled: they cannot sign in').check();
    await page.getByRole('button', { name: 'Propose the change' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Proposed change');
    expect(await page.locator('main').innerText()).toContain('The lines it was declared on were not recorded');
    expect(await page.getByLabel('Contents of changed-entry.yaml').inputValue()).toBe(`id: u-git\nemail: gwen@${T}.test\ndisplayName: Gwen from Git\ndisabled: true\n`);
    await check('git-owned-proposal');
    expect((await admin.typed.call('getUser', { tenant: T, userId: 'u-git' })).disabled).toBe(false);
  });

  it("a person and a group SCIM provisions are read only too: recovery and unlock only, the rest refused", async () => {
    const { token } = await admin.typed.call('createScimToken', { tenant: T }, { body: { description: 'an identity provider' } });
    const scim = scimClient(server, T, token);
    const made = await scim.call('POST', '/Users', scimUser('sam', `sam@${T}.test`, { name: { givenName: 'Sam', familyName: 'Scim' } }));
    expect(made.status).toBe(201);
    const id = (made.body as { id: string }).id;
    const group = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'From the IdP', members: [{ value: id }] });
    expect(group.status).toBe(201);

    await page.goto(`${people()}/${id}`);
    expect(await page.locator('.warning').innerText()).toContain('Provisioned by SCIM: this person is read only here');
    // No password yet (the identity provider sent none): its recovery is an invitation.
    expect(await page.locator('main form button').allTextContents()).toEqual(['Send an invitation', 'Unlock']);
    await check('scim-owned');
    await page.getByRole('button', { name: 'Send an invitation' }).click();
    await page.waitForURL((u) => u.search === '?done=invitation');
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    for (const action of ['disable', 'reset-factors']) {
      const forged = await page.request.post(`${people()}/${id}/${action}`, { form: { csrf: csrf! } });
      expect(forged.status(), action).toBe(409);
    }
    expect((await admin.typed.call('getUser', { tenant: T, userId: id })).disabled).toBe(false);
    // Unlock is allowed: the identity provider does not know of our guessing defence.
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.waitForURL((u) => u.search === '?done=not-locked');

    const groupId = (group.body as { id: string }).id;
    await page.goto(`${new URL(server.issuer(T)).origin}/console/groups/${groupId}`);
    expect(await page.locator('.warning').innerText()).toContain('SCIM');
    expect(await page.locator('main form').count()).toBe(0);
    const renamed = await page.request.post(`${new URL(server.issuer(T)).origin}/console/groups/${groupId}/rename`, { form: { csrf: csrf!, displayName: 'Taken over' } });
    expect(renamed.status()).toBe(409);
  });

  it('makes a person, with field-level messages first, and invites them', async () => {
    await page.goto(`${people()}/new`);
    await page.getByLabel('Id').fill('not an id!');
    await page.getByLabel('Email').fill('');
    await page.getByRole('button', { name: 'Add person' }).click();
    expect(await page.locator('#id-error').textContent()).toMatch(/^Enter an id/);
    expect(await page.locator('#email-error').textContent()).toBe('Enter the email address the person signs in with.');
    await check('new-errors');
    await page.getByLabel('Id').fill('u-new');
    await page.getByLabel('Email').fill('not-an-email');
    await page.getByRole('button', { name: 'Add person' }).click();
    expect(await page.locator('#email-error').textContent()).toBeTruthy();
    await page.getByLabel('Email').fill(`newcomer@${T}.test`);
    await page.getByRole('button', { name: 'Add person' }).click();
    await page.waitForURL((u) => u.search === '?done=created');
    expect((await admin.typed.call('getUser', { tenant: T, userId: 'u-new' })).managedBy).toBe('console');
    await page.getByRole('button', { name: 'Send an invitation' }).click();
    await page.waitForURL((u) => u.search === '?done=invitation');
    expect(await page.getByRole('status').textContent()).toContain('An invitation is on its way');
  });
});

describe('Groups', () => {
  const groups = () => `${new URL(server.issuer(T)).origin}/console/groups`;

  it('makes a group, adds a member, assigns it to an application, renames it and removes the member', async () => {
    await page.goto(`${groups()}/new`);
    await page.getByLabel('Id').fill('g-ops');
    await page.getByRole('button', { name: 'Add group' }).click();
    expect(await page.locator('#displayName-error').textContent()).toBe("Enter the group's name.");
    await page.getByLabel('Name').fill('Operations');
    await page.getByRole('button', { name: 'Add group' }).click();
    await page.waitForURL((u) => u.search === '?done=created');
    await check('group');

    await page.getByLabel('Add a member by id').fill('u-nobody');
    await page.getByRole('button', { name: 'Add member' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('there is no person with the id “u-nobody”');
    await page.getByLabel('Add a member by id').fill(f.users.bob.id);
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.waitForURL((u) => u.search === '?done=member-added');
    await page.getByRole('button', { name: 'Assign to Portal' }).click();
    await page.waitForURL((u) => u.search === '?done=assigned');
    expect((await admin.typed.call('listTenantGroupAssignments', { tenant: T })).items.map((x) => `${x.group}@${x.application}`)).toContain('g-ops@web');
    // bob, assigned to nothing himself, now reaches the portal through the group.
    const rp = await relyingParty(server.issuer(T), f.web.clientId, f.web.clientSecret);
    const through = await authorize(rp, new HttpBrowser(), f.web.redirectUri, { email: f.users.bob.email, password: PASSWORD });
    expect(through.callback.searchParams.get('code')).not.toBeNull();

    await page.getByLabel('Name').fill('Ops team');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.waitForURL((u) => u.search === '?done=renamed');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Ops team');
    await page.getByRole('button', { name: `Remove ${f.users.bob.id}` }).click();
    await page.waitForURL((u) => u.search === '?done=member-removed');
    expect((await admin.typed.call('getGroup', { tenant: T, group: 'g-ops' })).members).toEqual([]);
    await page.goto(groups());
    expect(await page.locator('tbody').innerText()).toContain('Ops team');
    await check('groups');
  });

  it('a Git-owned group is read only', async () => {
    await admin.typed.call('putGroup', { tenant: T, group: 'g-git' }, { body: { displayName: 'From Git', members: [f.users.alice.id], managedBy: 'idforge' } });
    await page.goto(`${groups()}/g-git`);
    expect(await page.locator('.warning').innerText()).toContain('Managed in Git');
    // The one form proposes; nothing changes the group here.
    expect(await page.locator('main form').count()).toBe(1);
    expect(await page.locator('main form').getAttribute('action')).toBe('/console/groups/g-git/propose');
    const csrf = await page.locator('header input[name=csrf]').first().getAttribute('value');
    const forged = await page.request.post(`${groups()}/g-git/rename`, { form: { csrf: csrf!, displayName: 'Taken over' } });
    expect(forged.status()).toBe(409);
    expect((await admin.typed.call('getGroup', { tenant: T, group: 'g-git' })).displayName).toBe('From Git');
    await page.getByLabel('Members (ids, one per line)').fill(`${f.users.alice.id}\nbad/id`);
    await page.getByRole('button', { name: 'Propose the change' }).click();
    expect(await page.getByRole('alert').textContent()).toContain("“bad/id” is not a person's id");
    await page.getByLabel('Name', { exact: true }).fill('Git folk');
    await page.getByLabel('Members (ids, one per line)').fill(`${f.users.alice.id}\n${f.users.bob.id}`);
    await page.getByRole('button', { name: 'Propose the change' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Proposed change');
    expect(await page.getByLabel('Contents of changed-entry.yaml').inputValue()).toBe(`name: g-git\ndisplayName: Git folk\nmembers:\n  - ${f.users.alice.id}\n  - ${f.users.bob.id}\n`);
    await check('git-group-proposal');
    expect((await admin.typed.call('getGroup', { tenant: T, group: 'g-git' })).members).toEqual([f.users.alice.id]);
  });
});
