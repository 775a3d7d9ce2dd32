#!/usr/bin/env node
// Tears down what `npm run demo` made: `pulumi destroy` deletes the tenants and stops the server,
// then the dev stack's state and the demo's local files (server data, client configs, dev
// passwords) are removed. Safe to run when nothing is deployed. IDFORGE_DEMO_DIR: as for
// bin/demo.js.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, ensureSupportedNode } from './_node.js';

ensureSupportedNode();
if (!existsSync(join(ROOT, 'node_modules/tsx'))) {
  console.log('Nothing to tear down: the demo was never installed here.');
  process.exit(0);
}
const { register } = await import('tsx/esm/api');
register();
const { DEV_STACK, configFileArgs, demoPaths, devPulumiEnv, runOrExit, writeDemoStackConfig } = await import('../src/provider/_dev-stack.ts');
const paths = demoPaths();
if (!existsSync(join(paths.pulumiState, '.pulumi'))) {
  console.log('Nothing to tear down: the demo was never installed here.');
  process.exit(0);
}
const env = devPulumiEnv();

const selected = runOrExit('pulumi', ['stack', 'select', DEV_STACK], env, { capture: true, allowFailure: true });
if (selected.status === 0) {
  await writeDemoStackConfig(paths);
  runOrExit('pulumi', ['destroy', '--yes', '--skip-preview', '--stack', DEV_STACK, ...configFileArgs(paths)], env);
  runOrExit('pulumi', ['stack', 'rm', '--yes', '--preserve-config', DEV_STACK], env);
}
rmSync(paths.stateDir, { recursive: true, force: true });
console.log('The demo is torn down: server stopped, tenants deleted, local files removed.');
