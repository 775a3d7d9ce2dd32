/**
 * A second, independent checker: scim-sanity (PyPI), whose live probe runs its own CRUD lifecycles
 * of users and groups, searches and error cases against a tenant of a real server (the RFC 7643/7644
 * conformance it checks is its authors' reading, not scim2-tester's). Its whole report is kept in
 * test-output/scim-sanity.json.
 *
 * Every check passes but one, and that one is a refusal this server makes on purpose: the probe adds
 * a group member whose id is the literal "fake-member-id" and expects 200. Here members are users of
 * the tenant (a member who is no one could never sign in, and would become someone if a user were
 * later given that id), so the answer is 400 invalidValue naming the value: the test holds the probe
 * to exactly that, and to nothing else failing.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scimBaseUrl } from '../../src/contract/index.ts';
import { OUTPUT_DIR } from '../support/processes.ts';
import { scimSanityPython } from '../support/scim-tester.ts';
import { adminClient, testServer } from '../server/_support.ts';
import { GROUP, PATCH_OP, scimClient } from './_support.ts';

const run = promisify(execFile);
let server: Awaited<ReturnType<typeof testServer>>;

beforeAll(async () => {
  server = await testServer();
});
afterAll(async () => {
  await server?.dispose();
});

/** The probe through its Python API, the token from the environment; its JSON report. */
const PROBE = [
  'import os, sys',
  'from scim_sanity.probe.runner import run_probe',
  "sys.exit(run_probe(sys.argv[1], token=os.environ['SCIM_SANITY_TOKEN'], accept_side_effects=True, json_output=True, timeout=30))",
].join('\n');

interface Report {
  readonly summary: { readonly total: number; readonly passed: number; readonly failed: number; readonly errors: number };
  readonly results: readonly { readonly name: string; readonly status: string; readonly message?: string }[];
}

it('scim-sanity passes every check against a tenant, but the member who is no one (refused on purpose)', async () => {
  const python = await scimSanityPython();
  const admin = await adminClient(server);
  await admin.put('/admin/v1/tenants/sanity', { displayName: 'Sanity' });
  const { token } = await admin.typed.call('createScimToken', { tenant: 'sanity' }, { body: { description: 'scim-sanity' } });
  const url = scimBaseUrl(server.address, 'sanity');
  const out = await run(python, ['-c', PROBE, url], { env: { ...process.env, SCIM_SANITY_TOKEN: token }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 })
    .then((r) => r.stdout, (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr === undefined || e.stderr === '' ? '' : `\n${e.stderr}`}`);
  mkdirSync(OUTPUT_DIR, { recursive: true });
  writeFileSync(join(OUTPUT_DIR, 'scim-sanity.json'), out);
  const report = JSON.parse(out.slice(out.indexOf('{'))) as Report;
  const notPassed = report.results.filter((r) => r.status !== 'pass' && r.status !== 'skip');
  expect(notPassed, out).toEqual([{ name: 'PATCH /Groups/{id} add member', status: 'fail', message: 'Expected 200, got 400', phase: expect.any(String) }]);
  // Discovery, both lifecycles, search and errors all ran.
  expect(report.summary.passed, out).toBeGreaterThanOrEqual(27);

  // The refusal is the one meant: the member's value is no user of the tenant.
  const scim = scimClient(server, 'sanity', token);
  const g = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Probe' });
  const r = await scim.call('PATCH', `/Groups/${g.body.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: 'fake-member-id' }] }] });
  expect(r.body).toMatchObject({ status: '400', scimType: 'invalidValue', detail: 'member "fake-member-id" is not a user of this tenant' });
});
