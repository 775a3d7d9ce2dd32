#!/usr/bin/env node
// `node bin/run.js <command> [args...]`: runs one of the project's commands (vitest, tsc, tsx, a script)
// under a supported Node.js, the way package.json's scripts do: `npm test` is `node bin/run.js vitest run`.
// On a machine whose node is older than 22 it runs under tools/node (bin/_node.js), with that node first
// on PATH so every child process (servers, the Pulumi engine's hosts, sample apps) runs on it too.
import { dirname, join } from 'node:path';
import { ROOT, ensureSupportedNode, pathWith, runAsStandIn } from './_node.js';

await ensureSupportedNode();

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  console.error('usage: node bin/run.js <command> [args...]');
  process.exit(2);
}
await runAsStandIn(command, args, {
  env: { ...process.env, PATH: pathWith(dirname(process.execPath), join(ROOT, 'node_modules', '.bin')) },
});
