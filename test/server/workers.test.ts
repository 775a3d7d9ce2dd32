/**
 * `idforge serve --workers 2` on SQLite: two processes serve one port and share the storage. Both
 * serve (each builds its own providers; /metrics sums them), a burst of wrong passwords spread
 * over both is counted once (the primary's locks serialize sign-in attempts across the workers),
 * a worker killed is replaced while the other keeps serving, and SIGTERM stops them all cleanly.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, expect, it } from 'vitest';
import { readAdminCredentials } from '../../src/admin-client/index.ts';
import { routePath } from '../../src/contract/index.ts';
import { DATABASE_URL_ENV, LOGIN_DEFAULTS, MASTER_KEY_ENV, MASTER_KEY_FILE_ENV } from '../../src/server/index.ts';
import { startProcess, stopAll } from '../support/processes.ts';
import { Browser, adminClient, fixtureTenant, localhostFetch, pkceParams, relyingParty, tempDir } from './_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');
const dir = tempDir();
afterAll(async () => {
  await stopAll();
  dir.remove();
});

/** The primary's worker processes (not esbuild, which tsx starts when the sources are newer than the build). */
const children = (pid: number): number[] => readdirSync(`/proc/${pid}/task`).flatMap((t) => {
  try {
    return readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return []; // a thread that ended meanwhile
  }
}).filter((child) => {
  try {
    return readFileSync(`/proc/${child}/comm`, 'utf8').trim() !== 'esbuild';
  } catch {
    return false; // ended meanwhile
  }
});
const metric = async (url: string, line: RegExp) => Number(line.exec(await (await localhostFetch(`${url}/metrics`)).text())?.[1] ?? NaN);

/** `idforge serve --workers 2` on a data dir, once both workers run: the process, its URL and an admin client. */
async function serveWorkers(name: string, dataDir: string, extra: readonly string[] = []) {
  const proc = startProcess(name, process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--port', '0', '--workers', '2', ...extra], {
    env: { [DATABASE_URL_ENV]: undefined, [MASTER_KEY_ENV]: undefined, [MASTER_KEY_FILE_ENV]: undefined },
  });
  while (!proc.output().includes('workers:     2 processes')) {
    if (proc.hasExited()) throw new Error(proc.output());
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = /listening on (http:\/\/localhost:\d+)/.exec(proc.output())![1]!;
  return { proc, url, admin: await adminClient({ url, adminCredentials: await readAdminCredentials(dataDir) }) };
}

it('two workers on one port share SQLite, count a guessing burst once, survive a killed worker, and stop on SIGTERM', async () => {
  const { proc, url, admin } = await serveWorkers('serve-workers', dir.path, ['--backoff-ms', '0']);
  expect(children(proc.pid)).toHaveLength(2);
  const acme = await fixtureTenant(admin, 'acme');

  // Both workers serve: each builds its own providers, and /metrics (from either) sums them.
  for (let i = 0; i < 20; i++) await localhostFetch(`http://acme.localhost:${new URL(url).port}/oauth2/token`, { method: 'POST' });
  expect(await metric(url, /^idforge_tenant_runtime_builds_total (\d+)/m)).toBeGreaterThanOrEqual(2);

  // A burst of wrong passwords for one account, over both workers: the threshold holds.
  const config = await relyingParty(`http://acme.localhost:${new URL(url).port}/oauth2/`, acme.web.clientId, acme.web.clientSecret);
  const browser = new Browser();
  const login = await browser.follow(oidc.buildAuthorizationUrl(config, { redirect_uri: acme.web.redirectUri, scope: 'openid', state: 's', ...(await pkceParams()) }).href, acme.web.redirectUri);
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) =>
    browser.submit(login.url, login.html!, '/login', { email: acme.users.alice.email, password: `wrong ${i}` }, acme.web.redirectUri)));
  const statuses = answers.map((a) => a.response?.status).sort();
  const threshold = LOGIN_DEFAULTS.lockoutThreshold;
  expect(statuses).toEqual([...Array(threshold - 1).fill(401), ...Array(12 - threshold + 1).fill(429)]);
  expect(await metric(url, /^idforge_logins_total\{outcome="failure"\} (\d+)/m)).toBe(threshold);

  // A worker killed: the primary starts another, and the port answers all along (a connection the
  // primary had just handed to the dying worker is lost with it: hence the timeout and retry).
  const [victim] = children(proc.pid);
  process.kill(victim!, 'SIGKILL');
  const healthy = async () => (await localhostFetch(`${url}/healthz`, { signal: AbortSignal.timeout(3_000) })).status;
  await expect.poll(() => healthy().catch(() => 0), { timeout: 30_000, interval: 100 }).toBe(200);
  await expect.poll(() => children(proc.pid).filter((p) => p !== victim).length, { timeout: 60_000, interval: 200 }).toBe(2);
  // (Polled: the primary's line may still be on its way through the pipe.)
  await expect.poll(() => proc.output(), { timeout: 10_000 }).toContain(`worker ${victim} exited (SIGKILL); starting a new one`);
  for (let i = 0; i < 10; i++) expect(await healthy()).toBe(200);

  await proc.stop();
  expect(await proc.exited).toBe(0);
});

