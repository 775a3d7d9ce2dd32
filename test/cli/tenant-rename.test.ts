/**
 * A tenant renamed in the model (`previousName`) through `idforge plan|apply` against a real
 * server: the plan shows one change, the tenant renamed, instead of a new tenant and the deletion
 * of the old one with its users; apply moves it, keeping users, applications and the client
 * secrets kept in the state file; once applied, the model plans no changes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { acmeModel } from '../support/model.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12' };
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-tenant-rename-');
const acme = () => acmeModel(server.port);
const idforge = (args: string[]) =>
  runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { ...PASSWORDS, IDFORGE_STATE: join(work.path, 'state.json') } });

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'acme.yaml'), acme());
  expect((await idforge(['apply', 'acme.yaml'])).code).toBe(0);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

it('plans a declared tenant rename as one change, applies it keeping everything in the tenant, then plans nothing', async () => {
  const users = (await admin.typed.listAll('listUsers', { tenant: 'acme' }))!.map((u) => u.id).sort();
  const state = JSON.parse(readFileSync(join(work.path, 'state.json'), 'utf8')) as { secrets: Record<string, { clientSecret?: string }> };
  const portalSecret = state.secrets['acme/portal']!.clientSecret!;
  writeFileSync(join(work.path, 'renamed.yaml'), acme().replace(/^  - name: acme\n/m, '  - name: acmecorp\n    previousName: acme\n'));

  const plan = await idforge(['plan', 'renamed.yaml']);
  expect(plan.code, plan.stderr).toBe(0);
  expect(plan.stdout).toContain("  ~ tenant acmecorp (renamed from 'acme')");
  expect(plan.stdout).toMatch(/Plan: 0 to create, 1 to change, 0 to delete/);
  expect(await admin.typed.find('getTenant', { tenant: 'acme' })).toBeDefined();

  const applied = await idforge(['apply', 'renamed.yaml']);
  expect(applied.code, applied.stderr).toBe(0);
  expect(applied.stdout).toMatch(/Applied: 0 created, 1 changed, 0 deleted/);
  expect(await admin.typed.find('getTenant', { tenant: 'acme' })).toBeUndefined();
  expect((await admin.typed.listAll('listUsers', { tenant: 'acmecorp' }))!.map((u) => u.id).sort()).toEqual(users);
  // The client keeps the secret the state file holds for it, now under its new key too.
  const verify = await admin.typed.call('verifyClientSecret', { tenant: 'acmecorp', application: 'portal' }, { body: { clientSecret: portalSecret } });
  expect(verify.matches).toBe(true);
  expect((JSON.parse(readFileSync(join(work.path, 'state.json'), 'utf8')) as typeof state).secrets['acmecorp/portal']!.clientSecret).toBe(portalSecret);

  const again = await idforge(['plan', 'renamed.yaml']);
  expect(again.code, again.stderr).toBe(0);
  expect(again.stdout).toContain('No changes: the server matches the model');
});

it('once the rename is applied, a previousName left in the model (or naming nothing) is no rename', async () => {
  writeFileSync(join(work.path, 'fresh.yaml'), acme().replace(/^  - name: acme\n/m, '  - name: acmecorp\n    previousName: nosuch\n'));
  const plan = await idforge(['plan', 'fresh.yaml']);
  expect(plan.code, plan.stderr).toBe(0);
  expect(plan.stdout).not.toContain('renamed');
  expect(plan.stdout).toContain('No changes: the server matches the model');
});
