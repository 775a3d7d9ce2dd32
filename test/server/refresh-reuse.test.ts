/**
 * Refresh token rotation with a reuse grace (ServerOptions.refreshTokenReuseGrace): a parallel
 * retry within the grace is not a theft; a reuse after it still is, and ends the whole grant.
 * Also the configurable access token lifetime. Servers here run with short settings.
 */
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, tempDir, testServer, type Fixture } from './_support.ts';

async function signedIn(server: Awaited<ReturnType<typeof testServer>>, f: Fixture) {
  const config = await relyingParty(server.issuer(f.tenant), f.spa.clientId);
  const flow = await authorize(config, new Browser(), f.spa.redirectUri, { email: f.users.alice.email, password: PASSWORD }, { scope: 'openid offline' });
  const tokens = await oidc.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
  return { config, tokens };
}

describe('with a 1 s reuse grace and 20 s access tokens', () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let f: Fixture;
  beforeAll(async () => {
    server = await testServer({ refreshTokenReuseGrace: 1, accessTokenLifetime: 20 });
    f = await fixtureTenant(await adminClient(server), 'acme');
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('access tokens live as configured', async () => {
    const { tokens } = await signedIn(server, f);
    const { exp, iat } = decodeJwt(tokens.access_token);
    expect(exp! - iat!).toBe(20);
    expect(tokens.expires_in).toBe(20);
  });

  it('a reuse after the grace is taken for theft: it fails and ends every token of the grant', async () => {
    const { config, tokens } = await signedIn(server, f);
    const [a, b] = await Promise.all([oidc.refreshTokenGrant(config, tokens.refresh_token!), oidc.refreshTokenGrant(config, tokens.refresh_token!)]);
    // Past the grace (consumption is recorded in whole seconds).
    await sleep(2_100);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    await expect(oidc.refreshTokenGrant(config, a.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    await expect(oidc.refreshTokenGrant(config, b.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
  });
});

describe('with the grace turned off', () => {
  it('the second of two refreshes with one token fails and ends the grant, as before', async () => {
    const server = await testServer({ refreshTokenReuseGrace: 0 });
    try {
      const f = await fixtureTenant(await adminClient(server), 'acme');
      const { config, tokens } = await signedIn(server, f);
      const first = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
      await expect(oidc.refreshTokenGrant(config, first.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    } finally {
      await server.dispose();
    }
  });
});

describe('settings', () => {
  it('refuses lifetimes and graces out of range, naming the option, and leaves no data dir behind', async () => {
    // The test server's data dir goes under os.tmpdir(), which reads TMPDIR: a folder of this test's own.
    const temp = tempDir('idforge-refresh-settings-');
    const before = process.env.TMPDIR;
    process.env.TMPDIR = temp.path;
    try {
      await expect(testServer({ accessTokenLifetime: 0 })).rejects.toThrow(/accessTokenLifetime must be a whole number of seconds from 1 to 3600/);
      await expect(testServer({ accessTokenLifetime: 7200 })).rejects.toThrow(/accessTokenLifetime/);
      await expect(testServer({ refreshTokenReuseGrace: 61 })).rejects.toThrow(/refreshTokenReuseGrace must be a whole number of seconds from 0 to 60/);
      expect(readdirSync(temp.path)).toEqual([]);
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
      temp.remove();
    }
  });
});
