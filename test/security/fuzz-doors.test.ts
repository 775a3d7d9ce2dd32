/**
 * Hostile input at the doors a browser or a client reaches (issue "Hostile input at the new doors"):
 * generated requests against a real server, whose answer must never be a 5xx, a crash or a hang.
 *
 * - The admin API (every row of src/contract/routes.ts that takes a body): any JSON, text that is no
 *   JSON, and bodies shaped like the real ones (src/contract/bodies.ts, batch.ts) with hostile
 *   values; hostile path parameters (percent-encoded junk, very long, `..`, NUL) and query
 *   parameters (limit, cursor, dryRun). A refusal is the admin API's JSON error body
 *   (`{error, message, path, problems?}`, src/server/errors.ts), on SQLite and on PostgreSQL
 *   (which refuses NUL in text that SQLite stores).
 * - The admin console, signed in over plain HTTP as a tenant administrator would be (OpenID Connect
 *   against the tenant, the CSRF token read from a page): generated forms to every form it takes, and
 *   its pages with hostile query strings. No answer is a 5xx or shows a stack trace.
 *
 * Requests go over node:http with the path exactly as generated (fetch would normalize `..` and
 * `%2e`), each with a deadline (AbortSignal.timeout): an answer that never comes fails as a hang.
 */
import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES, routePath, type RouteSpec } from '../../src/contract/index.ts';
import { STACK_TRACE, answered, deadline, fuzz } from '../support/fuzz.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { Browser, PASSWORD, adminClient, fixtureTenant, testServer, type AdminClient } from '../server/_support.ts';

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

interface Request {
  readonly method: string;
  /** Host header: the base host (admin API) or a tenant's host (console). */
  readonly host: string;
  /** Sent as it is: already percent-encoded where it should be, junk where it should not. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

/** One exchange over a new connection, the path untouched, with a deadline. */
function exchange(port: number, r: Request): Promise<Answer> {
  const what = `${r.method} http://${r.host}${r.path} ${typeof r.body === 'string' ? r.body.slice(0, 300) : r.body === undefined ? '' : `<${r.body.length} bytes>`}`;
  return answered(what, () => new Promise<Answer>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, method: r.method, path: r.path, agent: false, signal: deadline(),
      headers: { host: r.host, ...(r.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(r.body)) }), ...r.headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(r.body);
  }));
}

const shown = (input: string, r: Answer) => `${input.slice(0, 600)}\n  → ${r.status} ${r.text.slice(0, 600)}`;

/** The admin API's error body: `{error, message, path}` and, when there are several, `problems`. */
function isAdminErrorBody(text: string): boolean {
  let b: any;
  try {
    b = JSON.parse(text);
  } catch {
    return false;
  }
  return b !== null && typeof b === 'object' && typeof b.error === 'string' && b.error !== '' && typeof b.message === 'string' && b.message !== 'internal server error' &&
    typeof b.path === 'string' && (b.problems === undefined || (Array.isArray(b.problems) && b.problems.every((p: any) => typeof p?.path === 'string' && typeof p?.message === 'string')));
}

/**
 * Node's HTTP parser answers a request line or headers it will not read (431, or 400 for a malformed
 * request) itself, with no body, before any of the server's code runs: that is a refusal too.
 */
const refusedByHttpParser = (r: Answer) => (r.status === 431 || r.status === 400) && r.text === '' && r.headers['x-request-id'] === undefined;

function expectAdminAnswer(r: Answer, input: string, method = 'GET'): void {
  expect(r.status, shown(input, r)).toBeLessThan(500);
  expect(r.text, shown(input, r)).not.toMatch(STACK_TRACE);
  if (r.status < 400 || method === 'HEAD' || refusedByHttpParser(r)) return;
  expect(r.headers['content-type'], shown(input, r)).toMatch(/^application\/json/);
  expect(isAdminErrorBody(r.text), shown(input, r)).toBe(true);
}

// ------------------------------------------------------------------------------------------------
// Hostile values.

/** Strings that have broken parsers and stores before: NUL, lone surrogates, path tricks, escapes, reserved names, sizes past every limit. */
const NASTY = ['', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff', '\uffff', '\ufeff', '\u202e', '..', '../../etc/passwd', '%00', '%', '%zz', '\r\n', '\n',
  '<script>alert(1)</script>', '"', "'", '\\', '${jndi:ldap://x}', '{{7*7}}', '__proto__', 'constructor', 'prototype', 'toString', 'system', 'admin', 'localhost',
  'xn--80ak6aa92e', 'a--b', 'idforge', 'console', 'scim', '😀', 'ǅ', 'İ', 'ß', 'null', 'true', '0', '-1', 'NaN', 'a'.repeat(65), 'a'.repeat(129), 'a'.repeat(257),
  'a'.repeat(5000), 'x@y', 'a@b.c\u0000', 'urn:idforge:admin-api'];
const hStr = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.constantFrom(...NASTY),
  // NUL inside otherwise ordinary text: PostgreSQL refuses it in a text column, SQLite stores it.
  fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([a, b]) => `${a}\u0000${b}`));
/** A value written into the JSON text as it is (see `json`): the test never builds, prints or shrinks a deep value itself. */
const RAW = Symbol('raw JSON text');
/** JSON nested past any stack a recursive reader has (up to 60,000 deep; past 256 KiB it is a 413). */
const deepJson = fc.tuple(fc.integer({ min: 100, max: 60_000 }), fc.constantFrom('[', '{"a":')).map(([n, open]) => ({ [RAW]: `${open.repeat(n)}0${(open === '[' ? ']' : '}').repeat(n)}` }));
/** `lastApplied.entry` nested 3,000 deep: zod's z.json() recursion overflowed the stack (a 500, found by this suite). */
const DEEP_ENTRY = { entry: { a: { [RAW]: `${'['.repeat(3000)}0${']'.repeat(3000)}` } }, index: 0 };
const hAny: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hStr },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, 2 ** 53 + 1, [], {}, [[]], { '': '' }, [null], ['\u0000']) },
  { weight: 1, arbitrary: deepJson },
);

/** JSON text of a generated value: `RAW` values as written, `extra` keys (`__proto__` too) put first in an object. */
function json(value: unknown, extra: readonly (readonly [string, unknown])[] = []): string {
  const text = (v: unknown): string => {
    if (v !== null && typeof v === 'object' && RAW in v) return (v as Record<typeof RAW, string>)[RAW];
    if (Array.isArray(v)) return `[${v.map((x) => text(x === undefined ? null : x)).join(',')}]`;
    if (v !== null && typeof v === 'object') return `{${Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => `${JSON.stringify(k)}:${text(x)}`).join(',')}}`;
    return JSON.stringify(v) ?? 'null';
  };
  const body = text(value);
  if (extra.length === 0 || !body.startsWith('{')) return body;
  const head = extra.map(([k, v]) => `${JSON.stringify(k)}:${text(v)}`).join(',');
  return body === '{}' ? `{${head}}` : `{${head},${body.slice(1)}`;
}

