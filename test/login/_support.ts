/**
 * Support for the login-method tests: a real server in-process (its own options per test file),
 * provisioned from a YAML model by `idforge apply` (so the policy goes model → plan → admin API),
 * Chromium through playwright-core, and openid-client as the relying party (public client, code
 * flow with PKCE) whose login the browser performs.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import type { LoginOptions } from '../../src/server/index.ts';
import { relyingParty, tempDir, testServer } from '../server/_support.ts';

export const PASSWORD = 'correct horse battery staple';
/**
 * The app the browser returns to: a real listener on a free loopback port (Chromium resolves
 * spa.localhost to loopback), answering any path with a small page. The test reads the code from
 * the URL; the app itself does nothing with it. Its origin is the SPA's redirect URI.
 */
let app: { server: Server; origin: string } | undefined;
export async function startApp(): Promise<string> {
  if (app !== undefined) return app.origin;
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title><p>back at the app</p>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  app = { server, origin: `http://spa.localhost:${(server.address() as AddressInfo).port}` };
  return app.origin;
}
export async function stopApp(): Promise<void> {
  const a = app;
  app = undefined;
  if (a !== undefined) await new Promise((r) => a.server.close(r));
}
const appOrigin = () => {
  if (app === undefined) throw new Error('startApp() first');
  return app.origin;
};
export const alice = (tenant: string) => ({ id: 'u-alice', email: `alice@${tenant}.example` });

export type LoginServer = Awaited<ReturnType<typeof testServer>> & { audit: () => Record<string, unknown>[] };

/** A server with these login options; its log lines are kept, audit lines parsed back. */
export async function loginServer(login: LoginOptions = {}, extra: { trustedProxies?: number } = {}): Promise<LoginServer> {
  const lines: string[] = [];
  const server = await testServer({ login, ...extra, log: (l) => lines.push(l) });
  return Object.assign(server, {
    audit: () => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>),
  });
}

/** One tenant per policy: alice (password set, assigned to the SPA) and bob (password set, assigned). */
export function tenantYaml(name: string, login: string | undefined): string {
  return `  - name: ${name}
    displayName: ${name[0]!.toUpperCase()}${name.slice(1)} Inc.
${login === undefined ? '' : `    login: ${login}\n`}    users:
      - id: u-alice
        email: alice@${name}.example
        password: { env: LOGIN_TEST_PASSWORD }
      - id: u-bob
        email: bob@${name}.example
        password: { env: LOGIN_TEST_PASSWORD }
    applications:
      - name: app
        kind: spa
        displayName: ${name} app
        origin: ${appOrigin()}
        scopes: [openid, email]
    assignments:
      - application: app
        users: [u-alice, u-bob]
`;
}

/** Writes the model and runs `idforge apply` against the server, as an admin would. */
export async function applyModel(server: LoginServer, tenants: string): Promise<void> {
  const work = tempDir('idforge-login-model-');
  const model = join(work.path, 'model.yaml');
  writeFileSync(model, `server:\n  baseDomain: localhost\n  port: ${server.port}\ntenants:\n${tenants}`);
  let out = '';
  const io: CliIo = {
    stdout: (t) => { out += t; },
    stderr: (t) => { out += t; },
    env: { LOGIN_TEST_PASSWORD: PASSWORD, IDFORGE_STATE: join(work.path, 'state.json') },
    cwd: work.path,
    color: false,
  };
  const code = await main(['apply', model, '--data-dir', server.dataDir], io);
  work.remove();
  expect(code, out).toBe(0);
}

export interface SignIn {
  /** Waits for the browser to come back to the app, redeems the code; returns the ID token's claims. */
  finish(): Promise<oidc.IDToken>;
  /** As finish, with the whole token response (a refresh token when the scope asked for `offline`). */
  tokens(): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers>;
}

/** Opens the tenant's authorization endpoint in the page, as the SPA would. */
export async function beginSignIn(page: Page, server: LoginServer, tenant: string, scope = 'openid email'): Promise<SignIn & { config: oidc.Configuration }> {
  const config = await relyingParty(server.issuer(tenant), 'app');
  const origin = appOrigin();
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    // With the trailing slash, as openid-client repeats the callback URL at the token endpoint.
    redirect_uri: new URL(origin).href, scope, state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const back = page.waitForRequest((r) => r.url().startsWith(origin) && r.url().includes('state='), { timeout: 60_000 });
  back.catch(() => {});
  await page.goto(url.href);
  const flow: SignIn & { config: oidc.Configuration } = {
    config,
    async tokens() {
      const callback = new URL((await back).url());
      // Let the app's page finish loading, so the next navigation never races this one.
      await page.waitForURL((u) => u.href.startsWith(origin));
      await page.waitForLoadState('load');
      expect(callback.searchParams.get('error'), callback.searchParams.get('error_description') ?? '').toBeNull();
      return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    },
    async finish() {
      return (await flow.tokens()).claims()!;
    },
  };
  return flow;
}

/** Signs the browser out at the tenant (RP-initiated logout, confirmed as a person would). */
export async function signOut(page: Page, server: LoginServer, tenant: string): Promise<void> {
  await page.goto(`${server.issuer(tenant)}session/end`);
  await page.getByRole('button', { name: /sign me out/i }).click();
  await page.waitForLoadState('load');
}

/** The error the login page announces (the role=alert live region). */
export async function alertText(page: Page): Promise<string> {
  return (await page.getByRole('alert').first().textContent())?.trim() ?? '';
}

/**
 * The sign-in code of the newest message to `to` in the outbox, waiting (briefly) for delivery,
 * which the server does not await. `seen` holds files read before, so an old code is never taken.
 */
export async function codeFromOutbox(dir: string, to: string, seen: Set<string>, waitMs = 5_000): Promise<string> {
  for (let i = 0; i < waitMs / 50; i++) {
    let files: string[] = [];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.eml') && !seen.has(f)).sort();
    } catch {
      /* not created yet */
    }
    for (const f of files) {
      seen.add(f);
      const text = readFileSync(join(dir, f), 'utf8');
      if (!new RegExp(`^To: ${to.replace(/[.+]/g, '\\$&')}$`, 'mi').test(text)) continue;
      const code = /^Your sign-in code is (\d{6})\r?$/m.exec(text)?.[1];
      if (code !== undefined) return code;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no message to ${to} in ${dir}`);
}

/** Accessibility basics of a login page: every visible field has a label; one h1 names the page. */
export async function expectAccessible(page: Page): Promise<void> {
  const unlabelled = await page.locator('input:not([type=hidden])').evaluateAll((els) =>
    els.filter((el) => (el as HTMLInputElement).labels?.length === 0).map((el) => el.outerHTML));
  expect(unlabelled).toEqual([]);
  expect(await page.getByRole('heading', { level: 1 }).count()).toBe(1);
  expect(await page.locator('html').getAttribute('lang')).toBe('en');
}
