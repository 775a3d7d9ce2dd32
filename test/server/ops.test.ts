/**
 * What operators and platforms ask of a running server: liveness and readiness on the base host,
 * Prometheus metrics (requests by route and status, grants by type, sign-in outcomes, tenants),
 * a request id on every response and in every log line written for the request, and a shutdown
 * that stops accepting but lets requests in flight finish.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAdminToken, endpointFromCredentials } from '../../src/admin-client/index.ts';
import { jsonLogLine } from '../../src/server/index.ts';
import { Browser, PASSWORD, adminClient, authorize, fixtureTenant, localhostFetch, relyingParty, testServer } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
const lines: string[] = [];
beforeAll(async () => {
  server = await testServer({ log: (l) => lines.push(jsonLogLine(l)), login: { backoffBaseMs: 0 } });
});
afterAll(async () => {
  await server?.dispose();
});

const metric = (text: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('health, readiness, metrics', () => {
  it('/healthz is live, /readyz names its checks, and both are only on the base host', async () => {
    expect(await (await localhostFetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await localhostFetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { storage: 'ok', writes: 'ok', changes: 'ok', keys: 'ok' } });
    // A tenant host has no such route: health is the operator's, not a tenant's.
    expect((await localhostFetch(`${server.issuer('system').replace('/oauth2/', '')}/readyz`)).status).toBe(404);
    expect((await localhostFetch(`${server.url}/healthz`, { method: 'POST' })).status).toBe(405);
    // A host that is no tenant's (a kubelet probe or a scrape by pod IP) gets them too.
    expect((await localhostFetch(`http://127.0.0.1:${server.port}/readyz`)).status).toBe(200);
  });

  it('/metrics counts requests by route and status, grants by type and outcome, sign-ins by outcome, and tenants', async () => {
    const admin = await adminClient(server);
    const f = await fixtureTenant(admin, 'metrics');
    await fetchAdminToken(endpointFromCredentials(server.adminCredentials));
    // A person signs in once with a wrong password, then with the right one.
    const web = await relyingParty(server.issuer('metrics'), f.web.clientId, f.web.clientSecret);
    const browser = new Browser();
    await authorize(web, browser, f.web.redirectUri, { email: f.users.alice.email, password: 'not the password' }).catch(() => undefined);
    await authorize(web, new Browser(), f.web.redirectUri, { email: f.users.alice.email, password: PASSWORD });
    await localhostFetch(`${server.issuer('metrics')}.well-known/jwks.json`);

    const res = await localhostFetch(`${server.url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(metric(text, 'idforge_http_requests_total', '{route="token",status="200"}')).toBeGreaterThanOrEqual(2);
    expect(metric(text, 'idforge_http_requests_total', '{route="jwks",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(metric(text, 'idforge_http_requests_total', '{route="admin",status="201"}')).toBeGreaterThanOrEqual(1);
    expect(metric(text, 'idforge_grants_total', '{grant_type="client_credentials",outcome="success"}')).toBeGreaterThanOrEqual(2);
    expect(metric(text, 'idforge_logins_total', '{outcome="failure"}')).toBe(1);
    expect(metric(text, 'idforge_logins_total', '{outcome="success"}')).toBe(1);
    expect(text).toMatch(/^idforge_http_request_duration_seconds_bucket\{le="0\.005",route="token"\} \d+$/m);
    expect(text).toMatch(/^idforge_tenants 2$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    // No tenant name in any label: a scrape is as big with 10 tenants as with 10,000.
    expect(text).not.toContain('metrics"');
  });
});

describe('request ids', () => {
  it('every response carries one; a sane caller id is kept, anything else replaced', async () => {
    const own = await localhostFetch(`${server.url}/healthz`);
    expect(own.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const given = await localhostFetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'trace-42.a:b' } });
    expect(given.headers.get('x-request-id')).toBe('trace-42.a:b');
    const forged = await localhostFetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'x"}\u00e9 {"level' } });
    expect(forged.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("log lines written for a request (sign-in audit lines here) carry that request's id", async () => {
    const admin = await adminClient(server);
    const f = await fixtureTenant(admin, 'traced');
    const web = await relyingParty(server.issuer('traced'), f.web.clientId, f.web.clientSecret);
    const browser = new Browser();
    const ids: string[] = [];
    const original = browser.request.bind(browser);
    browser.request = async (url, init) => {
      const r = await original(url, init);
      ids.push(r.headers.get('x-request-id')!);
      return r;
    };
    await authorize(web, browser, f.web.redirectUri, { email: f.users.carol.email, password: PASSWORD });
    const success = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.audit === 'login.success' && e.tenant === 'traced');
    expect(success).toMatchObject({ level: 'audit' });
    expect(ids).toContain(success!.requestId);
  });
});

describe('shutdown', () => {
  it('stops accepting, answers the request in flight, then closes', async () => {
    const s = await testServer();
    const { token } = await adminClient(s);
    // A request in flight: headers sent, body not yet complete.
    const socket = connect(s.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const body = JSON.stringify({ displayName: 'x' });
    socket.write(`PUT /admin/v1/tenants/late HTTP/1.1\r\nHost: localhost:${s.port}\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 3)}`);
    let answer = '';
    socket.on('data', (d) => { answer += String(d); });
    const ended = new Promise((r) => socket.once('close', r));
    await new Promise((r) => setTimeout(r, 100));
    const closing = s.close();
    // No new connections once closing started.
    const refused = await new Promise<string>((resolve) => {
      const c = connect(s.port, '127.0.0.1');
      c.once('connect', () => { c.destroy(); resolve('connected'); });
      c.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
    socket.write(body.slice(3));
    await ended;
    await closing;
    // Answered (the tenant was made), and told to close the connection.
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    await s.dispose();
  });
});
