/**
 * The console's door and its Activity page, in Chromium against a real server: a model applied from
 * a Git repository, then an administrator's changes in the console; the Activity page shows both,
 * the model's with their commit and the console's with the administrator, filters by kind, and each
 * application's History link shows only its own. axe-core scans the page; screenshots go to
 * test-output/screenshots/activity-*.png. `idforge events` prints the same log, once and --follow.
 */
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { EventView } from '../../src/contract/index.ts';
import { launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { axeScan } from '../console/_support.ts';

const PASSWORD = 'activity-test-password-1';
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let browser: Browser;
let page: Page;
let commit: string;
const work = tempDir('idforge-activity-');
const env = () => ({ ACME_PASSWORD: PASSWORD, IDFORGE_STATE: join(work.path, 'state.json') });

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: work.path, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } }).trim();
  git('init', '-q', '-b', 'main');
  writeFileSync(join(work.path, 'acme.yaml'), `server: { baseDomain: localhost, port: ${server.port} }
tenants:
  - name: acme
    displayName: Acme Corporation
    scopes: [{ name: admin, description: administer the tenant }]
    users:
      - { id: u-alice, email: alice@acme.test, displayName: Alice, scopes: [admin], password: { env: ACME_PASSWORD } }
      - { id: u-bob, email: bob@acme.test, displayName: Bob }
    applications:
      - { name: portal, kind: web, displayName: Acme Portal, origin: "http://portal.localhost:3000" }
    assignments:
      - { application: portal, users: [u-alice] }
`);
  git('add', '.');
  git('commit', '-qm', 'acme');
  commit = git('rev-parse', 'HEAD');
  const applied = await runCli(['apply', 'acme.yaml', '--data-dir', server.dataDir], { cwd: work.path, env: env() });
  expect(applied.code, applied.stderr).toBe(0);
  browser = await launchBrowser();
  const context = await newContext(browser);
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  work.remove();
});

const consoleUrl = () => `http://acme.localhost:${server.port}/console/`;

describe('the console door and the Activity page', () => {
  it('records the administrator\'s changes as the console\'s, made by them', async () => {
    await page.goto(consoleUrl());
    await page.locator('input[name="email"]').fill('alice@acme.test');
    await page.locator('input[name="password"]').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(consoleUrl());
    await page.goto(`${consoleUrl()}marketplace`);
    await page.getByRole('link', { name: 'Add a Single-page app' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('dash');
    await page.getByLabel('Origin').fill('http://dash.localhost:5173');
    await page.getByRole('button', { name: 'Add Single-page app' }).click();
    await page.waitForURL(/\/applications\/dash/);
    await page.goto(`${consoleUrl()}applications/dash/users`);
    await page.getByLabel('Search users by email or id').fill('bob');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Add assignment for bob@acme.test' }).click();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.waitForURL(/\/users\?saved=1$/);

    const log = (await admin.typed.call('listEvents', { tenant: 'acme' }, { query: { actor: 'console' } })).items;
    expect(log.map((e) => `${e.type} ${e.object.name}`)).toEqual(['application.created dash', 'assignment.created dash/u-bob']);
    for (const e of log) expect(e.actor).toEqual({ manager: 'console', who: 'u-alice' });
  });

  it('shows the log newest first, with the commit of Git\'s changes and the administrator of the console\'s; filters by kind', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Activity' }).click();
    await page.waitForURL(`${consoleUrl()}activity`);
    const rows = page.locator('table.activity tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(8);
    expect(await rows.nth(0).innerText()).toMatch(/assignment\.created\s+assignment dash\/u-bob\s+u-alice console/);
    const created = await page.getByRole('row', { name: /application\.created\s+application portal/ }).innerText();
    expect(created).toContain('apply:default');
    expect(created).toContain(commit.slice(0, 12));
    expect(created).toContain('acme.yaml');
    expect(await visibleText(page)).not.toContain(PASSWORD);
    expect(await page.getByRole('row', { name: /login\.success/ }).count()).toBeGreaterThanOrEqual(1);
    await screenshot(page, 'activity-01-all');
    await axeScan(page, 'activity');

    await page.getByLabel('Kind').selectOption('application.*');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/type=application/);
    const kinds = await page.locator('table.activity tbody tr td:nth-child(2)').allInnerTexts();
    expect(kinds.sort()).toEqual(['application.created', 'application.created']);
    await screenshot(page, 'activity-02-applications');
  });

  it('links each application to its history', async () => {
    await page.goto(`${consoleUrl()}applications/portal`);
    await page.getByRole('navigation', { name: 'Application' }).getByRole('link', { name: 'History' }).click();
    await page.waitForURL(/activity\?object=application%3Aportal/);
    expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('History of application portal');
    const objects = await page.locator('table.activity tbody tr td:nth-child(3)').allInnerTexts();
    expect(objects).toEqual(['application portal']);
    await screenshot(page, 'activity-03-history');
  });
});

describe('idforge events', () => {
  it('prints the log once, as lines or JSON Lines, filtered', async () => {
    const text = await runCli(['events', 'acme', '--data-dir', server.dataDir, '--type', 'application.*']);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`application\\.created  application:portal  by apply:default idforge-admin @${commit.slice(0, 12)} \\(main\\) acme\\.yaml`));
    expect(lines[1]).toMatch(/application\.created  application:dash  by console u-alice/);
    const json = await runCli(['events', 'acme', '--data-dir', server.dataDir, '--json', '--object', 'assignment:dash/u-bob']);
    const events = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as EventView);
    expect(events.map((e) => e.type)).toEqual(['assignment.created']);
    const bad = await runCli(['events', 'acme', '--data-dir', server.dataDir, '--since', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since: must be an RFC 3339 time');
  });

  it('--follow prints what comes after, as it comes', async () => {
    const bin = join(import.meta.dirname, '..', '..', 'bin', 'idforge.js');
    const child = spawn(process.execPath, [bin, 'events', 'acme', '--data-dir', server.dataDir, '--json', '--follow', '--interval', '0.2', '--type', 'user.*'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await expect.poll(() => out.split('\n').filter((l) => l !== '').length, { timeout: 15_000 }).toBe(2);
      await admin.typed.call('putUser', { tenant: 'acme', userId: 'u-cy' }, { body: { email: 'cy@acme.test' } });
      await expect.poll(() => out.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as EventView).object.name), { timeout: 15_000 }).toEqual(['u-alice', 'u-bob', 'u-cy']);
    } finally {
      child.kill();
    }
  });
});
