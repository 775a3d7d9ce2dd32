/**
 * Groups are assignable, and access follows membership: a user SCIM provisions signs in to an
 * application through a group assigned to it; leaving the group, the group's deletion or the
 * assignment's deletion ends that access and the refresh tokens held there (the artifacts are gone
 * from the database, not only refused), while a member also let in another way keeps both.
 * Then the limits a SCIM token lives under: the guessing defence and its rate.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src/server/storage/sqlite.ts';
import { Browser, adminClient, authorize, fixtureTenant, relyingParty, testServer, type AdminClient, type Fixture } from '../server/_support.ts';
import { GROUP, PATCH_OP, scimClient, scimTenant, scimUser, type ScimClient } from './_support.ts';

const PASSWORD = 'a strong provisioned password';

describe('access through a group assignment', () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;
  let f: Fixture;
  let scim: ScimClient;
  let spa: oidc.Configuration;
  let dana: string;
  let carol: string;

  beforeAll(async () => {
    server = await testServer();
    admin = await adminClient(server);
    f = await fixtureTenant(admin, 'access');
    const made = await admin.typed.call('createScimToken', { tenant: 'access' }, {});
    scim = scimClient(server, 'access', made.token);
    dana = (await scim.call('POST', '/Users', scimUser('dana', 'dana@access.test', { password: PASSWORD }))).body.id;
    carol = f.users.carol.id;
    spa = await relyingParty(server.issuer('access'), f.spa.clientId);
  });
  afterAll(async () => {
    await server?.dispose();
  });

  /** Signs in at the SPA with refresh tokens; the callback URL when denied. */
  async function signIn(email: string, password: string) {
    const flow = await authorize(spa, new Browser(), f.spa.redirectUri, { email, password }, { scope: 'openid offline' });
    if (flow.callback.searchParams.has('error')) return { denied: flow.callback.searchParams.get('error'), pages: flow.pages };
    return { tokens: await oidc.authorizationCodeGrant(spa, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }) };
  }
  const refreshTokensAt = (user: string, clientId: string) => {
    const db = new Database(join(server.dataDir, DATABASE_FILE), { readonly: true });
    try {
      return Number((db.prepare("SELECT count(*) AS n FROM artifacts WHERE tenant = 'access' AND account_id = ? AND client_id = ? AND model = 'RefreshToken'")
        .get(user, clientId) as { n: number }).n);
    } finally {
      db.close();
    }
  };
  async function groupOf(displayName: string, members: string[]): Promise<string> {
    const g = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName, members: members.map((value) => ({ value })) });
    expect(g.status).toBe(201);
    const assigned = await admin.call('PUT', `/admin/v1/tenants/access/applications/spa/group-assignments/${g.body.id}`, {});
    expect(assigned.status).toBe(201);
    return g.body.id;
  }

  it('a user provisioned by SCIM is denied until a group assigned to the application has them; then signs in', async () => {
    const before = await signIn('dana@access.test', PASSWORD);
    expect(before.denied).toBe('access_denied');
    expect((before.pages ?? []).join('\n')).toContain('not assigned');
    await groupOf('Sales', [dana]);
    const after = await signIn('dana@access.test', PASSWORD);
    expect(after.tokens?.claims()?.sub).toBe(dana);
    expect(after.tokens?.refresh_token).toBeTypeOf('string');
  });

  it('leaving the group ends access and the refresh tokens held there; a member also assigned directly keeps both', async () => {
    const g = await groupOf('Leavers', [dana, carol]);
    const d = (await signIn('dana@access.test', PASSWORD)).tokens!;
    const c = (await signIn(f.users.carol.email, 'correct horse battery staple')).tokens!;
    // dana is in Sales too (the previous test): leave both.
    const sales = (await scim.call('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Sales"')}`)).body.Resources[0].id as string;
    await scim.call('PATCH', `/Groups/${sales}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq "${dana}"]` }] });
    expect(refreshTokensAt(dana, f.spa.clientId)).toBeGreaterThan(0);
    const r = await scim.call('PATCH', `/Groups/${g}`, { schemas: [PATCH_OP], Operations: [{ op: 'Remove', path: 'members', value: [{ value: dana }, { value: carol }] }] });
    expect(r.status).toBe(200);
    expect(refreshTokensAt(dana, f.spa.clientId)).toBe(0);
    await expect(oidc.refreshTokenGrant(spa, d.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
    expect((await signIn('dana@access.test', PASSWORD)).denied).toBe('access_denied');
    // carol is assigned to the SPA herself: her refresh token still works.
    expect((await oidc.refreshTokenGrant(spa, c.refresh_token!)).access_token).toBeTypeOf('string');
  });

  it("deleting the group's assignment, or the group, ends its members' access and refresh tokens", async () => {
    for (const end of ['assignment', 'group'] as const) {
      const g = await groupOf(`Ends by ${end}`, [dana]);
      const t = (await signIn('dana@access.test', PASSWORD)).tokens!;
      if (end === 'assignment') expect((await admin.call('DELETE', `/admin/v1/tenants/access/applications/spa/group-assignments/${g}`)).status).toBe(204);
      else expect((await scim.call('DELETE', `/Groups/${g}`)).status).toBe(204);
      expect(refreshTokensAt(dana, f.spa.clientId)).toBe(0);
      await expect(oidc.refreshTokenGrant(spa, t.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
      expect((await signIn('dana@access.test', PASSWORD)).denied).toBe('access_denied');
    }
  });

  it('deactivating the user through SCIM ends their sessions and tokens', async () => {
    await groupOf('Active ones', [dana]);
    const t = (await signIn('dana@access.test', PASSWORD)).tokens!;
    await scim.call('PATCH', `/Users/${dana}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
    await expect(oidc.refreshTokenGrant(spa, t.refresh_token!)).rejects.toHaveProperty('error', 'invalid_grant');
  });

  it('the admin API keeps groups and group assignments too: declaratively, with dry runs, refusing unknown members', async () => {
    const put = await admin.call('PUT', '/admin/v1/tenants/access/groups/admins', { displayName: 'Admins', members: [f.users.bob.id, f.users.alice.id, f.users.bob.id] });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ outcome: 'created', resource: { id: 'admins', displayName: 'Admins', members: [f.users.alice.id, f.users.bob.id] } });
    expect((await admin.call('PUT', '/admin/v1/tenants/access/groups/admins', { displayName: 'Admins', members: [f.users.alice.id, f.users.bob.id] })).body.outcome).toBe('unchanged');
    const dry = await admin.call('PUT', '/admin/v1/tenants/access/groups/admins?dryRun=true', { displayName: 'Admins', members: [f.users.alice.id] });
    expect(dry.body).toMatchObject({ outcome: 'updated', changes: ['members'] });
    expect((await admin.call('GET', '/admin/v1/tenants/access/groups/admins')).body.members).toEqual([f.users.alice.id, f.users.bob.id]);
    const unknown = await admin.call('PUT', '/admin/v1/tenants/access/groups/admins', { displayName: 'Admins', members: ['u-nobody'] });
    expect(unknown.body).toMatchObject({ error: 'invalid_request', path: 'members[0]', message: 'member "u-nobody" is not a user of this tenant' });
    const list = await admin.call('GET', '/admin/v1/tenants/access/groups?limit=500');
    expect(list.body.items.find((g: { id: string }) => g.id === 'admins')).toMatchObject({ displayName: 'Admins', memberCount: 2 });
    expect((await admin.call('PUT', '/admin/v1/tenants/access/applications/api/group-assignments/admins', {})).status).toBe(400);
    expect((await admin.call('PUT', '/admin/v1/tenants/access/applications/web/group-assignments/nobody', {})).status).toBe(404);
    expect((await admin.call('PUT', '/admin/v1/tenants/access/applications/web/group-assignments/admins', {})).status).toBe(201);
    expect((await admin.call('GET', '/admin/v1/tenants/access/applications/web/group-assignments')).body.items).toEqual([
      { application: 'web', group: 'admins', createdAt: expect.any(String) },
    ]);
    // bob, not assigned to the web app himself, now signs in there through the group.
    const web = await relyingParty(server.issuer('access'), f.web.clientId, f.web.clientSecret);
    const flow = await authorize(web, new Browser(), f.web.redirectUri, { email: f.users.bob.email, password: 'correct horse battery staple' });
    expect(flow.callback.searchParams.get('code')).toBeTypeOf('string');
  });
});

