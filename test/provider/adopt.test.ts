/**
 * Adoption on the real engine against the real server: a model applied with `idforge apply` is
 * brought under a Pulumi stack with `idforge:adopt`, without re-creating anything (creation times
 * and password hashes kept); without the flag `up` refuses to take over what exists; after the
 * adopting `up`, with the flag removed, the preview shows no changes.
 */
import Database from 'better-sqlite3';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { AdminClient, type AdminEndpoint } from '../../src/admin-client/index.ts';
import { isOurProcess, PID_FILE } from '../../src/provider/_local-server.ts';
import { startServer } from '../../src/server/index.ts';
import { freePort } from '../support/processes.ts';
import { PulumiProject, REPO } from './_pulumi.ts';

const PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-test-password', ACME_BOB_PASSWORD: 'bob-test-password' };

async function connectionOf(dataDir: string): Promise<AdminEndpoint> {
  const c = JSON.parse(await readFile(join(dataDir, 'admin-credentials.json'), 'utf8')) as Record<string, string>;
  return { adminUrl: c.adminUrl!, tokenUrl: c.tokenEndpoint!, clientId: c.clientId!, clientSecret: c.clientSecret!, resource: c.resource!, scope: c.scope! };
}

/** What must survive adoption, read from the server's own database. */
function snapshot(dataDir: string): { tenants: unknown[]; apps: unknown[]; users: unknown[]; assignments: unknown[] } {
  const db = new Database(join(dataDir, 'idforge.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = (table: string, cols: string): unknown[] => db.prepare(`SELECT ${cols} FROM ${table} WHERE tenant = 'acme' ORDER BY 1, 2, 3`).all();
    return {
      tenants: db.prepare("SELECT name, created_at FROM tenants WHERE name = 'acme'").all(),
      apps: rows('applications', 'tenant, name, created_at'),
      users: rows('users', 'tenant, id, created_at, password_hash'),
      assignments: rows('assignments', 'tenant, application, user_id, created_at'),
    };
  } finally {
    db.close();
  }
}

describe('adopting objects made by idforge apply into a Pulumi stack', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let dataDir: string;
  let before: ReturnType<typeof snapshot>;
  let applySecret: string;

  beforeAll(async () => {
    const port = await freePort();
    p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, PASSWORDS);
    const model = join(p.root, 'acme.yaml');
    dataDir = join(p.root, 'server');
    await copyFile(join(REPO, 'examples/acme.yaml'), model);
    await writeFile(model, (await readFile(model, 'utf8')).replace(/^(\s*port:\s*)\d+/m, `$1${port}`));
    // The admin's server, provisioned with `idforge apply` before any Pulumi stack existed.
    const server = await startServer({ dataDir, port, baseDomain: 'localhost' });
    try {
      let out = '';
      const io: CliIo = { stdout: (t) => void (out += t), stderr: (t) => void (out += t), env: { ...process.env, ...PASSWORDS }, cwd: p.root, color: false };
      const code = await main(['apply', model, '--data-dir', dataDir], io);
      expect(code, out).toBe(0);
      // `idforge apply` keeps the client secrets it made in its state file (.idforge/state.json).
      const state = JSON.parse(await readFile(join(p.root, '.idforge/state.json'), 'utf8')) as { secrets: Record<string, { clientSecret?: string }> };
      applySecret = state.secrets['acme/portal']?.clientSecret ?? '';
    } finally {
      await server.close();
    }
    before = snapshot(dataDir);
    await p.configSet('idforge:model', model);
    await p.configSet('idforge:port', String(port));
    await p.configSet('idforge:dataDir', dataDir);
    await p.configSet('idforge:clientConfigDir', join(p.root, 'clients'));
  });

  afterAll(async () => {
    const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
    if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
    await p?.cleanup();
  });

  it('without idforge:adopt, up refuses to take over what exists and changes none of it', async () => {
    const r = await p.run(['up', '--yes', '--skip-preview'], PASSWORDS);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain('tenant acme already exists on the server, outside this stack');
    expect(r.stdout + r.stderr).toContain('pulumi config set idforge:adopt true');
    expect(snapshot(dataDir)).toEqual(before);
  });

  it('with idforge:adopt, up brings every object under the stack without re-creating it', async () => {
    await p.configSet('idforge:adopt', 'true');
    await p.up(PASSWORDS);
    const state = JSON.parse((await p.must(['stack', 'export'])).stdout) as { deployment: { resources: { type: string; id?: string }[] } };
    const ids = state.deployment.resources.filter((r) => r.type.startsWith('pulumi-nodejs:dynamic/idforge:') && !r.type.endsWith('Secrets')).map((r) => `${r.type.slice(30)} ${r.id}`);
    expect(ids.sort()).toEqual(['AuthServer ' + dataDir, 'ClientConfigs ' + join(p.root, 'clients'), 'DeleteGuard delete-guard', 'Tenant acme']);
    // Same rows, same creation times, same password hashes: nothing was deleted or re-created.
    const after = snapshot(dataDir);
    expect(after).toEqual(before);
    expect((after.users as { password_hash: string | null }[]).every((u) => u.password_hash !== null)).toBe(true);
  });

  it("an adopted confidential client's secret is the stack's: the one idforge apply made stops working", async () => {
    const admin = new AdminClient(await connectionOf(dataDir));
    expect(await admin.find('getApplication', { tenant: 'acme', application: 'portal' })).toMatchObject({ kind: 'web', clientId: 'portal' });
    const issuer = ((await p.outputs()).issuers as Record<string, string>).acme!;
    const token = async (secret: string): Promise<number> =>
      (
        await fetch(`${issuer}token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`portal:${secret}`).toString('base64')}` },
          body: 'grant_type=authorization_code&code=nope&redirect_uri=http%3A%2F%2Fportal.localhost%3A3000%2Fconnect%2Facme%2Fcallback',
        })
      ).status;
    const stackSecret = /"secret":\s*"([^"]+)"/.exec(await readFile(join(p.root, 'clients/acme/portal/grant.json'), 'utf8'))![1]!;
    // Client authentication comes first: a wrong secret is invalid_client (401), the right one
    // gets as far as the (made-up) code, invalid_grant (400).
    expect(await token(stackSecret)).toBe(400);
    expect(applySecret).not.toBe('');
    expect(await token(applySecret)).toBe(401);
  });

  it('with the flag removed, the preview shows no changes', async () => {
    await p.must(['config', 'rm', 'idforge:adopt']);
    await p.must(['preview', '--expect-no-changes'], PASSWORDS);
  });
});
