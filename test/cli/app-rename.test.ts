/**
 * Renames keep identity: an application renamed with previousName and no clientId keeps the client
 * id it was made with (its running clients go on working), through plan, apply and export; a client
 * id is never recomputed from a new name, and a model that would do so gets a refusal that says
 * which clientId to declare.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-app-rename-');

async function idforge(args: string[], server_ = true) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (t) => { stdout += t; }, stderr: (t) => { stderr += t; }, env: { IDFORGE_STATE: join(work.path, 'state.json') }, cwd: work.path, color: false };
  const code = await main([...args, ...(server_ ? ['--data-dir', server.dataDir] : [])], io);
  return { code, stdout, stderr };
}

const model = (port: number, app: string) => `server: { baseDomain: localhost, port: ${port} }
tenants:
  - name: acme
    displayName: Acme
    users:
      - { id: u-ann, email: ann@acme.example }
    applications:
${app}
    assignments:
      - { application: ${/name: ([a-z-]+)/.exec(app)![1]}, users: [u-ann] }
`;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'm.yaml'), model(server.port, '      - { name: portal, kind: web, origin: "http://portal.localhost:3000" }'));
  expect((await idforge(['apply', 'm.yaml'])).code).toBe(0);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

it('a rename without clientId keeps the client id, secret and assignments; export writes the client id out; plan of the export is empty', async () => {
  const before = (await admin.typed.find('getApplication', { tenant: 'acme', application: 'portal' }))!;
  const secret = (JSON.parse(readFileSync(join(work.path, 'state.json'), 'utf8')) as { secrets: Record<string, { clientSecret: string }> }).secrets['acme/portal']!.clientSecret;
  writeFileSync(join(work.path, 'm.yaml'), model(server.port, '      - { name: portal-web, previousName: portal, kind: web, origin: "http://portal.localhost:3000" }'));
  const plan = await idforge(['plan', 'm.yaml', '--json']);
  expect(plan.code, plan.stderr).toBe(0);
  const changes = (JSON.parse(plan.stdout) as { changes: { op: string; name: string }[] }).changes.map((c) => `${c.op} ${c.name}`);
  expect(changes.filter((c) => !c.startsWith('update'))).toEqual([]);
  const applied = await idforge(['apply', 'm.yaml']);
  expect(applied.code, applied.stderr).toBe(0);
  expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'portal' })).toBeUndefined();
  const after = (await admin.typed.find('getApplication', { tenant: 'acme', application: 'portal-web' }))!;
  expect(after).toMatchObject({ clientId: 'portal', createdAt: before.createdAt });
  expect((await admin.typed.call('verifyClientSecret', { tenant: 'acme', application: 'portal-web' }, { body: { clientSecret: secret } })).matches).toBe(true);
  expect((await admin.typed.listAll('listAssignments', { tenant: 'acme', application: 'portal-web' }))!.map((a) => a.userId)).toEqual(['u-ann']);
  // The configurations compile writes name the same client.
  const compiled = await idforge(['compile', join(work.path, 'm.yaml'), '--out', join(work.path, 'out')], false);
  expect(compiled.code, compiled.stderr).toBe(0);
  expect(JSON.parse(readFileSync(join(work.path, 'out/acme/portal-web/grant.json'), 'utf8')).acme.key).toBe('portal');

  const exported = await idforge(['export', 'acme', '--out', 'exported.yaml']);
  expect(exported.code, exported.stderr).toBe(0);
  expect(readFileSync(join(work.path, 'exported.yaml'), 'utf8')).toMatch(/name: portal-web\s+kind: web\s+clientId: portal/);
  const again = await idforge(['plan', 'exported.yaml', '--json']);
  expect(JSON.parse(again.stdout)).toMatchObject({ summary: { create: 0, update: 0, delete: 0 } });
});

it('a model that drops the previousName without declaring the client id is refused, saying which clientId to declare; declared, nothing changes', async () => {
  writeFileSync(join(work.path, 'm.yaml'), model(server.port, '      - { name: portal-web, kind: web, origin: "http://portal.localhost:3000" }'));
  const plan = await idforge(['plan', 'm.yaml']);
  expect(plan.code).toBe(1);
  expect(plan.stderr).toContain("application 'portal-web' has the client id 'portal', fixed when it was made");
  expect(plan.stderr).toContain('declare clientId: portal in the model');
  writeFileSync(join(work.path, 'm.yaml'), model(server.port, '      - { name: portal-web, kind: web, clientId: portal, origin: "http://portal.localhost:3000" }'));
  const fixed = await idforge(['plan', 'm.yaml']);
  expect(fixed.code, fixed.stderr).toBe(0);
  expect(fixed.stdout).toContain('No changes: the server matches the model');
});
