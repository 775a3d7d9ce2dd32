/**
 * Memory with many tenants: RSS of the server process with 10, 1,000 and 10,000 tenants
 * provisioned (each: tenant with keys, an api, an SPA, a user, an assignment), before and after
 * every tenant has served discovery + JWKS once (which builds its oidc-provider instance; the
 * LRU keeps at most 500). Prints figures; never part of the tests.
 *
 *   taskset -c 1 npx tsx bench/server/tenants.ts [counts=10,1000,10000] [keyAlg=ES256]
 *
 * ES256 by default because the bench provisions 20,000 keys: RSA-2048 generation costs ~0.1 s
 * each on one core (about half an hour in all) and tells nothing about memory.
 */
import { Agent, request } from 'node:http';
import { routePath } from '../../src/contract/index.ts';
import { mb, startBenchServer } from './_harness.ts';

const counts = (process.argv[2] ?? '10,1000,10000').split(',').map(Number);
const keyAlg = (process.argv[3] ?? 'ES256') as 'RS256' | 'ES256';
const CONCURRENCY = 16;

const server = await startBenchServer({ keyAlg, core: 0 });
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
// The typed client's token (cached and renewed by it); the calls below stay keep-alive raw HTTP.
let token = await server.client.token();
setInterval(async () => { token = await server.client.token(); }, 4 * 60_000).unref();

/** Keep-alive HTTP to 127.0.0.1 with the right Host: tens of thousands of calls, no DNS. */
function call(method: string, host: string, path: string, body?: unknown, auth = true): Promise<number> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((done, fail) => {
    const req = request({
      host: '127.0.0.1', port: server.port, method, path, agent,
      headers: {
        host: `${host}:${server.port}`,
        ...(auth ? { authorization: `Bearer ${token}` } : {}),
        ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}),
      },
    }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', fail);
    req.end(data);
  });
}

async function pool<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

async function provision(name: string): Promise<void> {
  const api = `https://api.${name}.test`;
  const puts: [string, unknown][] = [
    [routePath('getTenant', { tenant: name }), { displayName: `Tenant ${name}`, scopes: [{ name: 'admin' }] }],
    [routePath('getApplication', { tenant: name, application: 'api' }), { kind: 'api', identifier: api, scopes: ['admin'] }],
    [routePath('getApplication', { tenant: name, application: 'spa' }), { kind: 'spa', clientId: `${name}-spa`, redirectUris: [`http://spa.${name}.test`], audience: [api], scopes: ['openid', 'admin'] }],
    [routePath('getUser', { tenant: name, userId: 'u1' }), { email: `u1@${name}.test`, scopes: ['admin'] }],
    [routePath('getAssignment', { tenant: name, application: 'spa', userId: 'u1' }), {}],
  ];
  for (const [path, body] of puts) {
    const status = await call('PUT', 'localhost', path, body);
    if (status !== 201 && status !== 200) throw new Error(`PUT ${path} → ${status}`);
  }
}

async function touch(name: string): Promise<void> {
  for (const p of ['/oauth2/.well-known/openid-configuration', '/oauth2/.well-known/jwks.json']) {
    const status = await call('GET', `${name}.localhost`, p, undefined, false);
    if (status !== 200) throw new Error(`GET ${name}${p} → ${status}`);
  }
}

const rows: string[] = [];
const baseline = server.rss();
let have = 0;
for (const n of counts) {
  const names = Array.from({ length: n - have }, (_, i) => `t${String(have + i).padStart(5, '0')}`);
  const t0 = Date.now();
  await pool(names, provision);
  const provisionS = (Date.now() - t0) / 1000;
  have = n;
  const provisioned = server.rss();
  const all = Array.from({ length: n }, (_, i) => `t${String(i).padStart(5, '0')}`);
  const t1 = Date.now();
  await pool(all, touch);
  const touchS = (Date.now() - t1) / 1000;
  const touched = server.rss();
  rows.push(`${String(n).padStart(6)}  ${mb(provisioned).padStart(8)}  ${mb(touched).padStart(10)}   ${provisionS.toFixed(1).padStart(6)} s (${((names.length * 5) / provisionS).toFixed(0)} PUT/s)   ${touchS.toFixed(1).padStart(6)} s`);
  console.log(rows.at(-1));
}
await server.stop();
agent.destroy();
console.log(`\nserver pinned to core 0, ${keyAlg} keys, provider LRU 500, RSS at start ${mb(baseline)}, node ${process.version}`);
console.log('tenants  RSS after  RSS after    provisioning (new tenants)    discovery+JWKS of all');
console.log('         provision  all served');
for (const r of rows) console.log(r);