describe('limits on a SCIM token', () => {
  it('wrong secrets for a token lock it (the sign-in guessing defence); the right one is then refused too, other tokens are not', async () => {
    const server = await testServer({ login: { lockoutThreshold: 3, backoffBaseMs: 0 } });
    try {
      const admin = await adminClient(server);
      const { token, scim } = await scimTenant(admin, server, 'locks');
      const other = (await admin.typed.call('createScimToken', { tenant: 'locks' }, {})).token;
      const [prefix, id] = token.split('.');
      const guess = scimClient(server, 'locks', `${prefix}.${id}.${'A'.repeat(43)}`);
      expect((await guess.call('GET', '/Users')).status).toBe(401);
      expect((await guess.call('GET', '/Users')).status).toBe(401);
      const locked = await guess.call('GET', '/Users');
      expect(locked.status).toBe(429);
      expect(locked.body.detail).toMatch(/^Too many failed attempts/);
      expect((await scim.call('GET', '/Users')).status).toBe(429);
      expect((await scimClient(server, 'locks', other).call('GET', '/Users')).status).toBe(200);
    } finally {
      await server.dispose();
    }
  });

  it('a token over its rate is answered 429 with Retry-After; other tokens keep theirs', async () => {
    const server = await testServer({ scim: { requestsPerSecond: 0.001, burst: 3 } });
    try {
      const admin = await adminClient(server);
      const { scim } = await scimTenant(admin, server, 'rates');
      const other = scimClient(server, 'rates', (await admin.typed.call('createScimToken', { tenant: 'rates' }, {})).token);
      for (let i = 0; i < 3; i++) expect((await scim.call('GET', '/Users')).status).toBe(200);
      const over = await scim.call('GET', '/Users');
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(over.body).toMatchObject({ status: '429', detail: expect.stringContaining('is over its rate of 0.001 requests per second') });
      expect((await other.call('GET', '/Users')).status).toBe(200);
    } finally {
      await server.dispose();
    }
  });
});
