/**
 * Password logins per second per core at the chosen argon2 parameters, and the share of the
 * server's time spent hashing. Prints figures; never part of the tests.
 *
 *   taskset -c 1 npx tsx bench/login/index.ts [seconds=15] [workers=8]
 *
 * 1. argon2id verify alone, pinned to core 0: the ceiling (hash.ts).
 * 2. Full logins against the real server pinned to core 0: authorization request, login page,
 *    POST of the password (guessing defence, argon2 verify, interaction, session), redirect with
 *    the code, and the code exchanged for tokens at the token endpoint. Logins per server CPU
 *    second = logins/s per core; the flow's overhead = 1 - (logins × verify time) / CPU time.
 *
 * Reference: Keycloak publishes about 15 password logins/s per vCPU with its argon2 default
 * (m=7 MiB, t=5, p=1); ours hashes with m=19 MiB, t=2, p=1 (OWASP's first configuration).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as oidc from 'openid-client';
import { routePath } from '../../src/contract/index.ts';
import { PASSWORD_HASH_PARAMS } from '../../src/server/index.ts';
import { startBenchServer } from '../server/_harness.ts';
import { setupStep } from '../_setup.ts';
// The tests' browser (cookie jar, form filling) performs the logins, as in bench/server/grants.ts.
import { Browser, authorize, relyingParty } from '../../test/server/_support.ts';

const seconds = Number(process.argv[2] ?? 15);
const workers = Number(process.argv[3] ?? 8);

const hashRun = JSON.parse(
  execFileSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', resolve(import.meta.dirname, 'hash.ts'), String(Math.min(seconds, 8))], { encoding: 'utf8' }),
) as { verifies: number; elapsed: number; cpuSeconds: number };
const verifyCpuMs = (hashRun.cpuSeconds * 1000) / hashRun.verifies;

const server = await startBenchServer({ core: 0 });
try {
  const t = 'bench';
  const secret = 'bench-web-secret-0123456789abcdefghijkl';
  // http only on localhost, *.localhost and loopback (the contract's redirect rule, RFC 9700).
  const redirect = 'http://app.bench.localhost/cb';
  await server.admin('PUT', routePath('getTenant', { tenant: t }), { displayName: 'Bench' });
  await server.admin('PUT', routePath('getApplication', { tenant: t, application: 'web' }), { kind: 'web', clientId: 'bench-web', clientSecret: secret, redirectUris: [redirect], scopes: ['openid'] });
  const users = Array.from({ length: workers }, (_, i) => ({ id: `u${i}`, email: `u${i}@bench.test` }));
  for (const u of users) {
    await server.admin('PUT', routePath('getUser', { tenant: t, userId: u.id }), { email: u.email, initialPassword: 'bench-password' });
    await server.admin('PUT', routePath('getAssignment', { tenant: t, application: 'web', userId: u.id }), {});
  }
  const config = await relyingParty(server.issuer(t), 'bench-web', secret);
  const login = async (email: string) => {
    const { callback, verifier, state } = await authorize(config, new Browser(), redirect, { email, password: 'bench-password' });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    if (tokens.id_token === undefined) throw new Error('no ID token');
  };
  // Warm-up (provider instance, JIT), and the proof that a login works before any is timed.
  for (const u of users) await setupStep(`warm-up login of ${u.email}`, () => login(u.email));

  let logins = 0;
  const cpu0 = server.cpuSeconds();
  const t0 = Date.now();
  const until = t0 + seconds * 1000;
  // Each worker is one person signing in again and again (fresh browser each time).
  await Promise.all(users.map(async (u) => {
    while (Date.now() < until) {
      await login(u.email);
      logins++;
    }
  }));
  const wall = (Date.now() - t0) / 1000;
  const cpu = server.cpuSeconds() - cpu0;

  const perCore = logins / cpu;
  const hashShare = (logins * verifyCpuMs) / 1000 / cpu;
  const p = PASSWORD_HASH_PARAMS;
  const f = (n: number, d = 1) => n.toFixed(d);
  process.stdout.write(`argon2id m=${p.memoryCost} KiB, t=${p.timeCost}, p=${p.parallelism} (server core 0; ${workers} concurrent logins, ${seconds} s)

  argon2 verify alone           ${f(hashRun.verifies / hashRun.cpuSeconds)} verifies/s per core  (${f(verifyCpuMs)} ms CPU each)
  full password logins          ${f(logins / wall)} logins/s at ${f(cpu / wall, 2)} cores of server CPU
                                ${f(perCore)} logins/s per core   (Keycloak, argon2 default: ~15 per vCPU)
  time spent hashing            ${f(hashShare * 100)} % of the server's CPU
  flow around the hash adds     ${f((1 / hashShare - 1) * 100)} % on top of the hash   (target < 20 %)

  load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}: per-core figures are per CPU-second of the
  process, so other work on the machine lowers the wall-clock rate, not them.
`);
} finally {
  await server.stop();
}
