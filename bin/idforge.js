#!/usr/bin/env node
// The idforge command. The CLI (src/cli), the server's own `serve` command, the admin console
// (src/console) and the account page (src/account), apps at the server's edge, meet only here: the CLI never imports the server, and the
// server never imports the console. Runs the compiled JavaScript (dist/, built by `npm ci`), or the TypeScript
// sources through tsx while a source is newer than the build (bin/_load.js). On a node older than 22 it
// runs itself again under tools/node (bin/_node.js).
import { load } from './_load.js';
import { ensureSupportedNode } from './_node.js';

await ensureSupportedNode();
const { main, SERVE_SUMMARY } = await load('cli/main');
process.exitCode = await main(process.argv.slice(2), undefined, {
  serve: {
    summary: SERVE_SUMMARY,
    load: async () => {
      const [{ serveCommand }, { consoleEdge }, { accountEdge }] = await Promise.all([load('server/serve-command'), load('console/index'), load('account/index')]);
      return { run: serveCommand([consoleEdge(), accountEdge()]) };
    },
  },
});
