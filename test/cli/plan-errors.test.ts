/**
 * `idforge plan` against a live server (in-process) when the server refuses a step: the server
 * judges each tenant's batch entry after entry, so what an earlier entry of the same plan creates
 * (an api, a scope, a user) counts for the later ones and they are planned as creates; anything
 * else (a clientId or email already taken outside the model) is an error, named, exit 1, and
 * `apply` refuses it before writing anything.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { routePath } from '../../src/contract/index.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
let work: ReturnType<typeof tempDir>;

// A server per test: plan also lists deletions of managed tenants missing from the model, so
// tenants left by another test would change what plan says.
beforeEach(async () => {
  server = await testServer();
  admin = await adminClient(server);
  work = tempDir('idforge-plan-errors-');
});
afterEach(async () => {
  await server?.dispose();
  work?.remove();
});

async function idforge(command: 'plan' | 'apply', tenantYaml: string, ...flags: string[]) {
  const model = join(work.path, 'model.yaml');
  writeFileSync(model, `server:\n  baseDomain: localhost\n  port: ${server.port}\ntenants:\n${tenantYaml}`);
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    env: { IDFORGE_STATE: join(work.path, 'state.json') },
    cwd: work.path,
    color: false,
  };
  const code = await main([command, model, '--data-dir', server.dataDir, ...flags], io);
  return { code, stdout, stderr };
}

const BASE = `  - name: acme
    displayName: Acme
    scopes:
      - name: admin
    users:
      - id: u-alice
        email: alice@acme.example
`;
// Sorted after the tenant, the api is the plan's first create in acme; the clients come after it.
const ORDERS_API = `      - name: orders-api
        kind: api
        audience: http://orders-api.localhost:4000
        routes:
          - path: /admin
            scopes: [admin]
`;
const status = async (path: string) => (await admin.call('GET', path)).status;

describe('idforge plan: refusals the plan does not explain are errors', () => {
  it("fails, naming the clash, when a new web app's clientId is taken by an unmanaged application", async () => {
    expect((await idforge('apply', BASE)).code).toBe(0);
    // Made by hand, outside the model: not idforge's to change or delete.
    await admin.put(routePath('getApplication', { tenant: 'acme', application: 'legacy' }), { kind: 'web', clientId: 'acme-portal', redirectUris: ['http://legacy.localhost/cb'] });
    const model = `${BASE}    applications:
${ORDERS_API}      - name: portal
        kind: web
        clientId: acme-portal
        origin: http://portal.localhost:3000
`;
    const plan = await idforge('plan', model);
    expect(plan.code, plan.stdout).toBe(1);
    expect(plan.stderr).toContain("idforge plan: PUT acme/portal: HTTP 409: clientId 'acme-portal' is already used by application 'legacy' (at clientId)");
    expect(plan.stdout).not.toMatch(/\+ application acme\/portal/);

    const json = await idforge('plan', model, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: expect.stringContaining("clientId 'acme-portal' is already used by application 'legacy'") });

    // Plan wrote nothing: the api it would create is still absent.
    expect(await status(routePath('getApplication', { tenant: 'acme', application: 'orders-api' }))).toBe(404);
    // What plan warned of, apply refuses before it writes anything: it plans first, and a
    // tenant's batch is one transaction. The api that the same model adds is not made either.
    const apply = await idforge('apply', model);
    expect(apply.code).not.toBe(0);
    expect(apply.stderr).toContain("PUT acme/portal: HTTP 409: clientId 'acme-portal' is already used by application 'legacy' (at clientId)");
    expect(await status(routePath('getApplication', { tenant: 'acme', application: 'orders-api' }))).toBe(404);
  });

  it("fails when a new user's email belongs to an unmanaged user of the tenant", async () => {
    expect((await idforge('apply', BASE)).code).toBe(0);
    await admin.put(routePath('getUser', { tenant: 'acme', userId: 'u-old-bob' }), { email: 'bob@acme.example' });
    const plan = await idforge('plan', `${BASE}      - id: u-bob
        email: bob@acme.example
    applications:
${ORDERS_API}`);
    expect(plan.code, plan.stdout).toBe(1);
    expect(plan.stderr).toContain("PUT acme/u-bob: HTTP 409: email \"bob@acme.example\" belongs to another user of this tenant (at email)");
    expect(await status(routePath('getApplication', { tenant: 'acme', application: 'orders-api' }))).toBe(404);
  });
});

describe('idforge plan: refusals explained by what the plan creates are still planned', () => {
  it('plans a new api, a new SPA whose audience is that api, a new user and its assignment; apply then succeeds', async () => {
    expect((await idforge('apply', BASE)).code).toBe(0);
    // The SPA's dry run is refused (audience names an api not there yet), so is its assignment's
    // (application not there yet): both are what this plan creates first.
    const model = `${BASE}      - id: u-bob
        email: bob@acme.example
    applications:
${ORDERS_API}      - name: dashboard
        kind: spa
        origin: http://dashboard.localhost:5173
        audience: [orders-api]
        scopes: [openid, admin]
    assignments:
      - application: dashboard
        users: [u-alice, u-bob]
`;
    const plan = await idforge('plan', model, '--json');
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    const p = JSON.parse(plan.stdout) as { summary: unknown; changes: { op: string; name: string; fields: string[] }[] };
    expect(p.changes.map((c) => `${c.op} ${c.name}`)).toEqual([
      'create acme/orders-api',
      'create acme/dashboard',
      'create acme/u-bob',
      'create acme/dashboard/u-alice',
      'create acme/dashboard/u-bob',
    ]);
    expect(await status(routePath('getApplication', { tenant: 'acme', application: 'dashboard' }))).toBe(404);

    const apply = await idforge('apply', model);
    expect(apply.code, apply.stderr).toBe(0);
    expect(await status(routePath('getAssignment', { tenant: 'acme', application: 'dashboard', userId: 'u-bob' }))).toBe(200);
  });

  it("plans a new SPA asking for a scope that the same plan adds to the tenant", async () => {
    expect((await idforge('apply', BASE)).code).toBe(0);
    // The tenant is only changed, not created; the SPA's dry run is refused at scopes.1 because
    // the server does not know 'reports' until the tenant step has run.
    const model = `${BASE.replace('      - name: admin\n', '      - name: admin\n      - name: reports\n')}    applications:
      - name: dashboard
        kind: spa
        origin: http://dashboard.localhost:5173
        scopes: [openid, reports]
`;
    const plan = await idforge('plan', model, '--json');
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect((JSON.parse(plan.stdout) as { changes: { op: string; name: string }[] }).changes.map((c) => `${c.op} ${c.name}`)).toEqual([
      'update acme',
      'create acme/dashboard',
    ]);
    const apply = await idforge('apply', model);
    expect(apply.code, apply.stderr).toBe(0);
  });
});
