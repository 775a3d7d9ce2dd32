/**
 * The API template reacts to pushed revocation: an API scaffolded by `idforge compile` and `idforge
 * scaffold` (templates/api, its api-config.json naming the tenant's SSF discovery) and started as
 * its README says, with the receiver token of a poll stream in SSF_RECEIVER_TOKEN, refuses a
 * person's still-unexpired access token as soon as their assignment is removed through the admin
 * API, keeps taking another person's, and takes the person's new token once they are assigned again.
 * The seconds from the unassignment to the first refusal are printed (a figure, not an assertion).
 */
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { adminClient, authorize, Browser, fixtureTenant, localhostFetch, PASSWORD, relyingParty, tempDir, testServer, type AdminClient, type Fixture } from '../server/_support.ts';
import { REPO_ROOT, freePort, runToCompletion, startProcess, stopAll, waitForPort } from '../support/processes.ts';

const IDFORGE = join(REPO_ROOT, 'bin', 'idforge.js');
const POLL = 'urn:ietf:rfc:8936';
const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let acme: Fixture;
const dir = tempDir('idforge-ssf-api-');
let api = '';

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  acme = await fixtureTenant(admin, 'acme');
  const apiPort = await freePort();

  // The model of the API the fixture's clients call, compiled and scaffolded as a developer would.
  const model = join(dir.path, 'model.yaml');
  writeFileSync(model, `server:
  baseDomain: localhost
  port: ${server.port}
tenants:
  - name: acme
    displayName: acme Inc.
    scopes:
      - name: admin
        description: administer
    applications:
      - name: orders-api
        kind: api
        audience: ${acme.api}
        origin: http://127.0.0.1:${apiPort}
        publicRoutes: [/]
        routes:
          - path: /whoami
          - path: /admin
            scopes: [admin]
`);
  const run = (name: string, ...args: string[]) => runToCompletion(`ssf-api-${name}`, process.execPath, [IDFORGE, ...args], { cwd: dir.path, env: { NO_COLOR: '1' } });
  await run('compile', 'compile', model, '--out', join(dir.path, 'compiled'));
  const appDir = join(dir.path, 'app');
  await run('scaffold', 'scaffold', 'acme/orders-api', '--from', join(dir.path, 'compiled'), '--out', appDir);
  const config = JSON.parse(readFileSync(join(appDir, 'api-config.json'), 'utf8')) as { ssf_configuration_url: string };
  expect(config.ssf_configuration_url).toBe(`${new URL(server.issuer('acme')).origin}/.well-known/ssf-configuration`);

  // The operator makes the API's stream (poll: the API may sit behind NAT) and hands it the receiver token.
  const made = await localhostFetch(`${new URL(server.issuer('acme')).origin}/ssf/streams`, {
    method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ delivery: { method: POLL }, events_requested: [SESSION_REVOKED], aud: acme.api, description: 'orders-api' }),
  });
  expect(made.status).toBe(201);
  const { receiver_token: token } = (await made.json()) as { receiver_token: string };

  if (!existsSync(join(appDir, 'node_modules'))) symlinkSync(join(REPO_ROOT, 'node_modules'), join(appDir, 'node_modules'), 'dir');
  const proc = startProcess('ssf-api-orders-api', process.execPath, ['--env-file=api.env', 'server.js'], { cwd: appDir, env: { SSF_RECEIVER_TOKEN: token } });
  await waitForPort(apiPort, { process: proc });
  api = `http://127.0.0.1:${apiPort}`;
  // Receiving once it says so (discovery, its stream, the first poll under way).
  for (const end = Date.now() + 30_000; !proc.output().includes('receiving shared signals'); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() > end) throw new Error(`the API never started receiving:\n${proc.output()}`);
  }
}, 180_000);
afterAll(async () => {
  await stopAll();
  await server?.dispose();
  dir.remove();
});

async function accessToken(user: { email: string }): Promise<string> {
  const rp = await relyingParty(server.issuer('acme'), acme.web.clientId, acme.web.clientSecret);
  const flow = await authorize(rp, new Browser(), acme.web.redirectUri, { email: user.email, password: PASSWORD }, { scope: 'openid admin' });
  return (await oidc.authorizationCodeGrant(rp, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).access_token;
}

const call = async (path: string, token?: string) => {
  const res = await fetch(`${api}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '', body: (await res.json()) as Record<string, unknown> };
};

it('refuses a removed person\'s unexpired token at once, keeps another\'s, and takes the new token after re-assignment', { timeout: 120_000 }, async () => {
  const alice = await accessToken(acme.users.alice);
  const carol = await accessToken(acme.users.carol);
  expect((await call('/whoami', alice)).body).toMatchObject({ sub: acme.users.alice.id });
  expect((await call('/admin', alice)).status).toBe(200);

  const removed = performance.now();
  await admin.typed.call('deleteAssignment', { tenant: 'acme', application: 'web', userId: acme.users.alice.id }, {});
  let refused: Awaited<ReturnType<typeof call>> | undefined;
  for (const end = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
    const r = await call('/whoami', alice);
    if (r.status !== 200) {
      refused = r;
      break;
    }
    if (Date.now() > end) throw new Error('the API still took the token 30 s after the unassignment');
  }
  const seconds = (performance.now() - removed) / 1000;
  console.log(`API template: unassignment to refusal ${seconds.toFixed(2)} s (SSF poll)`);

  expect(refused.status).toBe(401);
  expect(refused.challenge).toMatch(/^Bearer realm="[^"]+", error="invalid_token", error_description="the session was revoked"$/);
  expect(refused.body).toEqual({ message: 'The access token is invalid.' });
  // Still a token the API would otherwise take: signed by the tenant, unexpired.
  const { exp } = JSON.parse(Buffer.from(alice.split('.')[1]!, 'base64url').toString()) as { exp: number };
  expect(exp).toBeGreaterThan(Date.now() / 1000);
  expect((await call('/admin', alice)).status).toBe(401);
  // Everyone else's access, and the contract's other answers, are as before.
  expect((await call('/whoami', carol)).body).toMatchObject({ sub: acme.users.carol.id });
  expect((await call('/admin', carol)).status).toBe(403);
  expect((await call('/')).status).toBe(200);
  expect((await call('/whoami')).status).toBe(401);

  // Assigned again: a token issued after the revocation's second is taken.
  await admin.put(routePath('getAssignment', { tenant: 'acme', application: 'web', userId: acme.users.alice.id }), {});
  const revokedAt = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) <= revokedAt) await new Promise((r) => setTimeout(r, 50));
  const again = await accessToken(acme.users.alice);
  expect((await call('/whoami', again)).body).toMatchObject({ sub: acme.users.alice.id });
});
