/**
 * idforge plan / apply against a live server, in-process: the examples round-trip, a second apply
 * is a no-op, only managed objects are deleted, and the mass-deletion guard holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { routePath } from '../../src/contract/index.ts';
import { Browser, adminClient, authorize, relyingParty, tempDir, testServer, type AdminClient } from './_support.ts';

const EXAMPLES = resolve(import.meta.dirname, '../../examples');
const PASSWORDS = {
  ACME_ALICE_PASSWORD: 'alice-password-1',
  ACME_BOB_PASSWORD: 'bob-password-12',
  GLOBEX_HANK_PASSWORD: 'hank-password-1',
  GLOBEX_FRANK_PASSWORD: 'frank-password-1',
  INITECH_PETER_PASSWORD: 'peter-password-1',
};

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-plan-');

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  // The examples with the server section pointed at this test's server.
  cpSync(join(EXAMPLES, 'acme.yaml'), join(work.path, 'acme.yaml'));
  cpSync(join(EXAMPLES, 'multi-tenant'), join(work.path, 'multi-tenant'), { recursive: true });
  for (const f of ['acme.yaml', 'multi-tenant/server.yaml']) {
    const p = join(work.path, f);
    writeFileSync(p, readFileSync(p, 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${server.port}`));
  }
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

async function idforge(args: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    env: { ...PASSWORDS, IDFORGE_STATE: join(work.path, 'state.json'), ...env },
    cwd: work.path,
    color: false,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

const withCreds = (cmd: string, model: string, ...rest: string[]) => idforge([cmd, model, '--data-dir', server.dataDir, ...rest]);

describe('plan and apply', () => {
  it('plans, applies and re-applies examples/acme.yaml; the second apply changes nothing', async () => {
    const plan = await withCreds('plan', 'acme.yaml', '--json');
    expect(plan.code).toBe(0);
    const p = JSON.parse(plan.stdout);
    expect(p.summary).toEqual({ create: 12, update: 0, delete: 0, unchanged: 0 });
    expect(p.changes[0]).toMatchObject({ op: 'create', kind: 'tenant', name: 'acme' });

    const apply = await withCreds('apply', 'acme.yaml');
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toContain('Applied: 12 created, 0 changed, 0 deleted, 0 unchanged.');

    const again = await withCreds('apply', 'acme.yaml', '--json');
    expect(again.code).toBe(0);
    const a = JSON.parse(again.stdout);
    expect(a.summary).toEqual({ create: 0, update: 0, delete: 0, unchanged: 12 });
    expect(a.changes).toEqual([]);
    const replan = await withCreds('plan', 'acme.yaml');
    expect(replan.stdout).toContain('No changes: the server matches the model (12 objects).');
  });

  it('what apply made works: alice signs in to the dashboard SPA', async () => {
    const config = await relyingParty(server.issuer('acme'), 'dashboard');
    const { callback, verifier, state } = await authorize(config, new Browser(), 'http://dashboard.localhost:5173', {
      email: 'alice@acme.example', password: PASSWORDS.ACME_ALICE_PASSWORD,
    }, { scope: 'openid offline admin' });
    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toBeTypeOf('string');
  });

  it('round-trips the multi-tenant example directory on its own server, credentials from the environment', async () => {
    const other = await testServer();
    try {
      const p = join(work.path, 'multi-tenant/server.yaml');
      writeFileSync(p, readFileSync(p, 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${other.port}`));
      const env = { IDFORGE_ADMIN_CLIENT_ID: other.adminCredentials.clientId, IDFORGE_ADMIN_CLIENT_SECRET: other.adminCredentials.clientSecret };
      const first = await idforge(['apply', 'multi-tenant'], env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(/Applied: \d+ created, 0 changed, 0 deleted, 0 unchanged/);
      const second = await idforge(['apply', 'multi-tenant', '--json'], env);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.stdout)).toMatchObject({ ok: true, summary: { create: 0, update: 0, delete: 0 }, changes: [] });
    } finally {
      await other.dispose();
    }
  });

  it('a model that leaves out a managed tenant would delete it: the guard refuses', async () => {
    const p = join(work.path, 'multi-tenant/server.yaml');
    writeFileSync(p, readFileSync(p, 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${server.port}`));
    const r = await withCreds('plan', 'multi-tenant');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('- tenant acme');
    expect(r.stderr).toContain("refusing to delete 2 of 2 users of tenant 'acme'");
  });

  it('changes show as updates with their fields', async () => {
    const p = join(work.path, 'acme.yaml');
    const original = readFileSync(p, 'utf8');
    writeFileSync(p, original.replace('displayName: Acme Portal', 'displayName: Acme Portal 2'));
    try {
      const plan = await withCreds('plan', 'acme.yaml');
      expect(plan.stdout).toContain('~ application acme/portal (displayName)');
      expect(plan.stdout).toContain('Plan: 0 to create, 1 to change, 0 to delete, 11 unchanged.');
      expect((await withCreds('apply', 'acme.yaml')).code).toBe(0);
    } finally {
      writeFileSync(p, original);
      expect((await withCreds('apply', 'acme.yaml')).code).toBe(0);
    }
  });

  it('deletes only managed objects, and refuses to delete most users without --allow-mass-delete', async () => {
    // Someone made a user by hand, in a tenant whose model keeps what it does not declare
    // (`unmanaged: keep`; the other policies are test/cli/plan-drift.test.ts's): never deleted by apply.
    await admin.put(routePath('getUser', { tenant: 'acme', userId: 'u-manual' }), { email: 'manual@acme.example' });
    const p = join(work.path, 'acme.yaml');
    const original = readFileSync(p, 'utf8').replace('  - name: acme\n', '  - name: acme\n    unmanaged: keep\n');
    expect(original).toContain('unmanaged: keep');
    // A model without bob: one managed user of three goes, with his two assignments (of five).
    const noBob = original
      .replace(/      - id: u-bob\n(?:        .*\n)+?(?=    groups:)/, '')
      .replace('members: [u-alice, u-bob]', 'members: [u-alice]');
    writeFileSync(join(work.path, 'acme-no-bob.yaml'), noBob);
    const plan = await withCreds('plan', 'acme-no-bob.yaml');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('- user acme/u-bob');
    expect(plan.stdout).toContain('- assignment acme/portal/u-bob');
    expect(plan.stdout).not.toContain('u-manual');

    // A model with no users at all: deleting 2 of 3 users is "most": refused, nothing changes.
    const noUsers = noBob
      .replace(/    users:\n(?:      .*\n|        .*\n)+?(?=    groups:)/, '')
      .replace(/    groups:\n(?:      .*\n|        .*\n)+?(?=    applications:)/, '')
      .replace(/    assignments:\n(?:.*\n)*$/, '');
    writeFileSync(join(work.path, 'acme-no-users.yaml'), noUsers);
    const refused = await withCreds('apply', 'acme-no-users.yaml');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("refusing to delete 2 of 3 users of tenant 'acme'");
    // Said once, with no stack trace (the Pulumi path's refusal: test/provider/delete-guard.test.ts).
    expect((refused.stdout + refused.stderr).split("refusing to delete 2 of 3 users of tenant 'acme'").length - 1, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stderr).not.toMatch(/^\s+at /m);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'acme', userId: 'u-alice' }))).status).toBe(200);
    const planRefused = await withCreds('plan', 'acme-no-users.yaml', '--json');
    expect(planRefused.code).toBe(1);
    expect(JSON.parse(planRefused.stdout).guard).toEqual(expect.arrayContaining([{ tenant: 'acme', kind: 'user', deleting: 2, existing: 3 }]));

    const forced = await withCreds('apply', 'acme-no-users.yaml', '--allow-mass-delete');
    expect(forced.code, forced.stderr).toBe(0);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'acme', userId: 'u-alice' }))).status).toBe(404);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'acme', userId: 'u-manual' }))).status).toBe(200);
    // Back to the full model: its users return, the hand-made one is still kept.
    writeFileSync(join(work.path, 'acme-keep.yaml'), original);
    const back = await withCreds('apply', 'acme-keep.yaml');
    expect(back.code, back.stderr).toBe(0);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'acme', userId: 'u-alice' }))).status).toBe(200);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'acme', userId: 'u-manual' }))).status).toBe(200);
  });

  it('reports missing credentials and unreachable servers as errors, not stack traces', async () => {
    const none = await idforge(['plan', 'acme.yaml']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no admin credentials');
    const wrong = await idforge(['plan', 'acme.yaml'], { IDFORGE_ADMIN_CLIENT_ID: 'idforge-admin', IDFORGE_ADMIN_CLIENT_SECRET: 'wrong' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/cannot get an admin token .*invalid_client/);
    expect(wrong.stderr).not.toMatch(/\n\s+at /);
  });
});
