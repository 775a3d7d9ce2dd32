/**
 * PostgreSQL failing under a running `idforge serve` (a real process on a real cluster), with load
 * through every door that reaches the database (test/support/db-faults.ts): a restart ("the
 * database system is shutting down", connections ended, refused), a pause (every process of the
 * cluster stopped: connections stay open and nothing answers, as behind a partition), a lock held
 * longer than the statement timeout, a database that takes no writes. No answer is a 5xx other
 * than 503 (each with Retry-After, none with the database's words), none hangs past its deadline,
 * and the same process serves again by itself afterwards (readiness 200, every door healthy). Also:
 * log lines about connections the pool loses carry no request id.
 *
 * The bounds are set short here (statement timeout 1 s, query timeout 2 s) so the test is quick; the
 * figures with a longer pause are bench/db/faults.ts's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { stopAll } from '../support/processes.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { doors, readyz, recovery, ruleBroken, serve, startLoad, type Door, type Served } from '../support/db-faults.ts';
import { localhostFetch, tempDir } from './_support.ts';

let cluster: TestPostgres;
let server: Served;
let list: readonly Door[];
let database: { name: string; url: string };
const dir = tempDir('idforge-db-faults-');

beforeAll(async () => {
  cluster = await startPostgres();
  database = await cluster.createDatabase('faults');
  server = await serve('db-faults-postgres', dir.path, [
    '--database', database.url, '--port', '0', '--db-statement-timeout', '1', '--db-query-timeout', '2', '--request-timeout', '20', '--shutdown-timeout', '1',
  ]);
  ({ doors: list } = await doors(server));
});
afterAll(async () => {
  await stopAll();
  await cluster?.stop();
  dir.remove();
});

/** The server's own metrics: database faults counted by kind. */
async function faultsCounted(): Promise<Record<string, number>> {
  const text = await (await localhostFetch(`${server.url}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^idforge_db_errors_total\{kind="(\w+)"\} (\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe('PostgreSQL faults under load', () => {
  it('a restart: only 503s with Retry-After meanwhile, then the same process serves again', async () => {
    const load = startLoad(list, 6);
    await new Promise((r) => setTimeout(r, 1_000));
    await cluster.restart();
    const seconds = await recovery(server, list);
    const result = await load.stop();
    expect(result.problems).toEqual([]);
    expect(Object.keys(result.byStatus).every((s) => ['200', '201', '303', '400', '503'].includes(s)), JSON.stringify(result.byStatus)).toBe(true);
    expect(server.proc.hasExited()).toBe(false);
    expect(seconds).toBeGreaterThanOrEqual(0);
    expect((await faultsCounted()).unavailable).toBeGreaterThan(0);
  });

  it('a pause with connections kept open: answers within the bounds (503 with Retry-After), readiness 503, then recovery without a restart', async () => {
    const load = startLoad(list, 6);
    await new Promise((r) => setTimeout(r, 1_000));
    cluster.pause();
    try {
      // Held past the query timeout: requests in flight and new ones are answered, not left waiting,
      // at every door (until each has answered a 503, or the deadline).
      const during = await readyz(server.url);
      expect(during.status).toBe(503);
      const every503 = () => list.every((d) => (load.snapshot().byDoor[d.name]?.['503'] ?? 0) > 0);
      const deadline = Date.now() + 45_000;
      while (!every503() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(load.snapshot().byDoor).toEqual(Object.fromEntries(list.map((d) => [d.name, expect.objectContaining({ 503: expect.any(Number) })])));
    } finally {
      cluster.resume();
    }
    await recovery(server, list);
    const result = await load.stop();
    expect(result.problems).toEqual([]);
    expect(Object.keys(result.byStatus).every((s) => ['200', '201', '303', '400', '503'].includes(s)), JSON.stringify(result.byStatus)).toBe(true);
    expect(server.proc.hasExited()).toBe(false);
    expect((await faultsCounted()).timeout).toBeGreaterThan(0);
  });

  it('work that overruns the statement timeout is a 503 with Retry-After, and gives its connection back', async () => {
    // Another program holds the tenants table: every request that reads a tenant waits for it.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
    try {
      // More requests at once than the pool has connections (10): each waits at most the timeout.
      const answers = await Promise.all(Array.from({ length: 14 }, () => localhostFetch(`${server.url}/admin/v1/tenants/acme/users/u-alice`, {
        headers: { authorization: `Bearer ${server.admin.token}` }, signal: AbortSignal.timeout(30_000),
      }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json(), broken: ruleBroken(r, '') }))));
      for (const a of answers) {
        expect(a).toMatchObject({ status: 503, retryAfter: '5', broken: undefined });
        expect(a.body).toEqual({ error: 'temporarily_unavailable', message: 'the database did not answer in time; try again in a few seconds', path: '' });
      }
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    // Every connection came back: a burst larger than the pool is served.
    const after = await Promise.all(Array.from({ length: 14 }, () => localhostFetch(`${server.url}/admin/v1/tenants/acme/users/u-alice`, {
      headers: { authorization: `Bearer ${server.admin.token}` },
    }).then((r) => r.status)));
    expect(after).toEqual(Array.from({ length: 14 }, () => 200));
    // No query stays active: the server's background readers of the event log (webhooks, SSF,
    // back-channel logout) run a short query every second, so one may be caught in flight; a stuck
    // one would still be there after any number of looks.
    const active = async () => (await cluster.sql(database.name, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'idforge' AND state = 'active' AND query NOT LIKE 'LISTEN%'`)).rows[0].n as number;
    const deadline = Date.now() + 10_000;
    let n = await active();
    while (n !== 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      n = await active();
    }
    expect(n, 'idforge queries still active 10 s after the burst').toBe(0);
  });

  it('a database that takes no writes: writes are 503, readiness says why, reads go on; back to normal once it does', async () => {
    await cluster.sql('postgres', `ALTER DATABASE ${database.name} SET default_transaction_read_only = on`);
    await cluster.sql('postgres', `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}' AND application_name = 'idforge'`);
    try {
      const deadline = Date.now() + 30_000;
      let ready = await readyz(server.url);
      while (!(ready.status === 503 && /read-only/.test(ready.body?.checks?.writes ?? '')) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        ready = await readyz(server.url);
      }
      expect(ready.body.checks.writes).toMatch(/read-only/);
      const write = await server.admin.call('PUT', '/admin/v1/tenants/acme/users/u-readonly', { email: 'ro@acme.test', scopes: [] });
      expect(write.status).toBe(503);
      expect(write.headers.get('retry-after')).toBe('30');
      expect(write.body).toMatchObject({ error: 'temporarily_unavailable', message: 'the database takes no changes at the moment (read-only); nothing was changed, try again later' });
      expect((await server.admin.call('GET', '/admin/v1/tenants/acme/users/u-alice')).status).toBe(200);
    } finally {
      await cluster.sql('postgres', `ALTER DATABASE ${database.name} RESET default_transaction_read_only`);
      await cluster.sql('postgres', `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}' AND application_name = 'idforge'`);
    }
    await recovery(server, list);
    expect((await faultsCounted()).read_only).toBeGreaterThan(0);
  });

  it('log lines about connections the pool loses carry no request id, though a request made those connections', async () => {
    const before = server.proc.output().length;
    // A request with a known id takes connections from the pool (and may make new ones).
    await Promise.all(Array.from({ length: 5 }, () => localhostFetch(`${server.url}/admin/v1/tenants/acme/users/u-alice`, {
      headers: { authorization: `Bearer ${server.admin.token}`, 'x-request-id': 'req-made-the-connection' },
    })));
    await cluster.sql('postgres', `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}' AND application_name = 'idforge' AND state = 'idle'`);
    const deadline = Date.now() + 20_000;
    let lost: Record<string, unknown>[] = [];
    while (lost.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      lost = server.proc.output().slice(before).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => /idle connection lost|change feed lost/.test(String(e.msg)));
    }
    expect(lost.length).toBeGreaterThan(0);
    for (const e of lost) expect(e).not.toHaveProperty('requestId');
    await recovery(server, list);
  });
});
