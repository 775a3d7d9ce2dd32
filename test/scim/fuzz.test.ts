/**
 * Whatever a client sends to /scim/v2, the answer is a SCIM response, never a 5xx or a hang:
 * generated bodies (any JSON, and JSON shaped like resources and PatchOps with hostile values),
 * filters and PATCH paths (random text, and text made by the filter grammar of RFC 7644 §3.4.2.2
 * with hostile values and near misses), sort and page parameters, against a real server on each
 * backend (PostgreSQL refuses what SQLite stores, NUL in text for one). A refusal is always a SCIM
 * error body. Every request carries a deadline: one left unanswered fails the test as a hang.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FILTER_DEPTH } from '../../src/server/scim/filter-syntax.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { answered, deadline, fuzz } from '../support/fuzz.ts';
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
  // A request line past Node's header limit (16 KiB: several huge numbers in a query) is refused by its
  // HTTP parser, with no body, before any of the server's code runs.
  if (r.status === 431 && r.body === undefined && !r.headers.has('x-request-id')) return true;
  return r.body !== null && typeof r.body === 'object' && r.body.schemas?.[0] === ERROR && r.body.status === String(r.status);
}

const names = fc.constantFrom('userName', 'USERNAME', 'emails', 'emails.value', 'name.givenName', 'members', 'members.value', 'displayName', 'active',
  'groups', 'id', 'meta', 'meta.created', '__proto__', 'constructor', 'urn:ietf:params:scim:schemas:core:2.0:User:userName', 'x.y.z', '');
/**
 * JSON nested past any stack a recursive reader has, as a placeholder string that `sent` writes out
 * as the nesting itself (the test never builds, prints or shrinks a value that deep).
 */
const deep = fc.tuple(fc.integer({ min: 100, max: 5_000 }), fc.constantFrom('a', 'o')).map(([n, k]) => `\u0001deep:${n}:${k}\u0001`);
const sent = (body: unknown): string | undefined => body === undefined ? undefined : JSON.stringify(body).replace(/"\\u0001deep:(\d+):([ao])\\u0001"/g,
  (_, n: string, k: string) => (k === 'a' ? `${'['.repeat(Number(n))}"x"${']'.repeat(Number(n))}` : `${'{"value":'.repeat(Number(n))}"x"${'}'.repeat(Number(n))}`));
const hostile = fc.oneof(fc.jsonValue(), fc.string(), names, fc.constantFrom(null, true, 'False', 1e308, -0, '\u0000', 'a\u0000b', 'a'.repeat(2000)), deep);
const operation = fc.record({
  op: fc.constantFrom('add', 'replace', 'remove', 'Add', 'REMOVE', 'move', 7),
  path: fc.option(fc.oneof(names, fc.string(), fc.tuple(names, fc.string()).map(([n, f]) => `${n}[${f}]`), fc.constantFrom('members[value eq "x"]', 'emails[type eq "work"].value', 'emails[')), { nil: undefined }),
  value: fc.option(fc.oneof(hostile, fc.dictionary(names, hostile), fc.array(fc.dictionary(fc.constantFrom('value', 'type', 'primary', '$ref', 'display'), hostile))), { nil: undefined }),
}, { requiredKeys: ['op'] });

// ------------------------------------------------------------------------------------------------
// The filter grammar (RFC 7644 §3.4.2.2), generated: attribute paths with and without schema URNs
// and sub-attributes, every operator (in odd cases, and some that are none), values as JSON strings
// with quotes, backslashes, line breaks and unicode, numbers in odd JSON forms, literals, and
// strings that never end; combined with and/or/not, parentheses and value paths, then sometimes
// bent a little (a character cut or put in), so the reader sees near misses as well as valid text.

