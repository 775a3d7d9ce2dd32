/**
 * bench/compile: validate + compile for 500 tenants × 20 applications × 200 users (10k apps,
 * 100k users) and for twice that, each in a fresh process. Prints figures; never fails a build.
 *
 *   npm run bench:compile            # default sizes
 *   npm run bench:compile -- 50      # tenants for the smaller model (doubled for the second)
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateModel } from './generate.ts';
import { setupStep } from '../_setup.ts';

const base = Number(process.argv[2] ?? 500);
const root = await mkdtemp(join(tmpdir(), 'idforge-bench-'));
const rows: Array<Record<string, unknown>> = [];
try {
  for (const tenants of [base, base * 2]) {
    const dir = join(root, String(tenants));
    const { files, bytes } = await generateModel(dir, tenants);
    // measure.ts exits 1, printing the first problems, when the generated model does not validate.
    const measure = () => setupStep(`validate + compile of the ${tenants}-tenant model (bench/compile/measure.ts)`, async () =>
      JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', 'bench/compile/measure.ts', dir], { encoding: 'utf8', maxBuffer: 1 << 26 })) as Record<string, number>);
    const runs = [await measure(), await measure(), await measure()];
    const best = runs.reduce((a, b) => (b.totalMs! < a.totalMs! ? b : a));
    rows.push({ tenants, applications: tenants * 20, users: tenants * 200, files, modelMiB: +(bytes / 1024 / 1024).toFixed(1), ...best, runsMs: runs.map((r) => r.totalMs).join('/') });
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
console.table(rows);
const [small, large] = rows as Array<{ totalMs: number; peakRssMiB: number }>;
console.log(`validate+compile: ${small!.totalMs} ms, peak RSS ${small!.peakRssMiB} MiB (target < 3000 ms, < 1024 MiB)`);
console.log(`doubled model: ${large!.totalMs} ms = ${(large!.totalMs / small!.totalMs).toFixed(2)}× (target < 2.2×)`);
