#!/usr/bin/env node
// Tears down what `npm run demo` made: stops the sample apps (only processes it can prove are
// theirs, src/demo/app-processes.ts), `pulumi destroy` deletes the tenants and stops the server,
// then the dev stack's state and the demo's local files (server data, client configs, apps, dev
// passwords) are removed. Safe to run when nothing is deployed or running. IDFORGE_DEMO_DIR: as
// for bin/demo.js.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, ensureSupportedNode } from './_node.js';

await ensureSupportedNode();
// Without tsx nothing of the demo ever ran here.
if (!existsSync(join(ROOT, 'node_modules/tsx'))) {
  console.log('Nothing to tear down: the demo was never installed here.');
  process.exit(0);
}
const { load } = await import('./_load.js');
const { DEV_STACK, configFileArgs, demoPaths, devPulumiEnv, runOrExit, writeDemoStackConfig } = await load('provider/_dev-stack');
const { stopApps } = await load('demo/app-processes');
const paths = demoPaths();
const deployed = existsSync(join(paths.pulumiState, '.pulumi'));
if (!deployed && !existsSync(paths.stateDir)) {
  console.log('Nothing to tear down: the demo was never run here.');
  process.exit(0);
}

// The apps first: they are clients of the server that goes next.
for (const line of await stopApps(paths.appsDir)) console.log(`demo: ${line}`);

if (deployed) {
  const env = devPulumiEnv();
  const selected = runOrExit('pulumi', ['stack', 'select', DEV_STACK], env, { capture: true, allowFailure: true });
  if (selected.status === 0) {
    await writeDemoStackConfig(paths);
    runOrExit('pulumi', ['destroy', '--yes', '--skip-preview', '--stack', DEV_STACK, ...configFileArgs(paths)], env);
    runOrExit('pulumi', ['stack', 'rm', '--yes', '--preserve-config', DEV_STACK], env);
  }
}
rmSync(paths.stateDir, { recursive: true, force: true });
console.log('The demo is torn down: sample apps and server stopped, tenants deleted, local files removed.');
