/**
 * The admin API over real HTTP with real tokens from the system tenant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { routePath } from '../../src/contract/index.ts';
import { jwksUrl } from '../../src/contract/index.ts';
import {
  Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, testServer, type AdminClient,
} from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
});

/** client_credentials at a tenant's token endpoint, raw, so tests can vary every parameter. */
async function clientCredentials(tenant: string, clientId: string, secret: string, params: Record<string, string>) {
  const res = await localhostFetch(`${server.issuer(tenant)}token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...params }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

describe('authentication', () => {
  it('no token → 401 with a Bearer challenge', async () => {
    const r = await admin.call('GET', '/admin/v1/tenants', undefined, '');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(r.body).toEqual({ error: 'invalid_token', message: 'a bearer access token is required', path: '' });
  });

  it('a garbage token → 401', async () => {
    const r = await admin.call('GET', '/admin/v1/tenants', undefined, 'not.a.jwt');
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('invalid_token');
  });

  it('a system-tenant token without `admin` in scp → 403', async () => {
    const { clientId, clientSecret, resource } = server.adminCredentials;
    const t = await clientCredentials('system', clientId, clientSecret, { resource });
    expect(t.status).toBe(200);
    const r = await admin.call('GET', '/admin/v1/tenants', undefined, t.body.access_token);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: 'insufficient_scope', path: '' });
  });

  it("another tenant's token, even with `admin` in scp, → 401; so is a tampered signature", async () => {
    const f = await fixtureTenant(admin, 'authz');
    const config = await relyingParty(server.issuer('authz'), f.web.clientId, f.web.clientSecret);
    const { callback, verifier, state } = await authorize(config, new Browser(), f.web.redirectUri, { email: f.users.alice.email, password: PASSWORD }, {
      scope: 'openid admin',
    });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(decodeJwt(tokens.access_token).scp).toContain('admin');
    const r = await admin.call('GET', '/admin/v1/tenants', undefined, tokens.access_token);
    expect(r.status).toBe(401);
    // The genuine token was just verified (and its verification kept): its claims under another signature are not.
    expect((await admin.call('GET', '/admin/v1/tenants')).status).toBe(200);
    const [h, p] = admin.token.split('.');
    expect((await admin.call('GET', '/admin/v1/tenants', undefined, `${h}.${p}.AAAA`)).status).toBe(401);
  });

  it('the OpenAPI document is public and generated from the schemas', async () => {
    const r = await admin.call('GET', '/admin/v1/openapi.json', undefined, '');
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe('3.1.0');
    expect(Object.keys(r.body.paths)).toContain('/tenants/{tenant}/applications/{application}/assignments/{userId}');
    expect(r.body.components.schemas.ApplicationBody.oneOf ?? r.body.components.schemas.ApplicationBody.anyOf).toHaveLength(3);
    expect(r.body.components.schemas.UserBody.properties).toHaveProperty('initialPassword');
  });
});

describe('tenants', () => {
  it('PUT creates, repeats as unchanged, updates with the changed fields; GET, list, DELETE', async () => {
    const path = routePath('getTenant', { tenant: 't1' });
    const body = { displayName: 'T One', scopes: [{ name: 'reports' }], managedBy: 'idforge' };
    const created = await admin.call('PUT', path, body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ outcome: 'created', resource: { name: 't1', displayName: 'T One' } });
    const again = await admin.call('PUT', path, body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ outcome: 'unchanged', changes: [] });
    const changed = await admin.call('PUT', path, { ...body, displayName: 'T 1' });
    expect(changed.body).toMatchObject({ outcome: 'updated', changes: ['displayName'] });
    const got = await admin.call('GET', path);
    expect(got.body).toMatchObject({ name: 't1', displayName: 'T 1', scopes: [{ name: 'reports' }], managedBy: 'idforge' });
    const del = await admin.call('DELETE', path);
    expect(del.status).toBe(204);
    expect((await admin.call('GET', path)).status).toBe(404);
    expect((await admin.call('DELETE', path)).status).toBe(404);
  });

  it('lists with cursor pagination and hides the system tenant', async () => {
    for (const t of ['pa', 'pb', 'pc']) await admin.put(routePath('getTenant', { tenant: t }), { displayName: t });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: { body: { items: { name: string }[]; nextCursor: string | null } } =
        await admin.call('GET', `/admin/v1/tenants?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      const page = r.body.items; // at most `limit` entries per page
      expect(page.length).toBeLessThanOrEqual(2);
      seen.push(...page.map((i) => i.name));
      cursor = r.body.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(expect.arrayContaining(['pa', 'pb', 'pc']));
    expect(seen).not.toContain('system');
    expect(new Set(seen).size).toBe(seen.length);
    const bad = await admin.call('GET', '/admin/v1/tenants?cursor=%%%');
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('query.cursor');
  });

  it('dryRun reports without writing', async () => {
    const r = await admin.call('PUT', `${routePath('getTenant', { tenant: 'dry' })}?dryRun=true`, { displayName: 'Dry' });
    expect(r.body.outcome).toBe('created');
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'dry' }))).status).toBe(404);
  });

  it('the system tenant is reserved', async () => {
    const r = await admin.call('PUT', routePath('getTenant', { tenant: 'system' }), { displayName: 'mine now' });
    expect(r.status).toBe(403);
  });
});

