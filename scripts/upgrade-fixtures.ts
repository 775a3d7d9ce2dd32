/**
 * Makes the upgrade fixtures (test/upgrade/fixtures/<release>/<backend>/) from the git history: for
 * each release of test/upgrade/releases.ts, its own code (`git archive <commit>` into a temp dir,
 * this checkout's node_modules linked in) serves a fresh database, SQLite and PostgreSQL in turn;
 * its own `idforge apply` applies examples/acme.yaml of that commit plus a tenant with every sign-in
 * method; people sign in through its pages (password; password and an authenticator app; a passkey
 * held by a software authenticator), which leaves sessions, grants and refresh tokens; releases with
 * SCIM get a tenant outside the model with a SCIM token, a SCIM user, a SCIM group and its assignment. Then the server stops and the
 * database is kept as it left it (the SQLite file; a pg_dump of the PostgreSQL database), with its
 * master key, the model, the state file next to it and a manifest of what the people need to sign in
 * again (test/upgrade/upgrade.test.ts opens each with the current code).
 *
 *   node bin/run.js tsx scripts/upgrade-fixtures.ts               every release
 *   node bin/run.js tsx scripts/upgrade-fixtures.ts schema-2      one release
 *
 * Needs git (the history), PostgreSQL's binaries (test/support/postgres.ts) and a free port or two.
 * Git is only read: nothing is checked out in this working tree.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { SignIn, type SoftPasskey } from '../test/upgrade/_people.ts';
import { GLOBEX_YAML, PASSWORDS, RELEASES, type Manifest, type Release } from '../test/upgrade/releases.ts';
import { postgresBin, startPostgres, type TestPostgres } from '../test/support/postgres.ts';
import { freePort, REPO_ROOT, runToCompletion, startProcess, waitForHttp, type RunningProcess } from '../test/support/processes.ts';
import { localhostFetch } from '../src/admin-client/index.ts';
import { openStorage } from '../src/server/storage/index.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'upgrade', 'fixtures');

/** The release's source tree, from git, with this checkout's dependencies. */
function checkout(release: Release, into: string): string {
  const code = join(into, 'code');
  mkdirSync(code, { recursive: true });
  const tar = execFileSync('git', ['-C', REPO_ROOT, 'archive', '--format=tar', release.commit], { maxBuffer: 512 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', code], { input: tar });
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(code, 'node_modules'));
  return code;
}

/** Runs the release's idforge with this node first on PATH (so it never fetches its own). */
const oldEnv = (extra: Record<string, string> = {}) => ({ PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, IDFORGE_DATABASE_URL: undefined, ...extra });

async function startOldServer(code: string, dataDir: string, port: number, database: string | undefined, name: string): Promise<RunningProcess> {
  const proc = startProcess(name, process.execPath, [join(code, 'bin', 'idforge.js'), 'serve', '--data-dir', dataDir, '--port', String(port), '--workers', '1',
    ...(database === undefined ? [] : ['--database', database])], { env: oldEnv() });
  await waitForHttp(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 120_000, process: proc });
  return proc;
}

