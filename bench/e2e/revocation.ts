/**
 * How long after an assignment, a user or an application is removed the person loses access, per
 * pattern, beside its target (src/contract/tokens.ts):
 *
 *   web template   back-channel logout (the server's logout token)   <= EVENT_REVOCATION_TARGET (5 s)
 *   API template   SSF session-revoked (a poll stream)                <= EVENT_REVOCATION_TARGET (5 s)
 *   oauth2-proxy   its cookie_refresh session check                   <= cookie_refresh
 *   SPA            its renewal at half the token's life               <= half the token lifetime
 *   third party    an offline verifier that hears nothing             <= the token lifetime (by construction: not measured)
 *
 * Runs the real end-to-end tests, which assert only that access ends, and prints the delays they
 * measured: test/e2e/revocation.test.ts (Chromium, the server, oauth2-proxy, the scaffolded web app
 * and SPA) with the test's short settings (access tokens 20 s, proxy cookie refresh 10 s) and, with
 * `--defaults`, the shipped ones (5 minutes, 30 s: the run then takes about half an hour), and
 * test/events/ssf-api.test.ts (the scaffolded API template on an SSF poll stream). Prints figures;
 * never part of the tests, never fails.
 *
 *   node bin/run.js tsx bench/e2e/revocation.ts [--defaults]
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { DEFAULT_ACCESS_TOKEN_LIFETIME, DEFAULT_PROXY_COOKIE_REFRESH, EVENT_REVOCATION_TARGET } from '../../src/contract/index.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const settings = [
  { name: 'short', accessTokenLifetime: 20, cookieRefresh: 10 },
  ...(process.argv.includes('--defaults') ? [{ name: 'defaults', accessTokenLifetime: DEFAULT_ACCESS_TOKEN_LIFETIME, cookieRefresh: DEFAULT_PROXY_COOKIE_REFRESH }] : []),
];

function vitest(file: string, env: Record<string, string> = {}): { out: string; status: number | null } {
  const run = spawnSync(process.execPath, [resolve(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', file], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', ...env }, maxBuffer: 64 * 1024 * 1024,
  });
  return { out: `${run.stdout}${run.stderr}`, status: run.status };
}

const row = (pattern: string, how: string, removed: string, seconds: number | undefined, target: number | undefined, note = '') =>
  console.log(`  ${pattern.padEnd(12)} ${how.padEnd(24)} ${removed.padEnd(34)} ${seconds === undefined ? '     -' : seconds.toFixed(1).padStart(6)} s   ${
    target === undefined ? '' : `target <= ${target} s   ${seconds === undefined ? '' : seconds <= target ? 'met' : 'MISSED'}`}${note === '' ? '' : `  ${note}`}`);

const MECHANISM: Record<string, string> = { web: 'back-channel logout', proxy: 'cookie_refresh check', spa: 'renewal' };

console.log(`bench/e2e/revocation, node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (const s of settings) {
  const { out, status } = vitest('test/e2e/revocation.test.ts', { REVOCATION_ACCESS_TOKEN_LIFETIME: String(s.accessTokenLifetime), REVOCATION_COOKIE_REFRESH: String(s.cookieRefresh) });
  const delays = [...out.matchAll(/^(\w+): access ended ([\d.]+|Infinity) s after (.+) was removed$/gm)];
  console.log(`${s.name}: access tokens ${s.accessTokenLifetime} s, proxy cookie refresh ${s.cookieRefresh} s${status === 0 ? '' : ` (the test failed, exit ${status})`}`);
  if (delays.length === 0) console.log(`  measured nothing; the test's last lines:\n${out.split('\n').slice(-30).join('\n')}`);
  // The proxy checks at the first request past its refresh period, the SPA renews at half the
  // token's life, and the test asks once a second: 1 s more for each.
  const targets: Record<string, number> = { web: EVENT_REVOCATION_TARGET, proxy: s.cookieRefresh + 1, spa: s.accessTokenLifetime / 2 + 1 };
  for (const [, pattern, seconds, removed] of delays) row(pattern!, MECHANISM[pattern!] ?? '', removed!, Number(seconds), targets[pattern!]);
  row('third party', 'offline JWT check', 'any', undefined, s.accessTokenLifetime, 'not measured: an API that hears nothing accepts a token until it expires');
}

// The API template on SSF (test/events/ssf-api.test.ts), where that test exists.
if (existsSync(resolve(ROOT, 'test/events/ssf-api.test.ts'))) {
  const { out, status } = vitest('test/events/ssf-api.test.ts');
  const m = /API template: unassignment to refusal ([\d.]+) s/.exec(out);
  console.log(`API template (SSF poll stream)${status === 0 ? '' : ` (the test failed, exit ${status})`}`);
  row('api', 'SSF session-revoked', 'an assignment', m === null ? undefined : Number(m[1]), EVENT_REVOCATION_TARGET, m === null ? 'measured nothing' : '');
} else {
  console.log('API template');
  row('api', 'SSF session-revoked', 'an assignment', undefined, EVENT_REVOCATION_TARGET, 'not measured: SSF pending');
}
