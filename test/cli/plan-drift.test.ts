/**
 * Drift that matters, through `idforge plan|apply` (in-process, against a real server): objects made
 * by hand through the admin API in a tenant the model manages (a user assigned to the portal, an
 * application) are not passed over. Under the tenant's `unmanaged` policy they are deleted
 * (`remove`, the default), reported and kept (`report`), or left alone silently (`keep`); the
 * console's objects follow their own rule. Long runs draw per-tenant progress on a terminal only.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { acmeModel } from '../support/model.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-12' };
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-plan-drift-');
const model = (policy?: string) => {
  const text = acmeModel(server.port);
  // The policy goes on the tenant, beside its displayName.
  return policy === undefined ? text : text.replace(/^(\s*)(displayName: .*)$/m, `$1$2\n$1unmanaged: ${policy}`);
};
const idforge = (args: string[], opts: { interactive?: boolean } = {}) =>
  runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { ...PASSWORDS, IDFORGE_STATE: join(work.path, 'state.json') }, ...opts });

/** What an operator does by hand: a user, assigned to the portal, and an application. */
async function driftByHand(): Promise<void> {
  await admin.typed.call('putUser', { tenant: 'acme', userId: 'u-mallory' }, { body: { email: 'mallory@acme.example', initialPassword: 'mallory-password-1' } });
  await admin.typed.call('putAssignment', { tenant: 'acme', application: 'portal', userId: 'u-mallory' }, { body: {} });
  await admin.typed.call('putApplication', { tenant: 'acme', application: 'backdoor' }, {
    body: { kind: 'spa', clientId: 'backdoor', redirectUris: ['http://backdoor.localhost:3999/'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [] },
  });
}

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'acme.yaml'), model());
  expect((await idforge(['apply', 'acme.yaml'])).code).toBe(0);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

/** The plan's change lines, without the note of the change that last made each object (`[last changed by …]`). */
const changeLines = (stdout: string) => stdout.split('\n').filter((l) => /^  [-+~]/.test(l)).map((l) => l.replace(/ \[last changed by [^\]]*\]$/, ''));

describe('objects made by hand in a managed tenant', () => {
  it('unmanaged: keep leaves them alone, silently', async () => {
    await driftByHand();
    writeFileSync(join(work.path, 'keep.yaml'), model('keep'));
    const plan = await idforge(['plan', 'keep.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    // The tenant's declared policy is part of its entry (export gives it back): its only change.
    expect(changeLines(plan.stdout)).toEqual(['  ~ tenant acme (unmanaged)']);
    expect(plan.stdout).toContain('Plan: 0 to create, 1 to change, 0 to delete');
    expect(plan.stdout).not.toContain('mallory');
  });

  it('unmanaged: report lists them as drift and apply keeps them', async () => {
    writeFileSync(join(work.path, 'report.yaml'), model('report'));
    const plan = await idforge(['plan', 'report.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(changeLines(plan.stdout)).toEqual(['  ~ tenant acme (unmanaged)']);
    expect(plan.stdout).toContain('Plan: 0 to create, 1 to change, 0 to delete');
    expect(plan.stdout).toContain("! user acme/u-mallory: made outside the model (no owner), not in the model: drift, kept (the tenant's unmanaged: report)");
    expect(plan.stdout).toContain('! assignment acme/portal/u-mallory: made outside the model (no owner)');
    expect(plan.stdout).toContain('! application acme/backdoor: made outside the model (no owner)');
    expect((await idforge(['apply', 'report.yaml'])).code).toBe(0);
    expect(await admin.typed.find('getAssignment', { tenant: 'acme', application: 'portal', userId: 'u-mallory' })).toBeDefined();
  });

  it('unmanaged: remove (the default) plans their deletion, children first, and apply carries it out', async () => {
    const plan = await idforge(['plan', 'acme.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    const lines = changeLines(plan.stdout);
    const at = (s: string) => lines.findIndex((l) => l === s);
    expect(at('  - assignment acme/portal/u-mallory')).toBeGreaterThanOrEqual(0);
    expect(at('  - user acme/u-mallory')).toBeGreaterThan(at('  - assignment acme/portal/u-mallory'));
    expect(at('  - application acme/backdoor')).toBeGreaterThan(at('  - user acme/u-mallory'));
    // The policy back at its default (report was applied last), and the drift to go.
    expect(plan.stdout).toContain('  ~ tenant acme (unmanaged)');
    expect(plan.stdout).toContain('Plan: 0 to create, 1 to change, 3 to delete');
    expect(plan.stdout).toContain("- user acme/u-mallory: made outside the model (no owner), not in the model: drift, deleted (the tenant's unmanaged: remove)");
    const json = JSON.parse((await idforge(['plan', 'acme.yaml', '--json'])).stdout);
    expect(json.outsideGit.map((o: { action: string; name: string }) => `${o.action} ${o.name}`).sort())
      .toEqual(['delete acme/backdoor', 'delete acme/portal/u-mallory', 'delete acme/u-mallory']);

    const applied = await idforge(['apply', 'acme.yaml']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await admin.typed.find('getUser', { tenant: 'acme', userId: 'u-mallory' })).toBeUndefined();
    expect(await admin.typed.find('getApplication', { tenant: 'acme', application: 'backdoor' })).toBeUndefined();
    expect((await idforge(['plan', 'acme.yaml'])).stdout).toContain('No changes: the server matches the model');
  });

  it('a scope added to the tenant by hand is drift in the tenant itself: planned as a change, and apply takes it out', async () => {
    const live = (await admin.typed.call('getTenant', { tenant: 'acme' }, {})) as unknown as Record<string, unknown> & { scopes: { name: string }[] };
    const { name: _n, createdAt: _c, updatedAt: _u, ...body } = live;
    await admin.typed.call('putTenant', { tenant: 'acme' }, { body: { ...body, scopes: [...live.scopes, { name: 'payroll' }] } as never });
    const plan = await idforge(['plan', 'acme.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/~ tenant acme \(.*scopes.*\)/);
    expect((await idforge(['apply', 'acme.yaml'])).code).toBe(0);
    const after = (await admin.typed.call('getTenant', { tenant: 'acme' }, {})) as unknown as { scopes: { name: string }[] };
    expect(after.scopes.map((x) => x.name)).not.toContain('payroll');
    expect((await idforge(['plan', 'acme.yaml'])).stdout).toContain('No changes: the server matches the model');
  });

  it('what the console made is never drift: kept and listed as the console\'s', async () => {
    await admin.typed.call('putUser', { tenant: 'acme', userId: 'u-temp' }, { body: { email: 'temp@acme.example', managedBy: 'console' } });
    const plan = await idforge(['plan', 'acme.yaml']);
    expect(plan.stdout).toContain('No changes: the server matches the model');
    expect(plan.stdout).toContain('! user acme/u-temp: made in the console, not in the model: kept (--allow-delete-console deletes it)');
  });
});

describe('progress', () => {
  it('per tenant on a terminal, erased when done; nothing without one or with --json', async () => {
    const shown = await idforge(['plan', 'acme.yaml'], { interactive: true });
    expect(shown.stderr).toContain('planning: 1/1 tenant');
    expect(shown.stderr.endsWith('\r\u001b[2K')).toBe(true);
    expect((await idforge(['plan', 'acme.yaml'])).stderr).toBe('');
    expect((await idforge(['plan', 'acme.yaml', '--json'], { interactive: true })).stderr).toBe('');
  });
});