const URNS = ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:core:2.0:Group',
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', 'URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER', 'urn:x', 'urn:', 'urn::'];
const attrName = fc.constantFrom('userName', 'USERNAME', 'emails', 'name', 'displayName', 'active', 'members', 'groups', 'id', 'externalId', 'meta', 'title',
  'phoneNumbers', 'addresses', 'x', '$ref', '_', '__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'a-b', 'a.b.c');
const subAttr = fc.constantFrom('value', 'type', 'primary', 'display', 'givenName', 'familyName', 'formatted', 'lastModified', 'created', '$ref',
  '__proto__', 'toString', 'VALUE', 'x');
const attrPath = fc.tuple(fc.option(fc.constantFrom(...URNS)), attrName, fc.option(subAttr))
  .map(([urn, name, sub]) => `${urn === null ? '' : `${urn}:`}${name}${sub === null ? '' : `.${sub}`}`);
const compareOp = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'EQ', 'Co', 'sW', 'xx', 'pr', 'and', 'not');
const oddString = fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\r', '\t', '\u0000', '\u2028', '\ud800', '\udc00', 'é', '😀', 'u', '0', ' ', ']', ')', '/') });
const stringValue = fc.oneof(
  fc.string().map((s) => JSON.stringify(s)),
  fc.string({ unit: 'grapheme' }).map((s) => JSON.stringify(s)),
  oddString.map((s) => JSON.stringify(s)),
  // Quoted but not escaped: raw line breaks, lone backslashes, quotes that end the string early.
  oddString.map((s) => `"${s}"`),
  // Strings that never end, with what an escape-aware scanner must skip over.
  oddString.map((s) => `"${s}`),
  fc.constantFrom('"\\"', '"a\\', '"\\u00"', '"\\u00zz"', '"\\x41"', '"\\ud800"', '"\\ud800\\udc00"', `"${'\\'.repeat(9)}"`, `"${'\\\n'.repeat(200)}`,
    `"${'\n'.repeat(3000)}`, `"${'\r\n'.repeat(1500)}`, '"\\/"', "'single'", '""'),
);
const numberValue = fc.oneof(
  fc.double({ noNaN: true }).map(String),
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.constantFrom('0', '-0', '1e400', '-1e-400', '1E+2', '1e-0', '01', '-01', '1.', '.5', '-', '1e', '1e+', '0x10', 'Infinity', '-Infinity', 'NaN', '1_000',
    '9'.repeat(400), `0.${'0'.repeat(400)}1`, '1.5e308', '2e-324', '+1', '--1', '1-', '0.0e0'),
);
const literal = fc.constantFrom('true', 'false', 'null', 'True', 'FALSE', 'Null', 'undefined', 'nil');
const compValue = fc.oneof(stringValue, numberValue, literal);
const attrExp = fc.oneof(
  fc.tuple(attrPath, compareOp, compValue).map(([p, op, v]) => `${p} ${op} ${v}`),
  attrPath.map((p) => `${p} pr`),
);
const { filter: grammarFilter } = fc.letrec<{ filter: string }>((tie) => ({
  filter: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    attrExp,
    fc.tuple(tie('filter'), fc.constantFrom('and', 'or', 'AND', 'Or', 'and not', 'xor'), tie('filter')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('filter').map((f) => `not (${f})`),
    tie('filter').map((f) => `not ${f}`),
    tie('filter').map((f) => `(${f})`),
    fc.tuple(fc.option(fc.constantFrom(...URNS)), attrName, tie('filter'), fc.option(fc.tuple(subAttr, compareOp, compValue)))
      .map(([urn, a, f, tail]) => `${urn === null ? '' : `${urn}:`}${a}[${f}]${tail === null ? '' : `.${tail[0]} ${tail[1]} ${tail[2]}`}`),
  ),
})) as unknown as { filter: fc.Arbitrary<string> };
/** Nesting at and past the reader's bound, in each way it nests. */
const deepFilter = fc.tuple(fc.integer({ min: MAX_FILTER_DEPTH - 2, max: MAX_FILTER_DEPTH * 40 }), fc.constantFrom('paren', 'not', 'valuePath', 'open')).map(([n, how]) => {
  const leaf = 'userName eq "a"';
  switch (how) {
    case 'paren': return `${'('.repeat(n)}${leaf}${')'.repeat(n)}`;
    case 'not': return `${'not '.repeat(n)}${leaf}`;
    case 'valuePath': return `${'emails['.repeat(n)}${leaf}${']'.repeat(n)}`;
    default: return `${'('.repeat(n)}${leaf}`;
  }
});
/** A valid text bent: one cut and one insertion, of the characters the grammar turns on. */
const bent = (text: fc.Arbitrary<string>) => fc.tuple(text, fc.nat(), fc.nat({ max: 3 }), fc.nat(), fc.constantFrom('', '(', ')', '[', ']', '"', ' ', '\\', 'not ', '.', ':', '\n', ' and', ' eq ', '\u0000'))
  .map(([t, at, cut, at2, put]) => {
    const i = at % (t.length + 1);
    const s = t.slice(0, i) + t.slice(i + cut);
    const j = at2 % (s.length + 1);
    return s.slice(0, j) + put + s.slice(j);
  });
