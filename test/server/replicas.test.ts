/**
 * Replicas: several servers on one PostgreSQL database (a real one this file starts) and one
 * master key file. The acceptance command, twice at once on an empty database; a replica with
 * another key refused; and a change made through one replica seen by the other (the change
 * feed): tenant scopes, signing keys, a client's secret, a user, an assignment; while codes,
 * sessions and refresh tokens made at one are redeemed at the other.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readAdminCredentials } from '../../src/admin-client/index.ts';
import { routePath } from '../../src/contract/index.ts';
import { decodeProtectedHeader } from 'jose';
import { DATABASE_URL_ENV, MASTER_KEY_ENV, MASTER_KEY_FILE_ENV, startServer, type RunningServer } from '../../src/server/index.ts';
import { freePort, startProcess, stopAll, type RunningProcess } from '../support/processes.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, tempDir } from './_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');
const CLEAN_ENV = { [DATABASE_URL_ENV]: undefined, [MASTER_KEY_ENV]: undefined, [MASTER_KEY_FILE_ENV]: undefined };

let pg: TestPostgres;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await stopAll();
  await pg?.stop();
});

/** Starts `idforge serve` and waits for its "listening on" line, or its exit. */
async function serve(name: string, args: string[]): Promise<{ proc: RunningProcess; url?: string }> {
  const proc = startProcess(name, process.execPath, [BIN, 'serve', ...args], { env: CLEAN_ENV });
  for (;;) {
    const m = /listening on (http:\/\/localhost:\d+)/.exec(proc.output());
    if (m !== null) return { proc, url: m[1]! };
    if (proc.hasExited()) return { proc };
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** fetch that sends the request to the replica on `port`, whatever port the URL names (Host stays the URL's). */
const via = (port: number) => async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
  const url = new URL(input instanceof Request ? input.url : input);
  const target = new URL(url);
  target.port = String(port);
  const headers = new Headers(input instanceof Request ? input.headers : undefined);
  new Headers(init.headers).forEach((v, k) => headers.set(k, v));
  headers.set('host', url.host);
  const body = init.body ?? (input instanceof Request && input.body !== null ? await input.arrayBuffer() : undefined);
  return localhostFetch(target, { ...init, method: init.method ?? (input instanceof Request ? input.method : 'GET'), headers, ...(body === undefined ? {} : { body }) });
};

describe('the acceptance command: idforge serve --database ... --master-key-file K --data-dir D --port P --base-domain localhost', () => {
  it('two replicas started together on an empty database share the key file it makes and one bootstrap secret', async () => {
    const db = await pg.createDatabase('accept');
    const dirs = [tempDir(), tempDir()];
    const keyDir = tempDir();
    const K = join(keyDir.path, 'master.key');
    try {
      const ports = [await freePort(), await freePort()];
      const replicas = await Promise.all(dirs.map((d, i) => serve(`replica-accept-${i}`, [
        '--database', db.url, '--master-key-file', K, '--data-dir', d.path, '--port', String(ports[i]), '--base-domain', 'localhost',
      ])));
      for (const r of replicas) expect(r.url, r.proc.output()).toBeDefined();
      expect(statSync(K).mode & 0o777).toBe(0o600);
      expect(existsSync(join(dirs[0]!.path, 'master.key'))).toBe(false);
      // Admin credentials in each data dir, with the one secret; each gets a token from its replica.
      const creds = await Promise.all(dirs.map((d) => readAdminCredentials(d.path)));
      expect(creds[0]!.clientSecret).toBe(creds[1]!.clientSecret);
      for (const [i, c] of creds.entries()) {
        const admin = await adminClient({ url: replicas[i]!.url!, adminCredentials: c });
        expect((await admin.call('GET', '/admin/v1/tenants')).status).toBe(200);
      }
      // A third replica with a fresh data dir joins without staling the others' files.
      const third = tempDir();
      dirs.push(third);
      const joined = await serve('replica-accept-2', ['--database', db.url, '--master-key-file', K, '--data-dir', third.path, '--port', String(await freePort()), '--workers', '1']);
      expect(joined.url, joined.proc.output()).toBeDefined();
      expect((await readAdminCredentials(third.path)).clientSecret).toBe(creds[0]!.clientSecret);
      const again = await adminClient({ url: replicas[0]!.url!, adminCredentials: await readAdminCredentials(dirs[0]!.path) });
      expect((await again.call('GET', '/admin/v1/tenants')).status).toBe(200);

      // Another key on this database is refused, in one line, before anything is written.
      const other = join(keyDir.path, 'other.key');
      writeFileSync(other, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
      const wrongDir = tempDir();
      dirs.push(wrongDir);
      const wrong = await serve('replica-accept-wrong', ['--database', db.url, '--master-key-file', other, '--data-dir', wrongDir.path, '--port', '0', '--workers', '1']);
      expect(await wrong.proc.exited).toBe(1);
      expect(wrong.proc.output()).toMatch(new RegExp(`^idforge serve: refusing to start: the master key from ${other} is not the key the data in the database 127\\.0\\.0\\.1:${pg.port}/${db.name} was sealed with`));
    } finally {
      await stopAll();
      for (const d of dirs) d.remove();
      keyDir.remove();
      await pg.dropDatabase(db.name);
    }
  });

  it('two replicas with different keys starting together on an empty database: exactly one starts', async () => {
    const db = await pg.createDatabase('race');
    const dir = tempDir();
    try {
      const keys = [0, 1].map((i) => {
        const f = join(dir.path, `k${i}`);
        writeFileSync(f, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
        return f;
      });
      const started = await Promise.all(keys.map((k, i) => serve(`replica-race-${i}`, [
        '--database', db.url, '--master-key-file', k, '--data-dir', join(dir.path, `d${i}`), '--port', '0', '--workers', '1',
      ])));
      const up = started.filter((s) => s.url !== undefined);
      expect(up).toHaveLength(1);
      const refused = started.find((s) => s.url === undefined)!;
      expect(await refused.proc.exited).toBe(1);
      expect(refused.proc.output()).toContain('is not the key the data in the database');
    } finally {
      await stopAll();
      dir.remove();
      await pg.dropDatabase(db.name);
    }
  });
});

describe('a change made through one replica takes effect on the other', () => {
  let db: { name: string; url: string };
  const dirs = [tempDir(), tempDir(), tempDir()];
  let a: RunningServer;
  let b: RunningServer;
  let toB: ReturnType<typeof via>;

  beforeAll(async () => {
    db = await pg.createDatabase('feed');
    const masterKeyFile = join(dirs[2]!.path, 'master.key');
    // A serves the public address; B listens elsewhere with the same public address (as behind a load balancer).
    a = await startServer({ dataDir: dirs[0]!.path, database: db.url, masterKeyFile, port: 0, log: () => {}, env: {} });
    b = await startServer({ dataDir: dirs[1]!.path, database: db.url, masterKeyFile, port: 0, publicPort: a.port, log: () => {}, env: {} });
    toB = via(b.port);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    for (const d of dirs) d.remove();
    await pg.dropDatabase(db.name);
  });

  /** Polls `probe` at B until it holds; the feed's promise is a second, the bound only stops a broken one. */
  const seenAtB = async (what: string, probe: () => Promise<void>) => {
    const t0 = Date.now();
    await vi.waitFor(probe, { timeout: 15_000, interval: 50 });
    console.log(`replica B saw ${what} ${Date.now() - t0} ms after replica A made it`);
  };

  it('tenant, keys, client, user and assignment changes; codes, sessions and refresh tokens shared', async () => {
    const admin = await adminClient(a);
    const f = await fixtureTenant(admin, 'acme');
    const discoveryAtB = async () => (await (await toB(`${a.issuer('acme')}.well-known/openid-configuration`)).json()) as { scopes_supported: string[] };
    const jwksAtB = async () => ((await (await toB(`${a.issuer('acme')}.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    // B has the tenant built and its documents kept before anything changes.
    expect((await discoveryAtB()).scopes_supported).not.toContain('reports');
    const kidsBefore = await jwksAtB();

    // Sign in at A; the code is redeemed at B, and B's refresh works with A's session.
    const webAtA = await relyingParty(a.issuer('acme'), f.web.clientId, f.web.clientSecret);
    const webAtB = await relyingParty(a.issuer('acme'), f.web.clientId, f.web.clientSecret);
    webAtB[oidc.customFetch] = toB as never;
    const login = async (user: { email: string }) => {
      const flow = await authorize(webAtA, new Browser(), f.web.redirectUri, { email: user.email, password: PASSWORD }, { scope: 'openid offline' });
      return oidc.authorizationCodeGrant(webAtB, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
    };
    const alice = await login(f.users.alice);
    const carol = await login(f.users.carol);
    const aliceRefreshed = await oidc.refreshTokenGrant(webAtB, alice.refresh_token!);

    // Tenant: a new scope shows in B's discovery.
    await admin.put(routePath('getTenant', { tenant: 'acme' }), { displayName: 'acme Inc.', scopes: [{ name: 'admin', description: 'administer' }, { name: 'reports' }] });
    await seenAtB('a tenant change', async () => expect((await discoveryAtB()).scopes_supported).toContain('reports'));

    // Keys: after a rotation B publishes the new next key and signs with the new active one.
    const rotated = (await admin.call('POST', routePath('rotateKeys', { tenant: 'acme' }), {})).body.items as { kid: string; state: string }[];
    const active = rotated.find((k) => k.state === 'active')!.kid;
    const next = rotated.find((k) => k.state === 'next')!.kid;
    expect(kidsBefore).not.toContain(next);
    await seenAtB('a key rotation', async () => expect(await jwksAtB()).toContain(next));
    const afterRotation = await oidc.refreshTokenGrant(webAtB, aliceRefreshed.refresh_token!);
    expect(decodeProtectedHeader(afterRotation.access_token).kid).toBe(active);

    // Client: a rotated secret is the only one B accepts.
    const { clientSecret } = (await admin.call('POST', routePath('rotateClientSecret', { tenant: 'acme', application: 'web' }))).body as { clientSecret: string };
    // (Probed by introspection, which changes nothing: a refresh would spend the token.)
    await seenAtB('a client secret rotation', async () => {
      // 401 with a WWW-Authenticate challenge: the old secret no longer authenticates the client.
      await expect(oidc.tokenIntrospection(webAtB, afterRotation.access_token)).rejects.toMatchObject({ status: 401 });
    });
    const webNewAtB = await relyingParty(a.issuer('acme'), f.web.clientId, clientSecret);
    webNewAtB[oidc.customFetch] = toB as never;
    const withNewSecret = await oidc.refreshTokenGrant(webNewAtB, afterRotation.refresh_token!);

    // User: disabled at A, refused at B.
    await admin.put(routePath('getUser', { tenant: 'acme', userId: 'u-carol' }), { email: f.users.carol.email, displayName: 'carol', scopes: [], disabled: true });
    await seenAtB('a disabled user', async () => {
      await expect(oidc.refreshTokenGrant(webNewAtB, carol.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    // Assignment: removed at A, alice's refresh token refused at B.
    expect((await admin.call('DELETE', routePath('getAssignment', { tenant: 'acme', application: 'web', userId: 'u-alice' }))).status).toBe(204);
    await seenAtB('a removed assignment', async () => {
      await expect(oidc.refreshTokenGrant(webNewAtB, withNewSecret.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    });
  });
});
