/**
 * Two `idforge serve` replicas on one PostgreSQL behind Debian's HAProxy (round robin, /readyz
 * health checks, retry on a failed connection): a person's sign-in in Chromium lands on both;
 * under load, one replica stopped with SIGTERM drains and costs nothing, and one killed with
 * SIGKILL costs only the requests it was serving; every session and refresh token made before
 * survives, and the survivor keeps issuing.
 */
import { Agent, request } from 'node:http';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import type { Browser as Chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readAdminCredentials } from '../../src/admin-client/index.ts';
import { DATABASE_URL_ENV, MASTER_KEY_ENV, MASTER_KEY_FILE_ENV } from '../../src/server/index.ts';
import { launchBrowser, newContext } from '../support/browser.ts';
import { startHaproxy } from '../support/haproxy.ts';
import { freePorts, startProcess, stopAll, type RunningProcess } from '../support/processes.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, tempDir } from '../server/_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');

let pg: TestPostgres;
let chromium: Chromium;
const dir = tempDir('idforge-lb-');
beforeAll(async () => {
  pg = await startPostgres();
  chromium = await launchBrowser();
});
afterAll(async () => {
  await chromium?.close();
  await stopAll();
  await pg?.stop();
  dir.remove();
});

interface Outcome { readonly start: number; readonly end: number; readonly status: number; readonly servedBy: string }

