/**
 * Hostile input, timed (issue "Hostile input at the new doors"): how long the server takes to refuse
 * what froze it before, at the real HTTP door, beside the bound each must stay under. Prints figures;
 * never fails a build.
 *
 *   node bin/run.js tsx bench/security/hostile.ts
 *
 * Rows:
 * - the SCIM filter reader on an unterminated string of n line breaks (n up to the 2,048-character
 *   limit), in a filter and in a PATCH path, through HTTP: target under 50 ms at every n (linear);
 * - the same strings through scim2-parse-filter 0.2.10's tokenizer pattern, in this process, for
 *   small n only (it doubles per line break: the figure that made the issue);
 * - deep nesting (parentheses, `not`, value filters) up to the limit: refused, target under 50 ms;
 * - a request over its time budget: answered 503 with Retry-After within the budget (--request-timeout).
 */
import '../_setup.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../src/server/index.ts';
import { localhostFetch } from '../../src/admin-client/index.ts';
import { AdminClient, endpointFromCredentials } from '../../src/admin-client/index.ts';
import { scimBaseUrl } from '../../src/contract/index.ts';
import { setupCheck, setupStep } from '../_setup.ts';

const ms = (t0: number) => performance.now() - t0;
const fmt = (x: number) => `${x.toFixed(1)} ms`;
const row = (what: string, figure: string, target: string, met: boolean) => console.log(`${what.padEnd(72)} ${figure.padStart(12)}   target ${target} ${met ? 'met' : 'MISSED'}`);

// scim2-parse-filter 0.2.10's tokenizer pattern, as published (src/parser.ts), for the comparison row.
const OLD_TOKENIZER = /^(?:(\s+)|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![-\w._:\/\)\s]))|("(?:[^"\\]|\\.|\n)*")|([[()]|]\.?)|(\w[-\w._:\/%]*))/;

const dir = mkdtempSync(join(tmpdir(), 'idforge-bench-hostile-'));
const server = await setupStep('start the server', () => startServer({ dataDir: dir, port: 0, log: () => {}, scim: { requestsPerSecond: 1e6, burst: 1e6 } }));
try {
  const admin = new AdminClient(endpointFromCredentials(server.adminCredentials));
  await setupStep('make the tenant', () => admin.call('putTenant', { tenant: 'bench' }, { body: { displayName: 'Bench' } }));
  const token = (await setupStep('make a SCIM token', () => admin.call('createScimToken', { tenant: 'bench' }, { body: {} }))).token;
  const base = scimBaseUrl(server.address, 'bench');
  const scim = async (method: string, path: string, body?: unknown) => {
    const t0 = performance.now();
    const r = await localhostFetch(`${base}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    await r.text();
    return { status: r.status, ms: ms(t0) };
  };
  const user = await localhostFetch(`${base}/Users`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
    body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'b', emails: [{ value: 'b@bench.test', primary: true }] }),
  });
  setupCheck(user.status === 201, 'make a SCIM user', `HTTP ${user.status}`);
  const id = ((await user.json()) as { id: string }).id;

  console.log('SCIM filters and PATCH paths: an unterminated string of n line breaks, at the HTTP door (refused 400)');
  for (const n of [28, 40, 100, 500, 2000 - 16]) {
    const f = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${'\n'.repeat(n)}`)}`);
    row(`filter, n = ${n} (HTTP ${f.status})`, fmt(f.ms), '< 50 ms', f.status === 400 && f.ms < 50);
    const p = await scim('PATCH', `/Users/${id}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: `emails[type eq "${'\n'.repeat(n)}].value`, value: 'x@y.test' }] });
    row(`PATCH path, n = ${n} (HTTP ${p.status})`, fmt(p.ms), '< 50 ms', p.status === 400 && p.ms < 50);
  }
  console.log('\nThe same strings through scim2-parse-filter 0.2.10\'s tokenizer pattern (in process; doubles per line break)');
  for (const n of [16, 18, 20, 22]) {
    const t0 = performance.now();
    OLD_TOKENIZER.exec(`"${'\n'.repeat(n)}`);
    const t = ms(t0);
    row(`old tokenizer, n = ${n}`, fmt(t), 'none (shown for comparison)', true);
  }
  console.log('\nDeep nesting, refused with a reason');
  for (const [what, f] of [['1,000 parentheses', `${'('.repeat(1000)}userName pr${')'.repeat(1000)}`], ['500 nots', `${'not '.repeat(500)}userName pr`]] as const) {
    const r = await scim('GET', `/Users?filter=${encodeURIComponent(f)}`);
    row(`${what} (HTTP ${r.status})`, fmt(r.ms), '< 50 ms', r.status === 400 && r.ms < 50);
  }
  console.log('\nList parameters of any size');
  const big = await scim('GET', '/Users?startIndex=100000000000000000000');
  row(`startIndex=1e20 (HTTP ${big.status})`, fmt(big.ms), '200, < 50 ms', big.status === 200 && big.ms < 50);
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}

// A request over its time budget: a server with a 1 s budget, and a request body that never finishes.
const dir2 = mkdtempSync(join(tmpdir(), 'idforge-bench-budget-'));
const slow = await setupStep('start a server with a 1 s budget', () => startServer({ dataDir: dir2, port: 0, log: () => {}, requestTimeoutSeconds: 1 }));
try {
  const { request } = await import('node:http');
  const t0 = performance.now();
  const answer = await new Promise<{ status: number; retryAfter: string | undefined }>((resolveAnswer, reject) => {
    // The system tenant's token endpoint reads the body before it can answer anything.
    const req = request({ host: '127.0.0.1', port: slow.port, method: 'POST', path: '/oauth2/token', headers: { host: `system.localhost:${slow.port}`, 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000' } }, (res) => {
      res.resume();
      resolveAnswer({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined });
    });
    req.on('error', reject);
    req.write('grant_type=client_credentials&client_id=');
  });
  const t = ms(t0);
  console.log('\nTime budget');
  row(`a body that never finishes, budget 1 s (HTTP ${answer.status}, Retry-After ${answer.retryAfter ?? '-'})`, fmt(t), '503 within 1.5 s', answer.status === 503 && t < 1500);
} finally {
  await slow.close();
  rmSync(dir2, { recursive: true, force: true });
}
