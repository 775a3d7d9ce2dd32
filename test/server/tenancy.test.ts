/**
 * Host → tenant, and the bounded cache of provider instances.
 */
import { describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { discoveryUrl, jwksUrl } from '../../src/contract/index.ts';
import { resolveHost } from '../../src/server/tenancy.ts';
import { adminClient, localhostFetch, testServer } from './_support.ts';

describe('resolveHost', () => {
  it.each([
    ['localhost:9080', 'localhost', { kind: 'base' }],
    ['localhost', 'localhost', { kind: 'base' }],
    ['acme.localhost:9080', 'localhost', { kind: 'tenant', tenant: 'acme' }],
    ['ACME.id.example.com', 'id.example.com', { kind: 'tenant', tenant: 'acme' }],
    ['acme.id.example.com.', 'id.example.com', { kind: 'tenant', tenant: 'acme' }],
    ['a.b.localhost', 'localhost', { kind: 'unknown', host: 'a.b.localhost' }],
    ['evil.com', 'localhost', { kind: 'unknown', host: 'evil.com' }],
    ['notlocalhost', 'localhost', { kind: 'unknown', host: 'notlocalhost' }],
    [undefined, 'localhost', { kind: 'unknown', host: '' }],
  ])('%s with base %s', (host, base, expected) => {
    expect(resolveHost(host, base)).toEqual(expected);
  });
});

describe('provider cache', () => {
  it('keeps at most the configured number of live providers; evicted tenants still answer', async () => {
    const server = await testServer({ providerCacheSize: 2 });
    try {
      const admin = await adminClient(server);
      for (const t of ['one', 'two', 'three']) await admin.put(routePath('getTenant', { tenant: t }), { displayName: t });
      for (const t of ['one', 'two', 'three']) expect((await localhostFetch(discoveryUrl(server.address, t))).status).toBe(200);
      expect(server.providerCount()).toBeLessThanOrEqual(2);
      const again = await localhostFetch(discoveryUrl(server.address, 'one'));
      expect(again.status).toBe(200);
      expect(((await again.json()) as { issuer: string }).issuer).toBe(server.issuer('one'));
    } finally {
      await server.dispose();
    }
  });

  it('answers hosts outside the base domain with a clear 404', async () => {
    const server = await testServer();
    try {
      const res = await localhostFetch(`http://127.0.0.1:${server.port}/oauth2/.well-known/openid-configuration`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'unknown_host' });
    } finally {
      await server.dispose();
    }
  });
});

describe('tenant creation', () => {
  it('never shows a tenant without its signing keys: discovery and JWKS answer 404 or 200, never 500', async () => {
    const server = await testServer();
    try {
      const admin = await adminClient(server);
      const statuses = new Set<number>();
      let creating = true;
      // Poll while the tenant is made (RSA key generation takes a while): before the fix the
      // tenant row was visible before its keys and discovery failed with 500.
      const poll = (async () => {
        while (creating) {
          statuses.add((await localhostFetch(discoveryUrl(server.address, 'fresh'))).status);
          statuses.add((await localhostFetch(jwksUrl(server.address, 'fresh'))).status);
        }
      })();
      await admin.put(routePath('getTenant', { tenant: 'fresh' }), { displayName: 'Fresh' });
      creating = false;
      await poll;
      statuses.add((await localhostFetch(jwksUrl(server.address, 'fresh'))).status);
      expect([...statuses].filter((s) => s !== 404 && s !== 200)).toEqual([]);
      expect(statuses.has(200)).toBe(true);
      const jwks = (await (await localhostFetch(jwksUrl(server.address, 'fresh'))).json()) as { keys: unknown[] };
      expect(jwks.keys).toHaveLength(2); // the signing key and the next one, published before it signs
    } finally {
      await server.dispose();
    }
  });
});