describe('validation', () => {
  it('invalid bodies → 400 naming the problem path', async () => {
    await admin.put(routePath('getTenant', { tenant: 'v' }), { displayName: 'V' });
    const r = await admin.call('PUT', routePath('getApplication', { tenant: 'v', application: 'app' }), { kind: 'web', clientId: 'c', redirectUris: ['not a url'] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: 'invalid_request', path: 'redirectUris[0]' });
    expect(r.body.message).toMatch(/redirectUris\[0\]/);
    const extra = await admin.call('PUT', routePath('getTenant', { tenant: 'v' }), { displayName: 'V', colour: 'red' });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toMatch(/colour/);
    const json = await admin.call('PUT', routePath('getTenant', { tenant: 'v' }), '{not json');
    expect(json.status).toBe(400);
    expect(json.body).toEqual({ error: 'invalid_request', message: 'the request body is not valid JSON', path: '' });
    const label = await admin.call('PUT', routePath('getTenant', { tenant: 'Not_A_Label' }), { displayName: 'x' });
    expect(label.status).toBe(400);
    expect(label.body.path).toBe('params.tenant');
    const aud = await admin.call('PUT', routePath('getApplication', { tenant: 'v', application: 'app' }), {
      kind: 'spa', clientId: 'c', redirectUris: ['https://spa.test'], audience: ['https://nowhere.test'],
    });
    expect(aud.status).toBe(400);
    expect(aud.body.path).toBe('audience[0]');
    const scope = await admin.call('PUT', routePath('getApplication', { tenant: 'v', application: 'app' }), {
      kind: 'spa', clientId: 'c', redirectUris: ['https://spa.test'], scopes: ['openid', 'undefined-scope'],
    });
    expect(scope.status).toBe(400);
    expect(scope.body.path).toBe('scopes[1]');
  });

  it('unknown routes → JSON 404, never a stack trace', async () => {
    const r = await admin.call('GET', '/admin/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
    expect(JSON.stringify(r.body)).not.toMatch(/at .*\.ts/);
  });
});

describe('applications, users, assignments', () => {
  it('returns a server-made secret once, never on GET; rotation replaces it', async () => {
    await admin.put(routePath('getTenant', { tenant: 'apps' }), { displayName: 'Apps' });
    const path = routePath('getApplication', { tenant: 'apps', application: 'portal' });
    const body = { kind: 'web', clientId: 'portal', redirectUris: ['https://portal.test/cb'] };
    const created = await admin.call('PUT', path, body);
    expect(created.status).toBe(201);
    const secret = created.body.clientSecret as string;
    expect(secret.length).toBeGreaterThanOrEqual(43);
    const again = await admin.call('PUT', path, body);
    expect(again.body.outcome).toBe('unchanged');
    expect(again.body.clientSecret).toBeUndefined();
    const got = await admin.call('GET', path);
    expect(JSON.stringify(got.body)).not.toContain(secret);
    expect(got.body).toMatchObject({ name: 'portal', kind: 'web', clientId: 'portal' });

    // The token endpoint tells a wrong secret (401 invalid_client) from a right one with a bad code.
    const tokenWith = async (s: string) =>
      (await localhostFetch(`${server.issuer('apps')}token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`portal:${s}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=authorization_code&code=nope&redirect_uri=http%3A%2F%2Fportal.test%2Fcb',
      })).json();
    expect(await tokenWith(secret)).toMatchObject({ error: 'invalid_grant' });
    const rotated = await admin.call('POST', `${path}/secret/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.clientId).toBe('portal');
    expect(await tokenWith(secret)).toMatchObject({ error: 'invalid_client' });
    expect(await tokenWith(rotated.body.clientSecret)).toMatchObject({ error: 'invalid_grant' });

    // A given secret that differs from the stored one is a change; the same one is not.
    const given = { ...body, clientSecret: 'given-secret-0123456789abcdefghijklmnop' };
    expect((await admin.call('PUT', path, given)).body).toMatchObject({ outcome: 'updated', changes: ['clientSecret'] });
    expect((await admin.call('PUT', path, given)).body).toMatchObject({ outcome: 'unchanged' });

    const list = await admin.call('GET', '/admin/v1/tenants/apps/applications');
    expect(list.body.items.map((a: { name: string }) => a.name)).toEqual(['portal']);
    expect((await admin.call('DELETE', path)).status).toBe(204);
    expect((await admin.call('GET', path)).status).toBe(404);
  });

  it('users: initial password only when none yet, unique email, list, delete; assignments likewise', async () => {
    await fixtureTenant(admin, 'people');
    const path = routePath('getUser', { tenant: 'people', userId: 'u-dave' });
    const created = await admin.call('PUT', path, { email: 'dave@people.test', initialPassword: 'first password' });
    expect(created.status).toBe(201);
    expect(created.body.resource).toMatchObject({ id: 'u-dave', hasPassword: true });
    expect(JSON.stringify(created.body)).not.toContain('first password');
    const again = await admin.call('PUT', path, { email: 'dave@people.test', initialPassword: 'another password' });
    expect(again.body.outcome).toBe('unchanged');
    const clash = await admin.call('PUT', routePath('getUser', { tenant: 'people', userId: 'u-eve' }), { email: 'dave@people.test' });
    expect(clash.status).toBe(409);
    expect(clash.body.path).toBe('email');
    const users = await admin.call('GET', '/admin/v1/tenants/people/users?limit=2');
    expect(users.body.items).toHaveLength(2);
    expect(users.body.nextCursor).toBeTypeOf('string');

    const a = routePath('getAssignment', { tenant: 'people', application: 'web', userId: 'u-dave' });
    expect((await admin.call('GET', a)).status).toBe(404);
    expect((await admin.call('PUT', a, { managedBy: 'idforge' })).status).toBe(201);
    expect((await admin.call('PUT', a, { managedBy: 'idforge' })).body.outcome).toBe('unchanged');
    expect((await admin.call('GET', a)).body).toMatchObject({ application: 'web', userId: 'u-dave', managedBy: 'idforge' });
    const assigned = await admin.call('GET', '/admin/v1/tenants/people/applications/web/assignments');
    expect(assigned.body.items.map((x: { userId: string }) => x.userId)).toEqual(['u-alice', 'u-carol', 'u-dave']);
    expect((await admin.call('PUT', routePath('getAssignment', { tenant: 'people', application: 'web', userId: 'u-nobody' }), {})).status).toBe(404);
    expect((await admin.call('PUT', routePath('getAssignment', { tenant: 'people', application: 'api', userId: 'u-dave' }), {})).status).toBe(400);
    expect((await admin.call('DELETE', a)).status).toBe(204);
    expect((await admin.call('DELETE', path)).status).toBe(204);
    expect((await admin.call('GET', path)).status).toBe(404);
  });
});

describe('signing keys', () => {
  it('rotation: the next key was published before it signs; the old key stays published', async () => {
    await admin.put(routePath('getTenant', { tenant: 'keys' }), { displayName: 'Keys' });
    await admin.put(routePath('getApplication', { tenant: 'keys', application: 'api' }), { kind: 'api', identifier: 'https://api.keys.test', scopes: [] });
    const jwks = async (t: string) => ((await (await localhostFetch(jwksUrl(server.address, t))).json()) as JSONWebKeySet);
    const before = await admin.call('GET', '/admin/v1/tenants/keys/keys');
    const active = before.body.items.find((k: { state: string }) => k.state === 'active').kid as string;
    const next = before.body.items.find((k: { state: string }) => k.state === 'next').kid as string;
    expect((await jwks('keys')).keys.map((k) => k.kid)).toEqual([active, next]);

    const rotated = await admin.call('POST', '/admin/v1/tenants/keys/keys/rotate', {});
    expect(rotated.status).toBe(200);
    const states = Object.fromEntries(rotated.body.items.map((k: { kid: string; state: string }) => [k.kid, k.state]));
    expect(states[next]).toBe('active');
    expect(states[active]).toBe('retired');
    const published = (await jwks('keys')).keys.map((k) => k.kid);
    expect(published).toContain(active);
    expect(published[0]).toBe(next);
    expect(published).toHaveLength(3);

    // ES256 can be chosen: it is published as `next` first, and signs after the next rotation.
    const es = await admin.call('POST', '/admin/v1/tenants/keys/keys/rotate', { alg: 'ES256' });
    const esNext = es.body.items.find((k: { state: string }) => k.state === 'next');
    expect(esNext.alg).toBe('ES256');
    const bad = await admin.call('POST', '/admin/v1/tenants/keys/keys/rotate', { alg: 'HS256' });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('alg');
  });

  it('tokens are signed by the active key and still verify after a rotation', async () => {
    const { clientId, clientSecret, resource } = server.adminCredentials;
    const t = await clientCredentials('system', clientId, clientSecret, { resource, scope: 'admin' });
    const kid = decodeProtectedHeader(t.body.access_token!).kid;
    const keys = createLocalJWKSet((await (await localhostFetch(jwksUrl(server.address, 'system'))).json()) as JSONWebKeySet);
    const { payload } = await jwtVerify(t.body.access_token!, keys, { issuer: server.issuer('system'), audience: resource });
    expect(payload.scp).toEqual(['admin']);
    expect(payload.client_id).toBe(clientId);
    const listed = (await (await localhostFetch(jwksUrl(server.address, 'system'))).json()) as JSONWebKeySet;
    expect(listed.keys[0]!.kid).toBe(kid);
  });
  it('ES256 tenants sign ES256 JWS (r||s) that verify against their published keys, which carry no private part', async () => {
    const es = await testServer({ keyAlg: 'ES256' });
    try {
      const { clientId, clientSecret, resource } = es.adminCredentials;
      const res = await localhostFetch(`${es.issuer('system')}token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'admin' }).toString(),
      });
      expect(res.status).toBe(200);
      const token = ((await res.json()) as { access_token: string }).access_token;
      const header = decodeProtectedHeader(token);
      expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
      // JOSE's ECDSA encoding: 64 bytes, not DER.
      expect(Buffer.from(token.split('.')[2]!, 'base64url')).toHaveLength(64);
      const published = (await (await localhostFetch(jwksUrl(es.address, 'system'))).json()) as JSONWebKeySet;
      expect(published.keys).toHaveLength(2);
      for (const k of published.keys) {
        expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
        expect(Object.keys(k).filter((p) => ['d', 'p', 'q', 'dp', 'dq', 'qi'].includes(p))).toEqual([]);
      }
      expect(published.keys[0]!.kid).toBe(header.kid);
      const { payload } = await jwtVerify(token, createLocalJWKSet(published), { issuer: es.issuer('system'), audience: resource, typ: 'at+jwt' });
      expect(payload.scp).toEqual(['admin']);
    } finally {
      await es.dispose();
    }
  });
});
