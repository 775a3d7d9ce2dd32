/**
 * The findings of the hostile-input review (issue "Hostile input at the new doors"), each one tried
 * again at the real HTTP door of a real server and refused or answered within its bound. A hang is
 * a failure: every request carries a deadline (AbortSignal.timeout) that fails the test.
 *
 * 1. a short SCIM filter (and PATCH path) that froze a process;
 * 2. console sign-out that did not end the session: test/console/console.test.ts, in Chromium
 *    ("signs out: ..."), and here the session's end through the admin API when the user is disabled;
 * 3. a 500 on a huge startIndex;
 * 4. `?done=` text shown as the console's notice: test/console/console.test.ts, in Chromium;
 * 5. lockout of a SCIM token by anyone who knows its visible id;
 * 6. the SCIM rate counted per process instead of per token;
 * 7. reserved tenant names at creation and rename; SCIM errors that echo input;
 * 8. a wrapper that did not pass signals on; a malformed master key file with a stack trace;
 * 9. dev binds on every interface: the generated proxy config here, the templates in test/e2e.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileClientArtifacts } from '../../src/generators/index.ts';
import { validateSources } from '../../src/schema/index.ts';
import { fixedSecrets } from '../support/model.ts';
import { adminClient, localhostFetch, testServer, type AdminClient } from '../server/_support.ts';
import { REPO_ROOT, freePort, runToCompletion, startProcess, waitForPort } from '../support/processes.ts';
import { GROUP, PATCH_OP, USER, scimClient, scimTenant, scimUser, type ScimClient } from '../scim/_support.ts';

/** Every request's deadline: far above what any of these takes, far below a frozen process. */
const DEADLINE_MS = 10_000;

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let scim: ScimClient;
let token: string;
let tokenId: string;

beforeAll(async () => {
  // One proxy in front (its X-Forwarded-For entry is believed), so two client addresses can be played.
  server = await testServer({ trustedProxies: 1, scim: { requestsPerSecond: 1e6, burst: 1e6 } });
  admin = await adminClient(server);
  ({ scim, token, tokenId } = await scimTenant(admin, server, 'hostile'));
});
afterAll(async () => {
  await server?.dispose();
});