it('two workers take concurrent admin writes on one SQLite file without a "database is locked" error', async () => {
  const data = tempDir();
  const { proc, url, admin } = await serveWorkers('serve-workers-writes', data.path);
  try {
    await fixtureTenant(admin, 'acme');
    // Each delete reads the application, then writes: spread over both workers, each worker's
    // transaction must hold the write lock from its first read, or SQLite refuses it at once.
    const names = Array.from({ length: 24 }, (_, i) => `app-${i}`);
    const app = (n: string) => ({ kind: 'spa', clientId: `acme-${n}`, redirectUris: [`https://${n}.acme.test`], scopes: ['openid'] });
    const statuses = async (calls: Promise<{ status: number; body: unknown }>[]) => (await Promise.all(calls)).map((r) => r.status);
    for (let round = 0; round < 3; round++) {
      expect(new Set(await statuses(names.map((n) => admin.call('PUT', routePath('getApplication', { tenant: 'acme', application: n }), app(n)))))).toEqual(new Set([201]));
      expect(new Set(await statuses([
        ...names.map((n) => admin.call('DELETE', routePath('getApplication', { tenant: 'acme', application: n }))),
        ...names.map((n, i) => admin.call('PUT', routePath('getUser', { tenant: 'acme', userId: `u-${round}-${i}` }), { email: `${n}-${round}@acme.test` })),
      ]))).toEqual(new Set([204, 201]));
    }
  } finally {
    await proc.stop();
    data.remove();
  }
});

it('tenant batches spread over both workers take turns at the primary, not in SQLite\'s busy handler: none waits out a short busy timeout', async () => {
  const data = tempDir();
  // 50 ms: shorter than one of these batches holds the write lock, so two batches meeting in SQLite
  // would answer 503; queued at the primary, each starts when the last has committed.
  const { proc, admin } = await serveWorkers('serve-workers-batches', data.path, ['--db-busy-timeout', '50']);
  try {
    const users = (t: number) => Array.from({ length: 400 }, (_, i) => ({ id: `u-${i}`, body: { email: `u${i}@t${t}.test`, displayName: `User ${i}` } }));
    const results = await Promise.all(Array.from({ length: 10 }, (_, t) =>
      admin.call('POST', `/admin/v1/tenants/t${t}/batch`, { tenant: { displayName: `T${t}` }, users: users(t) })));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, () => 200));
    for (let t = 0; t < 10; t++) expect((await admin.call('GET', `/admin/v1/tenants/t${t}/users?limit=1`)).status).toBe(200);
  } finally {
    await proc.stop();
    data.remove();
  }
});

it("a SCIM token's rate is one budget across the workers, not one per process", async () => {
  const data = tempDir();
  const burst = 5;
  const { proc, url, admin } = await serveWorkers('serve-workers-rate', data.path, ['--scim-rate', '1', '--scim-burst', String(burst)]);
  try {
    await admin.put('/admin/v1/tenants/rated', { displayName: 'Rated' });
    const { token } = await admin.typed.call('createScimToken', { tenant: 'rated' }, { body: {} });
    const started = performance.now();
    // Each on its own connection, so the kernel spreads them over both workers.
    const statuses = await Promise.all(Array.from({ length: 30 }, () =>
      localhostFetch(`http://rated.localhost:${new URL(url).port}/scim/v2/ServiceProviderConfig`, {
        headers: { authorization: `Bearer ${token}`, connection: 'close' }, signal: AbortSignal.timeout(10_000),
      }).then((r) => r.status)));
    const seconds = (performance.now() - started) / 1000;
    const allowed = statuses.filter((s) => s === 200).length;
    // One bucket: the burst, plus what the rate (1 a second) refilled meanwhile. Per process it was twice the burst.
    expect(allowed).toBeGreaterThanOrEqual(burst);
    expect(allowed).toBeLessThanOrEqual(burst + Math.ceil(seconds));
    expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
  } finally {
    await proc.stop();
    data.remove();
  }
});