it('a sign-in lands on both replicas; SIGTERM drains; kill -9 costs only what was in flight; no grant is lost', async () => {
  const db = await pg.createDatabase('lb');
  const [lb, p1, p2] = await freePorts(3) as [number, number, number];
  const K = join(dir.path, 'master.key');
  const replica = (name: 'r1' | 'r2', port: number): Promise<RunningProcess> => {
    const proc = startProcess(`lb-${name}`, process.execPath, [BIN, 'serve', '--database', db.url, '--master-key-file', K, '--data-dir', join(dir.path, name),
      '--port', String(port), '--public-port', String(lb), '--base-domain', 'localhost', '--workers', '1'], {
      env: { [DATABASE_URL_ENV]: undefined, [MASTER_KEY_ENV]: undefined, [MASTER_KEY_FILE_ENV]: undefined },
    });
    return (async () => {
      while (!proc.output().includes('listening on')) {
        if (proc.hasExited()) throw new Error(`${name} exited:\n${proc.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return proc;
    })();
  };
  let [r1, r2] = await Promise.all([replica('r1', p1), replica('r2', p2)]);
  await startHaproxy(dir.path, lb, [{ name: 'r1', port: p1 }, { name: 'r2', port: p2 }], `localhost:${lb}`);
  const base = `http://localhost:${lb}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const post = (host: string, path: string, body: string, auth: string): Promise<{ status: number; servedBy: string; body: string }> =>
    new Promise((done, fail) => {
      const req = request({ host: '127.0.0.1', port: lb, method: 'POST', path, agent, headers: {
        host: `${host}:${lb}`, authorization: auth, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body),
      } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += String(d); });
        res.on('end', () => done({ status: res.statusCode ?? 0, servedBy: String(res.headers['x-served-by'] ?? ''), body: text }));
        res.on('error', fail);
      });
      req.on('error', fail);
      req.end(body);
    });
  const waitServing = async (name: string) => {
    // Until HAProxy has the replica back in rotation (its health checks pass).
    for (let i = 0; i < 400; i++) {
      const seen = new Set<string>();
      for (let j = 0; j < 4; j++) seen.add((await post('system.localhost', '/oauth2/token', 'grant_type=client_credentials', 'Basic eA==')).servedBy);
      if (seen.has(name)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${name} never came back into rotation`);
  };
  await waitServing('r1');
  await waitServing('r2');

  const creds = await readAdminCredentials(join(dir.path, 'r1'));
  expect(creds.adminUrl).toBe(`${base}/admin/v1`);
  const admin = await adminClient({ url: base, adminCredentials: creds });
  const f = await fixtureTenant(admin, 'acme');
  const issuer = `http://acme.localhost:${lb}/oauth2/`;

  // A person signs in in Chromium; the pages, the form post and the redirects land on both replicas.
  const context = await newContext(chromium);
  const page = await context.newPage();
  const servedBy = new Set<string>();
  page.on('response', (r) => { if (r.url().startsWith(`http://acme.localhost:${lb}/`)) servedBy.add(r.headers()['x-served-by'] ?? '?'); });
  let callback: string | undefined;
  await context.route(`${new URL(f.web.redirectUri).origin}/**`, (route) => {
    callback = route.request().url();
    return route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the app' });
  });
  const web = await relyingParty(issuer, f.web.clientId, f.web.clientSecret);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const authUrl = oidc.buildAuthorizationUrl(web, {
    redirect_uri: f.web.redirectUri, scope: 'openid offline', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  await page.goto(authUrl.href);
  await page.locator('input[name="email"]').fill(f.users.alice.email);
  await page.locator('input[name="password"]').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.href.startsWith(f.web.redirectUri));
  expect([...servedBy].sort()).toEqual(['r1', 'r2']);
  const browserTokens = await oidc.authorizationCodeGrant(web, new URL(callback!), { pkceCodeVerifier: verifier, expectedState: state });

  // Refresh tokens made before any replica goes: each must still work after.
  const kept: string[] = [browserTokens.refresh_token!];
  for (let i = 0; i < 4; i++) {
    const flow = await authorize(web, new Browser(), f.web.redirectUri, { email: f.users.carol.email, password: PASSWORD }, { scope: 'openid offline' });
    kept.push((await oidc.authorizationCodeGrant(web, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).refresh_token!);
  }

  // Load: client_credentials for the admin client from 8 loops, each with one request in flight.
  const basic = `Basic ${Buffer.from(`${creds.clientId}:${creds.clientSecret}`).toString('base64')}`;
  const form = new URLSearchParams({ grant_type: 'client_credentials', scope: 'admin', resource: creds.resource }).toString();
  const underLoad = async (during: () => Promise<number>): Promise<{ at: number; outcomes: Outcome[] }> => {
    const outcomes: Outcome[] = [];
    let running = true;
    const loops = Array.from({ length: 8 }, async () => {
      while (running) {
        const start = performance.now();
        const r = await post('system.localhost', '/oauth2/token', form, basic).catch(() => ({ status: 0, servedBy: '', body: '' }));
        outcomes.push({ start, end: performance.now(), status: r.status, servedBy: r.servedBy });
      }
    });
    await new Promise((r) => setTimeout(r, 1_500));
    const at = await during();
    await new Promise((r) => setTimeout(r, 3_000));
    running = false;
    await Promise.all(loops);
    return { at, outcomes };
  };

  // SIGTERM to r1 under load: it drains; not one request fails.
  const drained = await underLoad(async () => {
    const at = performance.now();
    await r1.stop();
    return at;
  });
  expect(await r1.exited).toBe(0);
  const drainFailures = drained.outcomes.filter((o) => o.status !== 200);
  console.log(`SIGTERM under load: ${drained.outcomes.length} requests, ${drainFailures.length} failed`);
  expect(drainFailures).toEqual([]);

  // r1 back; then kill -9 r2 under load.
  r1 = await replica('r1', p1);
  await waitServing('r1');
  const killed = await underLoad(async () => {
    const at = performance.now();
    process.kill(-r2.pid, 'SIGKILL');
    return at;
  });
  await r2.exited;
  const failures = killed.outcomes.filter((o) => o.status !== 200);
  const after = killed.outcomes.filter((o) => o.start > killed.at);
  console.log(`kill -9 under load: ${killed.outcomes.length} requests (${after.length} after the kill, all ${[...new Set(after.map((o) => o.servedBy))].join(', ')}), ${failures.length} failed: ${JSON.stringify(failures.map((o) => ({ status: o.status, servedBy: o.servedBy, startedBeforeKillMs: Math.round(killed.at - o.start) })))}`);
  // Only requests that were in flight when r2 died may fail: at most one per loop, all begun before the kill.
  expect(failures.length).toBeLessThanOrEqual(8);
  for (const o of failures) expect(o.start).toBeLessThan(killed.at);
  expect(after.filter((o) => o.status === 200).length).toBeGreaterThan(0);

  // No grant lost: the person's session still signs them in without a form, every refresh token works.
  // (Straight back to the app: Playwright routes no redirected request, so the redirect itself is read.)
  const again = await context.newPage();
  const back = again.waitForResponse((r) => (r.headers().location ?? '').startsWith(f.web.redirectUri));
  await again.goto(oidc.buildAuthorizationUrl(web, { redirect_uri: f.web.redirectUri, scope: 'openid', state: 's2', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).href).catch(() => undefined);
  expect(new URL((await back).headers().location!).searchParams.get('code')).toBeTruthy();
  for (const token of kept) expect((await oidc.refreshTokenGrant(web, token)).access_token).toBeTypeOf('string');
  // And the survivor keeps issuing.
  const last = await post('system.localhost', '/oauth2/token', form, basic);
  expect(last.status).toBe(200);
  expect(last.servedBy).toBe('r1');
  agent.destroy();
  await context.close();
  await r1.stop();
});
