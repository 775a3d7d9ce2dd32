/**
 * Webhooks declared in the model, through Pulumi (the real engine, program and server): `up` makes
 * them with the signing secret the model's reference names (a Pulumi secret, never in the state in
 * the clear), and a plain `pulumi preview` sees what changed behind the stack's back: a webhook made
 * by hand in the tenant, a URL changed through the admin API, a secret that is no longer the stack's.
 * The next `up` repairs all three, and a new secret value in the environment is a rotation.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { ACME_PASSWORDS, PulumiProject, acmeStack, urnName } from './_pulumi.ts';

interface PreviewJson {
  readonly steps: { op: string; urn: string; detailedDiff?: Record<string, { kind: string }> }[];
  readonly diagnostics?: { message: string; severity: string }[];
}

const SECRET_A = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const env = (secret: string) => ({ ...ACME_PASSWORDS, ACME_SIEM_SECRET: secret });
// Nothing in these tests emits the one type the webhook takes: no delivery leaves the machine.
const HOOK = `    webhooks:
      - name: siem
        url: https://siem.example/hook
        types: [tenant.keys_rotated]
        secret: { env: ACME_SIEM_SECRET }
`;

describe('webhooks in a Pulumi stack', { timeout: 300_000 }, () => {
  let stack: Awaited<ReturnType<typeof acmeStack>>;
  let p: PulumiProject;
  let admin: AdminClient;

  beforeAll(async () => {
    stack = await acmeStack({}, env(SECRET_A));
    p = stack.p;
    // The webhook goes under the tenant's own keys (before its first list).
    await writeFile(stack.model, (await readFile(stack.model, 'utf8')).replace('    scopes:\n', `${HOOK}    scopes:\n`));
    await p.up(env(SECRET_A));
    admin = await AdminClient.forDataDir(stack.dataDir);
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  it('up makes the webhook, the stack\'s, with the secret the model names; the state holds it only encrypted', async () => {
    expect(await admin.find('getWebhook', { tenant: 'acme', webhook: 'siem' })).toMatchObject({ url: 'https://siem.example/hook', types: ['tenant.keys_rotated'], enabled: true, manager: expect.stringMatching(/^pulumi:/) });
    // The server holds the secret the environment gave: the same one again is no change.
    const same = await admin.batch('acme', { webhooks: [{ name: 'siem', body: { url: 'https://siem.example/hook', types: ['tenant.keys_rotated'], secret: SECRET_A } }] }, { dryRun: true });
    expect(same.results.find((r) => r.kind === 'webhook')?.outcome).toBe('unchanged');
    const exported = await p.run(['stack', 'export'], env(SECRET_A));
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).not.toContain(SECRET_A);
    await p.must(['preview', '--expect-no-changes'], env(SECRET_A));
  });

  it('a plain preview sees a hand-made webhook, a changed URL and a secret that is not the stack\'s; up repairs them', async () => {
    await admin.call('putWebhook', { tenant: 'acme', webhook: 'stray' }, { body: { url: 'https://stray.example/hook' } });
    const live = await admin.find('getWebhook', { tenant: 'acme', webhook: 'siem' });
    await admin.call('putWebhook', { tenant: 'acme', webhook: 'siem' }, {
      body: { url: 'https://evil.example/hook', types: live!.types, enabled: true, secret: SECRET_B, manager: live!.manager },
    });
    const r = await p.run(['preview', '--json'], env(SECRET_A));
    expect(r.code, r.stderr).toBe(0);
    const preview = JSON.parse(r.stdout) as PreviewJson;
    const changed = preview.steps.filter((s) => s.op !== 'same' && s.op !== 'refresh');
    expect(changed.map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual(['update acme']);
    expect(changed[0]?.detailedDiff).toEqual({
      'webhooks.siem': { kind: 'update', inputDiff: true },
      'drift.webhooks': { kind: 'delete', inputDiff: true },
      'drift.webhookSecrets': { kind: 'delete', inputDiff: true },
    });
    const said = (preview.diagnostics ?? []).map((d) => d.message).join('\n');
    expect(said).toContain('acme: webhook stray is in the tenant but not in the model: removed');
    expect(said).toContain("acme/webhooks/siem: the signing secret on the server is not the stack's: set again");

    await p.up(env(SECRET_A));
    expect(await admin.find('getWebhook', { tenant: 'acme', webhook: 'stray' })).toBeUndefined();
    expect(await admin.find('getWebhook', { tenant: 'acme', webhook: 'siem' })).toMatchObject({ url: 'https://siem.example/hook' });
    const back = await admin.batch('acme', { webhooks: [{ name: 'siem', body: { url: 'https://siem.example/hook', types: ['tenant.keys_rotated'], secret: SECRET_A } }] }, { dryRun: true });
    expect(back.results.find((r) => r.kind === 'webhook')?.outcome).toBe('unchanged');
    await p.must(['preview', '--expect-no-changes'], env(SECRET_A));
  });

  it('a new secret in the environment is a rotation the preview names', async () => {
    const r = await p.run(['preview', '--json'], env(SECRET_B));
    expect(r.code, r.stderr).toBe(0);
    const preview = JSON.parse(r.stdout) as PreviewJson;
    expect(preview.steps.filter((s) => s.op !== 'same' && s.op !== 'refresh').map((s) => [s.op, urnName(s.urn), Object.keys(s.detailedDiff ?? {})])).toEqual([['update', 'acme', ['webhookSecrets.siem']]]);
    await p.up(env(SECRET_B));
    const now = await admin.batch('acme', { webhooks: [{ name: 'siem', body: { url: 'https://siem.example/hook', types: ['tenant.keys_rotated'], secret: SECRET_B } }] }, { dryRun: true });
    expect(now.results.find((r) => r.kind === 'webhook')?.outcome).toBe('unchanged');
  });

  it('a secret the environment lacks stops the program, naming where it should come from', async () => {
    const r = await p.run(['preview'], { ...ACME_PASSWORDS, ACME_SIEM_SECRET: '' });
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain('secret of webhook acme/siem: environment variable ACME_SIEM_SECRET is not set');
  });
});
