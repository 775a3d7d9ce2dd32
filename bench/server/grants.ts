/**
 * Token endpoint throughput: client_credentials and refresh_token grants per second, p50/p99
 * latency, first with the server on one core (pinned, one worker), then on every core
 * (`--workers <CPUs>`). And the per-grant overhead: grants per server CPU-second as a share of
 * what node:crypto alone signs per CPU-second on the same core in the same run (_floor.ts),
 * beside the targets (client_credentials ES256 >= 25%, refresh RS256 >= 35%). Prints figures;
 * never part of the tests.
 *
 *   taskset -c 1 npx tsx bench/server/grants.ts [seconds=10] [connections=16]
 *   BENCH_MODES=one-core|all-cores, BENCH_ALGS=ES256, BENCH_GRANTS=refresh narrow a run.
 */
import { execFileSync } from 'node:child_process';
import { cpus as cpus_, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import * as oidc from 'openid-client';
import { routePath } from '../../src/contract/index.ts';
// The tests' browser (cookie jar, form filling) drives the logins that mint refresh tokens.
import { Browser, authorize, relyingParty } from '../../test/server/_support.ts';
import { startBenchServer, type BenchServer } from './_harness.ts';
import { setupCheck, setupStep } from '../_setup.ts';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 16);

interface Figures { label: string; mode: string; alg: 'RS256' | 'ES256'; grant: string; rps: number; p50: number; p99: number; non2xx: number; errors: number; cpu: number }

let current: BenchServer;

/** One autocannon run; `cpu` is the server's CPU use over the run (1.0 = its whole core). */
async function run(opts: autocannon.Options): Promise<autocannon.Result & { cpu: number }> {
  const cpu0 = current.cpuSeconds();
  const t0 = Date.now();
  const result = await new Promise<autocannon.Result>((done, fail) => {
    autocannon({ ...opts, duration: seconds, connections }, (err, r) => (err ? fail(err) : done(r)));
  });
  return { ...result, cpu: (current.cpuSeconds() - cpu0) / ((Date.now() - t0) / 1000) };
}

async function clientCredentials(server: BenchServer, label: string): Promise<Omit<Figures, 'mode' | 'alg' | 'grant'>> {
  const { localhostFetch, readAdminCredentials } = await import('../../src/admin-client/index.ts');
  const creds = await readAdminCredentials(server.dataDir);
  const basic = Buffer.from(`${creds.clientId}:${creds.clientSecret}`).toString('base64');
  const request = {
    url: `http://127.0.0.1:${server.port}/oauth2/token`,
    method: 'POST' as const,
    headers: { host: `system.localhost:${server.port}`, authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'admin', resource: creds.resource }).toString(),
  };
  // One grant first: a run of refusals would measure nothing but the refusal.
  const { host, ...headers } = request.headers;
  const probe = await localhostFetch(`http://${host}/oauth2/token`, { method: 'POST', headers, body: request.body });
  setupCheck(probe.status === 200, `client_credentials grant of ${creds.clientId}`, `HTTP ${probe.status}: ${(await probe.text()).slice(0, 300)}`);
  const r = await run(request);
  return { label, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, cpu: r.cpu };
}

