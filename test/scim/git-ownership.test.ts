/**
 * SCIM and Git side by side in one tenant, with `idforge plan|apply` (in-process, against a real
 * server): what an identity provider made through SCIM is never deleted, overwritten or reported
 * as drift by the model's tools, and a model that names a SCIM-managed user gets one clear
 * problem, located in the model file, before anything is sent.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { GROUP, scimClient, scimUser, type ScimClient } from './_support.ts';
import { acmeModel } from '../support/model.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12' };
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let scim: ScimClient;
let okta: { id: string };
let group: string;
const work = tempDir('idforge-scim-git-');

const idforge = (...args: string[]) => runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { ...PASSWORDS, IDFORGE_STATE: join(work.path, 'state.json') } });

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  const model = acmeModel(server.port);
  writeFileSync(join(work.path, 'acme.yaml'), model);
  expect((await idforge('apply', 'acme.yaml')).code).toBe(0);
  const { token } = await admin.typed.call('createScimToken', { tenant: 'acme' }, { body: { description: 'Okta' } });
  scim = scimClient(server, 'acme', token);
  okta = (await scim.call('POST', '/Users', scimUser('okta.user', 'okta.user@acme.example', { displayName: 'From Okta' }))).body;
  const g = (await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Okta Engineering', members: [{ value: okta.id }] })).body;
  group = g.id;
  await admin.put(`/admin/v1/tenants/acme/applications/portal/group-assignments/${g.id}`, { managedBy: 'console' });
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

it('plan sees no drift and apply keeps what SCIM made, in a tenant the model manages (unmanaged: remove)', async () => {
  const plan = await idforge('plan', 'acme.yaml');
  expect(plan.code, plan.stderr).toBe(0);
  // The one thing plan lists is the access the model does not declare: the identity provider's
  // group on the model's portal (test/cli/access-rule.test.ts); the user and group stay.
  expect(plan.stdout).toContain(`- group assignment acme/portal/group ${group}: access the model does not declare (granted in the console): deleted (the tenant's unmanaged: remove)`);
  expect(plan.stdout).toContain('Plan: 0 to create, 0 to change, 1 to delete');
  expect(plan.stdout).not.toContain(okta.id);
  // Even a model without any user: the model's own go (allowed), SCIM's stays.
  const noUsers = readFileSync(join(work.path, 'acme.yaml'), 'utf8')
    .replace(/    users:\n(?:      .*\n|        .*\n)+?(?=    groups:)/, '')
    .replace(/    groups:\n(?:      .*\n|        .*\n)+?(?=    applications:)/, '')
    .replace(/    assignments:\n(?:.*\n)*$/, '');
  writeFileSync(join(work.path, 'acme-no-users.yaml'), noUsers);
  const apply = await idforge('apply', 'acme-no-users.yaml', '--allow-mass-delete');
  expect(apply.code, apply.stderr).toBe(0);
  expect(apply.stdout).toContain('- user acme/u-bob');
  expect(apply.stdout).not.toContain(okta.id);
  expect((await scim.call('GET', `/Users/${okta.id}`)).body).toMatchObject({ userName: 'okta.user', displayName: 'From Okta', groups: [{ display: 'Okta Engineering' }] });
  expect((await idforge('apply', 'acme.yaml')).code).toBe(0);
});

it('a model that names a SCIM-managed user gets one located problem, and nothing is sent', async () => {
  const model = readFileSync(join(work.path, 'acme.yaml'), 'utf8').replace('    groups:\n', `      - id: ${okta.id}\n        email: okta.user@acme.example\n    groups:\n`);
  writeFileSync(join(work.path, 'acme-names-okta.yaml'), model);
  const line = model.split('\n').findIndex((l) => l.includes(`id: ${okta.id}`)) + 1;
  const words = `user '${okta.id}' is managed by SCIM (an identity provider provisions it): the model cannot declare it; remove it from the model, or have the identity provider stop managing it first`;
  for (const command of ['plan', 'apply']) {
    const r = await idforge(command, 'acme-names-okta.yaml');
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toBe(`${join(work.path, 'acme-names-okta.yaml')}:${line}:13  ${words}  (at tenants[0].users[2].id)\n\n1 problem found.\n`);
  }
  const json = await idforge('plan', 'acme-names-okta.yaml', '--json');
  expect(JSON.parse(json.stdout)).toEqual({
    ok: false,
    problems: [{ code: 'owned-elsewhere', path: ['tenants', 0, 'users', 2, 'id'], message: words, file: join(work.path, 'acme-names-okta.yaml'), line, col: 13 }],
  });
  expect((await admin.call('GET', `/admin/v1/tenants/acme/users/${okta.id}`)).body).toMatchObject({ managedBy: 'scim', displayName: 'From Okta' });
});
