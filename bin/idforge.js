#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader, so there is no build step to forget or go stale.
// On a node older than 22 it runs itself again under tools/node (bin/_node.js).
import { ensureSupportedNode } from './_node.js';

ensureSupportedNode();
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