/** Mostly a valid value, sometimes left out, sometimes anything at all: bodies get past the shape to the rules and the store. */
const field = <T>(valid: fc.Arbitrary<T>, hostile: fc.Arbitrary<unknown> = hAny): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 6, arbitrary: valid }, { weight: 2, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: hostile });
/** Keys a body has no business holding; `__proto__` and friends are written into the JSON text as own keys. */
const extraKeys = fc.array(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'bogus', '', 'Kind', 'displayname', 'id', 'name'), hAny), { maxLength: 2 });
const bodyOf = (shape: fc.Arbitrary<Record<string, unknown>>) => fc.tuple(shape, fc.oneof({ weight: 4, arbitrary: fc.constant([] as [string, unknown][]) }, { weight: 1, arbitrary: extraKeys }))
  .map(([b, extra]) => json(b, extra));

/** A valid body with one of its leaves (a value, or an entry of a list) replaced by a hostile value: past the shape, into the rules and the store. */
function oneLeaf<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(valid, fc.nat(), hAny).map(([v, k, h]) => {
    const body = structuredClone(v) as Record<string, unknown>;
    const slots: [Record<string | number, unknown>, string | number][] = [];
    const walk = (node: unknown) => {
      if (node === null || typeof node !== 'object') return;
      for (const [key, child] of Object.entries(node)) {
        slots.push([node as Record<string | number, unknown>, Array.isArray(node) ? Number(key) : key]);
        walk(child);
      }
    };
    walk(body);
    if (slots.length > 0) {
      const [parent, key] = slots[k % slots.length]!;
      parent[key] = h;
    }
    return body;
  });
}

const idLike = fc.oneof(fc.constantFrom('u-alice', 'u-bob', 'u-carol', 'u-none', 'u-f1', 'u-f2', 'a', 'A.b_c@d+e~f-g', 'x'.repeat(128)), fc.stringMatching(/^[A-Za-z0-9._@+~-]{1,12}$/));
const nameLike = fc.oneof(fc.constantFrom('web', 'spa', 'api', 'nope', 'web-r', 'new-app', 'a', 'a.b_c-d', 'x'.repeat(64)), fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,8}[a-z0-9]$/));
const scopeLike = fc.oneof(fc.constantFrom('openid', 'profile', 'email', 'offline', 'admin', 'nope', 'a:b/c', 'x'.repeat(128), 'x'.repeat(129)), fc.stringMatching(/^[A-Za-z0-9._:/-]{1,10}$/));
const urlLike = fc.oneof(
  fc.constantFrom('http://app.localhost:3000', 'https://app.doors.test/connect/idforge/callback', 'https://spa.doors.test', 'javascript:alert(1)', 'data:text/html,x',
    'http://evil.example/cb', 'https://x.test/#frag', 'https://x.test/?a=b', 'https://[::1]:99999/', 'http://a b.test/', 'https://xn--80ak6aa92e.com/', 'https://%00.test/',
    `https://a.test/${'a'.repeat(3000)}`, '//evil.test/', 'https://user:pw@x.test/', 'HTTPS://X.TEST/', 'https://x.test:0/', 'https://x.test:65536/', 'urn:x', 'com.example.app:/cb',
    'http://localhost', 'http://127.0.0.1:1/', 'http://[::1]/', 'https://*.test/', 'https://x.test/\u0000', 'https://x.test/\ud800', 'http://0x7f.1/', 'https://x.test\\@evil.test/'),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
);
const lastApplied = fc.record({ entry: field(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })), index: field(fc.oneof(fc.nat(), fc.integer())) }, { requiredKeys: [] });
const owner = { managedBy: field(fc.constantFrom('idforge', 'console', 'scim', 'someone')), stack: field(fc.constantFrom('proj/dev', 'p/s')) };

const tenantShape = fc.record({
  displayName: field(fc.string({ minLength: 1, maxLength: 40 })),
  scopes: field(fc.array(fc.record({ name: field(scopeLike), description: field(fc.string({ maxLength: 300 })) }, { requiredKeys: [] }), { maxLength: 3 })),
  login: field(fc.record({ methods: field(fc.array(fc.constantFrom('password', 'otp', 'passkey', 'totp', 'sms'), { maxLength: 4 })), requireSecondFactor: field(fc.boolean()) }, { requiredKeys: [] })),
  ...owner,
  lastApplied: field(lastApplied),
}, { requiredKeys: [] });

const applicationShape = fc.record({
  kind: field(fc.constantFrom('web', 'proxy', 'spa', 'api')),
  displayName: field(fc.string({ minLength: 1, maxLength: 40 })),
  clientId: field(idLike),
  clientSecret: field(fc.string({ minLength: 32, maxLength: 40 })),
  redirectUris: field(fc.array(urlLike, { minLength: 1, maxLength: 3 })),
  postLogoutRedirectUris: field(fc.array(urlLike, { maxLength: 2 })),
  scopes: field(fc.array(scopeLike, { maxLength: 4 })),
  audience: field(fc.array(fc.oneof(fc.constant('https://api.doors.test'), urlLike), { maxLength: 2 })),
  identifier: field(fc.oneof(urlLike, fc.string({ minLength: 1, maxLength: 40 }))),
  offline: field(fc.boolean()),
  pkce: field(fc.constantFrom('required', 'optional')),
  ...owner,
  lastApplied: field(lastApplied),
}, { requiredKeys: [] });

const userShape = fc.record({
  email: field(fc.oneof(fc.emailAddress(), fc.constantFrom('alice@doors.test', 'bob@doors.test', 'a@b', 'a@b.c'))),
  displayName: field(fc.string({ minLength: 1, maxLength: 40 })),
  scopes: field(fc.array(scopeLike, { maxLength: 3 })),
  // Hashed when the user has none yet: rare, so the pool's work does not dominate.
  initialPassword: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.string({ minLength: 8, maxLength: 20 }) }, { weight: 1, arbitrary: hAny }),
  disabled: field(fc.boolean()),
  ...owner,
  lastApplied: field(lastApplied),
}, { requiredKeys: [] });

const groupShape = fc.record({
  displayName: field(fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('Staff', 'STAFF', 'ǅ', 'staff\u0000'))),
  members: field(fc.oneof({ weight: 9, arbitrary: fc.array(idLike, { maxLength: 5 }) }, { weight: 1, arbitrary: fc.constantFrom(Array.from({ length: 10_001 }, (_, i) => `u-${i}`)) })),
  externalId: field(fc.string({ minLength: 1, maxLength: 40 })),
  ...owner,
}, { requiredKeys: [] });

const ownerShape = fc.record(owner, { requiredKeys: [] });

