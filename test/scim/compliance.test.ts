/**
 * The acceptance of the SCIM service provider: the open-source compliance checker scim2-tester
 * (PyPI), run through scim2-cli's `test` command, passes every check against a tenant of a real
 * server. Its whole report is kept in test-output/scim2-tester.txt.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scimBaseUrl } from '../../src/contract/index.ts';
import { OUTPUT_DIR } from '../support/processes.ts';
import { scim2Command } from '../support/scim-tester.ts';
import { adminClient, testServer } from '../server/_support.ts';

const run = promisify(execFile);
let server: Awaited<ReturnType<typeof testServer>>;

beforeAll(async () => {
  server = await testServer();
});
afterAll(async () => {
  await server?.dispose();
});

it('scim2-tester passes every check against a tenant (scim2-cli test)', async () => {
  const scim2 = await scim2Command();
  const admin = await adminClient(server);
  await admin.put('/admin/v1/tenants/compliance', { displayName: 'Compliance' });
  const { token } = (await admin.typed.call('createScimToken', { tenant: 'compliance' }, { body: { description: 'scim2-tester' } }));
  const url = scimBaseUrl(server.address, 'compliance');
  // The token travels in the environment, not the command line (scim2-cli's own advice).
  const result = await run(scim2, ['--url', url, 'test'], {
    env: { ...process.env, SCIM_CLI_HEADERS: `Authorization: Bearer ${token}` }, timeout: 600_000, maxBuffer: 16 * 1024 * 1024,
  }).then((r) => ({ code: 0, out: r.stdout + r.stderr }), (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }));
  mkdirSync(OUTPUT_DIR, { recursive: true });
  writeFileSync(join(OUTPUT_DIR, 'scim2-tester.txt'), result.out);
  const verdicts = result.out.split('\n').filter((l) => /^[A-Z]+ \w/.test(l) && !l.startsWith('Performing'));
  const failed = verdicts.filter((l) => !l.startsWith('SUCCESS '));
  expect(failed, result.out).toEqual([]);
  expect(result.code, result.out).toBe(0);
  // Discovery, every CRUD and PATCH check of both resource types: no check was skipped.
  expect(verdicts.length).toBeGreaterThan(90);
  for (const check of ['object_creation', 'object_replacement', 'object_deletion', 'check_add_attribute', 'check_remove_attribute', 'check_replace_attribute', 'search_with_attributes']) {
    expect(verdicts.filter((l) => l === `SUCCESS ${check}`).length, check).toBeGreaterThanOrEqual(2);
  }
});
