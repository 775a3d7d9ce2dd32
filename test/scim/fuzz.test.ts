/**
 * Whatever a client sends to /scim/v2, the answer is a SCIM response, never a 5xx: generated bodies
 * (any JSON, and JSON shaped like resources and PatchOps with hostile values), filters, paths and
 * query parameters, against a real server on each backend (PostgreSQL refuses what SQLite stores,
 * NUL in text for one). A refusal is always a SCIM error body.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { adminClient, testServer } from '../server/_support.ts';
import { ERROR, GROUP, PATCH_OP, USER, scimTenant, scimUser, type ScimAnswer, type ScimClient } from './_support.ts';

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

function isScimAnswer(r: ScimAnswer): boolean {
  if (r.status >= 500 || r.status === 429) return false;
  if (r.status < 400) return true;
  return r.body !== null && typeof r.body === 'object' && r.body.schemas?.[0] === ERROR && r.body.status === String(r.status);
}

const names = fc.constantFrom('userName', 'USERNAME', 'emails', 'emails.value', 'name.givenName', 'members', 'members.value', 'displayName', 'active',
  'groups', 'id', 'meta', 'meta.created', '__proto__', 'constructor', 'urn:ietf:params:scim:schemas:core:2.0:User:userName', 'x.y.z', '');
const hostile = fc.oneof(fc.jsonValue(), fc.string(), names, fc.constantFrom(null, true, 'False', 1e308, -0, '\u0000', 'a'.repeat(2000)));
const operation = fc.record({
  op: fc.constantFrom('add', 'replace', 'remove', 'Add', 'REMOVE', 'move', 7),
  path: fc.option(fc.oneof(names, fc.string(), fc.tuple(names, fc.string()).map(([n, f]) => `${n}[${f}]`), fc.constantFrom('members[value eq "x"]', 'emails[type eq "work"].value', 'emails[')), { nil: undefined }),
  value: fc.option(fc.oneof(hostile, fc.dictionary(names, hostile), fc.array(fc.dictionary(fc.constantFrom('value', 'type', 'primary', '$ref', 'display'), hostile))), { nil: undefined }),
}, { requiredKeys: ['op'] });

describe.each(['sqlite', 'postgres'] as const)('never a 5xx, on %s', (backend) => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let scim: ScimClient;
  let userId: string;
  let groupId: string;

  beforeAll(async () => {
    // No rate limit in the way: every generated request must reach the endpoint itself.
    const database = backend === 'postgres' ? { database: (await postgres.createDatabase('fuzz')).url } : {};
    server = await testServer({ scim: { requestsPerSecond: 1e9, burst: 1e9 }, ...database });
    ({ scim } = await scimTenant(await adminClient(server), server, 'fuzz'));
    userId = (await scim.call('POST', '/Users', scimUser('fuzzed', 'fuzzed@fuzz.test'))).body.id;
    groupId = (await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Fuzzed', members: [{ value: userId }] })).body.id;
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('any JSON, or resource-shaped JSON with hostile values, as a new user or group', async () => {
    const attrs = fc.dictionary(fc.constantFrom('displayName', 'nickName', 'title', 'active', 'externalId', 'name', 'phoneNumbers', 'addresses', 'password', 'members'), hostile, { maxKeys: 2 });
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(names, hostile).map((d) => ({ schemas: [USER], ...d })),
      fc.dictionary(names, hostile).map((d) => ({ schemas: [GROUP], displayName: 'G', ...d })),
      // Mostly valid, one or two attributes anything at all: some are created.
      fc.tuple(fc.uuid(), attrs).map(([u, d]) => ({ ...scimUser(`u-${u}`, `${u}@fuzz.test`), ...d })),
      fc.tuple(fc.uuid(), attrs).map(([u, d]) => ({ schemas: [GROUP], displayName: `g-${u}`, ...d })),
    );
    const statuses = new Set<number>();
    await fc.assert(fc.asyncProperty(body, async (b) => {
      const path = (b as { schemas?: unknown[] } | null)?.schemas?.[0] === GROUP ? '/Groups' : '/Users';
      const r = await scim.call('POST', path, b);
      statuses.add(r.status);
      expect(isScimAnswer(r), `${path} ${JSON.stringify(b).slice(0, 300)} → ${r.status} ${JSON.stringify(r.body)}`).toBe(true);
      if (r.status === 201) await scim.call('DELETE', `${path}/${r.body.id}`);
    }), { numRuns: 300 });
    expect([...statuses]).toEqual(expect.arrayContaining([201, 400]));
  });

  it('PatchOps with any operations on a user and a group', async () => {
    // Generated operations are mostly refused; that the endpoint also applies what is valid is shown
    // by one valid and one invalid patch of each resource, before and after the generated ones.
    const sanity = async () => {
      for (const path of [`/Groups/${groupId}`, `/Users/${userId}`]) {
        const ok = await scim.call('PATCH', path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Patched' }] });
        expect(ok.status, JSON.stringify(ok.body)).toBe(200);
        expect((await scim.call('PATCH', path, { schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'displayName' }] })).status).toBe(400);
      }
    };
    await sanity();
    await fc.assert(fc.asyncProperty(fc.array(operation, { maxLength: 4 }), fc.boolean(), async (Operations, onGroup) => {
      const r = await scim.call('PATCH', onGroup ? `/Groups/${groupId}` : `/Users/${userId}`, { schemas: [PATCH_OP], Operations });
      expect(isScimAnswer(r), `${JSON.stringify(Operations).slice(0, 300)} → ${r.status} ${JSON.stringify(r.body)}`).toBe(true);
    }), { numRuns: 300 });
    await sanity();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('any filter, sort and page parameters, as a query and as a search', async () => {
    const filter = fc.oneof(fc.string(), fc.tuple(names, fc.constantFrom('eq', 'co', 'sw', 'pr', 'gt', 'xx'), hostile).map(([n, op, v]) => `${n} ${op} ${JSON.stringify(v)}`),
      fc.constantFrom('(', 'not', 'userName eq "a" and', 'emails[type eq "work" and value co "@"]', 'members[value eq "x"].display eq "y"'));
    await fc.assert(fc.asyncProperty(filter, fc.option(names), fc.option(fc.string()), fc.option(fc.string()), fc.boolean(), async (f, sortBy, startIndex, count, groups) => {
      const q = new URLSearchParams({ filter: f, ...(sortBy === null ? {} : { sortBy }), ...(startIndex === null ? {} : { startIndex }), ...(count === null ? {} : { count }) });
      const r = await scim.call('GET', `${groups ? '/Groups' : '/Users'}?${q}`);
      expect(isScimAnswer(r), `${q} → ${r.status} ${JSON.stringify(r.body)}`).toBe(true);
      const s = await scim.call('POST', '/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: f, sortBy, startIndex, count });
      expect(isScimAnswer(s), `search ${f} → ${s.status} ${JSON.stringify(s.body)}`).toBe(true);
    }), { numRuns: 300 });
  });
});
