/**
 * bench/cli: what a cold start of the idforge command costs, in CPU time (user + system) of the whole
 * process, and the wall time of a no-change `pulumi preview` of the demo stack. Prints figures beside
 * their targets; never a test.
 *
 *   node bin/run.js tsx bench/cli/startup.ts [--runs 5] [--no-preview]
 *
 * Rows:
 *   validate        `idforge validate examples/acme.yaml`                       target < 0.25 s CPU
 *   plan, no server `idforge plan examples/acme.yaml` against a port nobody     target < 0.6 s CPU
 *                   listens on, until it reports the server unreachable
 *   preview         no-change `pulumi preview` of the dev stack (`npm run demo`   target < 6 s wall
 *                   first; skipped when the demo is not up)
 * The CLI rows need a fresh build (`npm run build`): with a stale one bin/idforge.js runs the sources
 * through tsx, and the row says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIsFresh } from '../../bin/_load.js';
import { ROOT } from '../../bin/_node.js';
import { setupCheck } from '../_setup.ts';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] ?? 5) || 5;

/** CPU seconds of waited-for children so far: fields 16 and 17 of /proc/self/stat, in clock ticks. */
function childrenCpu(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** One run, which must end as expected (its exit code, and `says` in its output): else it timed something else. */
function measure(cmd: string, argv: readonly string[], env: NodeJS.ProcessEnv, expectCode: number, says?: RegExp): { cpu: number; wall: number } {
  const cpu0 = childrenCpu();
  const t0 = performance.now();
  const r = spawnSync(cmd, argv, { cwd: ROOT, env, encoding: 'utf8' });
  const wall = (performance.now() - t0) / 1000;
  const out = `${r.stdout}${r.stderr}`;
  setupCheck(r.status === expectCode && (says === undefined || says.test(out)), `${cmd} ${argv.join(' ')}`,
    `exited ${r.status} (expected ${expectCode}${says === undefined ? '' : `, saying ${says}`}):\n${out}`);
  return { cpu: childrenCpu() - cpu0, wall };
}

function row(label: string, values: readonly number[], target: string, unit: string): void {
  const s = [...values].sort((a, b) => a - b);
  const med = s[Math.floor(s.length / 2)]!;
  console.log(`${label.padEnd(18)} min ${s[0]!.toFixed(3)} ${unit}  median ${med.toFixed(3)} ${unit}  max ${s.at(-1)!.toFixed(3)} ${unit}   target ${target}`);
}

const work = mkdtempSync(join(tmpdir(), 'idforge-bench-cli-'));
try {
  console.log(`idforge start-up, ${runs} runs each, node ${process.version}; build ${buildIsFresh() ? 'fresh: compiled JavaScript' : 'STALE: the sources run through tsx (npm run build)'}`);
  const node = process.execPath;
  const bin = join(ROOT, 'bin/idforge.js');
  const validate = Array.from({ length: runs }, () => measure(node, [bin, 'validate', 'examples/acme.yaml'], process.env, 0).cpu);
  row('validate', validate, '< 0.25 s CPU', 's');

  // A model whose server port nobody listens on.
  const port = 1; // privileged and unused: connection refused at once
  const model = readFileSync(join(ROOT, 'examples/acme.yaml'), 'utf8').replace(/port: 9080/, `port: ${port}`);
  writeFileSync(join(work, 'acme.yaml'), model);
  const env = {
    ...process.env, IDFORGE_ADMIN_CLIENT_ID: 'bench', IDFORGE_ADMIN_CLIENT_SECRET: 'bench', IDFORGE_STATE: join(work, 'state.json'),
    ACME_ALICE_PASSWORD: 'bench-password-a', ACME_BOB_PASSWORD: 'bench-password-b',
  };
  const plan = Array.from({ length: runs }, () => measure(node, [bin, 'plan', join(work, 'acme.yaml')], env, 1, /connection refused/).cpu);
  row('plan, no server', plan, '< 0.6 s CPU', 's');

  if (!args.includes('--no-preview')) {
    const { demoPaths, devPulumiEnv, DEV_STACK } = await import('../../src/provider/_dev-stack.ts');
    // The demo's dev passwords, as `npm run demo` passes them.
    const passwordFile = join(demoPaths().stateDir, 'dev-passwords.json');
    const passwords = existsSync(passwordFile) ? (JSON.parse(readFileSync(passwordFile, 'utf8')) as Record<string, string>) : {};
    const pulumiEnv = { ...devPulumiEnv(), ...passwords };
    if (!existsSync(join(ROOT, '.pulumi-state/.pulumi/stacks')) || spawnSync('pulumi', ['stack', 'select', DEV_STACK], { cwd: ROOT, env: pulumiEnv }).status !== 0) {
      console.log('preview            skipped: the demo stack is not up (npm run demo)');
    } else {
      const previews = Array.from({ length: Math.min(runs, 3) }, () =>
        measure('pulumi', ['preview', '--expect-no-changes', '--non-interactive', '--stack', DEV_STACK], pulumiEnv, 0).wall);
      row('preview (wall)', previews, '< 6 s wall, idle 2-core machine', 's');
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
