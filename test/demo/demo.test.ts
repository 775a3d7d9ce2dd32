/**
 * `npm run demo` as a newcomer meets it: the real bin/demo.js (Pulumi, the server, the four
 * sample apps) with all its state in a temp dir (IDFORGE_DEMO_DIR, so a developer's own demo is
 * untouched), every printed URL followed in Chromium as the printed user with the printed
 * password, a second run that must change nothing, and the teardown, after which no app process
 * may be left. The ports are the model's, fixed: when they are taken the test says so at once.
 */
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portFree } from '../../src/demo/app-processes.ts';
import { formatAppLines, sampleAppsOf } from '../../src/demo/sample-apps.ts';
import { validateSources } from '../../src/schema/index.ts';
import { isLoginPage, signIn } from '../e2e/_stack.ts';
import { jsonOf, launchBrowser, newContext, screenshot, visibleText } from '../support/browser.ts';
import { loadExample } from '../support/model.ts';
import { REPO_ROOT, runToCompletion } from '../support/processes.ts';

const stackConfig = parse(readFileSync(join(REPO_ROOT, 'stacks', 'Pulumi.dev.yaml'), 'utf8')) as { config: Record<string, string> };
const model = await loadExample(join(REPO_ROOT, stackConfig.config['idforge:model'] as string));
const { apps } = sampleAppsOf(model);

describe('the lines the demo prints for the sample apps', () => {
  it('name each app, its URL, who signs in, who is denied, what to do there and the log', () => {
    const lines = formatAppLines(apps, { credentials: (_t, u) => `${u.email} / <pw>`, log: (a) => `apps/${a.dir}/app.log` });
    expect(lines).toMatchInlineSnapshot(`
      [
        "  portal      http://portal.localhost:3000/connect/acme  sign in: alice@acme.example / <pw>, bob@acme.example / <pw>; answers /hello with tokens, raw, profile; log: apps/portal/app.log",
        "  wiki        http://wiki.localhost:4180/                sign in: alice@acme.example / <pw>; denied: bob@acme.example / <pw>; the app behind it echoes X-Forwarded-User; log: apps/wiki/app.log",
        "  dashboard   http://dashboard.localhost:5173/           sign in: alice@acme.example / <pw>, bob@acme.example / <pw>; press Sign in, then call orders-api with the GET buttons; log: apps/dashboard/app.log",
        "  orders-api  http://orders-api.localhost:4000/          no sign-in (an API): GET / needs no token; /whoami, /admin with a Bearer token: sign in to dashboard and use its GET buttons; /admin needs scope admin (alice@acme.example); log: apps/orders-api/app.log",
      ]
    `);
  });

  it('follow the model: groups, disabled users, sign-in policy, apps shared by tenants, an API without origin', () => {
    const loaded = validateSources([
      {
        file: 'two.yaml',
        content: `
tenants:
  - name: one
    displayName: One
    scopes: [{ name: admin }]
    login: { methods: [password, totp], requireSecondFactor: true }
    users:
      - { id: u-a, email: a@one.example, password: { env: A } }
      - { id: u-b, email: b@one.example, disabled: true, password: { env: B } }
      - { id: u-c, email: c@one.example }
    groups: [{ name: all, members: [u-a, u-b, u-c] }]
    applications:
      - { name: portal, kind: web, origin: http://portal.localhost:3000, callback: /done, response: [profile] }
      - { name: ui, kind: spa, origin: http://ui.localhost:5173, audience: [api], scopes: [openid] }
      - { name: api, kind: api, audience: http://api.localhost:4000, origin: http://api.localhost:4000, routes: [{ path: /admin, scopes: [admin] }] }
      - { name: headless, kind: api, audience: https://headless.example }
    assignments:
      - { application: portal, groups: [all] }
      - { application: ui, users: [u-a] }
  - name: two
    displayName: Two
    applications:
      - { name: portal, kind: proxy, origin: http://portal.localhost:4180, upstream: http://127.0.0.1:4181 }
`,
      },
    ]);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const { apps: sample, skipped } = sampleAppsOf(loaded.model);
    expect(sample.map((a) => [a.dir, a.ports])).toEqual([
      ['one-portal', [3000]],
      ['ui', [5173]],
      ['api', [4000]],
      ['two-portal', [4180, 4181]],
    ]);
    expect(skipped).toEqual([{ tenant: 'one', name: 'headless', reason: 'no origin in the model, so no port to listen on' }]);
    const lines = formatAppLines(sample, { credentials: (t, u) => `${t}:${u.email}`, log: (a) => a.dir });
    expect(lines).toMatchInlineSnapshot(`
      [
        "  one/portal  http://portal.localhost:3000/connect/one  sign in: one:a@one.example, one:c@one.example; denied: one:b@one.example; sign-in methods: password, totp, second factor required; answers /done with profile; log: one-portal",
        "  ui          http://ui.localhost:5173/                 sign in: one:a@one.example; denied: one:b@one.example, one:c@one.example; sign-in methods: password, totp, second factor required; press Sign in, then call api with the GET buttons; log: ui",
        "  api         http://api.localhost:4000/                no sign-in (an API): GET / needs no token; /admin with a Bearer token: sign in to ui and use its GET buttons; /admin needs scope admin (nobody in this model); log: api",
        "  two/portal  http://portal.localhost:4180/             sign in: nobody is assigned; the app behind it echoes X-Forwarded-User; log: two-portal",
      ]
    `);
  });
});

