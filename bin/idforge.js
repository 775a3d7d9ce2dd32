#!/usr/bin/env node
// The idforge command. The CLI (src/cli) and the server's own `serve` command meet only here: the CLI
// never imports the server. Runs the TypeScript sources through tsx's loader; on a node older than
// 22 it runs itself again under tools/node (bin/_node.js).
import { ensureSupportedNode } from './_node.js';

ensureSupportedNode();
const { register } = await import('tsx/esm/api');
register();
const { main, SERVE_SUMMARY } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2), undefined, {
  serve: { summary: SERVE_SUMMARY, load: () => import('../src/server/serve-command.ts') },
});
