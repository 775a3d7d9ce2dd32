/**
 * OpenID Connect Back-Channel Logout 1.0 from the server's side, against a receiver written here
 * from the specification (node:http, jose): a revocation (assignment removed, user disabled,
 * application removed) and a sign-out at the server each send a logout token to the client's
 * back-channel logout URI; each verifies as §2.6 says a receiver must verify it; and the outbox
 * outlives a restart, a repeated attempt carrying the same `jti`.
 *
 * Waits are bounded by a deadline that fails the test (a lost logout), never a timing assertion.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKCHANNEL_LOGOUT_EVENT, routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, tempDir, testServer, type AdminClient, type Fixture } from './_support.ts';

/** A back-channel logout endpoint per the spec: records each POST's logout_token; answers `status()`. */
class Receiver {
  readonly tokens: string[] = [];
  status = 200;
  #server: Server | undefined;
  constructor(readonly port = 0) {}
  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        if (req.method === 'POST' && req.headers['content-type'] === 'application/x-www-form-urlencoded' && form.has('logout_token')) this.tokens.push(form.get('logout_token')!);
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((r) => this.#server!.listen(this.port, '127.0.0.1', r));
    return this;
  }
  get url(): string {
    return `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}/backchannel-logout`;
  }
  async stop(): Promise<void> {
    await new Promise((r) => this.#server?.close(r));
  }
  /** The tokens about `sub`, once `count` have come; a deadline that fails the test bounds the wait. */
  async about(sub: string, count = 1, deadlineMs = 20_000): Promise<JWTPayload[]> {
    const until = Date.now() + deadlineMs;
    for (;;) {
      const found = this.tokens.map((t) => decodeJwt(t)).filter((c) => c.sub === sub);
      if (found.length >= count) return found;
      if (Date.now() > until) throw new Error(`no logout token about ${sub} within ${deadlineMs / 1000} s (got ${this.tokens.length} in all)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** §2.6's checks, as a relying party makes them; returns the verified claims and header. */
async function verifyLogoutToken(token: string, issuer: string, clientId: string) {
  const jwks = (await (await localhostFetch(`${issuer}.well-known/jwks.json`)).json()) as JSONWebKeySet;
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), { issuer, audience: clientId, typ: 'logout+jwt', requiredClaims: ['iat', 'exp', 'jti'] });
  expect(payload.events).toEqual({ [BACKCHANNEL_LOGOUT_EVENT]: {} });
  expect(payload).not.toHaveProperty('nonce');
  expect(typeof payload.sub === 'string' || typeof payload.sid === 'string').toBe(true);
  return { payload, protectedHeader };
}

describe('back-channel logout', () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;
  let f: Fixture;
  let receiver: Receiver;
  const dir = tempDir();

  const putWeb = (uri: string | undefined) =>
    admin.put(routePath('getApplication', { tenant: 'acme', application: 'web' }), {
      kind: 'web', displayName: 'Portal', clientId: f.web.clientId, clientSecret: f.web.clientSecret, redirectUris: [f.web.redirectUri],
      scopes: ['openid', 'profile', 'email', 'offline', 'admin'], audience: [f.api], ...(uri === undefined ? {} : { backchannelLogoutUri: uri }),
    });

  /** Signs `email` in to the web client; returns its ID token's claims and the browser (which holds the session at the server). */
  async function signIn(email: string) {
    const rp = await relyingParty(server.issuer('acme'), f.web.clientId, f.web.clientSecret);
    const browser = new Browser();
    const flow = await authorize(rp, browser, f.web.redirectUri, { email, password: PASSWORD }, { scope: 'openid offline' });
    const tokens = await oidc.authorizationCodeGrant(rp, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
    return { claims: tokens.claims()!, idToken: tokens.id_token!, browser };
  }

  beforeAll(async () => {
    receiver = await new Receiver().start();
    server = await testServer({ dataDir: dir.path, webhooks: { retrySeconds: [1, 1, 1] } });
    admin = await adminClient(server);
    f = await fixtureTenant(admin, 'acme');
    await putWeb(receiver.url);
  });
  afterAll(async () => {
    await server?.dispose();
    await receiver?.stop();
    dir.remove();
  });

  it('registers the URI as client metadata: discovery says so, and ID tokens carry the session id', async () => {
    const discovery = await (await localhostFetch(`${server.issuer('acme')}.well-known/openid-configuration`)).json();
    expect(discovery).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
    const { claims } = await signIn(f.users.carol.email);
    expect(claims.sid).toEqual(expect.any(String));
    // The same rule as redirect URIs: plain http only on loopback.
    const refused = await admin.call('PUT', routePath('getApplication', { tenant: 'acme', application: 'web' }), {
      kind: 'web', clientId: f.web.clientId, redirectUris: [f.web.redirectUri], backchannelLogoutUri: 'http://portal.example.com/backchannel-logout',
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('backchannelLogoutUri');
  });

  it('removing an assignment sends a logout token for that user, which verifies', async () => {
    await signIn(f.users.alice.email);
    await admin.typed.remove('deleteAssignment', { tenant: 'acme', application: 'web', userId: f.users.alice.id });
    const [claims] = await receiver.about(f.users.alice.id);
    const token = receiver.tokens.find((t) => decodeJwt(t).jti === claims!.jti)!;
    const { payload, protectedHeader } = await verifyLogoutToken(token, server.issuer('acme'), f.web.clientId);
    expect(protectedHeader.typ).toBe('logout+jwt');
    // A revocation ends every session of the user: it names no session.
    expect(payload).not.toHaveProperty('sid');
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
  });

  it('signing out at the server sends a logout token naming that session (sid)', async () => {
    const { claims, idToken, browser } = await signIn(f.users.carol.email);
    const before = receiver.tokens.length;
    const end = `${server.issuer('acme')}session/end?${new URLSearchParams({ id_token_hint: idToken, client_id: f.web.clientId })}`;
    const confirm = await browser.follow(end, 'never:');
    const done = await browser.submit(confirm.url, confirm.html!, '/session/end/confirm', { logout: 'yes' }, 'never:');
    expect(done.response?.status).toBeLessThan(400);
    const tokens = await receiver.about(f.users.carol.id, 1);
    const mine = tokens.find((t) => t.sid === claims.sid);
    expect(mine, `a logout token with sid ${String(claims.sid)} among ${receiver.tokens.length - before} new`).toBeDefined();
    await verifyLogoutToken(receiver.tokens.find((t) => decodeJwt(t).jti === mine!.jti)!, server.issuer('acme'), f.web.clientId);
  });

  it('disabling a user sends a logout token for them', async () => {
    await admin.put(routePath('getUser', { tenant: 'acme', userId: f.users.bob.id }), { email: f.users.bob.email, displayName: 'bob', scopes: [], disabled: true });
    await receiver.about(f.users.bob.id);
  });

  it('deleting a group sends a logout token to each member it leaves without access, and to no one else', async () => {
    await admin.put(routePath('getUser', { tenant: 'acme', userId: 'u-dan' }), { email: 'dan@acme.test' });
    await admin.put(routePath('putGroup', { tenant: 'acme', group: 'ops' }), { displayName: 'Ops', members: ['u-dan', f.users.carol.id] });
    await admin.put(routePath('putGroupAssignment', { tenant: 'acme', application: 'web', group: 'ops' }), {});
    const carolBefore = receiver.tokens.filter((t) => decodeJwt(t).sub === f.users.carol.id).length;
    await admin.call('DELETE', routePath('deleteGroup', { tenant: 'acme', group: 'ops' }));
    // dan reached the portal only through ops; carol keeps her own assignment. (The event log is
    // read in order: once dan's token is here, carol's would have been sent with it.)
    const [dan] = await receiver.about('u-dan');
    await verifyLogoutToken(receiver.tokens.find((t) => decodeJwt(t).jti === dan!.jti)!, server.issuer('acme'), f.web.clientId);
    expect(receiver.tokens.filter((t) => decodeJwt(t).sub === f.users.carol.id)).toHaveLength(carolBefore);
  });

  it('a logout the receiver refused is retried after a restart, with the same jti', async () => {
    receiver.status = 503;
    const seen = receiver.tokens.length;
    await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'web', userId: f.users.alice.id }), {});
    await admin.typed.remove('deleteAssignment', { tenant: 'acme', application: 'web', userId: f.users.alice.id });
    // The first attempt reaches the receiver, which refuses it; then the server goes.
    const until = Date.now() + 20_000;
    while (receiver.tokens.length === seen) {
      if (Date.now() > until) throw new Error('no attempt within 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const refused = decodeJwt(receiver.tokens[seen]!);
    await server.close();
    receiver.status = 200;
    server = await testServer({ dataDir: dir.path, webhooks: { retrySeconds: [1, 1, 1] } });
    admin = await adminClient(server);
    const again = await receiver.about(f.users.alice.id, 3);
    expect(again.filter((c) => c.jti === refused.jti).length).toBeGreaterThanOrEqual(2);
  });

  it('removing the application sends its signed-in users a logout token', async () => {
    await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'web', userId: f.users.alice.id }), {});
    await signIn(f.users.alice.email);
    const before = (await receiver.about(f.users.alice.id)).length;
    await admin.typed.remove('deleteApplication', { tenant: 'acme', application: 'web' });
    const all = await receiver.about(f.users.alice.id, before + 1);
    expect(all.at(-1)!.aud).toBe(f.web.clientId);
  });
});
