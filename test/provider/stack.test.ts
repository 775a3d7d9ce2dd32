/**
 * Acceptance of the Pulumi integration on the real engine against the real server: the example
 * model deployed by `pulumi up` (server process included), checked through the admin API; an
 * empty preview right after; model edits previewed as exactly those changes; drift made through
 * the admin API found by `refresh` and repaired by `up`; no client or cookie secret in plain text
 * in the backend; `destroy` deletes the tenants and stops the server.
 */
import type { ApplicationBody } from '../../src/contract/index.ts';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, type AdminEndpoint } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { startServer } from '../../src/server/index.ts';
import { main } from '../../src/cli/main.ts';
import { loadExample } from '../support/model.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO, urnName } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-test-password', ACME_BOB_PASSWORD: 'bob-test-password' };

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(join(e.parentPath, e.name));
  return out;
}

async function connectionOf(dataDir: string): Promise<AdminEndpoint> {
  const c = JSON.parse(await readFile(join(dataDir, 'admin-credentials.json'), 'utf8')) as Record<string, string>;
  return { adminUrl: c.adminUrl!, tokenUrl: c.tokenEndpoint!, clientId: c.clientId!, clientSecret: c.clientSecret!, resource: c.resource!, scope: c.scope! };
}

describe('pulumi up/preview/refresh/destroy of a model against the real server', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let model: string;
  let dataDir: string;
  let clients: string;
  let admin: AdminClient;

  /** Edits the model file in place, keeping its comments. */
  async function editModel(edit: (doc: ReturnType<typeof parseDocument>) => void): Promise<void> {
    const doc = parseDocument(await readFile(model, 'utf8'));
    edit(doc);
    await writeFile(model, doc.toString());
  }

  const git = (args: string[]) => execFileSync('git', ['-c', 'user.name=Platform Team', '-c', 'user.email=platform@acme.example', ...args], { cwd: p.root, encoding: 'utf8' }).trim();

  async function assignmentsOf(app: string): Promise<string[]> {
    const page = await admin.call('listAssignments', { tenant: 'acme', application: app });
    return (page?.items ?? []).map((i) => i.userId).sort();
  }

  beforeAll(async () => {
    const port = await freePort();
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    model = join(p.root, 'acme.yaml');
    dataDir = join(p.root, 'server');
    clients = join(p.root, 'clients');
    await copyFile(join(REPO, 'examples/acme.yaml'), model);
    // The model in a Git repository, as a platform team keeps it: each write names its commit.
    git(['init', '-q', '-b', 'main']);
    git(['add', 'acme.yaml']);
    git(['commit', '-q', '-m', 'the model']);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:port', String(port));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', clients);
  });

  afterAll(async () => {
    // Whatever happened above, leave no server behind.
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('up deploys the server and provisions the model; the live server matches', async () => {
    await p.up();
    admin = new AdminClient(await connectionOf(dataDir));
    const tenant = await admin.find('getTenant', { tenant: 'acme' });
    expect(tenant).toMatchObject({ name: 'acme', displayName: 'Acme Corporation', scopes: [{ name: 'admin' }] });
    const portal = await admin.find('getApplication', { tenant: 'acme', application: 'portal' });
    expect(portal).toMatchObject({ kind: 'web', clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'] });
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'orders-api' })).toMatchObject({ kind: 'api', identifier: 'http://orders-api.localhost:4000' });
    expect(await admin.find('getUser', { tenant: 'acme', userId: 'u-alice' })).toMatchObject({ email: 'alice@acme.example', scopes: ['admin'], hasPassword: true });
    expect(await assignmentsOf('portal')).toEqual(['u-alice', 'u-bob']);
    expect(await assignmentsOf('wiki')).toEqual(['u-alice']);
    const out = await p.outputs();
    expect(out.issuers).toEqual({ acme: expect.stringMatching(/^http:\/\/acme\.localhost:\d+\/oauth2\/$/) });
    expect(await readdir(join(clients, 'acme'))).toEqual(expect.arrayContaining(['portal', 'wiki', 'dashboard', 'orders-api']));
    // The configs name the server the stack runs (its port), not just the model's default.
    const spa = JSON.parse(await readFile(join(clients, 'acme/dashboard/spa-config.json'), 'utf8')) as { wellknown_endpoint: string };
    expect(spa.wellknown_endpoint).toBe(`${(out.issuers as Record<string, string>).acme}.well-known/openid-configuration`);
    // The event log names the stack and the model's commit, branch and path for each object it made.
    const events = await admin.call('listEvents', { tenant: 'acme' }, { query: { type: 'application.created', object: 'application:portal' } });
    expect(events.items).toHaveLength(1);
    expect(events.items[0]!.actor).toMatchObject({ manager: expect.stringMatching(/^pulumi:/), git: { commit: git(['rev-parse', 'HEAD']), branch: 'main', path: 'acme.yaml' } });
  });

  it('a preview right after changes nothing, a new commit that declares nothing new neither', async () => {
    // The program's first call starts the provider host before any resource needs it (program.ts):
    // the host's first call from the engine after its set-up is that one, not a resource's check.
    const timing = join(p.root, 'host-timing.txt');
    await p.must(['preview', '--expect-no-changes'], { IDFORGE_HOST_TIMING: timing });
    // Each line: method, resource, milliseconds it took, milliseconds since the host started when it
    // ended; in the order they came (a call that came first may end later: the ready call imports modules).
    const calls = (await readFile(timing, 'utf8')).trim().split('\n').map((l) => l.split(' '))
      .map(([method, , took, ended]) => ({ method, came: Number(ended) - Number(took) }))
      .sort((a, b) => a.came - b.came)
      .map((c) => c.method);
    const firstResourceCall = calls.findIndex((c) => ['check', 'diff', 'read', 'create', 'update', 'delete'].includes(c ?? ''));
    expect(calls.indexOf('invoke')).toBeGreaterThanOrEqual(0);
    expect(calls.indexOf('invoke')).toBeLessThan(firstResourceCall);
    git(['commit', '-q', '--allow-empty', '-m', 'nothing declared']);
    await p.must(['preview', '--expect-no-changes']);
  });

  it("sends the SDK's debug messages (three calls per resource) only when PULUMI_DEBUG_PROMISE_LEAKS asks for them", async () => {
    const quiet = await p.must(['preview', '--expect-no-changes', '--debug']);
    // (The SDK registers the root stack resource before the program runs, with its message.)
    expect(quiet.stdout).not.toContain('Registering resource: t=pulumi-nodejs:dynamic/idforge');
    const told = await p.must(['preview', '--expect-no-changes', '--debug'], { PULUMI_DEBUG_PROMISE_LEAKS: '1' });
    expect(told.stdout).toContain('Registering resource: t=pulumi-nodejs:dynamic/idforge:Tenant, name=acme');
  });

  /** The idforge CLI in-process, against this stack's server. */
  async function cli(args: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await main([...args, '--data-dir', dataDir], {
      stdout: (t) => { stdout += t; }, stderr: (t) => { stderr += t; }, env: { IDFORGE_STATE: join(p.root, 'cli-state.json') }, cwd: p.root, color: false,
    });
    return { code, stdout, stderr };
  }

  it("idforge export of the stack's tenant gives the model as declared, and plans no changes (nothing leaves the stack, no secret is made)", async () => {
    const exported = await cli(['export', 'acme', '--out', join(p.root, 'acme-export.yaml')]);
    expect(exported.code, exported.stderr).toBe(0);
    const text = await readFile(join(p.root, 'acme-export.yaml'), 'utf8');
    expect(text).toContain('upstream: http://127.0.0.1:4181');
    expect(text).toContain('cacheType: session_storage');
    expect(text).toContain('name: staff');
    const declared = (await loadExample(model)).tenants[0]!;
    expect((await loadExample(join(p.root, 'acme-export.yaml'))).tenants[0]).toEqual(declared);
    const plan = await cli(['plan', join(p.root, 'acme-export.yaml'), '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ summary: { create: 0, update: 0, delete: 0 } });
    expect(existsSync(join(p.root, 'cli-state.json'))).toBe(false);
    await p.must(['preview', '--expect-no-changes']);
  });

  it('idforge apply of a change under another manager is refused, naming the stack; nothing is taken over', async () => {
    // The export names the stack's server (its port); the model file names the default one.
    const changed = (await readFile(join(p.root, 'acme-export.yaml'), 'utf8')).replace('displayName: Acme Portal', 'displayName: Portal by apply');
    expect(changed).toContain('Portal by apply');
    await writeFile(join(p.root, 'other.yaml'), changed);
    const r = await cli(['apply', join(p.root, 'other.yaml'), '--manager', 'other']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("application 'portal' is managed by the Pulumi stack idforge/test; idforge apply (manager 'other') would change displayName");
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({ displayName: 'Acme Portal', manager: 'pulumi:idforge/test' });
    await p.must(['preview', '--expect-no-changes']);
  });

  it('needs an initial password only for a user it creates', async () => {
    // No password variables at all: existing users need none.
    const env = { ACME_ALICE_PASSWORD: '', ACME_BOB_PASSWORD: '' };
    await p.must(['preview', '--expect-no-changes'], env);
    await editModel((doc) => {
      const users = doc.getIn(['tenants', 0, 'users']) as { add: (v: unknown) => void };
      users.add(doc.createNode({ id: 'u-carol', email: 'carol@acme.example', password: { env: 'ACME_CAROL_PASSWORD' } }));
    });
    try {
      const r = await p.run(['preview'], env);
      expect(r.code).not.toBe(0);
      expect(r.stdout + r.stderr).toContain('the user is created with an initial password, and it is missing: set environment variable ACME_CAROL_PASSWORD');
      expect(r.stdout + r.stderr).not.toContain('ACME_ALICE_PASSWORD');
      const steps = await p.previewSteps({ ...env, ACME_CAROL_PASSWORD: 'carol-password-3' });
      expect(steps.map((x) => `${x.op} ${urnName(x.urn)}`).sort()).toEqual(['update acme', 'update delete-guard']);
      expect(Object.keys(steps.find((x) => urnName(x.urn) === 'acme')?.detailedDiff ?? {})).toEqual(['users["u-carol"]']);
    } finally {
      await editModel((doc) => {
        const users = doc.getIn(['tenants', 0, 'users']) as { items: unknown[] };
        users.items.pop();
      });
    }
  });

  it('client, cookie and admin secrets and passwords never appear in plain text in the backend', async () => {
    const generated = (await Promise.all((await filesUnder(clients)).map((f) => readFile(f, 'utf8')))).join('\n');
    const secrets = [
      ...generated.matchAll(/OAUTH2_PROXY_(?:CLIENT_SECRET|COOKIE_SECRET)="?([A-Za-z0-9_-]{16,})/g),
      ...generated.matchAll(/"secret":\s*"([^"]{16,})"/g),
    ].map((m) => m[1]!);
    expect(secrets.length).toBeGreaterThanOrEqual(3);
    const backend = await Promise.all((await filesUnder(p.backend)).map((f) => readFile(f, 'utf8')));
    const adminSecret = (await connectionOf(dataDir)).clientSecret;
    for (const s of [...secrets, adminSecret, PASSWORDS.ACME_ALICE_PASSWORD]) for (const text of backend) expect(text).not.toContain(s);
    // Nor a path of idforge's own code as a resource's source position (program.ts: the model declares them).
    const state = backend.find((t) => t.includes('"checkpoint"'))!;
    const resources = (JSON.parse(state) as { checkpoint: { latest: { resources: Array<{ type: string; sourcePosition?: string }> } } }).checkpoint.latest.resources;
    const idforge = resources.filter((r) => r.type.includes('idforge'));
    expect(idforge.length).toBeGreaterThan(3);
    expect(idforge.filter((r) => r.sourcePosition !== undefined).map((r) => `${r.type} ${r.sourcePosition}`)).toEqual([]);
  });

  it('model edits preview as exactly those changes, and up applies them', async () => {
    await editModel((doc) => {
      const apps = doc.getIn(['tenants', 0, 'applications']) as { add: (v: unknown) => void };
      apps.add(doc.createNode({ name: 'reports', kind: 'spa', origin: 'http://reports.localhost:5174', scopes: ['openid'] }));
      const assignments = doc.getIn(['tenants', 0, 'assignments']) as { items: { get: (k: string) => unknown }[]; delete: (i: number) => void };
      assignments.delete(assignments.items.findIndex((a) => a.get('application') === 'wiki'));
      doc.setIn(['tenants', 0, 'applications', 1, 'origin'], 'http://wiki.localhost:4280');
    });
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual([
      // The tenant holds its applications and assignments: one update, which names each change.
      'update acme',
      'update client-configs',
      // Its inventory follows the model (one more application, one assignment less).
      'update delete-guard',
    ]);
    expect(steps.find((s) => urnName(s.urn) === 'acme')?.detailedDiff).toMatchObject({
      'applications.reports': { kind: 'add' },
      'applications.wiki': { kind: 'update' },
      'assignments.wiki': { kind: 'delete' },
    });
    await p.up(PASSWORDS);
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'reports' })).toMatchObject({ kind: 'spa', redirectUris: ['http://reports.localhost:5174', 'http://reports.localhost:5174/'] });
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'wiki' })).toMatchObject({ redirectUris: ['http://wiki.localhost:4280/oauth2/callback'] });
    expect(await assignmentsOf('wiki')).toEqual([]);
    expect(await assignmentsOf('portal')).toEqual(['u-alice', 'u-bob']);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('drift made through the admin API is reported by refresh and repaired by the next up', async () => {
    const portal = (await admin.find('getApplication', { tenant: 'acme', application: 'portal' })) as Record<string, unknown>;
    const { name: _n, createdAt: _c, updatedAt: _u, ...body } = portal;
    await admin.call('putApplication', { tenant: 'acme', application: 'portal' }, { body: { ...body, redirectUris: ['http://evil.localhost/cb'] } as ApplicationBody });
    await admin.remove('deleteAssignment', { tenant: 'acme', application: 'portal', userId: 'u-bob' });
    const refresh = await p.must(['refresh', '--yes', '--skip-preview', '--diff'], PASSWORDS);
    expect(refresh.stdout).toContain('evil.localhost');
    expect(refresh.stdout).toMatch(/1 updated/);
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual(['update acme']);
    expect(steps[0]?.detailedDiff).toMatchObject({ 'applications.portal': { kind: 'update' }, 'assignments.portal': { kind: 'update' } });
    await p.up(PASSWORDS);
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({
      redirectUris: ['http://portal.localhost:3000/connect/acme/callback'],
    });
    expect(await assignmentsOf('portal')).toEqual(['u-alice', 'u-bob']);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('a new port restarts the server in place and rewrites the client configs', async () => {
    const oldPid = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    const port = await freePort();
    await p.configSet('idforge:port', String(port));
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`).sort()).toEqual(['update client-configs', 'update server']);
    await p.up(PASSWORDS);
    const newPid = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    expect(isOurProcess(oldPid, dataDir)).toBe(false);
    expect(isOurProcess(newPid, dataDir)).toBe(true);
    admin = new AdminClient(await connectionOf(dataDir));
    expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme Corporation' });
    const spa = JSON.parse(await readFile(join(clients, 'acme/dashboard/spa-config.json'), 'utf8')) as { wellknown_endpoint: string };
    expect(spa.wellknown_endpoint).toBe(`http://acme.localhost:${port}/oauth2/.well-known/openid-configuration`);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('a server stopped behind Pulumi\'s back shows as an update, and up starts it again', async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    process.kill(-pid, 'SIGTERM');
    for (let i = 0; i < 200 && isOurProcess(pid, dataDir); i++) await new Promise((r) => setTimeout(r, 50));
    const steps = await p.previewSteps(PASSWORDS);
    expect(steps.map((s) => `${s.op} ${urnName(s.urn)}`)).toEqual(['update server']);
    await p.up(PASSWORDS);
    const restarted = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    expect(isOurProcess(restarted, dataDir)).toBe(true);
    expect(await admin.find('getTenant', { tenant: 'acme' })).toMatchObject({ displayName: 'Acme Corporation' });
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });

  it('destroy deletes the tenants and stops the server', async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8')).trim());
    expect(isOurProcess(pid, dataDir)).toBe(true);
    await p.must(['destroy', '--yes', '--skip-preview'], PASSWORDS);
    expect(isOurProcess(pid, dataDir)).toBe(false);
    // Look at what destroy left in the data dir with the server itself.
    const server = await startServer({ dataDir, port: 0, baseDomain: 'localhost' });
    try {
      const again = new AdminClient({
        adminUrl: server.adminUrl,
        tokenUrl: server.adminCredentials.tokenEndpoint,
        clientId: server.adminCredentials.clientId,
        clientSecret: server.adminCredentials.clientSecret,
        resource: server.adminCredentials.resource,
        scope: server.adminCredentials.scope,
      });
      expect(await again.find('getTenant', { tenant: 'acme' })).toBeUndefined();
    } finally {
      await server.close();
    }
  });
});
