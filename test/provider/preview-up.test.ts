/**
 * Preview tells the truth, on the real engine and the real server: a client id the server already
 * gives an application outside the stack fails the preview (not the up half-way, and the client
 * configs stay as they were); a client id that moves to a renamed application is freed first; a
 * client secret changed behind the stack's back is drift that refresh finds and up repairs.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { ACME_PASSWORDS as PASSWORDS, PulumiProject, acmeStack, urnName } from './_pulumi.ts';

describe('preview = up', { timeout: 300_000 }, () => {
  let stack: Awaited<ReturnType<typeof acmeStack>>;
  let p: PulumiProject;
  let model: string;
  let clients: string;
  let admin: AdminClient;

  async function editModel(edit: (doc: ReturnType<typeof parseDocument>) => void): Promise<void> {
    const doc = parseDocument(await readFile(model, 'utf8'));
    edit(doc);
    await writeFile(model, doc.toString());
  }

  /** The portal's secret as the stack wrote it into the grant config. */
  const portalSecret = async () => (JSON.parse(await readFile(join(clients, 'acme/portal/grant.json'), 'utf8')) as { acme: { secret: string } }).acme.secret;

  beforeAll(async () => {
    stack = await acmeStack();
    ({ p, model, clients } = stack);
    await p.up(PASSWORDS);
    admin = await AdminClient.forDataDir(stack.dataDir);
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  it('a client secret changed on the server is drift: refresh finds it, up sets the stack\'s again', async () => {
    const secret = await portalSecret();
    await admin.call('rotateClientSecret', { tenant: 'acme', application: 'portal' });
    expect((await admin.call('verifyClientSecret', { tenant: 'acme', application: 'portal' }, { body: { clientSecret: secret } })).matches).toBe(false);
    const refresh = await p.run(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    expect(refresh.code).not.toBe(0);
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual(['update acme']);
    expect(steps[0]?.detailedDiff).toEqual({ 'drift.secrets': { kind: 'delete', inputDiff: true } });
    await p.up(PASSWORDS);
    expect((await admin.call('verifyClientSecret', { tenant: 'acme', application: 'portal' }, { body: { clientSecret: secret } })).matches).toBe(true);
    expect(await portalSecret()).toBe(secret);
    await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
  });

  it('a client id taken by an application outside the stack fails the preview, and the client configs stay', async () => {
    await admin.call('putApplication', { tenant: 'acme', application: 'legacy' }, {
      body: { kind: 'web', clientId: 'reports', redirectUris: ['https://legacy.example/cb'], scopes: ['openid'], managedBy: 'console' },
    });
    const configsBefore = (await stat(join(clients, 'acme/portal/grant.json'))).mtimeMs;
    await editModel((doc) => {
      (doc.getIn(['tenants', 0, 'applications']) as { add: (v: unknown) => void }).add(doc.createNode({
        name: 'reports', kind: 'web', origin: 'http://reports.localhost:3100',
      }));
    });
    try {
      const preview = await p.run(['preview'], PASSWORDS);
      expect(preview.code).not.toBe(0);
      // The server's words, as every door says them, at the application's property.
      expect(preview.stdout + preview.stderr).toContain("property applications.reports.clientId value {<nil>} has a problem: clientId 'reports' is already used by application 'legacy'");
      const up = await p.run(['up', '--yes'], PASSWORDS);
      expect(up.code).not.toBe(0);
      expect(await admin.find('getApplication', { tenant: 'acme', application: 'reports' })).toBeUndefined();
      expect((await stat(join(clients, 'acme/portal/grant.json'))).mtimeMs).toBe(configsBefore);
    } finally {
      await editModel((doc) => {
        const apps = doc.getIn(['tenants', 0, 'applications']) as { items: unknown[] };
        apps.items.pop();
      });
      await admin.remove('deleteApplication', { tenant: 'acme', application: 'legacy' });
    }
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('a rename declared with previousName is an update: the same client, secret, assignments and tokens', async () => {
    const secret = await portalSecret();
    const before = await admin.find('getApplication', { tenant: 'acme', application: 'portal' });
    await editModel((doc) => {
      doc.setIn(['tenants', 0, 'applications', 0, 'name'], 'intranet');
      doc.setIn(['tenants', 0, 'applications', 0, 'previousName'], 'portal');
      doc.setIn(['tenants', 0, 'applications', 0, 'clientId'], 'portal');
      const as = doc.getIn(['tenants', 0, 'assignments']) as { items: { get(k: string): unknown; set(k: string, v: unknown): void }[] };
      for (const a of as.items) if (a.get('application') === 'portal') a.set('application', 'intranet');
    });
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.filter((s) => s.op !== 'update').map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual([]);
    expect(steps.find((s) => urnName(s.urn) === 'acme')?.detailedDiff).toMatchObject({ 'applications.intranet': { kind: 'add' }, 'applications.portal': { kind: 'delete' } });
    await p.up(PASSWORDS);
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'portal' })).toBeUndefined();
    const after = await admin.find('getApplication', { tenant: 'acme', application: 'intranet' });
    expect(after).toMatchObject({ clientId: 'portal', createdAt: (before as { createdAt: string }).createdAt });
    expect((await admin.call('verifyClientSecret', { tenant: 'acme', application: 'intranet' }, { body: { clientSecret: secret } })).matches).toBe(true);
    expect((await admin.listAll('listAssignments', { tenant: 'acme', application: 'intranet' }))!.map((a) => a.userId)).toEqual(['u-alice', 'u-bob']);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
    // Once applied everywhere the previousName goes, and nothing changes.
    await editModel((doc) => doc.deleteIn(['tenants', 0, 'applications', 0, 'previousName']));
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('renaming an application that keeps its client id frees the id first: the up succeeds', async () => {
    await editModel((doc) => {
      doc.setIn(['tenants', 0, 'applications', 1, 'name'], 'wiki2');
      doc.setIn(['tenants', 0, 'applications', 1, 'clientId'], 'wiki');
      const as = doc.getIn(['tenants', 0, 'assignments']) as { items: { get(k: string): unknown; set(k: string, v: unknown): void }[] };
      for (const a of as.items) if (a.get('application') === 'wiki') a.set('application', 'wiki2');
    });
    await p.up(PASSWORDS);
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'wiki' })).toBeUndefined();
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'wiki2' })).toMatchObject({ clientId: 'wiki' });
    expect((await admin.listAll('listAssignments', { tenant: 'acme', application: 'wiki2' }))!.map((a) => a.userId)).toEqual(['u-alice']);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('a tenant rename and an application replaced in one up leave nothing behind: the old registration is gone, the preview after is empty', async () => {
    const wikiSecret = /^OAUTH2_PROXY_CLIENT_SECRET=(.+)$/m.exec(await readFile(join(clients, 'acme/wiki2/oauth2-proxy.env'), 'utf8'))?.[1];
    expect(wikiSecret).toBeDefined();
    await editModel((doc) => {
      doc.setIn(['tenants', 0, 'name'], 'acme2');
      doc.setIn(['tenants', 0, 'previousName'], 'acme');
      // A new client id is a new registration: the old one must go, not stay live beside it.
      doc.setIn(['tenants', 0, 'applications', 1, 'clientId'], 'wiki-next');
    });
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.filter((s) => s.op !== 'update').map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual([]);
    await p.up(PASSWORDS);
    expect(await admin.find('getTenant', { tenant: 'acme' })).toBeUndefined();
    const apps = (await admin.listAll('listApplications', { tenant: 'acme2' }))!.map((a) => `${a.name} ${'clientId' in a ? a.clientId : a.kind}`).sort();
    expect(apps).toEqual(['dashboard dashboard', 'intranet portal', 'orders-api api', 'wiki2 wiki-next']);
    // The old registration's client id answers nowhere, and the new one holds the stack's secret.
    for (const t of (await admin.listAll('listTenants', {}))!) {
      expect(((await admin.listAll('listApplications', { tenant: t.name })) ?? []).filter((a) => 'clientId' in a && a.clientId === 'wiki')).toEqual([]);
    }
    expect(await admin.call('verifyClientSecret', { tenant: 'acme2', application: 'wiki2' }, { body: { clientSecret: wikiSecret! } })).toMatchObject({ matches: true });
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
