/**
 * Named managers across doors, on a real server: two `idforge apply --manager` runs, a raw admin
 * API write and the console's objects. Declaring an object as it is takes nothing; changing what
 * another manager keeps is refused, naming it and the fields; --force-conflicts takes it over and
 * says so; each manager deletes only its own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-managers-');

async function idforge(args: string[]) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (t) => { stdout += t; }, stderr: (t) => { stderr += t; }, env: { IDFORGE_STATE: join(work.path, 'state.json') }, cwd: work.path, color: false };
  const code = await main([...args, '--data-dir', server.dataDir], io);
  return { code, stdout, stderr };
}

const model = (port: number, wikiOrigin = 'http://wiki.localhost:4180', extra = '') => `server: { baseDomain: localhost, port: ${port} }
tenants:
  - name: acme
    displayName: Acme
    users:
      - { id: u-ann, email: ann@acme.example }
    applications:
      - { name: wiki, kind: proxy, origin: "${wikiOrigin}", upstream: "http://127.0.0.1:4181" }
      - { name: dash, kind: spa, origin: "http://dash.localhost:5173" }
${extra}    assignments:
      - { application: wiki, users: [u-ann] }
`;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'team-a.yaml'), model(server.port, undefined, '      - { name: reports, kind: spa, origin: "http://reports.localhost:5174" }\n'));
  const applied = await idforge(['apply', 'team-a.yaml', '--manager', 'team-a']);
  expect(applied.code, applied.stderr).toBe(0);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

describe('named managers', () => {
  it('records the manager on every object it makes', async () => {
    expect(await admin.typed.find('getTenant', { tenant: 'acme' })).toMatchObject({ manager: 'apply:team-a', managedBy: 'idforge' });
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ manager: 'apply:team-a' });
    expect(await admin.typed.find('getUser', { tenant: 'acme', userId: 'u-ann' })).toMatchObject({ manager: 'apply:team-a' });
    expect(await admin.typed.find('getAssignment', { tenant: 'acme', application: 'wiki', userId: 'u-ann' })).toMatchObject({ manager: 'apply:team-a' });
  });

  it('another manager declaring the objects exactly as they are changes nothing and takes nothing, and says whose they stay', async () => {
    const plan = await idforge(['plan', 'team-a.yaml', '--manager', 'team-b']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('No changes: the server matches the model');
    expect(plan.stdout).toContain("= application acme/wiki: managed by idforge apply (manager 'team-a'), as the model declares it: left to it (--force-conflicts takes it over)");
    const applied = await idforge(['apply', 'team-a.yaml', '--manager', 'team-b']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ manager: 'apply:team-a' });
  });

  it('a change to what another manager keeps is refused by plan and apply, naming the manager, the object and the fields; nothing is written', async () => {
    writeFileSync(join(work.path, 'team-b.yaml'), model(server.port, 'http://wiki.localhost:4190'));
    for (const cmd of ['plan', 'apply']) {
      const r = await idforge([cmd, 'team-b.yaml', '--manager', 'team-b']);
      expect(r.code, cmd).toBe(1);
      expect(r.stderr).toContain("application 'wiki' is managed by idforge apply (manager 'team-a'); idforge apply (manager 'team-b') would change postLogoutRedirectUris, redirectUris, origin");
      expect(r.stderr).toContain('run idforge apply with --force-conflicts to take it over');
    }
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ redirectUris: ['http://wiki.localhost:4180/oauth2/callback'] });
  });

  it('--force-conflicts takes it over, and plan shows the takeover', async () => {
    const plan = await idforge(['plan', 'team-b.yaml', '--manager', 'team-b', '--force-conflicts']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain("~ application acme/wiki (postLogoutRedirectUris, redirectUris, origin, taken over from idforge apply (manager 'team-a'))");
    const applied = await idforge(['apply', 'team-b.yaml', '--manager', 'team-b', '--force-conflicts']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ manager: 'apply:team-b' });
    // Forced, it takes over everything its model declares; what it does not declare stays team-a's.
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'dash' })).toMatchObject({ manager: 'apply:team-b' });
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'reports' })).toMatchObject({ manager: 'apply:team-a' });
  });

  it("each manager deletes only its own: team-b's model leaves team-a's SPA alone, and drops its own", async () => {
    writeFileSync(join(work.path, 'team-b-small.yaml'), model(server.port, 'http://wiki.localhost:4190').replace(/ {6}- \{ name: dash.*\n/, ''));
    const applied = await idforge(['apply', 'team-b-small.yaml', '--manager', 'team-b']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'reports' })).toMatchObject({ manager: 'apply:team-a' });
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'dash' })).toBeUndefined();
  });

  it('a raw admin API write to a managed object is a 409 naming its manager, unless forced; a write of what it already is passes', async () => {
    const wiki = (await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' }))!;
    const { name: _n, createdAt: _c, updatedAt: _u, manager: _m, managedBy: _d, stack: _s, lastApplied: _l, ...body } = wiki as typeof wiki & Record<string, unknown>;
    const same = await admin.call('PUT', '/admin/v1/tenants/acme/applications/wiki', body);
    expect(same.status).toBe(200);
    expect(same.body.outcome).toBe('unchanged');
    const changed = await admin.call('PUT', '/admin/v1/tenants/acme/applications/wiki', { ...body, displayName: 'By hand' });
    expect(changed.status).toBe(409);
    expect(changed.body.message).toContain("application 'wiki' is managed by idforge apply (manager 'team-b'); nobody (made by hand through the admin API) would change displayName");
    expect(changed.body.path).toBe('manager');
    const forced = await admin.call('PUT', '/admin/v1/tenants/acme/applications/wiki?force=true', { ...body, displayName: 'By hand' });
    expect(forced.status).toBe(200);
    expect(forced.body.changes).toEqual(expect.arrayContaining(['displayName', 'manager']));
    expect((await admin.typed.find('getApplication', { tenant: 'acme', application: 'wiki' }))!.manager).toBeUndefined();
  });

  it('--manager must be a name', async () => {
    const r = await idforge(['plan', 'team-a.yaml', '--manager', 'two words']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--manager 'two words' must be 1 to 64 characters");
  });
});
