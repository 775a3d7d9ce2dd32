/**
 * Flat tenancy: with 10, 1,000 and 10,000 tenants and every request going to a tenant picked
 * uniformly at random, discovery, JWKS and client_credentials throughput and latency, and the
 * server's RSS, with the server pinned to one core. The target: p99 at 1,000 and 10,000 tenants
 * within ±20% of the 10-tenant figure, RSS under 1 GB per process. Prints figures; never part of
 * the tests.
 *
 *   taskset -c 1 npx tsx bench/server/tenants.ts [counts=10,1000,10000] [seconds=10] [connections=16] [keyAlg=ES256]
 *
 * Tenants are written straight into the data dir (_provision.ts) before the server starts; then
 * every tenant is touched once (discovery, JWKS, a token: its first-use cost), then the runs.
 * ES256 by default: provisioning 20,000 RSA keys would take half an hour and say nothing here.
 * BENCH_BIN=<other checkout>/bin/idforge.js measures another version (before/after).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { BENCH_CLIENT, BENCH_SECRET, provisionTenants } from './_provision.ts';
import { mb, startBenchServer, type BenchServer } from './_harness.ts';
import { setupCheck, setupStep } from '../_setup.ts';

const counts = (process.argv[2] ?? '10,1000,10000').split(',').map(Number);
const seconds = Number(process.argv[3] ?? 10);
const connections = Number(process.argv[4] ?? 16);
const keyAlg = (process.argv[5] ?? 'ES256') as 'RS256' | 'ES256';
const name = (i: number) => `t${String(i).padStart(5, '0')}`;
const BASIC = `Basic ${Buffer.from(`${BENCH_CLIENT}:${BENCH_SECRET}`).toString('base64')}`;
const TOKEN_BODY = 'grant_type=client_credentials&scope=admin';

interface Row { tenants: number; what: string; rps: number; p50: number; p99: number; bad: number }
const rows: Row[] = [];
const memory: { tenants: number; provisionS: number; touchS: number; rssStart: number; rssEnd: number; runtimes: string }[] = [];

async function touchAll(server: BenchServer, n: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const call = (t: string, method: string, path: string, body?: string) => new Promise<number>((done, fail) => {
    const req = request({ host: '127.0.0.1', port: server.port, method, path, agent, headers: {
      host: `${t}.localhost:${server.port}`, ...(body === undefined ? {} : { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded', 'content-length': body.length }),
    } }, (res) => { res.resume(); res.on('end', () => done(res.statusCode ?? 0)); });
    req.on('error', fail);
    req.end(body);
  });
  let next = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < n) {
      const t = name(next++);
      for (const [m, p, b] of [['GET', '/oauth2/.well-known/openid-configuration'], ['GET', '/oauth2/.well-known/jwks.json'], ['POST', '/oauth2/token', TOKEN_BODY]] as const) {
        const status = await call(t, m, p, b);
        setupCheck(status === 200, `first touch of tenant ${t}: ${m} ${p}`, `HTTP ${status}`);
      }
    }
  }));
  agent.destroy();
}

/** One autocannon run; each request to a tenant picked uniformly at random. */
async function spread(server: BenchServer, n: number, what: string, path: string, post: boolean): Promise<Row> {
  const r = await new Promise<autocannon.Result>((done, fail) => {
    autocannon({
      url: `http://127.0.0.1:${server.port}${path}`, duration: seconds, connections,
      ...(post ? { method: 'POST', body: TOKEN_BODY, headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' } } : {}),
      requests: [{
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, host: `${name(Math.floor(Math.random() * n))}.localhost:${server.port}` } }),
      }],
    }, (err, res) => (err ? fail(err) : done(res)));
  });
  return { tenants: n, what, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors };
}

for (const n of counts) {
  const dataDir = mkdtempSync(join(tmpdir(), 'idforge-bench-tenants-'));
  try {
    const t0 = Date.now();
    await setupStep(`provisioning ${n} tenants`, () => provisionTenants(dataDir, Array.from({ length: n }, (_, i) => name(i)), keyAlg));
    const provisionS = (Date.now() - t0) / 1000;
    const server = await startBenchServer({ keyAlg, core: 0, dataDir });
    try {
      const rssStart = server.rss();
      const t1 = Date.now();
      await touchAll(server, n);
      const touchS = (Date.now() - t1) / 1000;
      for (const [what, path, post] of [['discovery', '/oauth2/.well-known/openid-configuration', false], ['jwks', '/oauth2/.well-known/jwks.json', false], ['token (client_credentials)', '/oauth2/token', true]] as const) {
        rows.push(await spread(server, n, what, path, post));
        console.log(JSON.stringify(rows.at(-1)));
      }
      const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text().catch(() => '');
      memory.push({ tenants: n, provisionS, touchS, rssStart, rssEnd: server.rss(), runtimes: /^idforge_tenant_runtimes (\d+)/m.exec(metrics)?.[1] ?? '?' });
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(`\nserver pinned to core 0 (one worker), ${keyAlg} keys, ${connections} connections, ${seconds}s per run, requests spread uniformly over all tenants, node ${process.version}${process.env.BENCH_BIN ? `, BENCH_BIN=${process.env.BENCH_BIN}` : ''}`);
console.log('tenants  what                          req/s    p50 ms  p99 ms  p99 vs 10 tenants (target ±20%)  non-2xx+errors');
for (const r of rows) {
  const base = rows.find((b) => b.what === r.what && b.tenants === Math.min(...counts));
  const vs = base === undefined || base.p99 === 0 ? '' : `${r.p99 >= base.p99 ? '+' : ''}${(((r.p99 - base.p99) / base.p99) * 100).toFixed(0)}%`;
  console.log(`${String(r.tenants).padStart(7)}  ${r.what.padEnd(28)} ${r.rps.toFixed(0).padStart(7)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(7)}  ${vs.padStart(8)}                         ${r.bad}`);
}
console.log('tenants  provisioned in  first touch of all (discovery+JWKS+token each)  RSS at start  RSS after runs (target < 1 GB)  runtimes built');
for (const m of memory) console.log(`${String(m.tenants).padStart(7)}  ${`${m.provisionS.toFixed(1)} s`.padStart(14)}  ${`${m.touchS.toFixed(1)} s`.padStart(46)}  ${mb(m.rssStart).padStart(12)}  ${mb(m.rssEnd).padStart(30)}  ${m.runtimes.padStart(14)}`);
console.log(`load average during the run: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
