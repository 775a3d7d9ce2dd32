/**
 * One access rule across doors: a group an identity provider keeps (SCIM), assigned to an
 * application the model manages, would let the identity provider grant a Git-managed user access
 * there without the model saying so. Such access follows the tenant's `unmanaged` policy: plan lists
 * it, apply removes it under `remove` (the default) and keeps it, listed, under `report`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { runCli } from '../support/cli.ts';
import { GROUP, scimClient } from '../scim/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-access-rule-');
const cli = (args: string[]) => runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { IDFORGE_STATE: join(work.path, 'state.json') } });

const model = (port: number, policy?: string) => `server: { baseDomain: localhost, port: ${port} }
tenants:
  - name: acme
    displayName: Acme
${policy === undefined ? '' : `    unmanaged: ${policy}\n`}    users:
      - { id: u-ann, email: ann@acme.example }
      - { id: u-ben, email: ben@acme.example }
    applications:
      - { name: portal, kind: web, origin: "http://portal.localhost:3000" }
    assignments:
      - { application: portal, users: [u-ann] }
`;

let groupId: string;
beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'acme.yaml'), model(server.port));
  expect((await cli(['apply', 'acme.yaml'])).code).toBe(0);
  // The identity provider keeps a group with Ben in it; someone assigns it to the model's portal.
  const { token } = await admin.typed.call('createScimToken', { tenant: 'acme' }, { body: { description: 'the identity provider' } });
  const scim = scimClient(server, 'acme', token);
  groupId = (await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Contractors', members: [{ value: 'u-ben' }] })).body.id;
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

const grant = () => admin.typed.call('putGroupAssignment', { tenant: 'acme', application: 'portal', group: groupId }, { body: {} });
const granted = async () => (await admin.typed.find('getGroupAssignment', { tenant: 'acme', application: 'portal', group: groupId })) !== undefined;

it('under unmanaged: report, plan lists the undeclared access and apply keeps it', async () => {
  await grant();
  writeFileSync(join(work.path, 'report.yaml'), model(server.port, 'report'));
  const plan = await cli(['plan', 'report.yaml']);
  expect(plan.code, plan.stderr).toBe(0);
  expect(plan.stdout).toContain(`! group assignment acme/portal/group ${groupId}: access the model does not declare (granted by hand): kept, reported (the tenant's unmanaged: report)`);
  expect((await cli(['apply', 'report.yaml'])).code).toBe(0);
  expect(await granted()).toBe(true);
});

it('under unmanaged: remove (the default), plan shows the deletion and apply takes the access away', async () => {
  const plan = await cli(['plan', 'acme.yaml', '--json']);
  expect(plan.code, plan.stderr).toBe(0);
  const p = JSON.parse(plan.stdout) as { changes: { op: string; name: string }[]; outsideGit: { action: string; name: string }[] };
  expect(p.changes.map((c) => `${c.op} ${c.name}`)).toContain(`delete acme/portal/group ${groupId}`);
  expect(p.outsideGit).toContainEqual(expect.objectContaining({ action: 'delete', name: `acme/portal/group ${groupId}` }));
  const applied = await cli(['apply', 'acme.yaml']);
  expect(applied.code, applied.stderr).toBe(0);
  expect(await granted()).toBe(false);
  // The group itself, the identity provider's, stays; only the access the model does not declare went.
  expect(await admin.typed.find('getGroup', { tenant: 'acme', group: groupId })).toMatchObject({ members: ['u-ben'] });
  expect((await cli(['plan', 'acme.yaml'])).stdout).toContain('No changes');
});