const structuredFilter = fc.oneof({ weight: 5, arbitrary: grammarFilter }, { weight: 3, arbitrary: bent(grammarFilter) }, { weight: 1, arbitrary: deepFilter });

/** PATCH paths made the same way: `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, with or without a URN. */
const grammarPatchPath = fc.oneof(
  attrPath,
  fc.tuple(fc.option(fc.constantFrom(...URNS)), attrName, grammarFilter, fc.option(subAttr))
    .map(([urn, a, f, sub]) => `${urn === null ? '' : `${urn}:`}${a}[${f}]${sub === null ? '' : `.${sub}`}`),
);
const structuredPatchPath = fc.oneof({ weight: 4, arbitrary: grammarPatchPath }, { weight: 3, arbitrary: bent(grammarPatchPath) },
  { weight: 1, arbitrary: deepFilter.map((f) => `members[${f}]`) }, { weight: 1, arbitrary: fc.constantFrom('', '.', '[', 'members[]', 'members[value eq "x"].', 'urn:', 'a.b.c', 'emails[type eq "work"][value eq "x"]') });

// Query parameters as clients (and attackers) write them: digits past any integer, signs, fractions,
// exponents, whitespace, non-ASCII digits, nothing at all, and the same parameter more than once.
const pageNumber = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.integer({ min: 1, max: 6000 }).map((n) => '9'.repeat(n)),
  fc.integer({ min: 1, max: 6000 }).map((n) => `-${'9'.repeat(n)}`),
  fc.double().map(String),
  fc.constantFrom('', ' ', '0', '-0', '+1', ' 1 ', '1.0', '1.5', '1e3', '1e400', '0x10', '010', 'NaN', 'Infinity', '-Infinity', '١٢', '１', '1,2', 'null', 'true', '%', '%zz', '%00', '2147483648', '-2147483649'),
);
const sortBy = fc.oneof(attrPath, names, fc.string(), fc.constantFrom('', 'emails[type eq "work"].value', 'meta.lastModified', 'urn:', '__proto__'));
const sortOrder = fc.constantFrom('ascending', 'descending', 'DESCENDING', '', 'sideways', '%00');
const queryParam = fc.oneof(
  fc.tuple(fc.constantFrom('startIndex', 'count'), pageNumber),
  fc.tuple(fc.constant('sortBy'), sortBy),
  fc.tuple(fc.constant('sortOrder'), sortOrder),
  fc.tuple(fc.constantFrom('attributes', 'excludedAttributes'), fc.oneof(attrPath, fc.string())),
  fc.tuple(fc.constant('filter'), structuredFilter),
);
/** A query string: pairs encoded (repeats kept), or now and then raw text glued on. */
const queryString = fc.tuple(fc.array(queryParam, { maxLength: 6 }), fc.option(fc.constantFrom('&&', '=', '&=&', 'count', 'count=%', 'startIndex=%zz', '&count[]=1', '&startIndex[a]=1', '&%00=%00')))
  .map(([pairs, raw]) => {
    const q = new URLSearchParams();
    for (const [k, v] of pairs) q.append(k, v);
    return `${q}${raw ?? ''}`;
  });

