/**
 * The cross-door soak: thousands of random sequences of writes through idforge apply (two named
 * managers), renames, SCIM, the console and the raw admin API against one real server, with the invariants of
 * test/doors/_cross-door.ts after every step. Prints what it tried and keeps every failing seed in
 * bench/soak/failing-seeds.json (replay one: --seed <n> --runs 1). Never fails a build.
 *
 *   node bin/run.js tsx bench/soak/doors.ts [--runs 2000] [--seed <n>]
 */
import '../_setup.ts';
import fc from 'fast-check';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { testServer } from '../../test/server/_support.ts';
import { runSequence, stepArb, type Harness } from '../../test/doors/_cross-door.ts';
import { setupStep } from '../_setup.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '2000' }, seed: { type: 'string' } } });
const runs = Number(values.runs);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
const file = join(import.meta.dirname, 'failing-seeds.json');
const h: Harness = { server: await setupStep('start a server', () => testServer()), tried: 0, ran: {} };
const started = performance.now();
try {
  const r = await fc.check(fc.asyncProperty(fc.array(stepArb, { minLength: 2, maxLength: 8 }), (steps) => runSequence(h, steps)), { numRuns: runs, seed });
  const seconds = (performance.now() - started) / 1000;
  console.log(`cross-door soak: seed ${seed}, ${r.numRuns} sequences, ${h.tried} steps (${JSON.stringify(h.ran)} acted) in ${seconds.toFixed(0)} s: ${r.failed ? 'FAILED' : 'every invariant held'}`);
  if (r.failed) {
    console.log(`counterexample: ${JSON.stringify(r.counterexample)}\n${String(r.errorInstance)}`);
    const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as unknown[]) : [];
    writeFileSync(file, `${JSON.stringify([...kept, { seed, path: r.counterexamplePath, error: String(r.errorInstance).slice(0, 2000) }], null, 2)}\n`);
    console.log(`seed kept in ${file}`);
  }
} finally {
  await h.server.dispose();
}
