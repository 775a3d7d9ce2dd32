/**
 * How long after an assignment, a user or an application is removed the person loses access, per
 * pattern (web app, reverse proxy, SPA), beside the access token lifetime that bounds them all.
 * Runs the real end-to-end test (test/e2e/revocation.test.ts: Chromium, the server, oauth2-proxy,
 * the scaffolded apps), which asserts only that access ends, and prints the delays it measured:
 * with the test's short settings (access tokens 20 s, proxy cookie refresh 5 s) and with the
 * shipped defaults (300 s, 30 s). Prints figures; never part of the tests.
 *
 *   node bin/run.js tsx bench/e2e/revocation.ts [--only short|defaults]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { DEFAULT_ACCESS_TOKEN_LIFETIME, DEFAULT_PROXY_COOKIE_REFRESH } from '../../src/contract/index.ts';
import { setupCheck } from '../_setup.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const settings = [
  { name: 'short', accessTokenLifetime: 20, cookieRefresh: 5 },
  { name: 'defaults', accessTokenLifetime: DEFAULT_ACCESS_TOKEN_LIFETIME, cookieRefresh: DEFAULT_PROXY_COOKIE_REFRESH },
].filter((s) => only === undefined || s.name === only);

console.log(`bench/e2e/revocation, node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (const s of settings) {
  const run = spawnSync(process.execPath, [resolve(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', 'test/e2e/revocation.test.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', REVOCATION_ACCESS_TOKEN_LIFETIME: String(s.accessTokenLifetime), REVOCATION_COOKIE_REFRESH: String(s.cookieRefresh) },
  });
  const out = `${run.stdout}${run.stderr}`;
  const delays = [...out.matchAll(/^(\w+): access ended ([\d.]+|Infinity) s after (.+) was removed$/gm)];
  console.log(`${s.name}: access tokens ${s.accessTokenLifetime} s, proxy cookie refresh ${s.cookieRefresh} s${run.status === 0 ? '' : ` (the test failed, exit ${run.status})`}`);
  for (const [, pattern, seconds, removed] of delays) {
    const v = Number(seconds);
    console.log(`  ${pattern!.padEnd(6)} ${removed!.padEnd(34)} ${v.toFixed(1).padStart(6)} s   target <= ${s.accessTokenLifetime} s   ${v <= s.accessTokenLifetime ? 'met' : 'MISSED'}`);
  }
  // No figure at all: the stack (server, proxy, apps, Chromium) did not come up, or the test broke before measuring.
  setupCheck(delays.length > 0, `test/e2e/revocation.test.ts with the ${s.name} settings`,
    `measured nothing (exit ${run.status ?? run.error?.message}); its last lines:\n${out.split('\n').slice(-30).join('\n')}`);
}