async function admin(dataDir: string): Promise<(method: string, path: string, body?: unknown) => Promise<any>> {
  const creds = JSON.parse(readFileSync(join(dataDir, 'admin-credentials.json'), 'utf8')) as { clientId: string; clientSecret: string; tokenEndpoint: string; resource: string; scope: string };
  const r = await localhostFetch(creds.tokenEndpoint, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${creds.clientId}:${creds.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: creds.scope, resource: creds.resource }).toString(),
  });
  const token = ((await r.json()) as { access_token: string }).access_token;
  const base = new URL(creds.tokenEndpoint);
  const adminBase = `http://localhost:${base.port}/admin/v1`;
  return async (method, path, body) => {
    const res = await localhostFetch(`${adminBase}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  };
}

/** The tenant's public client of `application`: its id and registered redirect URI. */
async function client(call: Awaited<ReturnType<typeof admin>>, tenant: string, application: string, scope: string) {
  const app = (await call('GET', `/tenants/${tenant}/applications/${application}`)) as { clientId: string; redirectUris: string[] };
  return { clientId: app.clientId, redirectUri: app.redirectUris[0]!, scope };
}

async function makeOne(release: Release, backend: 'sqlite' | 'postgres', code: string, work: string, pg: TestPostgres | undefined): Promise<void> {
  const out = join(FIXTURES, release.name, backend);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, '.idforge'), { recursive: true });
  const dataDir = join(work, `${backend}-data`);
  const modelDir = join(work, `${backend}-model`);
  mkdirSync(modelDir, { recursive: true });
  const port = await freePort();
  const db = backend === 'postgres' ? await pg!.createDatabase('fixture') : undefined;
  const server = await startOldServer(code, dataDir, port, db?.url, `upgrade-fixture-${release.name}-${backend}`);
  try {
    // The release's own example, served by this server, plus the tenant with every sign-in method.
    const model = `${readFileSync(join(code, 'examples', 'acme.yaml'), 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${port}`).trimEnd()}\n${GLOBEX_YAML}`;
    writeFileSync(join(modelDir, 'model.yaml'), model);
    await runToCompletion(`upgrade-fixture-${release.name}-${backend}-apply`, process.execPath, [join(code, 'bin', 'idforge.js'), 'apply', 'model.yaml', '--data-dir', dataDir],
      { cwd: modelDir, env: oldEnv(PASSWORDS) });

    const call = await admin(dataDir);
    const clients = {
      acme: await client(call, 'acme', 'dashboard', 'openid profile email offline'),
      globex: await client(call, 'globex', 'board', 'openid profile email offline'),
    };
    const target = (tenant: 'acme' | 'globex') => ({ issuer: `http://${tenant}.localhost:${port}/oauth2/`, ...clients[tenant] });

    const alice = await (await new SignIn(target('acme')).start()).password('alice@acme.example', PASSWORDS.ACME_ALICE_PASSWORD);
    const aliceTokens = await alice.tokens();
    if (aliceTokens.refreshToken === undefined) throw new Error('alice got no refresh token');
    await (await (await new SignIn(target('acme')).start()).password('bob@acme.example', PASSWORDS.ACME_BOB_PASSWORD)).tokens();

    const carol = await (await new SignIn(target('globex')).start()).password('carol@globex.example', PASSWORDS.GLOBEX_CAROL_PASSWORD);
    const carolTotp = await carol.enrolTotp();
    if (carol.where === 'Add a passkey?') await carol.notNow();
    await carol.tokens();

    const dave = await (await new SignIn(target('globex')).start()).password('dave@globex.example', PASSWORDS.GLOBEX_DAVE_PASSWORD);
    const daveTotp = await dave.enrolTotp();
    if (dave.where !== 'Add a passkey?') throw new Error(`dave was not offered a passkey: ${dave.where}`);
    const passkey: SoftPasskey = await dave.addPasskey('u-dave');
    await dave.tokens();
    // The passkey works on the release that made it.
    const again = await (await new SignIn(target('globex')).start()).passkey(passkey);
    if ((await again.tokens()).sub !== 'u-dave') throw new Error('the passkey did not sign dave in');

    let scim: Manifest['scim'];
    if (release.scim) {
      // A tenant the model does not declare, provisioned by an identity provider: plan leaves it alone.
      await call('PUT', '/tenants/initech', { displayName: 'Initech', scopes: [] });
      await call('PUT', '/tenants/initech/applications/portal', { kind: 'spa', clientId: 'initech-portal', redirectUris: ['http://portal.initech.localhost:5175'], scopes: ['openid'] });
      const token = (await call('POST', '/tenants/initech/scim/tokens', { description: 'upgrade fixture' })) as { id: string; token: string };
      const scimCall = async (path: string, body: unknown) => {
        const r = await localhostFetch(`http://initech.localhost:${port}/scim/v2${path}`, {
          method: 'POST', headers: { authorization: `Bearer ${token.token}`, 'content-type': 'application/scim+json' }, body: JSON.stringify(body),
        });
        if (r.status !== 201) throw new Error(`SCIM POST ${path}: ${r.status} ${await r.text()}`);
        return (await r.json()) as { id: string };
      };
      const erin = await scimCall('/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'erin', displayName: 'Erin',
        emails: [{ value: 'erin@initech.example', primary: true }], password: 'erin-fixture-password',
      });
      const team = await scimCall('/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Night shift', members: [{ value: erin.id }] });
      await call('PUT', `/tenants/initech/applications/portal/group-assignments/${team.id}`, {});
      scim = { userId: erin.id, groupId: team.id, tokenId: token.id, token: token.token };
    }

    const manifest: Omit<Manifest, 'refusal'> = {
      release: release.name, commit: release.commit, backend, madeAt: Date.now(), port, clients,
      people: {
        alice: { email: 'alice@acme.example', password: PASSWORDS.ACME_ALICE_PASSWORD, refreshToken: aliceTokens.refreshToken },
        bob: { email: 'bob@acme.example', password: PASSWORDS.ACME_BOB_PASSWORD },
        carol: { email: 'carol@globex.example', password: PASSWORDS.GLOBEX_CAROL_PASSWORD, totpSecret: carolTotp },
        dave: { email: 'dave@globex.example', password: PASSWORDS.GLOBEX_DAVE_PASSWORD, totpSecret: daveTotp, passkey },
      },
      ...(scim === undefined ? {} : { scim }),
    };
    await server.stop();
    if (backend === 'sqlite') {
      // As the release left it; the WAL folded into the file, so one file is the whole database.
      const file = join(dataDir, 'idforge.db');
      const d = new Database(file);
      d.pragma('wal_checkpoint(TRUNCATE)');
      d.close();
      copyFileSync(file, join(out, 'idforge.db'));
    } else {
      const dump = execFileSync(join(postgresBin(), 'pg_dump'), ['--no-owner', '--no-privileges', '--dbname', db!.url], { maxBuffer: 256 * 1024 * 1024 });
      writeFileSync(join(out, 'postgres.sql'), dump);
    }
    copyFileSync(join(dataDir, 'master.key'), join(out, 'master.key'));
    copyFileSync(join(modelDir, 'model.yaml'), join(out, 'model.yaml'));
    copyFileSync(join(modelDir, '.idforge', 'state.json'), join(out, '.idforge', 'state.json'));
    const refusal = await downgradeRefusal(code, out, backend, pg, work);
    writeFileSync(join(out, 'manifest.json'), `${JSON.stringify({ ...manifest, refusal }, null, 2)}\n`);
    console.log(`made ${join('test/upgrade/fixtures', release.name, backend)} with ${release.commit.slice(0, 7)} (schema ${release.schema})`);
  } finally {
    await server.stop();
    if (db !== undefined) await pg!.dropDatabase(db.name);
  }
}

