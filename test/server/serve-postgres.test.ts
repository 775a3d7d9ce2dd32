/**
 * `idforge serve --database postgres://...` as a process, on a real PostgreSQL this file starts:
 * the admin token by client_credentials, provisioning through the admin API, a person's sign-in
 * with tokens signed by keys kept in PostgreSQL; a restart on the same database keeps it all. And
 * a database that cannot be reached, named by flag or by IDFORGE_DATABASE_URL, stops the start
 * with one line and exit 1.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointFromCredentials, fetchAdminToken, readAdminCredentials } from '../../src/admin-client/index.ts';
import { jwksUrl, type ServerAddress } from '../../src/contract/index.ts';
import { DATABASE_URL_ENV } from '../../src/server/index.ts';
import { freePort, startProcess, stopAll, type RunningProcess } from '../support/processes.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, tempDir } from './_support.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');

let pg: TestPostgres;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await stopAll();
  await pg?.stop();
});

/** Starts `idforge serve` and waits for its "listening on" line. */
async function serve(name: string, args: string[], env: Record<string, string | undefined> = {}): Promise<{ proc: RunningProcess; url: string }> {
  const proc = startProcess(name, process.execPath, [BIN, 'serve', ...args], { env: { [DATABASE_URL_ENV]: undefined, ...env } });
  for (;;) {
    const m = /listening on (http:\/\/localhost:\d+)/.exec(proc.output());
    if (m !== null) return { proc, url: m[1]! };
    if (proc.hasExited()) throw new Error(`${name} exited early:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const jwks = async (address: ServerAddress, tenant: string) =>
  createLocalJWKSet((await (await localhostFetch(jwksUrl(address, tenant))).json()) as JSONWebKeySet);

describe('idforge serve --database postgres://...', () => {
  it('issues tokens from state kept in PostgreSQL, and keeps it across a restart', async () => {
    const db = await pg.createDatabase('serve');
    const dir = tempDir();
    try {
      const port = await freePort();
      const args = ['--data-dir', dir.path, '--database', db.url, '--port', String(port), '--base-domain', 'localhost'];
      const first = await serve('serve-postgres-1', args);
      expect(first.proc.output()).toContain(`storage:     postgres 127.0.0.1:${pg.port}/${db.name}`);
      const address: ServerAddress = { scheme: 'http', baseDomain: 'localhost', port };

      // client_credentials for the bootstrap admin client, signed with the system tenant's key from PostgreSQL.
      const creds = await readAdminCredentials(dir.path);
      const { token } = await fetchAdminToken(endpointFromCredentials(creds));
      const { payload } = await jwtVerify(token, await jwks(address, 'system'), { issuer: creds.issuer, audience: creds.resource });
      expect(payload.scp).toEqual(['admin']);

      // Provisioning through the admin API, then a person signs in at the provisioned client.
      const admin = await adminClient({ url: first.url, adminCredentials: creds });
      const f = await fixtureTenant(admin, 'acme');
      const web = await relyingParty(`http://acme.localhost:${port}/oauth2/`, f.web.clientId, f.web.clientSecret);
      const browser = new Browser();
      const flow = await authorize(web, browser, f.web.redirectUri, { email: f.users.alice.email, password: PASSWORD }, { scope: 'openid offline admin' });
      const tokens = await oidc.authorizationCodeGrant(web, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
      const access = await jwtVerify(tokens.access_token, await jwks(address, 'acme'), { audience: f.api });
      expect(access.payload).toMatchObject({ sub: f.users.alice.id, scp: expect.arrayContaining(['admin']) });
      expect(tokens.refresh_token).toBeTypeOf('string');

      // It is all in PostgreSQL, nothing in a SQLite file.
      expect((await pg.sql(db.name, 'SELECT name FROM tenants ORDER BY name')).rows.map((r) => r.name)).toEqual(['acme', 'system']);
      expect(Number((await pg.sql(db.name, `SELECT count(*) AS n FROM artifacts WHERE tenant = 'acme' AND model = 'RefreshToken'`)).rows[0].n)).toBe(1);
      expect(existsSync(join(dir.path, 'idforge.db'))).toBe(false);

      await first.proc.stop();
      expect(await first.proc.exited).toBe(0);

      // Same database (and data dir, for the master key): the refresh token, the session and the clients survive.
      const second = await serve('serve-postgres-2', args);
      const refreshed = await oidc.refreshTokenGrant(web, tokens.refresh_token!);
      expect(refreshed.claims()?.sub).toBe(f.users.alice.id);
      const again = await authorize(web, browser, f.web.redirectUri, undefined, { scope: 'openid' });
      expect(again.pages).toEqual([]);
      const admin2 = await adminClient({ url: second.url, adminCredentials: await readAdminCredentials(dir.path) });
      expect((await admin2.call('GET', '/admin/v1/tenants/acme/users/u-carol')).body.email).toBe(f.users.carol.email);
      await second.proc.stop();
      expect(await second.proc.exited).toBe(0);
    } finally {
      await stopAll();
      dir.remove();
      await pg.dropDatabase(db.name);
    }
  });

  it.each([
    ['--database', (url: string) => ({ args: ['--database', url], env: {} })],
    [DATABASE_URL_ENV, (url: string) => ({ args: [], env: { [DATABASE_URL_ENV]: url } })],
  ])('an unreachable database named by %s: one line naming it, exit 1, no stack trace', async (_how, given) => {
    const port = await freePort();
    const dir = tempDir();
    try {
      const { args, env } = given(`postgres://idforge:s3cret@127.0.0.1:${port}/idforge`);
      const proc = startProcess('serve-postgres-unreachable', process.execPath, [BIN, 'serve', '--data-dir', dir.path, '--port', '0', ...args], {
        env: { [DATABASE_URL_ENV]: undefined, IDFORGE_DEBUG: undefined, ...env },
      });
      expect(await proc.exited).toBe(1);
      expect(proc.output()).toBe(
        `idforge serve: cannot use the database at 127.0.0.1:${port}/idforge: connection refused (is PostgreSQL running there, and listening on that port?)\n`,
      );
    } finally {
      dir.remove();
    }
  });
});