const batchShape = fc.record({
  tenant: field(tenantShape),
  applications: field(fc.array(fc.record({ name: field(nameLike), body: field(applicationShape) }, { requiredKeys: [] }), { maxLength: 3 })),
  users: field(fc.array(fc.record({ id: field(idLike), body: field(userShape) }, { requiredKeys: [] }), { maxLength: 3 })),
  assignments: field(fc.array(fc.record({ application: field(nameLike), users: field(fc.array(idLike, { maxLength: 3 })), body: field(ownerShape) }, { requiredKeys: [] }), { maxLength: 3 })),
  delete: field(fc.record({
    applications: field(fc.array(nameLike, { maxLength: 2 })), users: field(fc.array(idLike, { maxLength: 2 })),
    assignments: field(fc.array(fc.record({ application: field(nameLike), users: field(fc.array(idLike, { maxLength: 2 })) }, { requiredKeys: [] }), { maxLength: 2 })),
  }, { requiredKeys: [] })),
  prune: field(fc.record({ managedBy: field(fc.oneof(fc.constantFrom('idforge', 'console'), fc.array(fc.constantFrom('idforge', 'console', ''), { maxLength: 2 }))), drift: field(fc.boolean()) }, { requiredKeys: [] })),
  report: field(fc.constantFrom('all', 'changes')),
}, { requiredKeys: [] });

// Valid bodies, each then bent at one leaf (oneLeaf).
const validTenant = fc.record({
  displayName: fc.string({ minLength: 1, maxLength: 20 }),
  scopes: fc.array(fc.record({ name: fc.constantFrom('admin', 'read', 'write:all'), description: fc.string({ maxLength: 20 }) }), { maxLength: 2 }).map((a) => [...new Map(a.map((x) => [x.name, x])).values()]),
  login: fc.constantFrom({ methods: ['password'] }, { methods: ['password', 'totp'], requireSecondFactor: true }, { methods: ['passkey'] }),
  lastApplied: fc.record({ entry: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }), index: fc.nat({ max: 5 }) }),
}, { requiredKeys: ['displayName'] });
const validApplication = fc.oneof(
  fc.record({ kind: fc.constant('api'), identifier: fc.constantFrom('https://api.doors.test', 'https://new-api.doors.test', 'urn:api'), scopes: fc.constantFrom([], ['admin']) }),
  fc.record({ kind: fc.constantFrom('web', 'proxy'), clientId: fc.constantFrom('doors-web', 'doors-new', 'n.e-w'), redirectUris: fc.constantFrom(['https://app.doors.test/connect/idforge/callback'], ['http://app.localhost:3000/oauth2/callback']),
    scopes: fc.constantFrom(['openid'], ['openid', 'profile', 'admin']), audience: fc.constantFrom([], ['https://api.doors.test']), pkce: fc.constantFrom('required', 'optional') }, { requiredKeys: ['kind', 'clientId', 'redirectUris'] }),
  fc.record({ kind: fc.constant('spa'), clientId: fc.constantFrom('doors-spa', 'doors-spa2'), redirectUris: fc.constantFrom(['https://spa.doors.test'], ['http://spa.localhost:5173']), audience: fc.constantFrom([], ['https://api.doors.test']), offline: fc.boolean() },
    { requiredKeys: ['kind', 'clientId', 'redirectUris'] }),
);
const validUser = fc.record({ email: fc.constantFrom('f1@doors.test', 'f2@doors.test', 'bob@doors.test'), displayName: fc.string({ minLength: 1, maxLength: 20 }), scopes: fc.constantFrom([], ['admin']), disabled: fc.boolean() },
  { requiredKeys: ['email'] });
const validGroup = fc.record({ displayName: fc.constantFrom('Staff', 'Ops', 'Ǆ-team'), members: fc.subarray(['u-alice', 'u-bob', 'u-carol']), externalId: fc.string({ minLength: 1, maxLength: 10 }) }, { requiredKeys: ['displayName'] });
const validBatch = fc.record({
  tenant: validTenant,
  applications: fc.constantFrom([], [{ name: 'b-api', body: { kind: 'api', identifier: 'https://b-api.test', scopes: [] } }],
    [{ name: 'b-api', body: { kind: 'api', identifier: 'https://b-api.test' } }, { name: 'b-spa', body: { kind: 'spa', clientId: 'b-spa', redirectUris: ['https://b-spa.test'], audience: ['https://b-api.test'] } }]),
  users: fc.constantFrom([], [{ id: 'u-b1', body: { email: 'b1@b.test' } }], [{ id: 'u-b1', body: { email: 'b1@b.test' } }, { id: 'u-b2', body: { email: 'b2@b.test', scopes: [] } }]),
  assignments: fc.constantFrom([], [{ application: 'b-spa', users: ['u-b1'] }]),
  delete: fc.constantFrom({}, { users: ['u-gone'] }, { applications: ['b-gone'], assignments: [{ application: 'b-spa', users: ['u-b2'] }] }),
  prune: fc.constantFrom({ managedBy: 'idforge' }, { managedBy: ['idforge', 'console'], drift: true }),
  report: fc.constantFrom('all', 'changes'),
}, { requiredKeys: [] });
/** A body of the route: hostile throughout (`shape`), or valid but at one leaf (`valid`). */
const bodies = (shape: fc.Arbitrary<Record<string, unknown>>, valid: fc.Arbitrary<unknown>) => fc.oneof(bodyOf(shape), bodyOf(oneLeaf(valid)), bodyOf(valid.map((v) => v as Record<string, unknown>)));

const assignmentBatchShape = fc.record({
  add: field(fc.oneof({ weight: 9, arbitrary: fc.array(idLike, { maxLength: 4 }) }, { weight: 1, arbitrary: fc.constant(Array.from({ length: 1001 }, (_, i) => `u-${i}`)) })),
  remove: field(fc.array(idLike, { maxLength: 4 })),
  managedBy: field(fc.constantFrom('console', 'idforge')),
}, { requiredKeys: [] });

// ------------------------------------------------------------------------------------------------
// Hostile path segments and query strings, as they go on the wire.

/** Percent-encodes every byte but the unreserved ones (lone surrogates become U+FFFD, as a browser sends them). */
const pct = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
const rawSegment = fc.oneof(
  fc.constantFrom('%00', 'a%00b', '..', '.', '%2e%2e', '%2E', '..%2f..', '%2f', '%5c', '%', '%zz', '%e0%a4%a', '%ED%A0%80', '%C0%AE%C0%AE', '%F0%9F%98%80', '%EF%BB%BF',
    '%20', '+', '~', 'system', 'admin', 'localhost', 'xn--80ak6aa92e', 'a--b', '-a', 'a-', 'A', '%41', 'doors-p%2Fusers', ';', ';a=1', '@', ':', '%3A', 'a:batch',
    '*', '%2A', '%3F', '%23', '%25', '%25%32%65', '%u002e', '\\', '%7F', '%FF'),
  fc.string().map(pct),
  fc.string({ unit: 'binary', maxLength: 20 }).map(pct),
  fc.integer({ min: 64, max: 12_000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 1, max: 3_000 }).map((n) => '%2e'.repeat(n)),
  nameLike, idLike,
);
const SEGMENT_NAMES: Readonly<Record<string, string>> = { tenant: 'doors-p', application: 'web', userId: 'u-alice', group: 'g-1', tokenId: 'nope', sessionId: 'x'.repeat(43), webhook: 'hook-1' };

