/**
 * `idforge export` round trip: a tenant made outside Git (through the admin API, as the console
 * makes objects: managedBy console) is exported, the file validates, and `idforge plan` against it
 * shows no changes; apply then takes the objects into Git. And the console's objects that a model
 * does not declare are reported by plan, never deleted without --allow-delete-console.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { acmeModel, loadExample } from '../support/model.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-export-');
const SECRETS = { crm: 'crm-client-secret-made-by-the-console-0123456789', wiki: 'wiki-client-secret-made-by-the-console-012345678' };

async function idforge(args: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    env: { IDFORGE_STATE: join(work.path, 'state.json'), ...env },
    cwd: work.path,
    color: false,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  const c = admin.typed;
  const tenant = 'studio';
  const o = (app: string) => `http://${app}.localhost:3000`;
  await c.call('putTenant', { tenant }, { body: {
    displayName: 'Studio', scopes: [{ name: 'admin', description: 'administer' }, { name: 'billing' }], login: { methods: ['password', 'otp'], requireSecondFactor: false },
    mail: { from: 'Studio <no-reply@studio.example>', smtp: { host: 'smtp.studio.example', security: 'tls', username: 'studio', passwordEnv: 'IDFORGE_SMTP_STUDIO' } },
  } });
  await c.call('putApplication', { tenant, application: 'ledger' }, { body: { kind: 'api', identifier: 'https://ledger.studio.example', scopes: ['billing'], managedBy: 'console' } });
  await c.call('putApplication', { tenant, application: 'crm' }, {
    body: { kind: 'web', displayName: 'CRM', clientId: 'crm', redirectUris: [`${o('crm')}/connect/studio/callback`], postLogoutRedirectUris: [`${o('crm')}/`], scopes: ['openid', 'profile', 'email', 'offline'], audience: [], clientSecret: SECRETS.crm, managedBy: 'console' },
  });
  await c.call('putApplication', { tenant, application: 'wiki' }, {
    body: { kind: 'proxy', clientId: 'wiki-proxy', redirectUris: [`${o('wiki')}/oauth2/callback`], postLogoutRedirectUris: [`${o('wiki')}/`], scopes: ['openid', 'email', 'profile', 'offline'], audience: [], clientSecret: SECRETS.wiki, managedBy: 'console' },
  });
  await c.call('putApplication', { tenant, application: 'board' }, {
    body: { kind: 'spa', redirectUris: [o('board'), `${o('board')}/`], postLogoutRedirectUris: [`${o('board')}/`], clientId: 'board', scopes: ['openid', 'profile', 'email', 'billing', 'offline'], audience: ['https://ledger.studio.example'], offline: true, managedBy: 'console' },
  });
  await c.call('putUser', { tenant, userId: 'u-ann' }, { body: { email: 'ann@studio.example', displayName: 'Ann', scopes: ['admin', 'billing'], initialPassword: 'ann-password-1' } });
  await c.call('putUser', { tenant, userId: 'u-ben' }, { body: { email: 'ben@studio.example', disabled: true, managedBy: 'console' } });
  await c.call('changeAssignments', { tenant, application: 'crm' }, { body: { add: ['u-ann', 'u-ben'], managedBy: 'console' } });
  await c.call('changeAssignments', { tenant, application: 'board' }, { body: { add: ['u-ann'], managedBy: 'console' } });
  // The secrets the console showed once, kept as idforge's state file keeps secrets.
  writeFileSync(join(work.path, 'state.json'), JSON.stringify({ version: 1, secrets: { 'studio/crm': { clientSecret: SECRETS.crm }, 'studio/wiki': { clientSecret: SECRETS.wiki } } }));
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

describe('idforge export', () => {
  it('writes the live tenant as a model that validates, marking what the server does not keep', async () => {
    const r = await idforge(['export', 'studio', '--data-dir', server.dataDir, '--out', 'studio.yaml']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("wrote studio.yaml: tenant 'studio'");
    const text = readFileSync(join(work.path, 'studio.yaml'), 'utf8');
    expect(text).toContain(`port: ${server.port}`);
    expect(text).toMatch(/upstream: http:\/\/127\.0\.0\.1:8080 # the app behind the proxy is not kept by the server: set it/);
    expect(text).toMatch(/id: u-ann # has a password on the server/);
    expect(text).not.toContain(SECRETS.crm);
    expect(text).not.toMatch(/password:|clientSecret/);
    // The tenant's mail settings come back whole; the password stays a variable's name.
    expect(text).toContain('passwordEnv: IDFORGE_SMTP_STUDIO');
    expect(text).toContain('host: smtp.studio.example');
    const v = await idforge(['validate', join(work.path, 'studio.yaml')]);
    if (process.env.IDFORGE_SHOW_EXPORT) console.log(text);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toContain('valid: 1 tenant, 4 applications, 2 users, 2 assignments');
  });

  it("plan against the export shows no changes: what nobody manages apply adopts, the console's stays the console's unless taken over", async () => {
    const plan = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    const p = JSON.parse(plan.stdout);
    expect(p.summary).toEqual({ create: 0, update: 0, delete: 0, unchanged: 10 });
    const listed = (action: string) => p.outsideGit.filter((o: { action: string }) => o.action === action).map((o: { name: string }) => o.name).sort();
    // Made by hand (no manager): adopted by the model's manager.
    expect(listed('adopt')).toEqual(['studio', 'studio/u-ann']);
    // The console's objects, declared exactly as they are: left to the console.
    expect(listed('held')).toEqual(['studio/board', 'studio/board/u-ann', 'studio/crm', 'studio/crm/u-ann', 'studio/crm/u-ben', 'studio/ledger', 'studio/u-ben', 'studio/wiki']);
    const text = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir]);
    expect(text.stdout).toContain('No changes: the server matches the model (10 objects).');
    expect(text.stdout).toContain('= application studio/crm: managed by the admin console, as the model declares it: left to it (--force-conflicts takes it over)');
    // Taken into Git explicitly: the same objects, each a takeover from the console.
    const forced = JSON.parse((await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir, '--json', '--force-conflicts'])).stdout);
    expect(forced.summary).toMatchObject({ create: 0, update: 0, delete: 0 });
    expect(forced.outsideGit.filter((o: { action: string }) => o.action === 'adopt').map((o: { name: string }) => o.name).sort()).toEqual([
      'studio', 'studio/board', 'studio/board/u-ann', 'studio/crm', 'studio/crm/u-ann', 'studio/crm/u-ben', 'studio/ledger', 'studio/u-ann', 'studio/u-ben', 'studio/wiki',
    ]);
  });

  it("without the console's secrets in the state file, plan keeps the server's: nothing to replace, and no file written", async () => {
    const r = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir, '--state', 'fresh-state.json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('No changes: the server matches the model');
    expect(r.stdout).not.toContain('clientSecret');
    expect(existsSync(join(work.path, 'fresh-state.json'))).toBe(false);
  });

  it('reports console-made objects the model leaves out, and deletes them only with --allow-delete-console', async () => {
    await admin.typed.call('putUser', { tenant: 'studio', userId: 'u-cat' }, { body: { email: 'cat@studio.example', managedBy: 'console' } });
    await admin.typed.call('changeAssignments', { tenant: 'studio', application: 'crm' }, { body: { add: ['u-cat'], managedBy: 'console' } });
    const plan = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('No changes: the server matches the model');
    expect(plan.stdout).toContain('! user studio/u-cat: made in the console, not in the model: kept (--allow-delete-console deletes it)');
    expect(plan.stdout).toContain('! assignment studio/crm/u-cat: made in the console, not in the model: kept');

    const applied = await idforge(['apply', 'studio.yaml', '--data-dir', server.dataDir]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await admin.typed.find('getUser', { tenant: 'studio', userId: 'u-cat' })).toMatchObject({ managedBy: 'console' });
    expect(await admin.typed.find('getApplication', { tenant: 'studio', application: 'crm' })).toMatchObject({ manager: 'console' });
    // --force-conflicts takes the declared objects into Git, and only those.
    const forced = await idforge(['apply', 'studio.yaml', '--data-dir', server.dataDir, '--force-conflicts']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(await admin.typed.find('getApplication', { tenant: 'studio', application: 'crm' })).toMatchObject({ managedBy: 'idforge', manager: 'apply:default' });
    expect(await admin.typed.find('getUser', { tenant: 'studio', userId: 'u-cat' })).toMatchObject({ manager: 'console' });

    const allowed = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir, '--allow-delete-console']);
    expect(allowed.stdout).toContain('- user studio/u-cat');
    expect(allowed.stdout).toContain('- assignment studio/crm/u-cat');
    const gone = await idforge(['apply', 'studio.yaml', '--data-dir', server.dataDir, '--allow-delete-console']);
    expect(gone.code, gone.stderr).toBe(0);
    expect(await admin.typed.find('getUser', { tenant: 'studio', userId: 'u-cat' })).toBeUndefined();
    const after = await idforge(['plan', 'studio.yaml', '--data-dir', server.dataDir, '--json']);
    expect(JSON.parse(after.stdout)).toMatchObject({ summary: { create: 0, update: 0, delete: 0 }, outsideGit: [] });
  });

  it('a tenant applied from examples/acme.yaml (all four kinds) exports to a model that plans no changes', async () => {
    const other = await testServer();
    try {
      // With mail settings of the tenant's own, which export must give back as declared.
      const example = acmeModel(other.port).replace('    displayName: Acme Corporation\n',
        '    displayName: Acme Corporation\n    mail:\n      smtp: { security: starttls, host: smtp.acme.example, port: 2587 }\n      from: Acme <no-reply@acme.example>\n');
      expect(example).toContain('smtp.acme.example');
      writeFileSync(join(work.path, 'acme.yaml'), example);
      const env = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12' };
      const applied = await idforge(['apply', 'acme.yaml', '--data-dir', other.dataDir], env);
      expect(applied.code, applied.stderr).toBe(0);
      const exported = await idforge(['export', 'acme', '--data-dir', other.dataDir, '--out', 'acme-exported.yaml']);
      expect(exported.code, exported.stderr).toBe(0);
      // Every declared field comes back, as declared (normal form, declared order): what the
      // server does not use (upstream, cacheType, routes, response), groups and their members.
      const text = readFileSync(join(work.path, 'acme-exported.yaml'), 'utf8');
      const declared = (await loadExample(join(work.path, 'acme.yaml'))).tenants[0]!;
      const back = (await loadExample(join(work.path, 'acme-exported.yaml'))).tenants[0]!;
      expect(back).toEqual(declared);
      expect(text).toContain('upstream: http://127.0.0.1:4181');
      expect(text).toContain('cacheType: session_storage');
      expect(text).not.toMatch(/ # /); // nothing guessed, so no notes
      const stateBefore = existsSync(join(work.path, '.idforge', 'state.json')) ? readFileSync(join(work.path, '.idforge', 'state.json'), 'utf8') : undefined;
      const plan = await idforge(['plan', 'acme-exported.yaml', '--data-dir', other.dataDir, '--json']);
      expect(plan.code, plan.stderr).toBe(0);
      expect(JSON.parse(plan.stdout)).toMatchObject({ summary: { create: 0, update: 0, delete: 0, unchanged: 12 }, outsideGit: [] });
      // A plan writes no file.
      const stateAfter = existsSync(join(work.path, '.idforge', 'state.json')) ? readFileSync(join(work.path, '.idforge', 'state.json'), 'utf8') : undefined;
      expect(stateAfter).toEqual(stateBefore);
    } finally {
      await other.dispose();
    }
  });

  it('says so when the tenant does not exist, and refuses bad arguments', async () => {
    const none = await idforge(['export', 'nope', '--data-dir', server.dataDir]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no tenant named 'nope'");
    expect((await idforge(['export', 'studio'])).code).toBe(2);
    expect((await idforge(['export', 'Bad_Name', '--data-dir', server.dataDir])).code).toBe(2);
  });
});
