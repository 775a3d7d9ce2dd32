/**
 * An api application that some client names in its audience cannot be deleted or have its
 * identifier changed: every code and refresh request of those clients would then fail with
 * invalid_target. The admin API answers 409 naming the clients; `idforge apply` still removes an
 * api together with its clients, since it deletes clients before the apis they name.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, relyingParty, tempDir, testServer, type AdminClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-api-audience-');

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

describe('admin API', () => {
  it('refuses to delete an api, or change its identifier, while clients name it; the clients keep working', async () => {
    const f = await fixtureTenant(admin, 'acme');
    const api = routePath('getApplication', { tenant: 'acme', application: 'api' });
    const clients = /'spa', 'web'|'web', 'spa'/;

    const del = await admin.call('DELETE', api);
    expect(del.status).toBe(409);
    expect(del.body).toMatchObject({ error: 'conflict', path: 'identifier' });
    expect(del.body.message).toMatch(/^cannot delete api application 'api': its identifier 'https:\/\/api\.acme\.test' is the audience of applications /);
    expect(del.body.message).toMatch(clients);
    expect((await admin.call('DELETE', `${api}?dryRun=true`)).status).toBe(409);

    const rename = await admin.call('PUT', api, { kind: 'api', identifier: 'https://api2.acme.test', scopes: ['admin'] });
    expect(rename.status).toBe(409);
    expect(rename.body).toMatchObject({ error: 'conflict', path: 'identifier' });
    expect(rename.body.message).toMatch(clients);
    expect((await admin.call('GET', api)).body.identifier).toBe(f.api);

    // Still there, so the clients still get tokens for it.
    const web = await relyingParty(server.issuer('acme'), f.web.clientId, f.web.clientSecret);
    const flow = await authorize(web, new Browser(), f.web.redirectUri, { email: f.users.alice.email, password: PASSWORD });
    expect((await oidc.authorizationCodeGrant(web, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).access_token).toBeTypeOf('string');

    // Without clients naming it, it goes.
    for (const c of ['web', 'spa']) expect((await admin.call('DELETE', routePath('getApplication', { tenant: 'acme', application: c }))).status).toBe(204);
    expect((await admin.call('DELETE', api)).status).toBe(204);
  });
});

describe('idforge apply', () => {
  it('removes the example api and the client that names it in one apply (clients first)', async () => {
    const model = join(work.path, 'acme.yaml');
    const original = readFileSync(resolve(import.meta.dirname, '../../examples/acme.yaml'), 'utf8')
      .replace(/^(\s*port:\s*)\d+/m, `$1${server.port}`)
      .replace(/^(\s*- name:\s*)acme$/m, '$1acme-example');
    const withoutApi = original
      .replace(/      # Single-page app.*\n      - name: dashboard\n(?:        .*\n)+/, '')
      .replace(/      # Resource server.*\n      - name: orders-api\n(?:        .*\n)+/, '')
      .replace('      - application: dashboard\n        groups: [staff]\n', '')
      .replaceAll('        audience: [orders-api]\n', '');
    expect(withoutApi).not.toContain('orders-api');
    const run = async (text: string) => {
      writeFileSync(model, text);
      let out = '';
      const io: CliIo = {
        stdout: (t) => { out += t; }, stderr: (t) => { out += t; }, cwd: work.path, color: false,
        env: { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12', IDFORGE_STATE: join(work.path, 'state.json') },
      };
      return { code: await main(['apply', model, '--data-dir', server.dataDir], io), out };
    };
    const first = await run(original);
    expect(first.code, first.out).toBe(0);
    const second = await run(withoutApi);
    expect(second.code, second.out).toBe(0);
    expect(second.out).toContain('- application acme-example/dashboard');
    expect(second.out).toContain('- application acme-example/orders-api');
    expect((await admin.call('GET', routePath('getApplication', { tenant: 'acme-example', application: 'orders-api' }))).status).toBe(404);
  });
});
