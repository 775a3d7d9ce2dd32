/**
 * One rule, both doors: the redirect URIs that the model refuses are refused by the admin API too,
 * for every client kind, with the same message and a path (RFC 9700 §2.1, §4.1.1). Before the
 * contract carried the rule, the admin API checked `z.url()` only and stored every one of these.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { validateSources } from '../../src/schema/index.ts';
import { adminClient, testServer, type AdminClient } from './_support.ts';

const REFUSED = [
  'javascript:alert(1)',
  'data:text/html,hi',
  'https://*.example.com/cb',
  'https://a.example.com/cb#frag',
  'https://user:pw@a.example.com/cb',
  'http://evil.example.com/cb',
  'https://a.example.com/../cb',
  'https://a.example.com/x/./cb',
  'portal.localhost:3000/cb',
] as const;

const KINDS = ['web', 'proxy', 'spa'] as const;

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  await admin.put(routePath('getTenant', { tenant: 'rules' }), { displayName: 'Rules' });
});
afterAll(async () => {
  await server?.dispose();
});

/** The model's message for an extra redirect URI of this kind (the first problem at that path). */
function modelMessage(kind: (typeof KINDS)[number], uri: string): string {
  const extra = kind === 'proxy' ? '        upstream: http://127.0.0.1:4181\n' : '';
  const r = validateSources([{
    file: 'm.yaml',
    content: `tenants:\n  - name: rules\n    displayName: Rules\n    applications:\n      - name: app\n        kind: ${kind}\n        origin: https://app.example.com\n${extra}        redirectUris: [${JSON.stringify(uri)}]\n`,
  }]);
  expect(r.ok, `the model accepted ${uri} for ${kind}`).toBe(false);
  const problems = r.ok ? [] : r.problems.filter((p) => p.path.join('.') === 'tenants.0.applications.0.redirectUris.0');
  expect(problems.length, `${uri}: ${JSON.stringify(r)}`).toBeGreaterThan(0);
  return problems[0]!.message;
}

describe('redirect URIs: the admin API runs the model rule', () => {
  for (const kind of KINDS) {
    for (const uri of REFUSED) {
      it(`${kind}: refuses ${uri} with 400, the model's message and a path`, async () => {
        const r = await admin.call('PUT', routePath('putApplication', { tenant: 'rules', application: `${kind}-app` }), {
          kind, clientId: `${kind}-app`, redirectUris: [uri], scopes: ['openid'],
        });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('invalid_request');
        expect(r.body.path).toBe('redirectUris[0]');
        const expected = modelMessage(kind, uri);
        expect(r.body.problems.map((p: { message: string }) => p.message)).toContain(expected);
        expect(r.body.message).toContain(r.body.problems[0].message);
        // Nothing was stored.
        expect((await admin.call('GET', routePath('getApplication', { tenant: 'rules', application: `${kind}-app` }))).status).toBe(404);
      });
    }
    it(`${kind}: the same rule holds for post-logout redirect URIs`, async () => {
      const r = await admin.call('PUT', routePath('putApplication', { tenant: 'rules', application: `${kind}-app` }), {
        kind, clientId: `${kind}-app`, redirectUris: ['https://app.example.com/cb'], postLogoutRedirectUris: ['http://evil.example.com/'], scopes: ['openid'],
      });
      expect(r.status).toBe(400);
      expect(r.body.path).toBe('postLogoutRedirectUris[0]');
      expect(r.body.problems[0].code).toBe('insecure-url');
    });
  }

  for (const kind of KINDS) {
    it(`${kind}: the tenant batch refuses every one of them too, each at its entry's body path with the model's message`, async () => {
      const r = await admin.call('POST', routePath('applyTenantBatch', { tenant: 'rules' }), {
        applications: REFUSED.map((uri, i) => ({ name: `${kind}-${i}`, body: { kind, clientId: `${kind}-${i}`, redirectUris: [uri], scopes: ['openid'] } })),
      });
      expect(r.status).toBe(400);
      for (const [i, uri] of REFUSED.entries()) {
        const at = r.body.problems.filter((p: { path: string }) => p.path === `applications[${i}].body.redirectUris[0]`).map((p: { message: string }) => p.message);
        expect(at, uri).toContain(modelMessage(kind, uri));
      }
      expect((await admin.call('GET', routePath('getApplication', { tenant: 'rules', application: `${kind}-0` }))).status).toBe(404);
    });
  }

  it('accepts what the rule allows: https anywhere, http on localhost, *.localhost and loopback', async () => {
    for (const [i, uri] of ['https://app.example.com/cb', 'http://localhost:3000/cb', 'http://app.localhost:3000/cb', 'http://127.0.0.1:8080/cb', 'http://[::1]:8080/cb'].entries()) {
      const r = await admin.call('PUT', routePath('putApplication', { tenant: 'rules', application: `ok-${i}` }), {
        kind: 'web', clientId: `ok-${i}`, redirectUris: [uri], scopes: ['openid'],
      });
      expect(r.status, `${uri}: ${JSON.stringify(r.body)}`).toBe(201);
    }
  });
});
