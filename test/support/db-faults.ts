/**
 * Database faults under load, shared by the tests (test/server/db-faults-*.test.ts) and the bench
 * (bench/db/faults.ts): `idforge serve` as a process, a tenant provisioned through the admin API,
 * and a steady load through every door that reaches the database (the admin API reading and
 * writing, SCIM, the token endpoint, an authorization request (oidc-provider stores its
 * interaction), a sign-in page read back), each request with a deadline so a hang shows as one.
 * Every answer is recorded by status; an answer that breaks the rules (a 5xx other than 503 and 507, a 503 or 507 without Retry-After,
 * an error body with internal text) is recorded as a problem.
 */
import { resolve } from 'node:path';
import { readAdminCredentials } from '../../src/admin-client/index.ts';
import { DATABASE_URL_ENV } from '../../src/server/index.ts';
import { adminClient, fixtureTenant, localhostFetch, pkceParams, type AdminClient, type Fixture } from '../server/_support.ts';
import { startProcess, type RunningProcess } from './processes.ts';

const BIN = resolve(import.meta.dirname, '../../bin/idforge.js');

export interface Served {
  readonly proc: RunningProcess;
  readonly url: string;
  readonly port: number;
  readonly admin: AdminClient;
}

/** Starts `idforge serve` and waits for its "listening on" line; an admin client for it. */
export async function serve(name: string, dataDir: string, args: readonly string[]): Promise<Served> {
  const proc = startProcess(name, process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--workers', '1', ...args], { env: { [DATABASE_URL_ENV]: undefined } });
  for (const deadline = Date.now() + 120_000; ;) {
    const m = /listening on (http:\/\/localhost:(\d+))/.exec(proc.output());
    if (m !== null) {
      const admin = await adminClient({ url: m[1]!, adminCredentials: await readAdminCredentials(dataDir) });
      return { proc, url: m[1]!, port: Number(m[2]), admin };
    }
    if (proc.hasExited()) throw new Error(`${name} exited early:\n${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`${name} did not listen within 120 s:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A request of the load: its door's name and the call. */
export interface Door {
  readonly name: string;
  call(i: number): Promise<Response>;
}

/** Tenant `acme` (fixtureTenant) with a SCIM token; the doors that reach the database. */
export async function doors(s: Served): Promise<{ fixture: Fixture; doors: readonly Door[] }> {
  const fixture = await fixtureTenant(s.admin, 'acme');
  const scim = await s.admin.call('POST', '/admin/v1/tenants/acme/scim/tokens', { description: 'load' });
  if (scim.status !== 201) throw new Error(`SCIM token: ${scim.status} ${JSON.stringify(scim.body)}`);
  const tenantUrl = `http://acme.localhost:${s.port}`;
  const admin = (method: string, path: string, body?: unknown) => localhostFetch(`${s.url}/admin/v1${path}`, {
    method, headers: { authorization: `Bearer ${s.admin.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
  });
  const pkce = await pkceParams();
  const authorize = () => localhostFetch(`${tenantUrl}/oauth2/auth?${new URLSearchParams({
    client_id: fixture.spa.clientId, redirect_uri: fixture.spa.redirectUri, response_type: 'code', scope: 'openid', state: 'load', ...pkce,
  }).toString()}`, { redirect: 'manual', signal: AbortSignal.timeout(REQUEST_DEADLINE_MS), headers: { accept: 'text/html' } });
  // One sign-in in progress: its page (the interaction, with the browser's cookie) is read from the database each time.
  const started = await authorize();
  const interaction = new URL(started.headers.get('location') ?? '', tenantUrl).href;
  const cookie = started.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  if (!interaction.includes('/interaction/')) throw new Error(`no sign-in page: ${started.status} ${interaction}`);
  return {
    fixture,
    doors: [
      { name: 'admin read', call: () => admin('GET', `/tenants/acme/users/${fixture.users.alice.id}`) },
      { name: 'admin write', call: (i) => admin('PUT', `/tenants/acme/users/u-load-${i % 20}`, { email: `load-${i % 20}@acme.test`, displayName: `Load ${i}`, scopes: [] }) },
      {
        name: 'scim',
        call: () => localhostFetch(`${tenantUrl}/scim/v2/Users?count=2`, { headers: { authorization: `Bearer ${scim.body.token}` }, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) }),
      },
      {
        name: 'token',
        call: () => localhostFetch(`${tenantUrl}/oauth2/token`, {
          method: 'POST', signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
          headers: { authorization: `Basic ${Buffer.from(`${fixture.web.clientId}:${fixture.web.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token' }).toString(),
        }),
      },
      { name: 'authorization', call: authorize },
      { name: 'sign-in page', call: () => localhostFetch(interaction, { headers: { cookie, accept: 'text/html' }, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) }) },
    ],
  };
}

/** A request not answered by then is a hang: recorded as one, never waited out. */
export const REQUEST_DEADLINE_MS = 45_000;

/** What answers are expected from each door while the database works (refresh with a made-up token: 400). */
const HEALTHY = new Set([200, 201, 303, 400]);

export interface LoadResult {
  readonly requests: number;
  /** Answers by status ('hang' past the deadline, 'network' for a failed connection). */
  readonly byStatus: Readonly<Record<string, number>>;
  /** Answers by door, then status. */
  readonly byDoor: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** The longest any answer took, in ms. */
  readonly slowestMs: number;
  /** Answers that break the rules, with their door and what they said. */
  readonly problems: readonly string[];
}

/** Runs the doors round-robin with `concurrency` callers until stopped. */
export function startLoad(list: readonly Door[], concurrency: number): { snapshot(): LoadResult; stop(): Promise<LoadResult> } {
  let stopped = false;
  let n = 0;
  const byStatus: Record<string, number> = {};
  const byDoor: Record<string, Record<string, number>> = {};
  const problems: string[] = [];
  let slowestMs = 0;
  const one = async (i: number) => {
    const door = list[i % list.length]!;
    const started = performance.now();
    const count = (k: string) => {
      slowestMs = Math.max(slowestMs, performance.now() - started);
      byStatus[k] = (byStatus[k] ?? 0) + 1;
      const d = (byDoor[door.name] ??= {});
      d[k] = (d[k] ?? 0) + 1;
    };
    let res: Response;
    try {
      res = await door.call(i);
    } catch (err) {
      const hang = (err as Error).name === 'TimeoutError';
      count(hang ? 'hang' : 'network');
      problems.push(`${door.name}: ${hang ? `no answer within ${REQUEST_DEADLINE_MS / 1000} s` : (err as Error).message}`);
      return;
    }
    count(String(res.status));
    const body = await res.text().catch(() => '');
    const problem = ruleBroken(res, body);
    if (problem !== undefined) problems.push(`${door.name}: ${problem}`);
  };
  const callers = Array.from({ length: concurrency }, async () => {
    while (!stopped) await one(n++);
  });
  const snapshot = (): LoadResult => ({
    requests: Object.values(byStatus).reduce((a, b) => a + b, 0), byStatus: { ...byStatus },
    byDoor: Object.fromEntries(Object.entries(byDoor).map(([k, v]) => [k, { ...v }])), slowestMs, problems: [...problems],
  });
  return {
    snapshot,
    async stop() {
      stopped = true;
      await Promise.all(callers);
      return snapshot();
    },
  };
}

/** What a door may not answer, ever: a 5xx other than 503 and 507, those without Retry-After, internal text. */
export function ruleBroken(res: Response, body: string): string | undefined {
  const s = res.status;
  if (s >= 500 && s !== 503 && s !== 507) return `${s}: ${body.slice(0, 200)}`;
  if ((s === 503 || s === 507) && res.headers.get('retry-after') === null) return `${s} without Retry-After`;
  if (/internal server error|oops! something went wrong|SqliteError|ECONNREFUSED|terminating connection|Query read timeout|\n\s+at /i.test(body)) return `${s} with internal text: ${body.slice(0, 200)}`;
  return undefined;
}

/** Whether every door answers as it does when the database works (each once). */
export async function allHealthy(list: readonly Door[]): Promise<{ ok: boolean; statuses: string[] }> {
  const statuses = await Promise.all(list.map(async (d, i) => {
    try {
      const r = await d.call(1000 + i);
      await r.arrayBuffer();
      return `${d.name} ${r.status}`;
    } catch (err) {
      return `${d.name} ${(err as Error).message}`;
    }
  }));
  return { ok: statuses.every((s) => HEALTHY.has(Number(s.split(' ').pop()))), statuses };
}

/** Readiness as a load balancer sees it. */
export async function readyz(url: string): Promise<{ status: number; body: any }> {
  const r = await localhostFetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: r.status, body: await r.json().catch(() => undefined) };
}

/**
 * Waits (polling, with a deadline) until readiness is 200 and every door answers as when healthy;
 * returns the seconds that took. A server process that exits meanwhile fails it at once, with its output.
 */
export async function recovery(server: Served, list: readonly Door[], deadlineMs = 90_000): Promise<number> {
  const { url, proc } = server;
  const started = Date.now();
  let last = '';
  for (const deadline = started + deadlineMs; Date.now() < deadline;) {
    const ready = await readyz(url).catch((err: unknown) => ({ status: 0, body: String(err) }));
    if (ready.status === 200) {
      const h = await allHealthy(list);
      if (h.ok) return (Date.now() - started) / 1000;
      last = h.statuses.join(', ');
    } else last = `readyz ${ready.status} ${JSON.stringify(ready.body)}`;
    // A server that died will not recover: say so at once, with what it said last.
    if (proc.hasExited()) throw new Error(`the server exited instead of recovering (${last}); its last output:\n${proc.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no recovery within ${deadlineMs / 1000} s: ${last}`);
}
