/**
 * `idforge plan` does not ask the server to judge a tenant again while the model compiles to the same
 * batch for it and the server's directory revision for it holds since the last apply found or left it
 * exactly as declared (the state file's asDeclared, plan.ts). That is only safe if every door that
 * could change what a plan says moves the revision. So, over generated sequences of changes through
 * every door (the admin API by hand and as the console, SCIM, a person changing their password, the
 * model file, apply itself), the plan that reuses what it kept must say exactly what a plan that has
 * every tenant judged (`--refresh`) says, against a real server. And the reuse is not vacuous: right
 * after an apply that leaves a tenant as declared, the next plan judges none of them again.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { runCli } from '../support/cli.ts';
import { GROUP, USER, scimClient, type ScimClient } from '../scim/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const scim: Record<string, ScimClient> = {};
const work = tempDir('idforge-plan-reuse-');
const state = () => join(work.path, 'state.json');
let annPassword = 'ann-password-0001';
const cli = (args: string[]) => runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { IDFORGE_STATE: state(), ANN_PASSWORD: 'ann-password-0001' } });

const TENANTS = ['acme', 'beta'] as const;
type Tenant = (typeof TENANTS)[number];
const DECLARED: Record<Tenant, { user: string; app: string }> = { acme: { user: 'u-ben', app: 'portal' }, beta: { user: 'u-cy', app: 'app' } };

const model = (annName: string, betaPolicy: string) => `server: { baseDomain: localhost, port: ${server.port} }
tenants:
  - name: acme
    displayName: Acme
    users:
      - { id: u-ann, email: ann@acme.example, displayName: ${annName}, password: { env: ANN_PASSWORD } }
      - { id: u-ben, email: ben@acme.example }
    applications:
      - { name: portal, kind: web, origin: "http://portal.localhost:3000" }
    assignments:
      - { application: portal, users: [u-ann, u-ben] }
  - name: beta
    displayName: Beta
    unmanaged: ${betaPolicy}
    users:
      - { id: u-cy, email: cy@beta.example }
      - { id: u-dee, email: dee@beta.example }
    applications:
      - { name: app, kind: spa, origin: "http://app.localhost:5174" }
    assignments:
      - { application: app, users: [u-cy, u-dee] }
`;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'model.yaml'), model('Ann', 'remove'));
  expect((await cli(['apply', 'model.yaml'])).code).toBe(0);
  for (const t of TENANTS) {
    const { token } = await admin.typed.call('createScimToken', { tenant: t }, { body: { description: 'the identity provider' } });
    scim[t] = scimClient(server, t, token);
  }
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

let n = 0;
type Step =
  | { door: 'hand user' | 'console user' | 'scim user' | 'delete declared user' | 'hand app change' | 'group grant'; tenant: Tenant }
  | { door: 'password' | 'model edit' | 'policy edit' | 'apply' | 'apply --allow-delete-console' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ door: fc.constantFrom('hand user', 'console user', 'scim user', 'delete declared user', 'hand app change', 'group grant' as const), tenant: fc.constantFrom(...TENANTS) }),
  fc.record({ door: fc.constantFrom('password', 'model edit', 'policy edit', 'apply', 'apply', 'apply --allow-delete-console' as const) }),
) as fc.Arbitrary<Step>;

async function act(s: Step): Promise<void> {
  const id = `x${++n}`;
  switch (s.door) {
    case 'hand user':
      await admin.typed.call('putUser', { tenant: s.tenant, userId: `u-${id}` }, { body: { email: `${id}@hand.example` } });
      return;
    case 'console user':
      await admin.typed.call('putUser', { tenant: s.tenant, userId: `u-${id}` }, { body: { email: `${id}@console.example`, managedBy: 'console' } });
      return;
    case 'scim user':
      expect((await scim[s.tenant]!.call('POST', '/Users', { schemas: [USER], userName: `${id}@scim.example`, emails: [{ value: `${id}@scim.example`, primary: true }] })).status).toBe(201);
      return;
    case 'delete declared user':
      await admin.typed.remove('deleteUser', { tenant: s.tenant, userId: DECLARED[s.tenant].user }).catch(() => undefined);
      return;
    case 'hand app change': {
      const app = await admin.typed.find('getApplication', { tenant: s.tenant, application: DECLARED[s.tenant].app });
      if (app === undefined) return;
      const { name: _n, createdAt: _c, updatedAt: _u, clientId: _i, ...body } = app as unknown as Record<string, unknown>;
      await admin.typed.call('putApplication', { tenant: s.tenant, application: DECLARED[s.tenant].app }, { body: { ...body, displayName: `Changed ${id}` } as never }).catch(() => undefined);
      return;
    }
    case 'group grant': {
      const made = await scim[s.tenant]!.call('POST', '/Groups', { schemas: [GROUP], displayName: `Group ${id}` });
      expect(made.status).toBe(201);
      await admin.typed.call('putGroupAssignment', { tenant: s.tenant, application: DECLARED[s.tenant].app, group: (made.body as { id: string }).id }, { body: {} });
      return;
    }
    case 'password': {
      // A person's own change: an event, and no change to what a batch judges.
      const next = `ann-password-${String(n).padStart(4, '0')}`;
      await admin.typed.call('changeUserPassword', { tenant: 'acme', userId: 'u-ann' }, { body: { currentPassword: annPassword, newPassword: next } }).then(() => (annPassword = next), () => undefined);
      return;
    }
    case 'model edit': {
      const file = join(work.path, 'model.yaml');
      const text = readFileSync(file, 'utf8');
      writeFileSync(file, text.includes('displayName: Ann,') ? text.replace('displayName: Ann,', 'displayName: Ann Other,') : text.replace('displayName: Ann Other,', 'displayName: Ann,'));
      return;
    }
    case 'policy edit': {
      const file = join(work.path, 'model.yaml');
      const text = readFileSync(file, 'utf8');
      const policies = ['remove', 'report', 'keep'];
      const now = /unmanaged: (\w+)/.exec(text)![1]!;
      writeFileSync(file, text.replace(`unmanaged: ${now}`, `unmanaged: ${policies[(policies.indexOf(now) + 1) % 3]}`));
      return;
    }
    case 'apply':
    case 'apply --allow-delete-console': {
      const r = await cli(['apply', 'model.yaml', '--allow-mass-delete', ...(s.door === 'apply' ? [] : ['--allow-delete-console'])]);
      expect(r.code, r.stderr + r.stdout).toBe(0);
    }
  }
}

/** What a plan says, as --json gives it, less the count of tenants it did not judge again. */
async function said(refresh: boolean): Promise<{ reused: number; rest: unknown }> {
  const r = await cli(['plan', 'model.yaml', '--json', ...(refresh ? ['--refresh'] : [])]);
  const { reused, ...rest } = JSON.parse(r.stdout) as { reused: number; lastChanged?: unknown };
  // When each object last changed is read from the event log, not judged: the same either way, but
  // only when the same changes are listed; compared with them.
  return { reused, rest: { ...rest, code: r.code } };
}

