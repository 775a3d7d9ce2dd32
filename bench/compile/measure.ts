/**
 * One measurement in a fresh process: load + validate + compile a model directory, and report
 * wall time per phase and the process's peak RSS as JSON on stdout.
 */
import { performance } from 'node:perf_hooks';
import { compileArtifacts } from '../../src/generators/index.ts';
import { loadModel } from '../../src/schema/index.ts';
import { fixedSecrets } from '../../test/support/model.ts';

const dir = process.argv[2]!;
const t0 = performance.now();
const result = await loadModel([dir]);
const t1 = performance.now();
if (!result.ok) {
  console.error(JSON.stringify(result.problems.slice(0, 5)));
  process.exit(1);
}
const resolved = fixedSecrets(result.model);
const t2 = performance.now();
const { plan, artifacts } = compileArtifacts(result.model, resolved);
const t3 = performance.now();
const bytes = artifacts.reduce((n, a) => n + a.content.length, 0);
console.log(
  JSON.stringify({
    validateMs: Math.round(t1 - t0),
    compileMs: Math.round(t3 - t2),
    totalMs: Math.round(t1 - t0 + (t3 - t2)),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    planSteps: plan.steps.length,
    artifacts: artifacts.length,
    outputMiB: +(bytes / 1024 / 1024).toFixed(1),
  }),
);
