/**
 * What a running `idforge serve` does while its PostgreSQL fails, under a steady load through every
 * door that reaches the database (test/support/db-faults.ts: admin API reads and writes, SCIM, the
 * token endpoint, authorization requests, a sign-in page), with the shipped bounds (statement
 * timeout 10 s, query timeout 15 s) unless told otherwise:
 *   restart          pg_ctl restart -m fast while the load runs
 *   pause            every PostgreSQL process stopped (SIGSTOP) for --pause seconds, connections open
 *   pause, cold pool the same after the server sat idle until its pool closed every connection
 * For each: requests, answers by status (and by door), the slowest answer, answers that broke the
 * rules (any 5xx but 503/507, no Retry-After, internal text, no answer by the deadline), and the
 * seconds from the end of the fault until /readyz is 200 and every door answers as when healthy.
 * Prints figures; never part of the tests.
 *
 *   node bin/run.js tsx bench/db/faults.ts [--pause 20] [--concurrency 8] [--only restart|pause|cold]
 *                                          [-- <idforge serve options, e.g. --db-query-timeout 5>]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { setupStep } from '../_setup.ts';
import { doors, readyz, recovery, serve, startLoad, type LoadResult } from '../../test/support/db-faults.ts';
import { startPostgres } from '../../test/support/postgres.ts';
import { stopAll } from '../../test/support/processes.ts';
import { tempDir } from '../../test/server/_support.ts';

const { values, positionals } = parseArgs({
  options: { pause: { type: 'string', default: '20' }, concurrency: { type: 'string', default: '8' }, only: { type: 'string' } },
  allowPositionals: true,
});
const pauseSeconds = Number(values.pause);
const concurrency = Number(values.concurrency);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function report(name: string, fault: string, r: LoadResult, toReady: number): void {
  const statuses = Object.entries(r.byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}: ${n}`).join(', ');
  console.log(`${name}: ${fault}`);
  console.log(`  requests ${r.requests}, answers ${statuses}`);
  for (const [door, byStatus] of Object.entries(r.byDoor)) {
    console.log(`    ${door.padEnd(14)} ${Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}: ${n}`).join(', ')}`);
  }
  console.log(`  slowest answer ${(r.slowestMs / 1000).toFixed(1)} s; rules broken: ${r.problems.length === 0 ? 'none' : r.problems.length}`);
  for (const p of r.problems.slice(0, 5)) console.log(`    ${p}`);
  console.log(`  ready again ${toReady.toFixed(1)} s after the fault ended (same process, no restart)`);
}

console.log(`bench/db/faults, node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}, ${concurrency} callers`);
const cluster = await setupStep('start PostgreSQL', () => startPostgres());
const dir = tempDir('idforge-bench-faults-');
try {
  const database = await setupStep('create the database', () => cluster.createDatabase('bench_faults'));
  const server = await setupStep('start idforge serve', () => serve('bench-db-faults', dir.path, ['--database', database.url, '--port', '0', ...positionals]));
  const { doors: list } = await setupStep('provision a tenant', () => doors(server));
  console.log(`server options: ${positionals.length === 0 ? 'the defaults (statement timeout 10 s, query timeout 15 s)' : positionals.join(' ')}`);

  if (values.only === undefined || values.only === 'restart') {
    const load = startLoad(list, concurrency);
    await sleep(3_000);
    const t = performance.now();
    await cluster.restart();
    const restartS = (performance.now() - t) / 1000;
    const toReady = await recovery(server, list);
    report('restart', `pg_ctl restart -m fast, ${restartS.toFixed(1)} s`, await load.stop(), toReady);
  }
  if (values.only === undefined || values.only === 'pause') {
    const load = startLoad(list, concurrency);
    await sleep(3_000);
    cluster.pause();
    await sleep(pauseSeconds * 1000);
    cluster.resume();
    const toReady = await recovery(server, list);
    report('pause', `every PostgreSQL process stopped for ${pauseSeconds} s, connections left open`, await load.stop(), toReady);
  }
  if (values.only === undefined || values.only === 'cold') {
    // node-postgres closes a connection idle for 10 s: the next requests must connect anew, and cannot.
    await sleep(12_000);
    cluster.pause();
    const load = startLoad(list, concurrency);
    const ready = await readyz(server.url).catch(() => ({ status: 0 }));
    await sleep(pauseSeconds * 1000);
    cluster.resume();
    const toReady = await recovery(server, list);
    report('pause, cold pool', `every PostgreSQL process stopped for ${pauseSeconds} s after the pool had closed its connections (readyz meanwhile: ${ready.status})`, await load.stop(), toReady);
  }
} finally {
  await stopAll();
  await cluster.stop();
  dir.remove();
}
