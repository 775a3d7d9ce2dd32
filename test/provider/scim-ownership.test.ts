/**
 * SCIM and a Pulumi stack in one tenant, on the real engine and the real server: users and groups
 * an identity provider made through SCIM are no drift to `refresh`, are never touched by `up`
 * (the tenant's `unmanaged: remove` default included), and a model that names a SCIM-managed user
 * fails the preview at that user, saying SCIM owns it, before anything changes.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { freePort } from '../support/processes.ts';
import { GROUP, scimClient, scimUser, type ScimClient } from '../scim/_support.ts';
import { PulumiProject, REPO } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22' };

describe('SCIM beside a stack', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let model: string;
  let dataDir: string;
  let admin: AdminClient;
  let scim: ScimClient;
  let okta: string;

  beforeAll(async () => {
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    model = join(p.root, 'acme.yaml');
    dataDir = join(p.root, 'server');
    await copyFile(join(REPO, 'examples/acme.yaml'), model);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:port', String(await freePort()));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
    await p.up(PASSWORDS);
    admin = await AdminClient.forDataDir(dataDir);
    const { token } = await admin.call('createScimToken', { tenant: 'acme' }, { body: { description: 'Okta' } });
    const port = Number(new URL((await admin.endpoint).adminUrl).port);
    scim = scimClient({ address: { scheme: 'http', baseDomain: 'localhost', port } }, 'acme', token);
    okta = (await scim.call('POST', '/Users', scimUser('okta.user', 'okta.user@acme.example'))).body.id;
    await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Okta Engineering', members: [{ value: okta }] });
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('refresh finds no drift in what SCIM made, and up leaves it alone', async () => {
    await p.must(['refresh', '--yes', '--skip-preview', '--expect-no-changes'], PASSWORDS);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
    await p.up(PASSWORDS);
    expect((await scim.call('GET', `/Users/${okta}`)).body).toMatchObject({ userName: 'okta.user', groups: [{ display: 'Okta Engineering' }] });
  });

  it('a model that names a SCIM-managed user fails the preview at that user, and up changes nothing', async () => {
    const doc = parseDocument(await readFile(model, 'utf8'));
    doc.addIn(['tenants', 0, 'users'], { id: okta, email: 'okta.user@acme.example', displayName: 'Taken over' });
    await writeFile(model, doc.toString());
    const preview = await p.run(['preview'], PASSWORDS);
    expect(preview.code).not.toBe(0);
    expect(preview.stdout + preview.stderr).toMatch(new RegExp(`property users\\["${okta}"\\] .*has a problem: user '${okta}' is managed by SCIM \\(an identity provider provisions it\\): ` +
      'the model cannot declare it; remove it from the model, or have the identity provider stop managing it first'));
    expect((await p.run(['up', '--yes', '--skip-preview'], PASSWORDS)).code).not.toBe(0);
    const after = await admin.call('getUser', { tenant: 'acme', userId: okta });
    expect(after.managedBy).toBe('scim');
    expect(after.displayName).toBeUndefined();
  });
});
