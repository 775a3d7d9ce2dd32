/**
 * Admin credentials go only to the server that wrote them: `idforge plan|apply --data-dir D` reads
 * D's admin-credentials.json, and when the model names another server (here a listener on the
 * model's port that records every request), it fails naming both, and that server hears nothing.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { tempDir, testServer } from '../server/_support.ts';
import { acmeModel } from '../support/model.ts';

let server: Awaited<ReturnType<typeof testServer>>;
const heard: IncomingMessage[] = [];
const other = createServer((req, res) => {
  heard.push(req);
  res.writeHead(401).end();
});
const work = tempDir('idforge-credentials-');

beforeAll(async () => {
  server = await testServer();
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await server?.dispose();
  await new Promise((r) => other.close(r));
  work.remove();
});

it("refuses to send a data dir's credentials to the server the model names when that server did not write them", async () => {
  const port = (other.address() as { port: number }).port;
  const model = acmeModel(port);
  writeFileSync(join(work.path, 'acme.yaml'), model);
  for (const command of ['plan', 'apply']) {
    const r = await runCli([command, 'acme.yaml', '--data-dir', server.dataDir], {
      cwd: work.path, env: { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12', IDFORGE_STATE: join(work.path, 'state.json') },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the model's server is http://localhost:${port}/admin/v1, but the credentials in ${server.dataDir} belong to ${server.url}/admin/v1: nothing was sent`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }
  expect(heard).toEqual([]);
});
