/**
 * The SCIM endpoint over real HTTP against a real server: tokens, Users and Groups (create, read,
 * replace, PATCH, delete), filters, sorting, paging, ETags, hostile input, and who owns what.
 * The compliance checker (compliance.test.ts) covers the RFC; these pin idforge's own choices and
 * what provisioning clients send in the wild.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src/server/storage/sqlite.ts';
import { adminClient, testServer, type AdminClient } from '../server/_support.ts';
import { ERROR, GROUP, PATCH_OP, USER, scimClient, scimTenant, scimUser, type ScimClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
});

const patch = (...Operations: unknown[]) => ({ schemas: [PATCH_OP], Operations });

describe('tokens', () => {
  it('made by the admin API once, kept as a hash, listed without their value, revoked by DELETE', async () => {
    await admin.put('/admin/v1/tenants/tokens', { displayName: 'Tokens' });
    const made = await admin.call('POST', '/admin/v1/tenants/tokens/scim/tokens', { description: 'Okta' });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({ id: expect.stringMatching(/^[a-z0-9]{16}$/), description: 'Okta', createdAt: expect.any(String), token: expect.stringMatching(/^scim\./) });
    const token = made.body.token as string;
    const list = await admin.call('GET', '/admin/v1/tenants/tokens/scim/tokens');
    expect(list.body).toEqual({ items: [{ id: made.body.id, description: 'Okta', createdAt: made.body.createdAt }] });
    expect(JSON.stringify(list.body)).not.toContain(token.split('.')[2]);
    // At rest: a keyed hash, never the token.
    const db = new Database(join(server.dataDir, DATABASE_FILE), { readonly: true });
    const rows = db.prepare('SELECT * FROM scim_tokens WHERE tenant = ?').all('tokens') as Record<string, unknown>[];
    db.close();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token.split('.')[2]);
    expect(rows[0]!.token_hash).toMatch(/^hmac-sha256:/);

    const scim = scimClient(server, 'tokens', token);
    expect((await scim.call('GET', '/Users')).status).toBe(200);
    expect((await admin.call('DELETE', `/admin/v1/tenants/tokens/scim/tokens/${made.body.id}`)).status).toBe(204);
    const revoked = await scim.call('GET', '/Users');
    expect(revoked.status).toBe(401);
    expect((await admin.call('DELETE', `/admin/v1/tenants/tokens/scim/tokens/${made.body.id}`)).status).toBe(404);
  });

  it("no token, a malformed token, a revoked token and another tenant's token are 401 with a SCIM error body", async () => {
    const a = await scimTenant(admin, server, 'auth-a');
    const b = await scimTenant(admin, server, 'auth-b');
    const none = await scimClient(server, 'auth-a', undefined).call('GET', '/Users');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm="scim"/);
    expect(none.headers.get('content-type')).toBe('application/scim+json; charset=utf-8');
    expect(none.body).toEqual({ schemas: [ERROR], status: '401', detail: expect.stringContaining('POST /admin/v1/tenants/auth-a/scim/tokens') });
    expect((await scimClient(server, 'auth-a', 'not-a-token').call('GET', '/Users')).status).toBe(401);
    const other = await scimClient(server, 'auth-a', b.token).call('GET', '/Users');
    expect(other.status).toBe(401);
    expect(other.body.detail).toBe("the bearer token is not a SCIM token of tenant 'auth-a' (it may have been revoked)");
    expect(other.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await a.scim.call('GET', '/Users')).status).toBe(200);
    // The discovery endpoints are behind the token too.
    expect((await scimClient(server, 'auth-a', undefined).call('GET', '/ServiceProviderConfig')).status).toBe(401);
  });
});

describe('users', () => {
  let scim: ScimClient;
  beforeAll(async () => {
    ({ scim } = await scimTenant(admin, server, 'people'));
  });

  it('create: 201, Location and ETag; a stable server-made id; the primary email is the sign-in email of a user SCIM manages', async () => {
    const r = await scim.call('POST', '/Users', scimUser('Bjensen', 'bjensen@people.test', {
      externalId: 'okta-00u1', name: { givenName: 'Barbara', familyName: 'Jensen' }, displayName: 'Babs Jensen', active: true,
      emails: [{ value: 'home@people.test', type: 'home' }, { value: 'bjensen@people.test', type: 'work', primary: true }],
    }));
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.headers.get('location')).toBe(`${scim.base}/Users/${r.body.id}`);
    expect(r.headers.get('etag')).toBe(r.body.meta.version);
    expect(r.body).toMatchObject({ schemas: [USER], userName: 'Bjensen', externalId: 'okta-00u1', name: { givenName: 'Barbara', familyName: 'Jensen' }, meta: { resourceType: 'User', location: r.headers.get('location') } });
    const view = await admin.call('GET', `/admin/v1/tenants/people/users/${r.body.id}`);
    expect(view.body).toMatchObject({ id: r.body.id, email: 'bjensen@people.test', displayName: 'Babs Jensen', disabled: false, managedBy: 'scim', hasPassword: false });
    const got = await scim.call('GET', `/Users/${r.body.id}`);
    expect(got.body).toEqual(r.body);
    expect((await scim.call('GET', `/Users/${r.body.id}`, undefined, { 'if-none-match': r.body.meta.version })).status).toBe(304);
  });

  it('userName is unique without regard to case, and so is the sign-in email (409 uniqueness)', async () => {
    await scim.call('POST', '/Users', scimUser('unique.one', 'unique1@people.test'));
    const sameName = await scim.call('POST', '/Users', scimUser('UNIQUE.ONE', 'unique2@people.test'));
    expect(sameName.status).toBe(409);
    expect(sameName.body).toEqual({ schemas: [ERROR], status: '409', scimType: 'uniqueness', detail: 'userName "UNIQUE.ONE" is taken by another user of this tenant' });
    const sameEmail = await scim.call('POST', '/Users', scimUser('unique.two', 'Unique1@people.test'));
    expect(sameEmail.status).toBe(409);
    expect(sameEmail.body.detail).toBe('email "Unique1@people.test" belongs to another user of this tenant');
  });

  it('a user needs an address to sign in with: emails are required, the primary (or first) one an email address', async () => {
    const none = await scim.call('POST', '/Users', { schemas: [USER], userName: 'named@people.test' });
    expect(none.body).toEqual({ schemas: [ERROR], status: '400', scimType: 'invalidValue', detail: "'emails' is required" });
    const notMail = await scim.call('POST', '/Users', { schemas: [USER], userName: 'named', emails: [{ value: 'named' }] });
    expect(notMail.body).toMatchObject({ status: '400', scimType: 'invalidValue', detail: "the first value of 'emails' must be an email address: the user signs in with it" });
    const first = await scim.call('POST', '/Users', { schemas: [USER], userName: 'named', emails: [{ value: 'named@people.test' }, { value: 'other@people.test' }] });
    expect(first.status).toBe(201);
    expect((await admin.call('GET', `/admin/v1/tenants/people/users/${first.body.id}`)).body.email).toBe('named@people.test');
  });

  it('PUT replaces; PATCH as Entra ID and Okta send it; deactivation disables the user; If-Match guards changes', async () => {
    const u = (await scim.call('POST', '/Users', scimUser('patchy', 'patchy@people.test', { title: 'Engineer', nickName: 'P' }))).body;
    const put = await scim.call('PUT', `/Users/${u.id}`, scimUser('patchy', 'patchy@people.test', { title: 'Lead' }));
    expect(put.status).toBe(200);
    expect(put.body.title).toBe('Lead');
    expect(put.body.nickName).toBeUndefined();
    expect(put.body.id).toBe(u.id);

    // Entra ID: capitalised op names, booleans as strings, a path into a filtered value.
    const entra = await scim.call('PATCH', `/Users/${u.id}`, patch(
      { op: 'Replace', path: 'active', value: 'False' },
      { op: 'Add', path: 'emails[type eq "work"].value', value: 'patchy@people.test' },
      { op: 'Replace', path: 'name.givenName', value: 'Pat' },
    ));
    expect(entra.status).toBe(200);
    expect(entra.body).toMatchObject({ active: false, name: { givenName: 'Pat' } });
    expect((await admin.call('GET', `/admin/v1/tenants/people/users/${u.id}`)).body.disabled).toBe(true);
    // Okta: a path-less replace that repeats the id.
    const okta = await scim.call('PATCH', `/Users/${u.id}`, patch({ op: 'replace', value: { id: u.id, active: true, displayName: 'Pat Y' } }));
    expect(okta.status).toBe(200);
    expect((await admin.call('GET', `/admin/v1/tenants/people/users/${u.id}`)).body).toMatchObject({ disabled: false, displayName: 'Pat Y' });
    expect((await scim.call('PATCH', `/Users/${u.id}`, patch({ op: 'replace', value: { id: 'another' } }))).body.scimType).toBe('mutability');

    const stale = await scim.call('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'title', value: 'CTO' }), { 'if-match': u.meta.version });
    expect(stale.status).toBe(412);
    const current = okta.body.meta.version as string;
    const fresh = await scim.call('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'title', value: 'CTO' }), { 'if-match': current });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('etag')).not.toBe(current);
    expect((await scim.call('DELETE', `/Users/${u.id}`, undefined, { 'if-match': current })).status).toBe(412);
    expect((await scim.call('DELETE', `/Users/${u.id}`, undefined, { 'if-match': fresh.body.meta.version })).status).toBe(204);
    expect((await scim.call('GET', `/Users/${u.id}`)).status).toBe(404);
    expect((await admin.call('GET', `/admin/v1/tenants/people/users/${u.id}`)).status).toBe(404);
  });

  it('PATCH refusals name the problem: read-only attributes, unknown paths, a remove without a path', async () => {
    const u = (await scim.call('POST', '/Users', scimUser('refused', 'refused@people.test'))).body;
    const cases: [unknown, string, string][] = [
      [patch({ op: 'replace', path: 'groups', value: [] }), 'mutability', "'groups' is read-only"],
      [patch({ op: 'add', path: 'shoeSize', value: 44 }), 'invalidPath', 'have no attribute "shoeSize"'],
      [patch({ op: 'remove' }), 'noTarget', 'a remove needs a path'],
      [patch({ op: 'replace', path: 'active', value: 'maybe' }), 'invalidValue', 'must be true or false'],
      [patch({ op: 'replace', path: 'emails', value: [] }), 'invalidValue', "'emails' is required"],
      [{ schemas: [USER], Operations: [] }, 'invalidSyntax', 'PatchOp'],
    ];
    for (const [body, scimType, detail] of cases) {
      const r = await scim.call('PATCH', `/Users/${u.id}`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.scimType).toBe(scimType);
      expect(r.body.detail).toContain(detail);
    }
  });

  it('filters on userName, emails, externalId, displayName with eq, co, sw, pr, and, or; sorting; paging', async () => {
    const { scim: s } = await scimTenant(admin, server, 'filters');
    const people = [
      ['alice', 'alice@filters.test', 'Alice Adams', 'ext-1'],
      ['bob', 'bob@filters.test', 'Bob Brown', 'ext-2'],
      ['carol', 'carol@example.org', 'Carol Clark', undefined],
      ['dave', 'dave@example.org', 'Dave Adams', 'ext-4'],
    ] as const;
    for (const [userName, email, displayName, externalId] of people) {
      expect((await s.call('POST', '/Users', scimUser(userName, email, { displayName, ...(externalId === undefined ? {} : { externalId }) }))).status).toBe(201);
    }
    const names = async (query: string) => {
      const r = await s.call('GET', `/Users?${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.Resources as { userName: string }[]).map((x) => x.userName);
    };
    const q = (filter: string) => `filter=${encodeURIComponent(filter)}&sortBy=userName`;
    expect(await names(q('userName eq "ALICE"'))).toEqual(['alice']);
    expect(await names(q('emails co "example.org"'))).toEqual(['carol', 'dave']);
    expect(await names(q('emails.value sw "bob@"'))).toEqual(['bob']);
    expect(await names(q('emails[type eq "work" and value ew "filters.test"]'))).toEqual(['alice', 'bob']);
    expect(await names(q('externalId pr'))).toEqual(['alice', 'bob', 'dave']);
    expect(await names(q('externalId eq "ext-4"'))).toEqual(['dave']);
    expect(await names(q('displayName co "adams" and not (userName eq "dave")'))).toEqual(['alice']);
    expect(await names(q('displayName sw "Bob" or userName eq "carol"'))).toEqual(['bob', 'carol']);
    expect(await names(q('meta.created gt "2000-01-01T00:00:00Z"'))).toHaveLength(4);
    expect(await names('sortBy=displayName&sortOrder=descending')).toEqual(['dave', 'carol', 'bob', 'alice']);
    const page = await s.call('GET', '/Users?sortBy=userName&startIndex=2&count=2');
    expect(page.body).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
    expect(page.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(['bob', 'carol']);
    expect((await s.call('GET', '/Users?count=0')).body).toMatchObject({ totalResults: 4, itemsPerPage: 0, Resources: [] });
    const search = await s.call('POST', '/Users/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: 'userName sw "c"', attributes: ['userName'] });
    expect(search.body.Resources).toEqual([{ schemas: [USER], id: expect.any(String), userName: 'carol' }]);

    for (const [filter, detail] of [['userName eq', 'cannot be read'], ['shoeSize eq "44"', 'no attribute "shoeSize"'], ['active gt true', 'is a boolean'], ['name eq "x"', 'is complex']] as const) {
      const r = await s.call('GET', `/Users?filter=${encodeURIComponent(filter)}`);
      expect(r.status, filter).toBe(400);
      expect(r.body).toMatchObject({ scimType: 'invalidFilter', detail: expect.stringContaining(detail) });
    }
  });
});

describe('groups', () => {
  it('members as Entra ID and Okta change them; the user sees its groups; nested groups and strangers are refused', async () => {
    const { scim } = await scimTenant(admin, server, 'teams');
    const ids: string[] = [];
    for (const n of ['m1', 'm2', 'm3']) ids.push((await scim.call('POST', '/Users', scimUser(n, `${n}@teams.test`))).body.id);
    const g = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [{ value: ids[0] }] });
    expect(g.status).toBe(201);
    expect(g.body.members).toEqual([{ value: ids[0], $ref: `${scim.base}/Users/${ids[0]}`, type: 'User' }]);
    // Entra ID: add a list, remove by value list.
    await scim.call('PATCH', `/Groups/${g.body.id}`, patch({ op: 'Add', path: 'members', value: [{ value: ids[1] }, { value: ids[2] }] }));
    const removed = await scim.call('PATCH', `/Groups/${g.body.id}`, patch({ op: 'Remove', path: 'members', value: [{ value: ids[0] }] }));
    expect(removed.body.members.map((m: { value: string }) => m.value).sort()).toEqual([ids[1], ids[2]].sort());
    // Okta: remove by a filtered path; replace the name without a path.
    await scim.call('PATCH', `/Groups/${g.body.id}`, patch({ op: 'remove', path: `members[value eq "${ids[1]}"]` }, { op: 'replace', value: { id: g.body.id, displayName: 'Eng' } }));
    const now = await scim.call('GET', `/Groups/${g.body.id}`);
    expect(now.body).toMatchObject({ displayName: 'Eng', members: [{ value: ids[2] }] });
    expect((await scim.call('GET', `/Users/${ids[2]}`)).body.groups).toEqual([{ value: g.body.id, $ref: `${scim.base}/Groups/${g.body.id}`, display: 'Eng', type: 'direct' }]);
    expect((await scim.call('GET', `/Groups?filter=${encodeURIComponent('displayName eq "eng"')}&excludedAttributes=members`)).body.Resources)
      .toEqual([{ schemas: [GROUP], id: g.body.id, displayName: 'Eng', meta: expect.any(Object) }]);
    const admin1 = await admin.call('GET', `/admin/v1/tenants/teams/groups/${g.body.id}`);
    expect(admin1.body).toMatchObject({ id: g.body.id, displayName: 'Eng', members: [ids[2]], managedBy: 'scim' });

    const nested = await scim.call('PATCH', `/Groups/${g.body.id}`, patch({ op: 'add', path: 'members', value: [{ value: g.body.id, type: 'Group' }] }));
    expect(nested.body).toMatchObject({ status: '400', scimType: 'invalidValue', detail: expect.stringContaining('groups cannot contain groups') });
    const stranger = await scim.call('PATCH', `/Groups/${g.body.id}`, patch({ op: 'add', path: 'members', value: [{ value: 'nobody' }] }));
    expect(stranger.body).toMatchObject({ scimType: 'invalidValue', detail: 'member "nobody" is not a user of this tenant' });
    const twin = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'ENG' });
    expect(twin.body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect((await scim.call('DELETE', `/Groups/${g.body.id}`)).status).toBe(204);
    expect((await scim.call('GET', `/Users/${ids[2]}`)).body.groups).toBeUndefined();
  });
});

describe('search across types', () => {
  it('POST /.search: Users and Groups together, sorted as one list; a filter applies to the types that have its attributes', async () => {
    const { scim } = await scimTenant(admin, server, 'searching');
    const u = (await scim.call('POST', '/Users', scimUser('zed', 'zed@searching.test', { displayName: 'Zed' }))).body;
    const g = (await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Alpha', members: [{ value: u.id }] })).body;
    const search = (body: Record<string, unknown>) => scim.call('POST', '/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], ...body });
    const all = await search({ sortBy: 'displayName', attributes: ['displayName'] });
    expect(all.body).toMatchObject({ totalResults: 2, Resources: [{ schemas: [GROUP], id: g.id, displayName: 'Alpha' }, { schemas: [USER], id: u.id, displayName: 'Zed' }] });
    expect((await search({ filter: 'userName eq "zed"' })).body.Resources.map((r: { id: string }) => r.id)).toEqual([u.id]);
    expect((await search({ filter: 'members pr' })).body.Resources.map((r: { id: string }) => r.id)).toEqual([g.id]);
    expect((await search({ filter: 'shoeSize eq 1' })).body).toMatchObject({ status: '400', scimType: 'invalidFilter' });
  });
});

describe('bad input is a SCIM error, never a 5xx', () => {
  let scim: ScimClient;
  beforeAll(async () => {
    ({ scim } = await scimTenant(admin, server, 'hostile'));
  });

  it('malformed JSON, unknown schemas and attributes, the wrong shape', async () => {
    const cases: [string, string, unknown, number, string | undefined][] = [
      ['POST', '/Users', '{"schemas": [', 400, 'invalidSyntax'],
      ['POST', '/Users', { schemas: ['urn:example:Thing'], userName: 'x' }, 400, 'invalidSyntax'],
      ['POST', '/Users', { schemas: [USER, 'urn:ietf:params:scim:schemas:extension:acme:2.0:User'], userName: 'x@h.test' }, 400, 'invalidSyntax'],
      ['POST', '/Users', { userName: 'x@h.test' }, 400, 'invalidSyntax'],
      ['POST', '/Users', { schemas: [USER], userName: 'x@h.test', shoeSize: 44 }, 400, 'invalidSyntax'],
      ['POST', '/Users', { schemas: [USER], userName: 'x@h.test', name: 'X' }, 400, 'invalidValue'],
      ['POST', '/Users', { schemas: [USER], userName: 'x@h.test', emails: { value: 'x@h.test' } }, 400, 'invalidValue'],
      ['POST', '/Users', { schemas: [USER], userName: 'x@h.test', emails: [{ value: 'a@h.test', primary: true }, { value: 'b@h.test', primary: true }] }, 400, 'invalidValue'],
      ['POST', '/Users', [1, 2, 3], 400, 'invalidSyntax'],
      ['POST', '/Users', { schemas: [USER], userName: 'x'.repeat(300) }, 400, 'invalidValue'],
      ['POST', '/Users', { schemas: [USER], userName: 'p@h.test', password: 'short' }, 400, 'invalidValue'],
      ['POST', '/Users', { schemas: [USER], userName: 'x@h.test', __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } }, 400, 'invalidSyntax'],
      ['PATCH', '/Users/nobody', patch({ op: 'add', path: '__proto__.polluted', value: true }), 404, undefined],
      ['GET', '/Users?filter=((((((((((((((((((((((((((((((((((((((((((userName eq "x"))))))))))))))))))))))))))))))))))', undefined, 400, 'invalidFilter'],
      ['GET', `/Users?filter=${'('.repeat(5000)}`, undefined, 400, 'invalidFilter'],
      ['GET', '/Users?startIndex=abc', undefined, 400, 'invalidValue'],
      ['GET', '/Users?sortBy=shoeSize', undefined, 400, 'invalidValue'],
      ['PUT', '/Users', scimUser('x'), 405, undefined],
      ['GET', '/Nothing', undefined, 404, undefined],
      ['POST', '/Bulk', {}, 501, undefined],
    ];
    for (const [method, path, body, status, scimType] of cases) {
      const r = await scim.call(method, path, body);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`).toBe(status);
      expect(r.body).toMatchObject({ schemas: [ERROR], status: String(status), ...(scimType === undefined ? {} : { scimType }) });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a 10 MB body is refused (413) before it is read; deep JSON is refused (400) before anything walks it', async () => {
    const big = JSON.stringify(scimUser('big', 'big@h.test', { title: 'x'.repeat(10 * 1024 * 1024) }));
    const r = await scim.call('POST', '/Users', big);
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ schemas: [ERROR], status: '413', detail: 'the request body is too large' });
    const deep = `{"schemas":["${USER}"],"userName":"deep@h.test","name":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const d = await scim.call('POST', '/Users', deep);
    expect(d.status).toBe(400);
    expect(d.body).toMatchObject({ scimType: 'invalidSyntax' });
    const deepPatch = await scim.call('PATCH', '/Users/x', `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"add","value":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}]}`);
    expect(deepPatch.status).toBe(400);
  });
});

describe('who owns what', () => {
  it('SCIM reads users and groups the model manages and cannot change them (409: the model owns it); the model cannot change SCIM\'s', async () => {
    const { scim } = await scimTenant(admin, server, 'owned');
    await admin.put('/admin/v1/tenants/owned/users/u-git', { email: 'git@owned.test', displayName: 'From Git', managedBy: 'idforge' });
    await admin.put('/admin/v1/tenants/owned/groups/staff', { displayName: 'Staff', members: ['u-git'], managedBy: 'idforge' });
    const listed = await scim.call('GET', `/Users?filter=${encodeURIComponent('userName eq "git@owned.test"')}`);
    expect(listed.body.Resources).toEqual([expect.objectContaining({ id: 'u-git', userName: 'git@owned.test', displayName: 'From Git', active: true, emails: [{ value: 'git@owned.test', primary: true }] })]);
    const words = "user 'u-git' is managed by idforge from the model in Git: the model owns it, so change it in the model, not through SCIM";
    for (const [method, body] of [['PUT', scimUser('git@owned.test', 'git@owned.test')], ['PATCH', patch({ op: 'replace', path: 'active', value: false })], ['DELETE', undefined]] as const) {
      const r = await scim.call(method, '/Users/u-git', body);
      expect(r.status, method).toBe(409);
      expect(r.body).toEqual({ schemas: [ERROR], status: '409', detail: words });
    }
    const group = await scim.call('PATCH', '/Groups/staff', patch({ op: 'add', path: 'members', value: [{ value: 'u-git' }] }));
    expect(group.body.detail).toBe("group 'staff' is managed by idforge from the model in Git: the model owns it, so change it in the model, not through SCIM");
    // A user made by hand through the admin API (no owner) is not SCIM's either.
    await admin.put('/admin/v1/tenants/owned/users/u-hand', { email: 'hand@owned.test' });
    expect((await scim.call('DELETE', '/Users/u-hand')).body.detail).toBe(
      "user 'u-hand' is managed by nobody (it was made by hand through the admin API), not by SCIM: SCIM changes only the users and groups it made");
    // The other way round: what SCIM made, the model (managedBy idforge) cannot change.
    const made = (await scim.call('POST', '/Users', scimUser('okta@owned.test', 'okta@owned.test'))).body;
    const r = await admin.call('PUT', `/admin/v1/tenants/owned/users/${made.id}`, { email: 'okta@owned.test', managedBy: 'idforge' });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      error: 'conflict', path: 'managedBy',
      message: `user '${made.id}' is managed by SCIM (an identity provider provisions it): the model cannot declare it; remove it from the model, or have the identity provider stop managing it first`,
    });
  });
});
