/**
 * Removing a scope from a user revokes their grants and tokens in the same transaction as the
 * user's new state. A failure in between must leave the user as before, so that retrying the PUT
 * (as `idforge apply` does) still sees a change and revokes; otherwise the retry reads "unchanged"
 * and the old refresh token keeps minting tokens with the removed scope.
 *
 * The failure is real: a SQLite trigger that aborts deletes of artifacts, on the server's own file.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as oidc from 'openid-client';
import { afterAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { openStorage } from '../../src/server/storage/index.ts';
import { DATABASE_FILE } from '../../src/server/storage/sqlite.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, tempDir, testServer } from './_support.ts';

const FAIL_REVOKE = `CREATE TRIGGER fail_revoke BEFORE DELETE ON artifacts BEGIN SELECT RAISE(ABORT, 'injected failure'); END`;

describe('storage', () => {
  const dir = tempDir();
  afterAll(() => dir.remove());

  it('putUser with revokeArtifacts stores the user and deletes their artifacts together, or neither', async () => {
    const storage = await openStorage({ dataDir: dir.path });
    const body = { email: 'alice@acme.test', scopes: ['admin'], disabled: false };
    try {
      // Rows name their tenant, which must exist (schema 3).
      await storage.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await storage.users.put('acme', 'u-alice', body, null);
      await storage.grants.upsert('acme', 'RefreshToken', 'rt-1', { accountId: 'u-alice', clientId: 'spa' }, 3600);

      const db = new Database(join(dir.path, DATABASE_FILE));
      db.exec(FAIL_REVOKE);
      await expect(storage.users.put('acme', 'u-alice', { ...body, scopes: [] }, null, { revokeArtifacts: true })).rejects.toThrow('injected failure');
      expect((await storage.users.get('acme', 'u-alice'))?.body.scopes).toEqual(['admin']);
      expect(await storage.grants.find('acme', 'RefreshToken', 'rt-1')).toBeDefined();

      db.exec('DROP TRIGGER fail_revoke');
      db.close();
      await storage.users.put('acme', 'u-alice', { ...body, scopes: [] }, null, { revokeArtifacts: true });
      expect((await storage.users.get('acme', 'u-alice'))?.body.scopes).toEqual([]);
      expect(await storage.grants.find('acme', 'RefreshToken', 'rt-1')).toBeUndefined();
    } finally {
      await storage.close();
    }
  });
});

describe('admin API', () => {
  it('a scope removal that fails half-way is retried in full: the refresh token then fails', async () => {
    const server = await testServer();
    try {
      const admin = await adminClient(server);
      const f = await fixtureTenant(admin, 'acme');
      const spa = await relyingParty(server.issuer('acme'), f.spa.clientId);
      const flow = await authorize(spa, new Browser(), f.spa.redirectUri, { email: f.users.alice.email, password: PASSWORD }, { scope: 'openid offline admin' });
      const tokens = await oidc.authorizationCodeGrant(spa, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
      expect(tokens.refresh_token).toBeTypeOf('string');

      const path = routePath('getUser', { tenant: 'acme', userId: f.users.alice.id });
      const withoutAdmin = { email: f.users.alice.email, displayName: 'alice', scopes: [] };
      const db = new Database(join(server.dataDir, DATABASE_FILE));
      db.exec(FAIL_REVOKE);
      expect((await admin.call('PUT', path, withoutAdmin)).status).toBe(500);
      expect((await admin.call('GET', path)).body.scopes).toEqual(['admin']);
      db.exec('DROP TRIGGER fail_revoke');
      db.close();

      const retry = await admin.call('PUT', path, withoutAdmin);
      expect(retry.status).toBe(200);
      expect(retry.body.outcome).toBe('updated');
      await expect(oidc.refreshTokenGrant(spa, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    } finally {
      await server.dispose();
    }
  });
});