const numberish = fc.oneof(
  fc.integer().map(String), fc.double().map(String),
  fc.integer({ min: 1, max: 5000 }).map((n) => '9'.repeat(n)),
  fc.constantFrom('', ' ', '0', '-0', '+1', ' 1 ', '1.0', '1.5', '1e2', '1e400', '0x10', '010', 'NaN', 'Infinity', '-Infinity', '١٢', '１', '1,2', 'null', 'true', '%', '%zz',
    '%00', '500', '501', '2147483648', '-2147483649', '9007199254740993'),
);
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
const cursorish = fc.oneof(
  hStr.map(pct),
  fc.array(hStr, { maxLength: 3 }).map((a) => b64(JSON.stringify(a))),
  fc.jsonValue({ maxDepth: 2 }).map((v) => b64(JSON.stringify(v))),
  fc.constantFrom(b64('["\u0000"]'), b64('["a\u0000b"]'), b64('["\ud800"]'), b64('[""]'), b64('["a","b"]'), b64('[1]'), b64('{}'), b64('['), '!!!', '====', `${'A'.repeat(20_000)}`, b64(JSON.stringify(['z'.repeat(5000)]))),
);
const dryRunish = fc.constantFrom('true', '1', 'false', '0', '', 'TRUE', 'yes', 'on', 'true ', '%00', 'true&dryRun=false');
const queryPairs = fc.array(fc.oneof(
  fc.tuple(fc.constant('limit'), numberish),
  fc.tuple(fc.constant('cursor'), cursorish),
  fc.tuple(fc.constant('dryRun'), dryRunish),
  // A people search (listUsers): any text, SQL and LIKE metacharacters, NULs, the bound and past it.
  fc.tuple(fc.constant('q'), fc.oneof(hStr, fc.constantFrom("%", "_", "' OR 1=1 --", '\\', '%00', 'a%00b', ' ', 'x'.repeat(200), 'x'.repeat(201), '\u0130', 'ǅ'))),
  fc.tuple(fc.constantFrom('limit[]', 'cursor[a]', 'dryRun[]', 'q[]', '__proto__', 'constructor', '', '%00', 'LIMIT'), hStr),
), { maxLength: 5 });
/** Pairs as given (each value already what goes on the wire, or encoded here), then maybe raw junk. */
const queryText = fc.tuple(queryPairs, fc.boolean(), fc.option(fc.constantFrom('&&', '=', '&=&', 'limit', 'limit=%', 'cursor=%zz', '&%00=%00', '&limit=1&limit=2', '&cursor=&cursor=')))
  .map(([pairs, encode, raw]) => pairs.map(([k, v]) => `${pct(k)}=${encode ? pct(v) : v.replace(/[^\x21-\x7e]/g, (c) => pct(c)).replace(/[#&]/g, (c) => pct(c))}`).join('&') + (raw ?? ''));

// ------------------------------------------------------------------------------------------------

let postgres: TestPostgres | undefined;
afterAll(async () => {
  await postgres?.stop();
});

