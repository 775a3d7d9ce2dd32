/**
 * Stop and start on the same data dir: keys, clients, users, sessions and refresh tokens survive.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { jwksUrl } from '../../src/contract/index.ts';
import {
  Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, tempDir, testServer,
} from './_support.ts';

const dir = tempDir();
afterAll(() => dir.remove());

describe('restart', () => {
  it('keeps keys, clients, users, sessions and refresh tokens', async () => {
    const first = await testServer({ dataDir: dir.path });
    const port = first.port;
    const admin = await adminClient(first);
    const f = await fixtureTenant(admin, 'acme');
    const kids = async (s: { address: typeof first.address }) =>
      ((await (await localhostFetch(jwksUrl(s.address, 'acme'))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const kidsBefore = await kids(first);
    const spa = await relyingParty(first.issuer('acme'), f.spa.clientId);
    const browser = new Browser();
    const { callback, verifier, state } = await authorize(spa, browser, f.spa.redirectUri, { email: f.users.alice.email, password: PASSWORD }, { scope: 'openid offline' });
    const tokens = await oidc.authorizationCodeGrant(spa, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const secretsBefore = first.adminCredentials.clientSecret;
    await first.close();

    // Same port, since the issuer (and so every token's `iss`) includes it.
    const second = await testServer({ dataDir: dir.path, port });
    try {
      expect(await kids(second)).toEqual(kidsBefore);
      expect(second.adminCredentials.clientSecret).toBe(secretsBefore);
      const spa2 = await relyingParty(second.issuer('acme'), f.spa.clientId);
      const refreshed = await oidc.refreshTokenGrant(spa2, tokens.refresh_token!);
      expect(refreshed.claims()?.sub).toBe('u-alice');
      // The browser's session survived too: no login form this time.
      const again = await authorize(spa2, browser, f.spa.redirectUri, undefined, { scope: 'openid' });
      expect(again.pages).toEqual([]);
      expect(again.callback.searchParams.get('code')).toBeTypeOf('string');
      // Web client secret (stored hashed) still works.
      const web = await relyingParty(second.issuer('acme'), f.web.clientId, f.web.clientSecret);
      const w = await authorize(web, browser, f.web.redirectUri, undefined);
      await oidc.authorizationCodeGrant(web, w.callback, { pkceCodeVerifier: w.verifier, expectedState: w.state });
      // Secrets on disk are private to the server's user.
      for (const file of ['master.key', 'admin-credentials.json']) expect(statSync(join(dir.path, file)).mode & 0o077).toBe(0);
      const admin2 = await adminClient(second);
      expect((await admin2.call('GET', '/admin/v1/tenants/acme/users/u-carol')).body.email).toBe(f.users.carol.email);
    } finally {
      await second.close();
    }
  });
});
