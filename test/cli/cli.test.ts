import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat, symlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const ACME = resolve('examples/acme.yaml');
/** A temp dir of this file's tests, removed when they end. */
const made: string[] = [];
const tmp = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'idforge-cli-'));
  made.push(dir);
  return dir;
};
afterAll(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));

async function listFiles(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out[join(e.parentPath, e.name).slice(dir.length + 1)] = await readFile(join(e.parentPath, e.name), 'utf8');
  }
  return out;
}

describe('idforge validate', () => {
  it('accepts the examples and summarises them', async () => {
    const r = await runCli(['validate', ACME]);
    expect(r).toEqual({ code: 0, stdout: 'valid: 1 tenant, 4 applications, 2 users, 3 assignments\n', stderr: '' });
    expect((await runCli(['validate', 'examples/multi-tenant'])).code).toBe(0);
  });

  it('reports every problem with file:line:col and exits 1', async () => {
    const dir = await tmp();
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'tenants:\n  - name: Acme\n    displayName: A\n    users:\n      - id: u1\n        email: nope\n');
    const r = await runCli(['validate', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.replaceAll(dir, '<tmp>')).toMatchInlineSnapshot(`
      "<tmp>/bad.yaml:2:11  'name' must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters  (at tenants[0].name)
      <tmp>/bad.yaml:6:16  'email' must be an email address  (at tenants[0].users[0].email)

      2 problems found.
      "
    `);
  });

  it('gives machines JSON with the same problems', async () => {
    const dir = await tmp();
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'tenants:\n  - name: acme\n');
    const r = await runCli(['validate', file, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      problems: [{ code: 'missing-field', path: ['tenants', 0, 'displayName'], message: "missing required field 'displayName'", file, line: 2, col: 5 }],
    });
    expect(JSON.parse((await runCli(['validate', ACME, '--json'])).stdout)).toMatchObject({ ok: true, problems: [] });
  });

  it('colours problems only when asked to', async () => {
    const dir = await tmp();
    await writeFile(join(dir, 'm.yaml'), 'tenants: 3\n');
    expect((await runCli(['validate', join(dir, 'm.yaml')], { color: false })).stderr).not.toContain('\x1b[');
    expect((await runCli(['validate', join(dir, 'm.yaml')], { color: true })).stderr).toContain('\x1b[31m');
  });

  it('names a missing path and exits 1', async () => {
    const r = await runCli(['validate', 'examples/nope.yaml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('examples/nope.yaml  no such file or directory');
  });

  it('reads a directory recursively and says when it holds no model', async () => {
    const dir = await tmp();
    await mkdir(join(dir, 'tenants'));
    const empty = await runCli(['validate', dir]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('directory holds no model files (*.yaml, *.yml, *.json)');
    await writeFile(join(dir, 'tenants', 'acme.yaml'), 'tenants:\n  - name: acme\n    displayName: Acme\n');
    expect((await runCli(['validate', dir])).code).toBe(0);
  });

  it('follows symbolic links in a model directory, and names a link that leads nowhere', async () => {
    const dir = await tmp();
    const elsewhere = await tmp();
    await writeFile(join(elsewhere, 'acme.yaml'), 'tenants:\n  - name: acme\n    displayName: Acme\n');
    await mkdir(join(elsewhere, 'more'));
    await writeFile(join(elsewhere, 'more', 'globex.yaml'), 'tenants:\n  - name: globex\n    displayName: Globex\n');
    await symlink(join(elsewhere, 'acme.yaml'), join(dir, 'acme.yaml'));
    await symlink(join(elsewhere, 'more'), join(dir, 'more'));
    await symlink(dir, join(dir, 'loop')); // a link back up is read once, not forever
    const ok = await runCli(['validate', dir]);
    expect(ok.stdout).toMatch(/^valid: 2 tenants, /);
    expect(ok.code).toBe(0);
    await symlink(join(elsewhere, 'gone.yaml'), join(dir, 'initech.yaml'));
    const broken = await runCli(['validate', dir]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`${join(dir, 'initech.yaml')}  no such file or directory`);
  });

  it('treats usage mistakes as exit 2', async () => {
    expect((await runCli([])).code).toBe(2);
    expect((await runCli(['validate'])).code).toBe(2);
    const unknownFlag = await runCli(['validate', ACME, '--frobnicate']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain("Unknown option '--frobnicate'");
    const unknownCommand = await runCli(['valdiate']);
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain("unknown command 'valdiate'");
  });
});

describe('idforge compile', () => {
  it('writes every artifact, secrets with mode 0600, and the same bytes on a second run', async () => {
    const dir = await tmp();
    const state = join(dir, 'state.json');
    const first = await runCli(['compile', ACME, '--out', join(dir, 'out'), '--state', state]);
    expect(first.code).toBe(0);
    const files = await listFiles(join(dir, 'out'));
    expect(Object.keys(files).sort()).toEqual([
      '.idforge-manifest.json',
      'acme/dashboard/spa-config.json',
      'acme/orders-api/api-config.json',
      'acme/portal/backchannel-logout.json',
      'acme/portal/grant.json',
      'acme/portal/session.env',
      'acme/wiki/docker-compose.yml',
      'acme/wiki/oauth2-proxy.env',
      'plan.json',
    ]);
    expect((await stat(join(dir, 'out/acme/wiki/oauth2-proxy.env'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'out/acme/dashboard/spa-config.json'))).mode & 0o777).toBe(0o644);
    expect((await stat(state)).mode & 0o777).toBe(0o600);

    expect((await runCli(['compile', ACME, '--out', join(dir, 'out'), '--state', state])).code).toBe(0);
    expect(await listFiles(join(dir, 'out'))).toEqual(files);
  });

  it('makes a proxy cookie secret of exactly 16 bytes, URL-safe base64', async () => {
    const dir = await tmp();
    expect((await runCli(['compile', ACME, '--out', join(dir, 'out'), '--state', join(dir, 's.json')])).code).toBe(0);
    const env = await readFile(join(dir, 'out/acme/wiki/oauth2-proxy.env'), 'utf8');
    const secret = /^OAUTH2_PROXY_COOKIE_SECRET=(.*)$/m.exec(env)![1]!;
    expect(secret).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(16);
  });

  it('keeps secrets stable across runs and makes new ones only for a new state', async () => {
    const dir = await tmp();
    const read = async (state: string) => {
      await runCli(['compile', ACME, '--out', join(dir, 'out'), '--state', state]);
      return readFile(join(dir, 'out/acme/portal/grant.json'), 'utf8');
    };
    const a = await read(join(dir, 'a.json'));
    expect(await read(join(dir, 'a.json'))).toBe(a);
    expect(await read(join(dir, 'b.json'))).not.toBe(a);
  });

  it('removes files it wrote before when an application leaves the model, and only those', async () => {
    const dir = await tmp();
    const model = join(dir, 'm.yaml');
    const out = join(dir, 'out');
    await writeFile(model, (await readFile(ACME, 'utf8')).replace('$schema=../schema/', '$schema=x/'));
    await runCli(['compile', model, '--out', out, '--state', join(dir, 's.json')]);
    await writeFile(join(out, 'acme/wiki/notes.txt'), 'mine');
    const withoutWiki = (await readFile(model, 'utf8')).replace(/      # oauth2-proxy[\s\S]*?emailDomains: \["\*"\]\n/, '').replace(/      - application: wiki\n        users: \[u-alice\]\n/, '');
    await writeFile(model, withoutWiki);
    expect((await runCli(['compile', model, '--out', out, '--state', join(dir, 's.json')])).code).toBe(0);
    const files = Object.keys(await listFiles(out));
    expect(files).not.toContain('acme/wiki/oauth2-proxy.env');
    expect(files).toContain('acme/wiki/notes.txt');
  });

  it('refuses a damaged state file instead of replacing the secrets in it', async () => {
    const dir = await tmp();
    await writeFile(join(dir, 's.json'), '{"version": 1, "secrets": ');
    const r = await runCli(['compile', ACME, '--out', join(dir, 'out'), '--state', join(dir, 's.json')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the state file is damaged; fix or remove it (removing it makes new secrets)');
    expect(await readFile(join(dir, 's.json'), 'utf8')).toBe('{"version": 1, "secrets": ');
  });

  it('needs --out', async () => {
    const r = await runCli(['compile', ACME]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--out is required');
  });
});

describe('idforge schema', () => {
  it('prints the model schema and each artifact schema', async () => {
    const model = JSON.parse((await runCli(['schema'])).stdout);
    expect(model.$id).toBe('https://idforge.dev/schema/idforge-model.schema.json');
    expect(Object.keys(model.properties)).toEqual(['$schema', 'server', 'tenants']);
    expect(JSON.parse((await runCli(['schema', '--name', 'spa-config'])).stdout).required.sort()).toEqual(['audience', 'cache_type', 'client_id', 'redirect_uri', 'scope', 'wellknown_endpoint']);
    expect((await runCli(['schema', '--name', 'nope'])).code).toBe(2);
  });
});

describe('the idforge executable', () => {
  const run = promisify(execFile);
  it('prints problems without a stack trace and exits 1 on a hostile file', async () => {
    const dir = await tmp();
    await writeFile(join(dir, 'bomb.yaml'), `a: &a [x, x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 8 }, (_, i) => `l${i}: &l${i} [${Array(10).fill(i === 0 ? '*a' : `*l${i - 1}`).join(', ')}]`).join('\n')}\n`);
    const err = await run('node', ['bin/idforge.js', 'validate', join(dir, 'bomb.yaml')], { env: { ...process.env, NO_COLOR: '1' } }).catch((e: { code: number; stderr: string }) => e);
    expect('code' in err && err.code).toBe(1);
    expect(err.stderr).toContain('too many alias expansions');
    expect(err.stderr).not.toMatch(/\n\s+at /);
  });
});