describe.each(['sqlite', 'postgres'] as const)('the admin API never answers a 5xx, on %s', (backend) => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;
  let baseHost: string;

  beforeAll(async () => {
    const database = backend === 'postgres' ? { database: (await (postgres ??= await startPostgres()).createDatabase('doors')).url } : {};
    server = await testServer(database);
    admin = await adminClient(server);
    baseHost = `localhost:${server.port}`;
    // doors: the usual fixture (apps api, web, spa; users alice, bob, carol) with a group and an app to rename;
    // doors-t, doors-b, doors-r, doors-p: targets of tenant bodies, batches, renames and path and query junk.
    for (const t of ['doors', 'doors-p']) {
      await fixtureTenant(admin, t);
      await admin.put(`/admin/v1/tenants/${t}/groups/g-1`, { displayName: 'Staff', members: ['u-alice', 'u-carol'] });
      await admin.put(`/admin/v1/tenants/${t}/applications/web/group-assignments/g-1`, {});
    }
    await admin.put('/admin/v1/tenants/doors/applications/web-r', { kind: 'web', clientId: 'doors-web-r', redirectUris: ['https://r.doors.test/cb'] });
    for (const t of ['doors-t', 'doors-b', 'doors-r']) await admin.put(`/admin/v1/tenants/${t}`, { displayName: t });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  /** One admin API exchange with the bootstrap client's token (refreshed before it expires). */
  const call = async (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
    const token = await admin.typed.token();
    return exchange(server.port, {
      method, host: baseHost, path, body,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    });
  };
  const send = async (method: string, path: string, body: string) => {
    const r = await call(method, path, body);
    expectAdminAnswer(r, `${method} ${path} ${body}`, method);
    return r;
  };

  it('any JSON, and text that is no JSON, in every body the admin API reads', async () => {
    const routes = (Object.entries(ADMIN_ROUTES) as [string, RouteSpec][]).filter(([, r]) => r.body !== undefined);
    const notJson = fc.oneof(fc.string(), fc.constantFrom('{', '{"a":}', '[1,]', 'nul', '\ufeff{}', '{"a":1}{"b":2}', '{"a":1', '"\\ud800"', '{"a":"\u0000"}', "{'a':1}", '{"__proto__":{"admin":true}}',
      '{"constructor":{"prototype":{"polluted":1}}}', '1e999999', '-', '[]', '{}', ''));
    const contentType = fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16',
      'application/json; charset=latin1', 'application/json; charset=bogus', 'text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'application/json;;', 'multipart/form-data; boundary=x', '');
    const encoding = fc.constantFrom(undefined, undefined, undefined, 'gzip', 'deflate', 'br', 'bogus', 'identity');
    await fuzz(`admin API: any JSON or text as a body (${backend})`, fc.tuple(fc.constantFrom(...routes), fc.oneof(fc.jsonValue().map((v) => JSON.stringify(v)), notJson, deepJson.map((v) => json(v))), contentType, encoding, fc.boolean()),
      async ([[name, route], body, type, enc, dryRun]) => {
        const params = Object.fromEntries([...route.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, m[1] === 'tenant' ? 'doors' : SEGMENT_NAMES[m[1]!]!]));
        // Writes land on doors only where they cannot take the fixture away (a tenant body goes to doors-t, a rename to doors-r).
        if (name === 'putTenant' || name === 'applyTenantBatch') params.tenant = name === 'putTenant' ? 'doors-t' : 'doors-b';
        if (name === 'renameTenant') params.tenant = 'doors-r';
        if (name === 'renameApplication') params.application = 'web-r';
        const path = routePath(name as 'getTenant', params as { tenant: string }) + (dryRun ? '?dryRun=true' : '');
        const r = await call(route.method, path, body, { 'content-type': type, ...(enc === undefined ? {} : { 'content-encoding': enc }) });
        expectAdminAnswer(r, `${route.method} ${path} [${type}${enc === undefined ? '' : `, ${enc}`}] ${body}`, route.method);
        if (r.status === 200 && name === 'renameTenant') await send('POST', routePath('renameTenant', { tenant: JSON.parse(r.text).name }), '{"to":"doors-r"}');
        if (r.status === 200 && name === 'renameApplication') await send('POST', routePath('renameApplication', { tenant: 'doors', application: JSON.parse(r.text).name }), '{"to":"web-r"}');
      }, 300);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('tenant bodies (PUT tenant) with hostile values', async () => {
    await fuzz(`admin API: PUT tenant body (${backend})`, fc.tuple(bodies(tenantShape, validTenant), fc.constantFrom('doors-t', 'doors-t2'), fc.boolean()), async ([body, tenant, dryRun]) => {
      await send('PUT', `${routePath('putTenant', { tenant })}${dryRun ? '?dryRun=1' : ''}`, body);
    }, 150, [[json({ displayName: 'Deep', lastApplied: DEEP_ENTRY }), 'doors-t', true]]);
  });

  it('application bodies (PUT application) of every kind with hostile values', async () => {
    await fuzz(`admin API: PUT application body (${backend})`, fc.tuple(bodies(applicationShape, validApplication), fc.constantFrom('web', 'spa', 'api', 'new-app', 'new-api', 'x'.repeat(64)), fc.boolean()),
      async ([body, application, dryRun]) => {
        await send('PUT', `${routePath('putApplication', { tenant: 'doors', application })}${dryRun ? '?dryRun=true' : ''}`, body);
      }, 200, [
        // Found by this suite: NUL in an api's identifier (a text column) was a 500 on PostgreSQL.
        [json({ kind: 'api', identifier: 'https://new-api.doors.test/\u0000' }), 'new-api', false],
        [json({ kind: 'api', identifier: 'https://new-api.doors.test', lastApplied: DEEP_ENTRY }), 'new-api', false],
      ]);
  });

  it('user bodies (PUT user) with hostile values', async () => {
    await fuzz(`admin API: PUT user body (${backend})`, fc.tuple(bodies(userShape, validUser), fc.constantFrom('u-bob', 'u-f1', 'u-f2', 'A.b_c@d+e~f-g'), fc.boolean()), async ([body, userId, dryRun]) => {
      await send('PUT', `${routePath('putUser', { tenant: 'doors', userId })}${dryRun ? '?dryRun=true' : ''}`, body);
    }, 150);
  });

  it('group bodies (PUT group) with hostile values', async () => {
    await fuzz(`admin API: PUT group body (${backend})`, fc.tuple(bodies(groupShape, validGroup), fc.constantFrom('g-1', 'g-2', 'g-3'), fc.boolean()), async ([body, group, dryRun]) => {
      await send('PUT', `${routePath('putGroup', { tenant: 'doors', group })}${dryRun ? '?dryRun=true' : ''}`, body);
    }, 150);
  });

  it('assignment and group-assignment bodies (PUT) with hostile values', async () => {
    await fuzz(`admin API: PUT assignment and group-assignment body (${backend})`, fc.tuple(bodyOf(ownerShape), fc.constantFrom('web', 'spa', 'api', 'nope'), idLike, fc.constantFrom('g-1', 'g-2', 'g-none'), fc.boolean()),
      async ([body, application, userId, group, groups]) => {
        const path = groups ? routePath('putGroupAssignment', { tenant: 'doors', application, group }) : routePath('putAssignment', { tenant: 'doors', application, userId });
        await send('PUT', path, body);
      }, 150);
  });

  it('tenant batches (POST batch) with hostile entries, applied and dry run', async () => {
    const statuses = new Set<number>();
    await fuzz(`admin API: POST tenant batch body (${backend})`, fc.tuple(bodies(batchShape, validBatch), fc.constantFrom('doors-b', 'doors-b2'), fc.boolean()), async ([body, tenant, dryRun]) => {
      const r = await send('POST', `${routePath('applyTenantBatch', { tenant })}${dryRun ? '?dryRun=true' : ''}`, body);
      statuses.add(r.status);
    }, 150);
    // Past the shape to the judges: some batches are applied or refused entry by entry (422).
    expect([...statuses].some((s) => s === 200 || s === 422), [...statuses].join(', ')).toBe(true);
  });

  it('renames (POST rename of a tenant and of an application) to hostile names', async () => {
    await fuzz(`admin API: POST rename body (${backend})`, fc.tuple(bodyOf(fc.record({ to: field(fc.oneof(nameLike, fc.constantFrom('system', 'admin', 'www', 'xn--a', 'ab--c', 'doors', 'web', 'spa', 'doors-r2', 'web-r2'))) }, { requiredKeys: [] })), fc.boolean()),
      async ([body, app]) => {
        const path = app ? routePath('renameApplication', { tenant: 'doors', application: 'web-r' }) : routePath('renameTenant', { tenant: 'doors-r' });
        const r = await send('POST', path, body);
        if (r.status === 200) {
          // Back to the fixture's name, so the next rename starts from it.
          const now = JSON.parse(r.text).name as string;
          const back = app ? routePath('renameApplication', { tenant: 'doors', application: now }) : routePath('renameTenant', { tenant: now });
          expect((await send('POST', back, JSON.stringify({ to: app ? 'web-r' : 'doors-r' }))).status).toBe(200);
        }
      }, 100);
  });

  it('assignment batches (POST assignments:batch) with hostile entries', async () => {
    await fuzz(`admin API: POST assignments:batch body (${backend})`, fc.tuple(bodies(assignmentBatchShape, fc.record({ add: fc.subarray(['u-alice', 'u-bob', 'u-carol']), remove: fc.subarray(['u-none', 'u-x']), managedBy: fc.constant('console') })), fc.constantFrom('web', 'spa', 'api', 'nope'), fc.boolean()), async ([body, application, dryRun]) => {
      await send('POST', `${routePath('changeAssignments', { tenant: 'doors', application })}${dryRun ? '?dryRun=true' : ''}`, body);
    }, 150);
  });

  it('SCIM token and console session bodies (POST) with hostile values', async () => {
    const scimToken = bodyOf(fc.record({ description: field(fc.string({ minLength: 1, maxLength: 200 })) }, { requiredKeys: [] }));
    const consoleSession = bodyOf(fc.record({ userId: field(idLike) }, { requiredKeys: [] }));
    await fuzz(`admin API: POST scim/tokens and console-sessions body (${backend})`, fc.oneof(scimToken.map((b) => ['scim', b] as const), consoleSession.map((b) => ['console', b] as const)),
      async ([door, body]) => {
        await send('POST', door === 'scim' ? routePath('createScimToken', { tenant: 'doors' }) : routePath('createConsoleSession', { tenant: 'doors' }), body);
      }, 150, [['scim', '{"description":"token for \u0000 the IdP"}']]); // found by this suite: NUL in a token's description was a 500 on PostgreSQL
  });

  it('hostile path parameters in every route, and paths that are junk throughout', async () => {
    const routes = Object.entries(ADMIN_ROUTES) as [string, RouteSpec][];
    const templated = fc.tuple(fc.constantFrom(...routes), fc.dictionary(fc.constantFrom('tenant', 'application', 'userId', 'group', 'tokenId', 'sessionId'), rawSegment, { minKeys: 1, maxKeys: 3 }), fc.option(fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD')))
      .map(([[name, route], junk, method]) => {
        const path = `/admin/v1${route.path.replace(/\{(\w+)\}/g, (_, p: string) => junk[p] ?? SEGMENT_NAMES[p]!)}`;
        return { name, method: method ?? route.method, path };
      })
      // The fixture's tenant itself is not deleted or renamed away (a junk parameter elsewhere leaves it named).
      .filter(({ name, path }) => !((name === 'deleteTenant' || name === 'renameTenant') && path.startsWith('/admin/v1/tenants/doors-p')));
    const junk = fc.tuple(fc.array(rawSegment, { minLength: 1, maxLength: 6 }), fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'))
      .map(([segments, method]) => ({ name: 'junk', method, path: `/admin/v1/${segments.join('/')}` }));
    const fixed = fc.constantFrom('/admin/v1/tenants/doors-p/../doors-p', '/admin/v1//tenants', '/admin/v1/tenants/doors-p/applications/web/assignments%3Abatch', '/admin/v1/tenants/doors-p/applications/web/assignments:batch:batch',
      '/admin/v1/openapi.json/..', '/admin/v1/%2e%2e/', '/admin%2fv1/tenants', '/admin/v1/tenants/doors-p%00', '/admin/v1/tenants/./doors-p', '/admin/v1/tenants/doors-p/', '/admin/v1/tenants/doors-p;x=1',
      '/admin/v1/tenants/system', '/admin/v1/tenants/system/users/admin', '/admin/v1/tenants/doors-p/keys/rotate/..', `/admin/v1/tenants/${'a'.repeat(20_000)}`, '/admin/v1/tenants/doors-p/users?', '//admin/v1/tenants')
      .map((path) => ({ name: 'fixed', method: 'GET', path }));
    await fuzz(`admin API: hostile path parameters (${backend})`, fc.tuple(fc.oneof({ weight: 6, arbitrary: templated }, { weight: 2, arbitrary: junk }, { weight: 1, arbitrary: fixed }), fc.constantFrom('{}', '{"displayName":"x"}', '')),
      async ([{ method, path }, body]) => {
        const r = await call(method, path, method === 'GET' || method === 'HEAD' || body === '' ? undefined : body);
        expectAdminAnswer(r, `${method} ${path}`, method);
      }, 300);
  });

  it('hostile query parameters: limit, cursor, q and dryRun', async () => {
    const paged = (Object.entries(ADMIN_ROUTES) as [string, RouteSpec][]).filter(([, r]) => r.query === 'page' || r.query === 'people');
    const VALID: Readonly<Record<string, string>> = {
      putTenant: '{"displayName":"doors-p","scopes":[{"name":"admin","description":"administer"}]}', putApplication: '{"kind":"api","identifier":"https://api.doors-p.test","scopes":["admin"]}',
      putUser: '{"email":"alice@doors-p.test","displayName":"alice","scopes":["admin"]}', putAssignment: '{}', putGroup: '{"displayName":"Staff","members":["u-alice","u-carol"]}',
      putGroupAssignment: '{}', changeAssignments: '{"add":["u-carol"]}', applyTenantBatch: '{"users":[]}', deleteUser: '', deleteAssignment: '', deleteGroupAssignment: '',
    };
    const dry = fc.constantFrom(...Object.keys(VALID)).map((name) => {
      const route = ADMIN_ROUTES[name as keyof typeof ADMIN_ROUTES] as RouteSpec;
      // Deletes aim at what is not there; the rest write what the fixture already holds.
      const path = `/admin/v1${route.path.replace(/\{(\w+)\}/g, (_, p: string) => (p === 'userId' && name.startsWith('delete') ? 'u-gone' : p === 'group' && name.startsWith('delete') ? 'g-gone' : p === 'application' && name === 'putApplication' ? 'api' : SEGMENT_NAMES[p]!))}`;
      return { method: route.method, path, body: VALID[name] === '' ? undefined : VALID[name] };
    });
    const page = fc.constantFrom(...paged).map(([, route]) => ({ method: 'GET', path: `/admin/v1${route.path.replace(/\{(\w+)\}/g, (_, p: string) => SEGMENT_NAMES[p]!)}`, body: undefined as string | undefined }));
    const statuses = new Set<number>();
    await fuzz(`admin API: query parameters limit, cursor, q, dryRun (${backend})`, fc.tuple(fc.oneof({ weight: 3, arbitrary: page }, { weight: 1, arbitrary: dry }), queryText), async ([{ method, path, body }, q]) => {
      const r = await call(method, `${path}?${q}`, body);
      statuses.add(r.status);
      expectAdminAnswer(r, `${method} ${path}?${q} ${body ?? ''}`, method);
    }, 300);
    expect([...statuses]).toEqual(expect.arrayContaining([200, 400]));
  });
});

// ------------------------------------------------------------------------------------------------
// The console.

/** The Browser of the server tests, remembering every cookie it was given (to send them over node:http later). */
class RecordingBrowser extends Browser {
  readonly cookies = new Map<string, string>();
  override async request(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await answered(`${init.method ?? 'GET'} ${url}`, () => super.request(url, { ...init, signal: init.signal ?? deadline() }));
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0]!;
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return res;
  }
}

function expectConsoleAnswer(r: Answer, input: string): void {
  expect(r.status, shown(input, r)).toBeLessThan(500);
  expect(r.text, shown(input, r)).not.toMatch(STACK_TRACE);
  // Errors raised before the console's own pages (a body too large to read) are the server's JSON error body.
  if (r.status >= 400 && /^application\/json/.test(String(r.headers['content-type']))) expect(isAdminErrorBody(r.text), shown(input, r)).toBe(true);
}

const KIND_FIELDS = ['name', 'displayName', 'origin', 'provider', 'callback', 'scopes', 'clientId', 'upstream', 'emailDomains', 'audience', 'offline', 'cacheType', 'routes', 'publicRoutes', 'pkce'];
const formKey = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KIND_FIELDS) },
  { weight: 2, arbitrary: fc.constantFrom('op', 'add', 'remove', 'q', 'csrf\u0000', 'CSRF', 'kind', 'redirectUris', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'name[]', 'a[b]', 'add[]', '', '&', '=', '%00', 'csrf\u0000') },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);
const formValue = fc.oneof(
  { weight: 4, arbitrary: hStr },
  { weight: 4, arbitrary: fc.constantFrom('', 'on', 'off', 'http://f.localhost:3000', 'https://f.example.com', 'http://127.0.0.1:8080', 'https://api.cons.test', 'api', 'web', 'spa', 'gitapp',
    'openid profile email', 'openid admin', '/admin admin\n/x', '/a\r\n/b nope', 'in_memory', 'session_storage', 'required', 'optional', '*', 'example.com', '/hello', 'f-app', 'F App',
    'add:u-alice', 'add:u-bob', 'remove:u-carol', 'undo-add:u-bob', 'undo-remove:u-carol', 'add:', 'add:u\u0000', 'remove:../x', 'save', 'propose', 'search', 'u-alice', 'u-bob', 'u-carol', 'u-none') },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(100_000), `${'/a admin\n'.repeat(5000)}`, `${'a '.repeat(20_000)}`, `${'http://f.localhost:3000 '.repeat(2000)}`) },
);
/** A plausible form of each kind, which generated fields then add to, repeat or override. */
const BASE_FORMS: Readonly<Record<string, readonly (readonly [string, string])[]>> = {
  web: [['name', 'f-web'], ['origin', 'http://f.localhost:3000']],
  proxy: [['name', 'f-proxy'], ['origin', 'http://p.localhost:4180'], ['upstream', 'http://127.0.0.1:8080']],
  spa: [['name', 'f-spa'], ['origin', 'http://s.localhost:5173'], ['audience', 'api'], ['offline', 'on']],
  api: [['name', 'f-api'], ['audience', 'https://f-api.cons.test'], ['routes', '/admin admin']],
};
type CsrfUse = 'valid' | 'missing' | 'twice' | 'wrong' | 'last';
/** Weighted choices: mostly what a browser sends (so forms get past the CSRF check to the handlers), sometimes not. */
const weighted = <T>(...choices: readonly (readonly [number, T])[]) => fc.oneof(...choices.map(([weight, v]) => ({ weight, arbitrary: fc.constant(v) })));
const formInput = fc.record({
  base: fc.boolean(),
  fields: fc.oneof({ weight: 1, arbitrary: fc.constant([] as [string, string][]) }, { weight: 3, arbitrary: fc.array(fc.tuple(formKey, formValue), { maxLength: 8 }) }),
  csrf: weighted<CsrfUse>([16, 'valid'], [2, 'last'], [1, 'missing'], [1, 'twice'], [1, 'wrong']),
  encode: weighted([3, 'form'], [1, 'raw']),
  raw: fc.option(fc.constantFrom('&&', '&=', '&=&', '&%zz=%zz', '&%E0%A4%A=1', '&a=%', '&+=+', '&a[b]=1', '&a[b][c][d]=1', `&${'add=u-alice&'.repeat(1500)}`), { nil: undefined, freq: 3 }),
  contentType: weighted([24, 'application/x-www-form-urlencoded'], [2, 'application/x-www-form-urlencoded; charset=utf-8'], [1, 'application/x-www-form-urlencoded; charset=utf-16'],
    [1, 'application/x-www-form-urlencoded; charset=bogus'], [1, 'application/json'], [1, 'text/plain'], [1, 'multipart/form-data; boundary=x'], [1, '']),
  origin: weighted<string | undefined>([12, undefined], [2, 'self'], [1, 'null'], [1, 'http://evil.test']),
});