interface Credentials {
  readonly email: string;
  readonly password: string;
}

interface PrintedApp {
  readonly name: string;
  readonly url: string;
  readonly allowed: readonly Credentials[];
  readonly denied: readonly Credentials[];
  readonly text: string;
  readonly log: string;
}

interface DemoOutput {
  readonly output: string;
  readonly issuer: string;
  /** email → user id, from the "Sign in as" block. */
  readonly ids: ReadonlyMap<string, string>;
  readonly apps: ReadonlyMap<string, PrintedApp>;
  /** app → pid, from the "demo: <app> started|restarted|already running (pid N)" lines. */
  readonly pids: ReadonlyMap<string, number>;
  readonly states: ReadonlyMap<string, string>;
}

function credentialsIn(text: string | undefined): Credentials[] {
  return [...(text ?? '').matchAll(/(\S+@\S+) \/ (\S+?)(?=,|$)/g)].map((m) => ({ email: m[1] as string, password: m[2] as string }));
}

function parseOutput(output: string): DemoOutput {
  const issuer = /^ {2}acme\s+(http\S+)$/m.exec(output)?.[1] ?? '';
  const ids = new Map([...output.matchAll(/^ {2}\S+: (\S+) <([^>]+)> {2}password:/gm)].map((m) => [m[2] as string, m[1] as string]));
  const block = output.split(/^Sample apps, running in the background.*$/m)[1]?.split(/\n\n/)[0] ?? '';
  const printed = new Map<string, PrintedApp>();
  for (const m of block.matchAll(/^ {2}(\S+)\s+(https?:\/\/\S+)\s+(.*)$/gm)) {
    const parts = (m[3] as string).split('; ');
    const part = (prefix: string) => parts.find((p) => p.startsWith(prefix))?.slice(prefix.length);
    printed.set(m[1] as string, {
      name: m[1] as string,
      url: m[2] as string,
      allowed: credentialsIn(part('sign in: ')),
      denied: credentialsIn(part('denied: ')),
      text: m[3] as string,
      log: part('log: ') ?? '',
    });
  }
  const pids = new Map<string, number>();
  const states = new Map<string, string>();
  for (const m of output.matchAll(/^demo: (\S+) (started|restarted|already running, unchanged) \(pid (\d+)\)$/gm)) {
    pids.set(m[1] as string, Number(m[3]));
    states.set(m[1] as string, m[2] as string);
  }
  return { output, issuer, ids, apps: printed, pids, states };
}

/** Live processes working in, or naming, the demo dir (zombies are gone already). */
function processesOf(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd.startsWith(dir) || cmdline.includes(dir)) found.push(`${pid} (cwd ${cwd}): ${cmdline}`);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

