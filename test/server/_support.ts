/**
 * Test support for the server: a real server on an ephemeral port in a temp data dir, an admin
 * client, a browser-like HTTP agent (cookie jar, manual redirects, form parsing), and fixture
 * tenants. No DNS needed: localhostFetch resolves *.localhost to 127.0.0.1 itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { z } from 'zod';
import { routePath, ApplicationBody, TenantBody, UserBody } from '../../src/contract/index.ts';

/** Request bodies as sent (defaults may be omitted). */
type In<T extends z.ZodType> = z.input<T>;
import { AdminClient as TypedAdminClient, endpointFromCredentials, localhostFetch } from '../../src/admin-client/index.ts';
import { accountEdge } from '../../src/account/index.ts';
import { consoleEdge } from '../../src/console/index.ts';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.ts';

export { localhostFetch };

export function tempDir(prefix = 'idforge-server-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export async function testServer(options: Partial<ServerOptions> = {}): Promise<RunningServer & { dataDir: string; dispose: () => Promise<void> }> {
  const dir = options.dataDir === undefined ? tempDir() : undefined;
  const dataDir = options.dataDir ?? dir!.path;
  let server: RunningServer;
  try {
    server = await startServer({ port: 0, baseDomain: 'localhost', log: process.env.IDFORGE_TEST_LOG ? (l: string) => console.error(l) : () => {}, edge: [consoleEdge(), accountEdge()], ...options, dataDir });
  } catch (err) {
    dir?.remove(); // a refused start leaves no data dir behind
    throw err;
  }
  return Object.assign(server, {
    dataDir,
    dispose: async () => {
      await server.close();
      dir?.remove();
    },
  });
}

export interface AdminClient {
  readonly token: string;
  /** The typed admin client (the one the CLI and the providers use) for this server. */
  readonly typed: TypedAdminClient;
  /** One raw exchange, for asserting on statuses and bodies; `token` '' sends none. */
  call(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; headers: Headers }>;
  put(path: string, body: unknown): Promise<any>;
}