it('over every door, a plan that reuses what the last apply kept says what a plan that judges every tenant says', { timeout: 240_000 }, async () => {
  let reusedAtAll = 0;
  await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
    for (const s of steps) {
      await act(s);
      const kept = await said(false);
      const judged = await said(true);
      expect(kept.rest, `after ${JSON.stringify(s)} in ${JSON.stringify(steps)}`).toEqual(judged.rest);
      expect(judged.reused).toBe(0);
      reusedAtAll += kept.reused;
    }
  }), {
    numRuns: 15, seed: Number(process.env.FC_SEED ?? Date.now() % 1_000_000),
    // First, on the state beforeAll left (the model applied, then SCIM tokens made): an apply that
    // leaves both tenants as declared, so the plan after it reuses them. Generated sequences reach
    // such a state only now and then (a console object needs --allow-delete-console, a group grant a
    // second apply), and 1 run in 3 of 15 never did: the check below failed with nothing wrong.
    examples: [[[{ door: 'apply' }]]],
  });
  // Reuse happened: what the last apply kept was reused by some plan, or this proves nothing.
  expect(reusedAtAll).toBeGreaterThan(0);
});

it('right after an apply that leaves every tenant as declared, the next plan judges none again; a change through any door brings back the one it touched', async () => {
  writeFileSync(join(work.path, 'model.yaml'), model('Ann', 'remove'));
  // SCIM's objects stay (no door but SCIM removes them) and are never listed: they do not stop the reuse.
  expect((await cli(['apply', 'model.yaml', '--allow-mass-delete', '--allow-delete-console'])).code).toBe(0);
  // Group grants on the model's applications are removed by that apply after its batches: the next apply finds the tenants as declared.
  expect((await cli(['apply', 'model.yaml'])).code).toBe(0);
  const first = await said(false);
  expect(first.reused).toBe(2);
  expect((first.rest as { summary: Record<string, number> }).summary).toMatchObject({ create: 0, update: 0, delete: 0 });
  await admin.typed.call('putUser', { tenant: 'beta', userId: 'u-late' }, { body: { email: 'late@hand.example' } });
  const after = await said(false);
  expect(after.reused).toBe(1);
  expect((after.rest as { changes: { name: string; op: string }[] }).changes).toEqual([expect.objectContaining({ op: 'delete', name: 'beta/u-late' })]);
  expect(after.rest).toEqual((await said(true)).rest);
});