const timed = { signal: () => AbortSignal.timeout(DEADLINE_MS) };
async function scimCall(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await localhostFetch(`${scim.base}${path}`, {
    method, signal: timed.signal(),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('1. SCIM filters and PATCH paths are read in linear time', () => {
  it('an unterminated string of many line breaks is refused at once, in a filter and in a PATCH path, and the process keeps serving', async () => {
    const breaks = `userName eq "${'\n'.repeat(5000)}`;
    const r = await scimCall('GET', `/Users?filter=${encodeURIComponent(breaks.slice(0, 2000))}`);
    expect(r.status).toBe(400);
    expect(r.body.scimType).toBe('invalidFilter');
    expect(r.body.detail).toContain('unterminated string');
    const user = await scimCall('POST', '/Users', scimUser('freeze', 'freeze@hostile.test'));
    const p = await scimCall('PATCH', `/Users/${user.body.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: `emails[type eq "${'\n'.repeat(1900)}].value`, value: 'x@y.test' }] });
    expect(p.status).toBe(400);
    expect(p.body.scimType).toBe('invalidPath');
    // The same shape that tokenized in 2^n steps, at every length up to the limit, all refused.
    for (const n of [28, 40, 100, 2000 - 16]) {
      const f = await scimCall('GET', `/Users?filter=${encodeURIComponent(`userName eq "${'\n'.repeat(n)}`)}`);
      expect(f.status, `${n} line breaks`).toBe(400);
    }
    expect((await scimCall('GET', '/Users?filter=userName%20eq%20%22freeze%22')).body.totalResults).toBe(1);
  });

  it('deep nesting is refused with a reason, not a stack overflow', async () => {
    for (const f of ['('.repeat(1000) + 'userName pr' + ')'.repeat(1000), 'not '.repeat(500) + 'userName pr', `emails[${'('.repeat(600)}value pr${')'.repeat(600)}]`]) {
      const r = await scimCall('GET', `/Users?filter=${encodeURIComponent(f)}`);
      expect(r.status).toBe(400);
      expect(r.body.detail).toMatch(/nested more than 32 deep|longer than/);
    }
  });
});

describe('2. console sessions end on the server', () => {
  it("disabling a user ends their console session; the session's id answers 403 once and then is gone", async () => {
    await admin.put('/admin/v1/tenants/hostile/users/u-root', { email: 'root@hostile.test', scopes: ['admin'] }).catch(() => undefined);
    await admin.typed.call('putTenant', { tenant: 'hostile' }, { body: { displayName: 'hostile Inc.', scopes: [{ name: 'admin' }] } });
    await admin.typed.call('putUser', { tenant: 'hostile', userId: 'u-root' }, { body: { email: 'root@hostile.test', scopes: ['admin'] } });
    const s = await admin.typed.call('createConsoleSession', { tenant: 'hostile' }, { body: { userId: 'u-root' } });
    expect(await admin.typed.find('getConsoleSession', { tenant: 'hostile', sessionId: s.id })).toMatchObject({ userId: 'u-root', email: 'root@hostile.test' });
    await admin.typed.call('putUser', { tenant: 'hostile', userId: 'u-root' }, { body: { email: 'root@hostile.test', scopes: ['admin'], disabled: true } });
    expect(await admin.typed.find('getConsoleSession', { tenant: 'hostile', sessionId: s.id })).toBeUndefined();
    // Sign-out ends it too; a user without the admin scope never gets one.
    await admin.typed.call('putUser', { tenant: 'hostile', userId: 'u-root' }, { body: { email: 'root@hostile.test', scopes: ['admin'] } });
    const t = await admin.typed.call('createConsoleSession', { tenant: 'hostile' }, { body: { userId: 'u-root' } });
    await admin.typed.call('deleteConsoleSession', { tenant: 'hostile', sessionId: t.id });
    expect(await admin.typed.find('getConsoleSession', { tenant: 'hostile', sessionId: t.id })).toBeUndefined();
    await admin.typed.call('putUser', { tenant: 'hostile', userId: 'u-plain' }, { body: { email: 'plain@hostile.test' } });
    await expect(admin.typed.call('createConsoleSession', { tenant: 'hostile' }, { body: { userId: 'u-plain' } })).rejects.toMatchObject({ status: 403 });
  });

  it('a session belongs to one incarnation of its tenant: deleted and made again under the same name, the tenant knows none of the old sessions', async () => {
    await admin.typed.call('putTenant', { tenant: 'reborn' }, { body: { displayName: 'Reborn', scopes: [{ name: 'admin' }] } });
    await admin.typed.call('putUser', { tenant: 'reborn', userId: 'u-a' }, { body: { email: 'a@reborn.test', scopes: ['admin'] } });
    const s = await admin.typed.call('createConsoleSession', { tenant: 'reborn' }, { body: { userId: 'u-a' } });
    await admin.typed.call('deleteTenant', { tenant: 'reborn' });
    await admin.typed.call('putTenant', { tenant: 'reborn' }, { body: { displayName: 'Reborn', scopes: [{ name: 'admin' }] } });
    await admin.typed.call('putUser', { tenant: 'reborn', userId: 'u-a' }, { body: { email: 'a@reborn.test', scopes: ['admin'] } });
    expect(await admin.typed.find('getConsoleSession', { tenant: 'reborn', sessionId: s.id })).toBeUndefined();
  });
});

describe('3. list parameters of any size', () => {
  it('a startIndex or count beyond any integer storage holds is a page, not a 500', async () => {
    for (const q of ['startIndex=100000000000000000000', 'startIndex=9223372036854775808&count=9223372036854775808', 'count=-100000000000000000000', `startIndex=${'9'.repeat(400)}`]) {
      const r = await scimCall('GET', `/Users?${q}`);
      expect(r.status, q).toBe(200);
      expect(r.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:ListResponse']);
    }
    const huge = await scimCall('GET', '/Users?startIndex=100000000000000000000');
    expect(huge.body.Resources ?? []).toEqual([]);
    // Not a number at all is a 400 that says so.
    expect((await scimCall('GET', '/Users?startIndex=1e3')).status).toBe(400);
  });
});

describe('5. guessing a SCIM token cannot lock out its holder', () => {
  it("five wrong secrets under the token's id from one address lock that address's tries, not the holder's", async () => {
    const attacker = { 'x-forwarded-for': '203.0.113.9' };
    const holder = { 'x-forwarded-for': '198.51.100.7' };
    const forged = `scim.${tokenId}.${'A'.repeat(43)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await localhostFetch(`${scim.base}/Users`, { signal: timed.signal(), headers: { authorization: `Bearer ${forged}`, ...attacker } });
      statuses.push(r.status);
    }
    // Refused, then held back (backoff, then lockout) as the sign-in's own defence holds guessers.
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.at(-1)).toBe(429);
    const real = await localhostFetch(`${scim.base}/Users`, { signal: timed.signal(), headers: { authorization: `Bearer ${token}`, ...holder } });
    expect(real.status).toBe(200);
  });
});

describe('7. names and echoes', () => {
  it('one reserved-name rule at creation and at rename, at the admin API and in the model', async () => {
    for (const name of ['xn--80ak6aa92e', 'ab--cd', 'localhost', 'admin', 'www', 'system']) {
      const created = await admin.call('PUT', `/admin/v1/tenants/${name}`, { displayName: 'x' });
      expect(created.status, name).toBeGreaterThanOrEqual(400);
      expect(created.status, name).toBeLessThan(500);
      const renamed = await admin.call('POST', '/admin/v1/tenants/hostile/rename', { to: name });
      expect(renamed.status, `rename to ${name}`).toBeGreaterThanOrEqual(400);
      expect(renamed.status, `rename to ${name}`).toBeLessThan(500);
      const batch = await admin.call('POST', `/admin/v1/tenants/${name}/batch`, { tenant: { displayName: 'x' } });
      expect(batch.status, `batch creating ${name}`).toBeGreaterThanOrEqual(400);
      expect(batch.status, `batch creating ${name}`).toBeLessThan(500);
    }
    expect(await admin.typed.find('getTenant', { tenant: 'hostile' })).toBeDefined();
    const r = validateSources([{ file: 'model.yaml', content: 'tenants:\n  - { name: xn--80ak6aa92e, displayName: X }\n  - { name: localhost, displayName: Y }\n' }]);
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.problems.map((p) => `${p.code} ${p.path.join('.')}`)).toEqual(['reserved-name tenants.0.name', 'reserved-name tenants.1.name']);
  });

  it('SCIM errors quote at most a short, escaped excerpt of what was sent', async () => {
    const payload = `<script>alert(1)</script>\n${'x'.repeat(1500)}`;
    const answers = [
      await scimCall('GET', `/Users?filter=${encodeURIComponent(`${payload} eq "a"`)}`),
      await scimCall('GET', `/Users?filter=${encodeURIComponent(`userName eq "a" ${payload}`)}`),
      await scimCall('GET', `/Users?sortBy=${encodeURIComponent(payload)}`),
      await scimCall('POST', '/Users', { schemas: [USER], userName: 'e', emails: [{ value: 'e@hostile.test' }], [payload]: 1 }),
      await scimCall('POST', '/Groups', { schemas: [GROUP, payload], displayName: 'g' }),
      await scimCall('GET', `/Users/${encodeURIComponent(payload)}`),
    ];
    for (const a of answers) {
      expect(a.status).toBe(a.body.status === '404' ? 404 : 400);
      expect(a.body.detail.length, a.body.detail).toBeLessThan(400);
      expect(a.body.detail).not.toContain('\n');
      expect(a.body.detail).not.toContain('x'.repeat(100));
    }
  });
});

describe('8. signals and start-up', () => {
  it('a wrapper passes SIGTERM on: the real server drains and stops, frees its port, and the wrapper ends as it did', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idforge-signal-'));
    try {
      const port = await freePort();
      // bin/run.js runs its command as a stand-in, the same code that re-runs every entry point under Node 24.
      const wrapper = startProcess('signal-wrapper', process.execPath, [join(REPO_ROOT, 'bin', 'run.js'), process.execPath, join(REPO_ROOT, 'bin', 'idforge.js'),
        'serve', '--data-dir', dir, '--port', String(port), '--workers', '1'], { cwd: REPO_ROOT });
      await waitForPort(port, { process: wrapper, timeoutMs: 60_000 });
      process.kill(wrapper.pid, 'SIGTERM');
      const how = await Promise.race([wrapper.exited, new Promise((r) => setTimeout(() => r('still running'), DEADLINE_MS))]);
      // The server's own end, passed through: a clean shutdown on SIGTERM exits 0.
      expect(how).toBe(0);
      expect(wrapper.output()).not.toContain('still running');
      // The port is free again: the server itself has ended, not only the wrapper.
      const again = startProcess('signal-port-check', process.execPath, ['-e', `require('net').createServer().listen(${port}, '127.0.0.1', function () { console.log('bound'); this.close(); })`]);
      expect(await again.exited).toBe(0);
      expect(again.output()).toContain('bound');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('a malformed master key file is one clear line and exit 1, never a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idforge-badkey-'));
    try {
      const keyFile = join(dir, 'master.key');
      writeFileSync(keyFile, 'not a key at all\n');
      const r = await runToCompletion('badkey', process.execPath, [join(REPO_ROOT, 'bin', 'idforge.js'), 'serve', '--data-dir', join(dir, 'data'), '--port', '0', '--master-key-file', keyFile, '--workers', '1'], { allowFailure: true });
      expect(r.code).toBe(1);
      const lines = r.output.trim().split('\n');
      expect(lines, r.output).toHaveLength(1);
      expect(lines[0]).toContain('master key');
      expect(lines[0]).toContain('malformed');
      expect(r.output).not.toMatch(/\n\s+at /);
      const dirAsKey = await runToCompletion('dirkey', process.execPath, [join(REPO_ROOT, 'bin', 'idforge.js'), 'serve', '--data-dir', join(dir, 'data'), '--port', '0', '--master-key-file', dir, '--workers', '2'], { allowFailure: true });
      expect(dirAsKey.code).toBe(1);
      expect(dirAsKey.output.trim().split('\n'), dirAsKey.output).toHaveLength(1);
      expect(dirAsKey.output).toContain('cannot be read');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('every request has a time budget', () => {
  it('a request whose body never finishes is answered 503 with Retry-After once its budget runs out, and the server goes on', async () => {
    const slow = await testServer({ requestTimeoutSeconds: 1 });
    try {
      const { request } = await import('node:http');
      const answer = await new Promise<{ status: number; retryAfter: unknown; body: string }>((resolveAnswer, reject) => {
        const req = request({
          host: '127.0.0.1', port: slow.port, method: 'POST', path: '/oauth2/token',
          headers: { host: `system.localhost:${slow.port}`, 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000' },
        }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => { body += c.toString(); });
          res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
        });
        req.setTimeout(DEADLINE_MS, () => reject(new Error('hang: no answer within the deadline')));
        req.on('error', reject);
        req.write('grant_type=client_credentials&client_id=');
      });
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('1');
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'temporarily_unavailable' });
      expect((await localhostFetch(`${slow.url}/healthz`, { signal: timed.signal() })).status).toBe(200);
    } finally {
      await slow.dispose();
    }
  });
});

describe('9. where generated configurations listen', () => {
  it("oauth2-proxy listens on loopback for a local origin, and the production config says where to bind", async () => {
    const model = (origin: string, upstream: string, base: string, scheme: string) => `server: { baseDomain: ${base}, scheme: ${scheme} }
tenants:
  - name: acme
    displayName: Acme
    applications:
      - { name: wiki, kind: proxy, origin: "${origin}", upstream: "${upstream}" }
`;
    const envOf = (text: string) => {
      const r = validateSources([{ file: 'model.yaml', content: text }]);
      if (!r.ok) throw new Error(JSON.stringify(r.problems));
      return compileClientArtifacts(r.model, fixedSecrets(r.model)).find((f) => f.path.endsWith('oauth2-proxy.env'))!.content;
    };
    const dev = envOf(model('http://wiki.localhost:4180', 'http://127.0.0.1:4181', 'localhost', 'http'));
    expect(dev).toMatch(/^OAUTH2_PROXY_HTTP_ADDRESS=127\.0\.0\.1:4180$/m);
    const prod = envOf(model('https://wiki.example.com', 'http://wiki-app:8080', 'id.example.com', 'https'));
    expect(prod).toMatch(/^OAUTH2_PROXY_HTTP_ADDRESS=0\.0\.0\.0:443$/m);
    expect(prod).toContain('# OAUTH2_PROXY_HTTP_ADDRESS is where the proxy listens');
  });
});