describe('npm run demo ends at signed-in sample apps', () => {
  const ports = [...new Set([model.server.port ?? 9080, Number(stackConfig.config['idforge:port'] ?? 9080), ...apps.flatMap((a) => a.ports)])];
  let dir: string | undefined;
  let browser: Browser | undefined;
  let first: DemoOutput;
  /** The last run's output: whose pids the teardown must stop. */
  let latest: DemoOutput;
  let tornDown = false;

  const env = (): Record<string, string | undefined> => {
    const e: Record<string, string | undefined> = { ...process.env, IDFORGE_DEMO_DIR: dir, NO_COLOR: '1' };
    // The demo makes its own dev passwords and state; nothing of a developer's shell leaks in.
    for (const key of Object.keys(e)) if (/^PULUMI_(BACKEND_URL|HOME|CONFIG_PASSPHRASE(_FILE)?)$/.test(key) || /^ACME_.*_PASSWORD$/.test(key)) e[key] = undefined;
    return e;
  };
  const demo = async (name: string) => parseOutput((await runToCompletion(`demo-${name}`, process.execPath, [join(REPO_ROOT, 'bin', 'demo.js')], { cwd: REPO_ROOT, env: env() })).output);
  const teardown = () => runToCompletion('demo-destroy', process.execPath, [join(REPO_ROOT, 'bin', 'demo-destroy.js')], { cwd: REPO_ROOT, env: env() });

  beforeAll(async () => {
    const taken = [];
    for (const port of ports) if (!(await portFree(port))) taken.push(port);
    if (taken.length > 0) {
      throw new Error(
        `${taken.length > 1 ? 'ports' : 'port'} ${taken.join(', ')} in use: this test runs the real demo, whose ports the model fixes (${ports.join(', ')}). ` +
          'Another `npm run demo` is probably running (stop it with `npm run demo:destroy` there); `ss -ltnp` names the processes.',
      );
    }
    dir = mkdtempSync(join(tmpdir(), 'idforge-demo-'));
    first = await demo('first');
    latest = first;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    if (dir !== undefined) {
      if (!tornDown) await teardown().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const app = (name: string): PrintedApp => {
    const a = first.apps.get(name);
    if (a === undefined) throw new Error(`the demo printed no line for ${name}:\n${first.output}`);
    return a;
  };

  async function signInAt(page: Page, creds: Credentials): Promise<void> {
    expect(await isLoginPage(page, first.issuer)).toBe(true);
    await signIn(page, { id: first.ids.get(creds.email) ?? '', ...creds });
  }

  it('starts every app and prints one line for each, with its log', () => {
    expect([...first.apps.keys()]).toEqual(apps.map((a) => a.name));
    for (const a of apps) {
      expect(first.states.get(a.name)).toBe('started');
      expect(readFileSync(join(dir as string, '.idforge', 'dev', 'apps', a.dir, 'app.log'), 'utf8')).not.toBe('');
      expect(app(a.name).log).toBe(join(dir as string, '.idforge', 'dev', 'apps', a.dir, 'app.log'));
    }
    expect(first.issuer).toMatch(/^http:\/\/acme\.localhost:\d+\/oauth2\/$/);
  });

  it('portal: the printed user signs in and gets tokens and profile', async () => {
    const portal = app('portal');
    const user = portal.allowed[0] as Credentials;
    const context = await newContext(browser as Browser);
    const page = await context.newPage();
    await page.goto(portal.url);
    await signInAt(page, user);
    await page.waitForURL((u) => u.origin === new URL(portal.url).origin && !u.pathname.startsWith('/connect/'));
    await screenshot(page, 'demo-portal');
    const result = await jsonOf<Record<string, any>>(page);
    expect(result.access_token).toEqual(expect.any(String));
    expect(result.id_token).toEqual(expect.any(String));
    expect(result.profile).toMatchObject({ email: user.email, sub: first.ids.get(user.email) });
    await context.close();
  });

  it('wiki: the printed user gets through oauth2-proxy, whose upstream echoes X-Forwarded-User', async () => {
    const wiki = app('wiki');
    const user = wiki.allowed[0] as Credentials;
    const context = await newContext(browser as Browser);
    const page = await context.newPage();
    await page.goto(wiki.url);
    await signInAt(page, user);
    await page.waitForURL(wiki.url);
    await screenshot(page, 'demo-wiki');
    const echo = await jsonOf<{ headers: Record<string, string> }>(page);
    expect(echo.headers['x-forwarded-user']).toBe(first.ids.get(user.email));
    expect(echo.headers['x-forwarded-email']).toBe(user.email);
    await context.close();
  });

  it('wiki: the printed denied user is refused', async () => {
    const wiki = app('wiki');
    expect(wiki.denied.length).toBeGreaterThan(0);
    const user = wiki.denied[0] as Credentials;
    const context = await newContext(browser as Browser);
    const page = await context.newPage();
    await page.goto(wiki.url);
    await signInAt(page, user);
    expect(await visibleText(page)).toMatch(/not assigned/i);
    // Back to the wiki, whose sign-in starts over at the service's form (not oauth2-proxy's 403 page).
    await page.getByRole('button', { name: /^Return to/ }).click();
    await expect.poll(async () => (await page.locator('input[name="password"]').count()) > 0 && !(await visibleText(page)).match(/not assigned/i)).toBe(true);
    await screenshot(page, 'demo-wiki-denied');
    const cookies = await context.cookies(wiki.url);
    expect(cookies.filter((c) => c.name.startsWith('_oauth2_proxy') && !c.name.endsWith('_csrf'))).toEqual([]);
    await context.close();
  });

  it('dashboard: the printed user signs in and calls the API', async () => {
    const dashboard = app('dashboard');
    const user = dashboard.allowed[0] as Credentials;
    const context = await newContext(browser as Browser);
    const page = await context.newPage();
    await page.goto(dashboard.url);
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-out');
    await page.locator('#sign-in').click();
    await page.waitForURL((u) => u.origin !== new URL(dashboard.url).origin);
    await signInAt(page, user);
    await expect.poll(() => page.locator('#status').getAttribute('data-state')).toBe('signed-in');
    expect(await page.locator('#status').innerText()).toContain(user.email);
    await page.locator('[data-api-path="/whoami"]').click();
    await expect.poll(() => page.locator('#api-result').getAttribute('data-status')).toBe('200');
    expect(await page.locator('#api-result').innerText()).toContain(first.ids.get(user.email));
    await screenshot(page, 'demo-dashboard');
    await context.close();
  });

  it('orders-api: the printed URL answers publicly and says how to call the rest', async () => {
    const api = app('orders-api');
    expect(api.allowed).toEqual([]);
    expect(api.text).toMatch(/^no sign-in \(an API\)/);
    expect(api.text).toContain('sign in to dashboard');
    const res = await fetch(api.url);
    expect(res.status).toBe(200);
    const whoami = await fetch(new URL('/whoami', api.url));
    expect(whoami.status).toBe(401);
    expect(whoami.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });

  it('a second run changes nothing in Pulumi and leaves every app running', async () => {
    const second = await demo('second');
    const resources = /^Resources:\n((?: +.+\n)+)/m.exec(second.output)?.[1] ?? '';
    expect(resources.trim()).toMatch(/^\d+ unchanged$/);
    for (const a of apps) {
      expect(second.states.get(a.name)).toBe('already running, unchanged');
      expect(second.pids.get(a.name)).toBe(first.pids.get(a.name));
    }
    expect([...second.apps.values()].map((a) => a.text)).toEqual([...first.apps.values()].map((a) => a.text));
  });

  it('a third run restarts only the app that stopped and the app whose configuration changed', async () => {
    const stateDir = join(dir as string, '.idforge', 'dev');
    const portal = JSON.parse(readFileSync(join(stateDir, 'apps', 'portal', 'process.json'), 'utf8')) as { pid: number };
    expect(portal.pid).toBe(first.pids.get('portal'));
    process.kill(-portal.pid, 'SIGTERM');
    await expect.poll(() => processesOf(join(stateDir, 'apps', 'portal')), { timeout: 10_000 }).toEqual([]);
    const spaConfig = join(stateDir, 'clients', 'acme', 'dashboard', 'spa-config.json');
    writeFileSync(spaConfig, `${readFileSync(spaConfig, 'utf8')}\n`);

    const third = await demo('third');
    expect(Object.fromEntries(third.states)).toEqual({
      portal: 'started',
      wiki: 'already running, unchanged',
      dashboard: 'restarted',
      'orders-api': 'already running, unchanged',
    });
    expect(third.pids.get('wiki')).toBe(first.pids.get('wiki'));
    expect(third.pids.get('dashboard')).not.toBe(first.pids.get('dashboard'));
    expect((await fetch(app('portal').url, { redirect: 'manual' })).status).toBe(302);
    latest = third;
  });

  it('the teardown stops every app process, and a second teardown has nothing to do', async () => {
    const before = processesOf(dir as string);
    expect(before.length).toBeGreaterThan(apps.length);
    const down = await teardown();
    tornDown = true;
    for (const a of apps) expect(down.output).toContain(`demo: stopped ${a.name} (pid ${latest.pids.get(a.name)}`);
    expect(processesOf(dir as string)).toEqual([]);
    for (const port of ports) expect(await portFree(port)).toBe(true);
    const again = await teardown();
    expect(again.output).not.toContain('demo: stopped');
  });
});