export async function adminClient(server: Pick<RunningServer, 'url' | 'adminCredentials'>): Promise<AdminClient> {
  const typed = new TypedAdminClient(endpointFromCredentials(server.adminCredentials));
  const token = await typed.token();
  const call = async (method: string, path: string, body?: unknown, tok: string | undefined = token) =>
    typed.raw(method, path, body, { token: tok === '' ? null : tok });
  return {
    token,
    typed,
    call,
    async put(path, body) {
      const r = await call('PUT', path, body);
      if (r.status !== 200 && r.status !== 201) throw new Error(`PUT ${path} → ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
  };
}

/** A person with a browser: cookies per host, redirects followed by hand, forms read from HTML. */
export class Browser {
  readonly #jar = new Map<string, Map<string, string>>();

  /** The cookie `name` the browser holds for `url`'s host. */
  cookie(url: string, name: string): string | undefined {
    return this.#jar.get(new URL(url).host)?.get(name);
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const u = new URL(url);
    const jar = this.#jar.get(u.host) ?? new Map<string, string>();
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await localhostFetch(url, { ...init, headers });
    for (const c of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()));
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.#jar.set(u.host, jar);
    return res;
  }

  /** Follows redirects until one leaves for `stopAt` (returned unfetched) or a page is served. */
  async follow(url: string, stopAt: string, init?: RequestInit): Promise<{ url: string; response?: Response; html?: string }> {
    let next = url;
    let reqInit = init;
    for (let i = 0; i < 20; i++) {
      if (next.startsWith(stopAt)) return { url: next };
      const res = await this.request(next, reqInit);
      reqInit = undefined;
      const loc = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && loc !== null) {
        next = new URL(loc, next).href;
        continue;
      }
      return { url: next, response: res, html: await res.text() };
    }
    throw new Error('too many redirects');
  }

  /** Submits the form whose action contains `actionPart`, with `fields` over its hidden inputs. */
  async submit(pageUrl: string, html: string, actionPart: string, fields: Record<string, string>, stopAt: string) {
    const form = [...html.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => m[1]!.includes(actionPart));
    if (form === undefined) throw new Error(`no form with action containing ${actionPart} in:\n${html}`);
    const values = new URLSearchParams();
    for (const m of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) values.set(m[1]!, unescape(m[2]!));
    for (const [k, v] of Object.entries(fields)) values.set(k, v);
    const action = new URL(unescape(form[1]!), pageUrl).href;
    return this.follow(action, stopAt, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: values.toString() });
  }
}

const unescape = (s: string) => s.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");

export const PASSWORD = 'correct horse battery staple';

export interface Fixture {
  readonly tenant: string;
  readonly api: string;
  readonly web: { clientId: string; clientSecret: string; redirectUri: string };
  readonly spa: { clientId: string; redirectUri: string };
  readonly users: { readonly alice: { id: string; email: string }; readonly bob: { id: string; email: string }; readonly carol: { id: string; email: string } };
}

/**
 * A tenant with an api (audience, scope `admin`), a web client and an SPA. alice holds `admin`
 * and is assigned to both clients; carol is assigned but holds no custom scope; bob is assigned
 * to nothing.
 */
export async function fixtureTenant(admin: AdminClient, tenant: string): Promise<Fixture> {
  const api = `https://api.${tenant}.test`;
  await admin.put(routePath('getTenant', { tenant: tenant }), { displayName: `${tenant} Inc.`, scopes: [{ name: 'admin', description: 'administer' }] } satisfies In<typeof TenantBody>);
  await admin.put(routePath('getApplication', { tenant: tenant, application: 'api' }), { kind: 'api', identifier: api, scopes: ['admin'] } satisfies In<typeof ApplicationBody>);
  const web = { clientId: `${tenant}-web`, clientSecret: `${tenant}-web-secret-0123456789abcdefghijkl`, redirectUri: `https://app.${tenant}.test/connect/idforge/callback` };
  await admin.put(routePath('getApplication', { tenant: tenant, application: 'web' }), {
    kind: 'web', displayName: 'Portal', clientId: web.clientId, clientSecret: web.clientSecret, redirectUris: [web.redirectUri],
    scopes: ['openid', 'profile', 'email', 'offline', 'admin'], audience: [api],
  } satisfies In<typeof ApplicationBody>);
  const spa = { clientId: `${tenant}-spa`, redirectUri: `https://spa.${tenant}.test` };
  await admin.put(routePath('getApplication', { tenant: tenant, application: 'spa' }), {
    kind: 'spa', clientId: spa.clientId, redirectUris: [spa.redirectUri], scopes: ['openid', 'profile', 'email', 'admin'], audience: [api], offline: true,
  } satisfies In<typeof ApplicationBody>);
  const users = {
    alice: { id: 'u-alice', email: `alice@${tenant}.test` },
    bob: { id: 'u-bob', email: `bob@${tenant}.test` },
    carol: { id: 'u-carol', email: `carol@${tenant}.test` },
  };
  for (const [name, u] of Object.entries(users)) {
    await admin.put(routePath('getUser', { tenant: tenant, userId: u.id }), {
      email: u.email, displayName: name, scopes: name === 'alice' ? ['admin'] : [], initialPassword: PASSWORD,
    } satisfies In<typeof UserBody>);
  }
  for (const app of ['web', 'spa']) {
    await admin.put(routePath('getAssignment', { tenant: tenant, application: app, userId: users.alice.id }), {});
    await admin.put(routePath('getAssignment', { tenant: tenant, application: app, userId: users.carol.id }), {});
  }
  return { tenant, api, web, spa, users };
}

/** An openid-client Configuration for a tenant, over localhostFetch, plain http allowed. */
export async function relyingParty(issuer: string, clientId: string, secret?: string, method: 'basic' | 'post' = 'basic'): Promise<oidc.Configuration> {
  const auth = secret === undefined ? oidc.None() : method === 'basic' ? oidc.ClientSecretBasic(secret) : oidc.ClientSecretPost(secret);
  const config = await oidc.discovery(new URL(issuer), clientId, secret === undefined ? {} : { client_secret: secret }, auth, {
    execute: [oidc.allowInsecureRequests],
    [oidc.customFetch]: localhostFetch as never,
  });
  config[oidc.customFetch] = localhostFetch as never;
  return config;
}

/** PKCE parameters for an authorization URL (every client must send them); the verifier is not needed when no code is redeemed. */
export async function pkceParams(): Promise<{ code_challenge: string; code_challenge_method: 'S256' }> {
  return { code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' };
}

/**
 * Runs the authorization code flow as a browser would: authorize, log in on the form, come back.
 * Returns the callback URL (with code or error) and the last page seen before it.
 */
export async function authorize(
  config: oidc.Configuration, browser: Browser, redirectUri: string, login: { email: string; password: string } | undefined,
  params: Record<string, string> = {},
): Promise<{ callback: URL; verifier: string; state: string; pages: string[] }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    // The URL the browser comes back to, as openid-client will repeat it at the token endpoint.
    redirect_uri: new URL(redirectUri).href, scope: 'openid', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256', ...params,
  });
  const pages: string[] = [];
  let step = await browser.follow(url.href, new URL(redirectUri).href);
  if (step.html !== undefined && login !== undefined) {
    pages.push(step.html);
    step = await browser.submit(step.url, step.html, '/login', login, new URL(redirectUri).href);
  }
  if (step.html !== undefined) {
    pages.push(step.html);
    // The "not assigned" page: a person reads it, then continues back to the application.
    step = await browser.submit(step.url, step.html, '/deny', {}, new URL(redirectUri).href);
  }
  if (step.html !== undefined) throw new Error(`flow did not return to the client; last page:\n${step.html}`);
  return { callback: new URL(step.url), verifier, state, pages };
}