async function refreshTokens(server: BenchServer, label: string): Promise<Omit<Figures, 'mode' | 'alg' | 'grant'>> {
  const t = 'bench';
  const api = 'https://api.bench.test';
  const secret = 'bench-web-secret-0123456789abcdefghijkl';
  // http only on *.localhost (the server's redirect rule, RFC 9700).
  const redirect = 'http://app.bench.localhost/cb';
  const put = (path: string, body: unknown) => server.admin('PUT', path, body); // checked: a refusal stops the bench
  await put(routePath('getTenant', { tenant: t }), { displayName: 'Bench', scopes: [{ name: 'admin' }] });
  await put(routePath('getApplication', { tenant: t, application: 'api' }), { kind: 'api', identifier: api, scopes: ['admin'] });
  await put(routePath('getApplication', { tenant: t, application: 'web' }), {
    kind: 'web', clientId: 'bench-web', clientSecret: secret, redirectUris: [redirect], scopes: ['openid', 'offline', 'admin'], audience: [api],
  });
  await put(routePath('getUser', { tenant: t, userId: 'u1' }), { email: 'u1@bench.test', initialPassword: 'bench-password', scopes: ['admin'] });
  await put(routePath('getAssignment', { tenant: t, application: 'web', userId: 'u1' }), {});
  const config = await relyingParty(server.issuer(t), 'bench-web', secret);
  // One refresh token per connection (+ spares): rotation makes each one single-use.
  const pool: string[] = [];
  for (let i = 0; i < connections * 2; i++) {
    const tokens = await setupStep('login of u1@bench.test for a refresh token', async () => {
      const { callback, verifier, state } = await authorize(config, new Browser(), redirect, { email: 'u1@bench.test', password: 'bench-password' }, { scope: 'openid offline admin' });
      return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    });
    setupCheck(tokens.refresh_token !== undefined, 'login of u1@bench.test for a refresh token', 'no refresh token in the answer');
    pool.push(tokens.refresh_token);
  }
  const basic = Buffer.from(`bench-web:${secret}`).toString('base64');
  const r = await run({
    url: `http://127.0.0.1:${server.port}/oauth2/token`,
    method: 'POST',
    headers: { host: `${t}.localhost:${server.port}`, authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    requests: [{
      setupRequest: (req) => ({ ...req, body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(pool.shift() ?? 'exhausted')}` }),
      onResponse: (status, body) => {
        if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
      },
    }],
  });
  return { label, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, cpu: r.cpu };
}

const results: Figures[] = [];
// BENCH_ALGS=ES256 or BENCH_GRANTS=refresh narrow a run (e.g. for profiling one path).
const algs = (process.env.BENCH_ALGS ?? 'RS256,ES256').split(',') as ('RS256' | 'ES256')[];
const grants = (process.env.BENCH_GRANTS ?? 'client_credentials,refresh').split(',');
const modes = (process.env.BENCH_MODES ?? 'one-core,all-cores').split(',');
// The machine's CPUs (availableParallelism would say 1 here: this process runs under taskset).
const cpus = cpus_().length;

// The floor: node:crypto's signatures per CPU-second on the server's core, in this run.
const floorOut = execFileSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', join(import.meta.dirname, '_floor.ts'), '3'], { encoding: 'utf8' });
const floor = JSON.parse(floorOut.trim().split('\n').at(-1)!) as Record<'RS256' | 'ES256', number>;

for (const mode of modes) {
  for (const alg of algs) {
    const server = await startBenchServer(mode === 'one-core' ? { keyAlg: alg, core: 0 } : { keyAlg: alg, core: null, workers: cpus });
    current = server;
    try {
      // Warm-up: JIT, provider instance, SQLite page cache.
      await clientCredentials(server, 'warmup');
      if (grants.includes('client_credentials')) results.push({ ...(await clientCredentials(server, `client_credentials ${alg}`)), mode, alg, grant: 'client_credentials' });
      if (grants.includes('refresh')) results.push({ ...(await refreshTokens(server, `refresh_token (rotating) ${alg}`)), mode, alg, grant: 'refresh' });
    } finally {
      await server.stop();
    }
  }
}
const TARGETS: Record<string, number> = { 'client_credentials ES256': 0.25, 'refresh RS256': 0.35 };
console.log(`\n${connections} connections, ${seconds}s per run, node ${process.version}, ${cpus} CPUs`);
console.log(`floor (node:crypto alone, core 0): ES256 ${floor.ES256} signatures per CPU-second, RS256 ${floor.RS256}`);
console.log('mode       grant                               req/s    p50 ms  p99 ms  non-2xx  errors  server CPU  per CPU-s  share of floor (target)');
for (const f of results) {
  const perCpu = f.rps / f.cpu;
  const target = TARGETS[`${f.grant} ${f.alg}`];
  const share = `${((perCpu / floor[f.alg]) * 100).toFixed(1)}%${target === undefined ? '' : ` (>= ${target * 100}%)`}`;
  console.log(`${f.mode.padEnd(10)} ${f.label.padEnd(34)} ${f.rps.toFixed(0).padStart(7)} ${String(f.p50).padStart(8)} ${String(f.p99).padStart(7)} ${String(f.non2xx).padStart(8)} ${String(f.errors).padStart(7)} ${`${(f.cpu * 100).toFixed(0)}%`.padStart(10)} ${perCpu.toFixed(0).padStart(10)}  ${share}`);
}
console.log('one-core: server pinned to core 0 (one worker), load from this process (run it with taskset -c 1).');
console.log(`all-cores: --workers ${cpus}, unpinned; on a machine with few cores the load generator shares them, so req/s understates the server.`);
console.log(`load average during the run: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