/**
 * The release's own server on its database once the current code has migrated it: it must stop,
 * not serve. Returns the line it stopped with (kept in the manifest as evidence).
 */
async function downgradeRefusal(code: string, fixture: string, backend: 'sqlite' | 'postgres', pg: TestPostgres | undefined, work: string): Promise<string> {
  const dir = mkdtempSync(join(work, 'downgrade-'));
  copyFileSync(join(fixture, 'master.key'), join(dir, 'master.key'));
  const db = backend === 'postgres' ? await pg!.createDatabase('downgrade') : undefined;
  try {
    if (backend === 'sqlite') copyFileSync(join(fixture, 'idforge.db'), join(dir, 'idforge.db'));
    else execFileSync(join(postgresBin(), 'psql'), ['-v', 'ON_ERROR_STOP=1', '-q', '-X', '-d', db!.url, '-f', join(fixture, 'postgres.sql')], { stdio: 'pipe' });
    await (await openStorage({ dataDir: dir, ...(db === undefined ? {} : { database: db.url }) })).close();
    const port = await freePort();
    const old = startProcess(`upgrade-fixture-downgrade-${backend}`, process.execPath, [join(code, 'bin', 'idforge.js'), 'serve', '--data-dir', dir, '--port', String(port), '--workers', '1',
      ...(db === undefined ? [] : ['--database', db.url])], { env: oldEnv() });
    const exited = await Promise.race([old.exited, new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
    await old.stop();
    if (exited === 0 || exited === 'still running') throw new Error(`the release served a database the current code migrated (${exited}):\n${old.output()}`);
    const line = old.output().split('\n').find((l) => /newer than this idforge|already an index named changes/.test(l));
    if (line === undefined) throw new Error(`the release stopped, but not because of the schema:\n${old.output()}`);
    return line.trim();
  } finally {
    if (db !== undefined) await pg!.dropDatabase(db.name);
  }
}

const only = process.argv.slice(2);
const releases = only.length === 0 ? RELEASES : RELEASES.filter((r) => only.includes(r.name));
if (releases.length === 0) throw new Error(`no release named ${only.join(', ')}; known: ${RELEASES.map((r) => r.name).join(', ')}`);
const pg = await startPostgres();
try {
  for (const release of releases) {
    const work = mkdtempSync(join(tmpdir(), `idforge-fixture-${release.name}-`));
    try {
      const code = checkout(release, work);
      for (const backend of ['sqlite', 'postgres'] as const) await makeOne(release, backend, code, work, pg);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
} finally {
  await pg.stop();
}
if (!existsSync(FIXTURES)) throw new Error('no fixtures were made');