describe.each(['sqlite', 'postgres'] as const)('never a 5xx, on %s', (backend) => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let scim: ScimClient;
  let userId: string;
  let groupId: string;
  /** One SCIM exchange with a deadline: a request left unanswered fails as a hang. */
  const call = (method: string, path: string, body?: unknown) =>
    answered(`${method} ${path} ${JSON.stringify(body)?.slice(0, 300) ?? ''}`, () => scim.call(method, path, sent(body), {}, deadline()));
  const expectScimAnswer = (r: ScimAnswer, input: string) => expect(isScimAnswer(r), `${input.slice(0, 400)} → ${r.status} ${JSON.stringify(r.body)?.slice(0, 400)}`).toBe(true);

  beforeAll(async () => {
    // No rate limit in the way: every generated request must reach the endpoint itself.
    const database = backend === 'postgres' ? { database: (await postgres.createDatabase('fuzz')).url } : {};
    server = await testServer({ scim: { requestsPerSecond: 1e9, burst: 1e9 }, ...database });
    ({ scim } = await scimTenant(await adminClient(server), server, 'fuzz'));
    userId = (await call('POST', '/Users', scimUser('fuzzed', 'fuzzed@fuzz.test', { emails: [{ value: 'fuzzed@fuzz.test', type: 'work', primary: true }, { value: 'home@fuzz.test', type: 'home' }] }))).body.id;
    groupId = (await call('POST', '/Groups', { schemas: [GROUP], displayName: 'Fuzzed', members: [{ value: userId }] })).body.id;
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
    await fuzz(`SCIM resource bodies (${backend})`, body, async (b) => {
      const path = (b as { schemas?: unknown[] } | null)?.schemas?.[0] === GROUP ? '/Groups' : '/Users';
      const r = await call('POST', path, b);
      statuses.add(r.status);
      expectScimAnswer(r, `${path} ${JSON.stringify(b)}`);
      if (r.status === 201) await call('DELETE', `${path}/${r.body.id}`);
    }, 300);
    expect([...statuses]).toEqual(expect.arrayContaining([201, 400]));
  });

  it('PatchOps with any operations on a user and a group', async () => {
    // Generated operations are mostly refused; that the endpoint also applies what is valid is shown
    // by one valid and one invalid patch of each resource, before and after the generated ones.
    const sanity = async () => {
      for (const path of [`/Groups/${groupId}`, `/Users/${userId}`]) {
        const ok = await call('PATCH', path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Patched' }] });
        expect(ok.status, JSON.stringify(ok.body)).toBe(200);
        expect((await call('PATCH', path, { schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'displayName' }] })).status).toBe(400);
      }
    };
    await sanity();
    await fuzz(`SCIM PatchOp bodies (${backend})`, fc.tuple(fc.array(operation, { maxLength: 4 }), fc.boolean()), async ([Operations, onGroup]) => {
      const r = await call('PATCH', onGroup ? `/Groups/${groupId}` : `/Users/${userId}`, { schemas: [PATCH_OP], Operations });
      expectScimAnswer(r, JSON.stringify(Operations));
    }, 300);
    await sanity();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('any filter, sort and page parameters, as a query and as a search', async () => {
    const filter = fc.oneof(fc.string(), fc.tuple(names, fc.constantFrom('eq', 'co', 'sw', 'pr', 'gt', 'xx'), hostile).map(([n, op, v]) => `${n} ${op} ${JSON.stringify(v)}`),
      fc.constantFrom('(', 'not', 'userName eq "a" and', 'emails[type eq "work" and value co "@"]', 'members[value eq "x"].display eq "y"'));
    await fuzz(`SCIM filters, random text (${backend})`, fc.tuple(filter, fc.option(names), fc.option(fc.string()), fc.option(fc.string()), fc.boolean()), async ([f, sortBy, startIndex, count, groups]) => {
      const q = new URLSearchParams({ filter: f, ...(sortBy === null ? {} : { sortBy }), ...(startIndex === null ? {} : { startIndex }), ...(count === null ? {} : { count }) });
      const r = await call('GET', `${groups ? '/Groups' : '/Users'}?${q}`);
      expectScimAnswer(r, `${q}`);
      const s = await call('POST', '/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: f, sortBy, startIndex, count });
      expectScimAnswer(s, `search ${f}`);
    }, 300);
  });

  it('filters made by the grammar (nested and/or/not, parentheses, value paths, URNs, odd strings and numbers), as a query and as a search', async () => {
    const statuses = new Set<number>();
    await fuzz(`SCIM filters, grammar (${backend})`, fc.tuple(structuredFilter, fc.constantFrom('/Users', '/Groups', '')), async ([f, where]) => {
      if (where !== '') {
        const r = await call('GET', `${where}?${new URLSearchParams({ filter: f })}`);
        statuses.add(r.status);
        expectScimAnswer(r, `GET ${where} filter=${JSON.stringify(f)}`);
      }
      const s = await call('POST', `${where}/.search`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: f });
      statuses.add(s.status);
      expectScimAnswer(s, `POST ${where}/.search filter=${JSON.stringify(f)}`);
    }, 400, [
      // Tried first every run: filters of the grammar that are valid, so the evaluation is always reached
      // (a random run of 400 once held no valid one: most of the grammar's choices are wrong on purpose).
      ['userName eq "a"', '/Users'], ['emails[type eq "work" and value co "@"]', '/Users'],
      ['not (displayName pr) or members[value eq "x"]', '/Groups'], ['userName sw "a" and (active eq true or title pr)', ''],
    ]);
    // The filters reach evaluation (200), and the reader refuses what is not SCIM (400).
    expect([...statuses]).toEqual(expect.arrayContaining([200, 400]));
  });

  it('PATCH paths made by the grammar, in every operation, on a user and a group', async () => {
    const value = fc.oneof(hostile, fc.constant([{ value: 'x@fuzz.test', type: 'work' }]), fc.constant('Patched'), fc.constant(true));
    await fuzz(`SCIM PATCH paths, grammar (${backend})`, fc.tuple(fc.array(fc.tuple(fc.constantFrom('add', 'replace', 'remove'), structuredPatchPath, fc.option(value, { nil: undefined })), { minLength: 1, maxLength: 3 }), fc.boolean()),
      async ([ops, onGroup]) => {
        const Operations = ops.map(([op, path, v]) => ({ op, path, ...(v === undefined ? {} : { value: v }) }));
        const r = await call('PATCH', onGroup ? `/Groups/${groupId}` : `/Users/${userId}`, { schemas: [PATCH_OP], Operations });
        expectScimAnswer(r, JSON.stringify(Operations));
      }, 300);
    // The resources are still there and readable.
    expect((await call('GET', `/Users/${userId}`)).status).toBe(200);
    expect((await call('GET', `/Groups/${groupId}`)).status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('startIndex, count, sortBy and sortOrder as huge digit strings, negatives, fractions, blanks and repeats, in a query and in a search', async () => {
    await fuzz(`SCIM list parameters (${backend})`, fc.tuple(queryString, fc.constantFrom('/Users', '/Groups', '/.search'), fc.record({ startIndex: fc.oneof(pageNumber, fc.jsonValue()), count: fc.oneof(pageNumber, fc.jsonValue()), sortBy: fc.oneof(sortBy, fc.jsonValue()) }, { requiredKeys: [] })),
      async ([q, where, search]) => {
        if (where !== '/.search') {
          const r = await call('GET', `${where}?${q}`);
          expectScimAnswer(r, `GET ${where}?${q}`);
        }
        // In a SearchRequest the same values come as JSON: strings of digits, and numbers (1e400 reads as Infinity).
        const asNumber = (v: unknown) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v);
        const body = `{"schemas":["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],"startIndex":${JSON.stringify(asNumber(search.startIndex)) ?? '1'},"count":${typeof search.count === 'string' && /^\d{300,}$/.test(search.count) ? `${search.count}e99` : JSON.stringify(asNumber(search.count)) ?? '1'}${search.sortBy === undefined ? '' : `,"sortBy":${JSON.stringify(search.sortBy)}`}}`;
        const s = await answered(`POST ${where === '/.search' ? '' : where}/.search ${body.slice(0, 300)}`, () => scim.call('POST', `${where === '/.search' ? '' : where}/.search`, body, {}, deadline()));
        expectScimAnswer(s, `search ${body}`);
      }, 300);
  });
});