type FormInput = typeof formInput extends fc.Arbitrary<infer F> ? F : never;

describe('the console never answers a 5xx or shows a stack trace, whatever its forms and pages are sent', () => {
  const TENANT = 'cons';
  let server: Awaited<ReturnType<typeof testServer>>;
  let host: string;
  let origin: string;
  let session: { cookie: string; csrf: string };

  /** Signs in to the console as alice (tenant admin): OpenID Connect against the tenant, password on its sign-in page. */
  async function signIn(): Promise<{ cookie: string; csrf: string }> {
    const browser = new RecordingBrowser();
    const never = 'never:';
    const start = await browser.follow(`${origin}/console/`, never);
    if (start.html === undefined) throw new Error(`no sign-in page at ${start.url}`);
    const done = await browser.submit(start.url, start.html, '/login', { email: `alice@${TENANT}.test`, password: PASSWORD }, never);
    const csrf = /name="csrf" value="([^"]+)"/.exec(done.html ?? '')?.[1];
    const sid = browser.cookies.get('idforge_console');
    if (csrf === undefined || sid === undefined || sid === '') throw new Error(`console sign-in did not complete at ${done.url} (${done.response?.status}):\n${done.html?.slice(0, 2000)}`);
    return { cookie: `idforge_console=${sid}`, csrf };
  }

  const consoleCall = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
    exchange(server.port, { method, host, path, body, headers: { cookie: session.cookie, ...headers } });

  beforeAll(async () => {
    server = await testServer();
    host = `${TENANT}.localhost:${server.port}`;
    origin = `http://${host}`;
    const admin = await adminClient(server);
    // alice holds the tenant's admin scope and has a password; web and spa are the console's to edit, gitapp is Git's (managedBy idforge).
    await fixtureTenant(admin, TENANT);
    await admin.put(`/admin/v1/tenants/${TENANT}/applications/gitapp`, { kind: 'web', clientId: 'cons-gitapp', redirectUris: ['https://git.cons.test/connect/cons/callback'], managedBy: 'idforge' });
    session = await signIn();
    // The session works: the Integrations page lists the fixture's applications.
    const home = await consoleCall('GET', '/console/');
    expect(home.status, home.text.slice(0, 500)).toBe(200);
    expect(home.text).toContain('gitapp');
  });
  afterAll(async () => {
    await server?.dispose();
  });

  /** The generated form as a request body and headers (the CSRF token used as the input says). */
  function form(input: FormInput, base: readonly (readonly [string, string])[] = []) {
    const pairs: [string, string][] = [...(input.base ? base : []).map(([k, v]) => [k, v] as [string, string]), ...input.fields];
    const csrf: [string, string][] = { valid: [['csrf', session.csrf]], missing: [], twice: [['csrf', session.csrf], ['csrf', session.csrf]], wrong: [['csrf', `${session.csrf.slice(0, -1)}A`]], last: [] }[input.csrf] as [string, string][];
    const all = [...csrf, ...pairs, ...(input.csrf === 'last' ? [['csrf', session.csrf] as [string, string]] : [])];
    const encoded = input.encode === 'form'
      ? new URLSearchParams(all).toString()
      : all.map(([k, v]) => `${k.replace(/[^\x21-\x7e]/g, (c) => pct(c))}=${v.replace(/[^\x21-\x7e]/g, (c) => pct(c))}`).join('&');
    const headers: Record<string, string> = { 'content-type': input.contentType, ...(input.origin === undefined ? {} : { origin: input.origin === 'self' ? origin : input.origin }) };
    if (input.contentType === '') delete headers['content-type'];
    return { body: encoded + (input.raw ?? ''), headers };
  }

  it('Marketplace forms (POST /console/marketplace/<kind>)', async () => {
    const statuses = new Set<number>();
    let made = 0;
    let created = 0;
    await fuzz('console: POST /console/marketplace/<kind> form', fc.tuple(fc.constantFrom('web', 'proxy', 'spa', 'api', 'nope', 'WEB', '%00', '..', '%zz', 'web%2F..'), formInput), async ([kind, input]) => {
      // Each plausible form names a new application, so it can be created (a name taken is refused at the field).
      const base = (BASE_FORMS[kind] ?? []).map(([k, v]) => [k, k === 'name' ? `${v}-${++made}` : v] as const);
      const { body, headers } = form(input, base);
      const path = `/console/marketplace/${kind}`;
      const r = await consoleCall('POST', path, body, headers);
      statuses.add(r.status);
      if (r.status === 303 && /^\/console\/applications\/[^/]+\/created$/.test(String(r.headers.location))) created++;
      expectConsoleAnswer(r, `POST ${path} ${JSON.stringify(headers)} ${body}`);
    }, 150);
    // Forms reach the model's validation (400 with field errors) and some create an application (303 to the page that shows its secrets once).
    expect([...statuses]).toContain(400);
    expect(created).toBeGreaterThan(0);
  });

  it('application forms (POST /console/applications/<app>)', async () => {
    await fuzz('console: POST /console/applications/<app> form', fc.tuple(fc.constantFrom('web', 'spa', 'api', 'gitapp', 'nope', '%zz', 'a'.repeat(70), '..', 'web%00'), formInput), async ([app, input]) => {
      const base = app === 'api' ? BASE_FORMS.api! : app === 'spa' ? BASE_FORMS.spa! : BASE_FORMS.web!;
      const { body, headers } = form(input, base.filter(([k]) => k !== 'name'));
      const path = `/console/applications/${app}`;
      const r = await consoleCall('POST', path, body, headers);
      expectConsoleAnswer(r, `POST ${path} ${JSON.stringify(headers)} ${body}`);
    }, 150);
  });

  it('Users tab forms (POST /console/applications/<app>/users)', async () => {
    const usersFields = fc.array(fc.tuple(fc.constantFrom('op', 'op', 'op', 'add', 'add', 'remove', 'q', 'add[]'), formValue), { maxLength: 8 });
    await fuzz('console: POST /console/applications/<app>/users form', fc.tuple(fc.constantFrom('web', 'spa', 'gitapp', 'api', 'nope', '%E0%A4%A'), formInput, usersFields), async ([app, input, fields]) => {
      const { body, headers } = form({ ...input, fields: [...fields, ...input.fields.slice(0, 2)] });
      const path = `/console/applications/${app}/users`;
      const r = await consoleCall('POST', path, body, headers);
      expectConsoleAnswer(r, `POST ${path} ${JSON.stringify(headers)} ${body}`);
    }, 150);
  });

  it('pages with hostile query strings (and the sign-in callback with the real state and junk beside it)', async () => {
    const pages = fc.constantFrom('/console/', '/console', '/console/marketplace', '/console/marketplace/web', '/console/marketplace/%00', '/console/applications/web', '/console/applications/gitapp',
      '/console/applications/api', '/console/applications/web/users', '/console/applications/spa/users', '/console/applications/%zz', '/console/applications/%E0%A4%A/users',
      '/console/login', '/console/signed-out', '/console/callback', '/console/static/console.css', '/console/nope/..', '/console/..%2f..%2fadmin/v1', `/console/${'a'.repeat(10_000)}`);
    const param = fc.tuple(fc.constantFrom('done', 'saved', 'returnTo', 'prompt', 'q', 'code', 'state', 'iss', 'error', 'error_description', 'session_state', 'saved[]', 'done[a]', '__proto__', ''),
      fc.oneof(hStr, numberish, fc.constantFrom('created', 'saved', '1', 'login', '/console/', '//evil.test', '/console/../admin', 'https://evil.test', '/console/%2e%2e/x', 'access_denied')));
    const cookie = fc.constantFrom('session', 'session', 'session', 'none', 'junk');
    await fuzz('console: GET pages with hostile query strings', fc.tuple(pages, fc.array(param, { maxLength: 5 }), fc.boolean(), cookie, fc.boolean()), async ([page, params, encode, jar, withLogin]) => {
      let q = params.map(([k, v]) => `${pct(k)}=${encode ? pct(v) : v.replace(/[^\x21-\x7e]/g, (c) => pct(c)).replace(/[#&]/g, (c) => pct(c))}`).join('&');
      let cookieHeader = jar === 'session' ? session.cookie : jar === 'junk' ? `idforge_console=${'A'.repeat(300)}; idforge_console_login=%zz` : '';
      if (page === '/console/callback' && withLogin) {
        // A sign-in in progress: its cookie and its state, then the generated junk (a code that was never issued, another issuer, an error).
        const login = await consoleCall('GET', '/console/login');
        const state = new URL(String(login.headers.location)).searchParams.get('state') ?? '';
        const loginCookie = (login.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]!).find((c) => c.startsWith('idforge_console_login='))!;
        cookieHeader = [cookieHeader, loginCookie].filter((c) => c !== '').join('; ');
        q = `state=${encodeURIComponent(state)}&${q}`;
      }
      const path = `${page}?${q}`;
      const r = await exchange(server.port, { method: 'GET', host, path, headers: cookieHeader === '' ? {} : { cookie: cookieHeader } });
      expectConsoleAnswer(r, `GET ${path} (cookie: ${jar}${withLogin ? ', sign-in in progress' : ''})`);
    }, 200);
  });

  it('sign-out forms (POST /console/logout)', async () => {
    let signedOut = 0;
    await fuzz('console: POST /console/logout form', formInput, async (input) => {
      const { body, headers } = form(input);
      const r = await consoleCall('POST', '/console/logout', body, headers);
      expectConsoleAnswer(r, `POST /console/logout ${JSON.stringify(headers)} ${body}`);
      if (r.status === 303) {
        // Signed out: the next form needs a new session.
        signedOut++;
        session = await signIn();
      }
    }, 40);
    expect(signedOut).toBeGreaterThan(0);
  });
});
