/**
 * Upgrades from every earlier release (releases.ts), on both backends: a database its own code made
 * (test/upgrade/fixtures, made by scripts/upgrade-fixtures.ts from the git history) is opened by the
 * current server, which migrates it forward to the latest schema (a SQLite file is copied first). Then: every row of
 * every table is still there, as it was (objects, password hashes, TOTP secrets, passkeys, keys,
 * grants, sessions, SCIM tokens and groups); the people still sign in (a password; a password and
 * their authenticator app; a passkey alone), alice's refresh token from before still refreshes, the
 * SCIM token still works; and `idforge plan` of the model that made the database, run from another
 * directory, shows exactly the changes CHANGELOG.md documents for that release.
 *
 * The clock (Date) runs from two minutes after the fixture was made, as for an upgrade done then:
 * tokens and sessions made by the old release are alive, whatever day the test runs.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.ts';
import { LATEST_VERSION } from '../../src/server/storage/postgres-migrations.ts';
import { SQLITE_LATEST_VERSION } from '../../src/server/storage/sqlite-migrations.ts';
import { localhostFetch, tempDir } from '../server/_support.ts';
import { runCli } from '../support/cli.ts';
import { loadExample } from '../support/model.ts';
import { reusedWords } from '../../src/cli/commands/plan.ts';
import { postgresBin, startPostgres, type TestPostgres } from '../support/postgres.ts';
import { SignIn, refresh, type SignInTarget } from './_people.ts';
import { PASSWORDS, RELEASES, type Manifest, type Release } from './releases.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');
/** The schema the current code migrates to: the same number on both backends. */
const LATEST = SQLITE_LATEST_VERSION;
const ALL_VERSIONS = Array.from({ length: LATEST }, (_, i) => i + 1);
/** Tables whose rows the upgrade may rewrite: the change log (renamed), the migration history (new), readiness probes in meta. */
const REWRITTEN = new Set(['changes', 'change_log', 'schema_migrations', 'meta']);

type Rows = Record<string, string[]>;

/** Every row of every table, each as canonical JSON, sorted: what "still there, as it was" compares. */
function canonical(rows: readonly Record<string, unknown>[]): string[] {
  return rows.map((r) => JSON.stringify(Object.fromEntries(Object.keys(r).sort().map((k) => {
    const v = r[k];
    return [k, Buffer.isBuffer(v) ? v.toString('base64') : typeof v === 'bigint' ? Number(v) : v];
  })))).sort();
}
function sqliteRows(file: string): Rows {
  const db = new Database(file, { readonly: true });
  try {
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[]).map((t) => t.name);
    return Object.fromEntries(tables.map((t) => [t, canonical(db.prepare(`SELECT * FROM "${t}"`).all() as Record<string, unknown>[])]));
  } finally {
    db.close();
  }
}
async function postgresRows(pg: TestPostgres, database: string): Promise<Rows> {
  const tables = (await pg.sql(database, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)).rows.map((r) => String(r.tablename));
  const out: Rows = {};
  // bigint comes back as text from node-postgres: numbers, as SQLite gives them.
  for (const t of tables) out[t] = canonical((await pg.sql(database, `SELECT * FROM "${t}"`)).rows.map((r) => Object.fromEntries(Object.entries(r as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+$/.test(v) && /(_at|_ms|counter|last_step|attempts|failures)$/.test(k) ? Number(v) : v]))));
  return out;
}

it('both backends are at the same schema version', () => {
  expect(LATEST_VERSION).toBe(SQLITE_LATEST_VERSION);
});

let pg: TestPostgres | undefined;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.stop();
});

const cases = RELEASES.flatMap((release) => (['sqlite', 'postgres'] as const).map((backend) => ({ release, backend })));

describe.each(cases)('upgrade from $release.name ($release.commit) on $backend', ({ release, backend }: { release: Release; backend: 'sqlite' | 'postgres' }) => {
  const fixture = join(FIXTURES, release.name, backend);
  const manifest = JSON.parse(readFileSync(join(fixture, 'manifest.json'), 'utf8')) as Manifest;
  const work = tempDir(`idforge-upgrade-${release.name}-${backend}-`);
  const dataDir = join(work.path, 'data');
  let database: { name: string; url: string } | undefined;
  let server: RunningServer;
  let before: Rows;
  const lines: string[] = [];
  const target = (tenant: 'acme' | 'globex'): SignInTarget => ({ issuer: server.issuer(tenant), ...manifest.clients[tenant]! });

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(manifest.madeAt + 120_000);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    copyFileSync(join(fixture, 'master.key'), join(dataDir, 'master.key'));
    chmodSync(join(dataDir, 'master.key'), 0o600);
    if (backend === 'sqlite') {
      copyFileSync(join(fixture, 'idforge.db'), join(dataDir, 'idforge.db'));
      before = sqliteRows(join(dataDir, 'idforge.db'));
    } else {
      database = await pg!.createDatabase('upgrade');
      execFileSync(join(postgresBin(), 'psql'), ['-v', 'ON_ERROR_STOP=1', '-q', '-X', '-d', database.url, '-f', join(fixture, 'postgres.sql')], { stdio: 'pipe' });
      before = await postgresRows(pg!, database.name);
    }
    server = await startServer({ dataDir, port: 0, baseDomain: 'localhost', log: (l) => lines.push(l), ...(database === undefined ? {} : { database: database.url }) });
  });
  afterAll(async () => {
    await server?.close();
    vi.useRealTimers();
    if (database !== undefined) await pg?.dropDatabase(database.name);
    work.remove();
  });

  it(`migrates it forward to the latest schema${backend === 'sqlite' ? ', after copying the file' : ''}, in one transaction, saying so`, async () => {
    const applied = lines.filter((l) => l.startsWith('database: applied migration'));
    expect(applied).toEqual(Array.from({ length: LATEST - release.schema }, (_, i) => expect.stringMatching(new RegExp(`^database: applied migration ${release.schema + i + 1} `))));
    if (backend === 'sqlite') {
      const file = join(dataDir, 'idforge.db');
      const backups = readdirSync(dataDir).filter((f) => f.startsWith(`idforge.db.schema-${release.schema}.`) && f.endsWith('.bak'));
      expect(backups).toHaveLength(1);
      expect(lines).toContain(`database: copied ${file} (schema version ${release.schema}) to ${join(dataDir, backups[0]!)} before migrating it`);
      // The copy is the database as the release left it.
      expect(sqliteRows(join(dataDir, backups[0]!))).toEqual(before);
      const db = new Database(file, { readonly: true });
      expect(db.pragma('user_version', { simple: true })).toBe(LATEST);
      expect((db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version)).toEqual(ALL_VERSIONS);
      db.close();
    } else {
      const { rows } = await pg!.sql(database!.name, 'SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(ALL_VERSIONS);
    }
  });

  it('keeps every row of every table as it was: objects, password hashes, TOTP secrets, passkeys, keys, grants, sessions', async () => {
    const after = backend === 'sqlite' ? sqliteRows(join(dataDir, 'idforge.db')) : await postgresRows(pg!, database!.name);
    for (const [table, rows] of Object.entries(before)) {
      if (REWRITTEN.has(table)) continue;
      expect(after[table], table).toEqual(rows);
    }
    // meta: every setting kept (the master key's check value, the sealed bootstrap secret).
    for (const row of before.meta ?? []) expect(after.meta, 'meta').toContain(row);
    if (backend === 'sqlite') expect(after.change_log).toBeDefined();
    // The people the release signed in left their traces: sessions, grants, refresh tokens, TOTP, a passkey.
    const artifacts = after.artifacts!.map((r) => JSON.parse(r) as { model: string; account_id: string | null });
    for (const model of ['Session', 'Grant', 'RefreshToken']) expect(artifacts.some((a) => a.model === model && a.account_id === 'u-alice'), model).toBe(true);
    expect(after.totp_secrets).toHaveLength(2);
    expect(after.passkeys!.map((r) => JSON.parse(r).credential_id)).toEqual([manifest.people.dave.passkey.credentialId]);
  });

  it('signs the people in: a password; a password and the authenticator app; a passkey alone', async () => {
    const alice = await (await new SignIn(target('acme')).start()).password(manifest.people.alice.email, manifest.people.alice.password);
    expect((await alice.tokens()).sub).toBe('u-alice');
    const bob = await (await new SignIn(target('acme')).start()).password(manifest.people.bob.email, PASSWORDS.ACME_BOB_PASSWORD);
    expect((await bob.tokens()).sub).toBe('u-bob');

    const carol = await (await new SignIn(target('globex')).start()).password(manifest.people.carol.email, manifest.people.carol.password);
    expect(carol.where).toBe('Confirm it is you');
    // Enrolled before the upgrade: asked for a code, not set up again.
    expect(carol.html).not.toContain('totp-secret');
    await carol.totp(manifest.people.carol.totpSecret);
    if (carol.where === 'Add a passkey?') await carol.notNow();
    expect((await carol.tokens()).sub).toBe('u-carol');

    const dave = await (await new SignIn(target('globex')).start()).passkey(manifest.people.dave.passkey);
    expect((await dave.tokens()).sub).toBe('u-dave');
  });

  it("keeps sessions and grants working: alice's refresh token from before the upgrade refreshes", async () => {
    const refreshed = await refresh(target('acme'), manifest.people.alice.refreshToken);
    expect(refreshed.accessToken).not.toBe('');
    expect(refreshed.refreshToken).toBeDefined();
  });

  // Releases before SCIM (schema 1) have no SCIM objects to keep: the case exists only for those that do.
  if (release.scim) it("keeps SCIM's token, user and group: the token still reads them", async () => {
    const scim = manifest.scim!;
    const get = (path: string) => localhostFetch(`http://initech.localhost:${server.port}/scim/v2${path}`, { headers: { authorization: `Bearer ${scim.token}` } });
    const user = await get(`/Users/${scim.userId}`);
    expect(user.status).toBe(200);
    expect(await user.json()).toMatchObject({ userName: 'erin' });
    const group = await get(`/Groups/${scim.groupId}`);
    expect(await group.json()).toMatchObject({ displayName: 'Night shift', members: [{ value: scim.userId }] });
  });

  it('its own release refused the database once migrated (seen when the fixture was made, scripts/upgrade-fixtures.ts)', () => {
    expect(manifest.refusal).toMatch(backend === 'sqlite'
      ? /^idforge serve: internal error: there is already an index named changes$/
      : new RegExp(`^idforge serve: cannot use the database at [^ ]+: its schema is version \\d+, newer than this idforge knows \\(${release.schema}\\); run the newer idforge, or restore a backup$`));
  });

  it('plan of the model that made it, from another directory, shows exactly the documented changes (CHANGELOG.md)', async () => {
    const modelDir = join(work.path, 'model');
    mkdirSync(modelDir, { recursive: true });
    cpSync(join(fixture, '.idforge'), join(modelDir, '.idforge'), { recursive: true });
    writeFileSync(join(modelDir, 'model.yaml'), readFileSync(join(fixture, 'model.yaml'), 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${server.port}`));
    const elsewhere = join(work.path, 'elsewhere');
    mkdirSync(elsewhere, { recursive: true });
    const plan = await runCli(['plan', join(modelDir, 'model.yaml'), '--data-dir', dataDir], { cwd: elsewhere, env: { ...PASSWORDS } });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toBe(`State file: ${join(modelDir, '.idforge', 'state.json')} (next to the model)\nServer ${server.url}\n${release.plan}`);
    expect(existsSync(join(elsewhere, '.idforge'))).toBe(false);
    // One apply settles what the upgrade changed; then the plan is empty.
    const apply = await runCli(['apply', join(modelDir, 'model.yaml'), '--data-dir', dataDir], { cwd: elsewhere, env: { ...PASSWORDS } });
    expect(apply.code, apply.stderr).toBe(0);
    const again = await runCli(['plan', join(modelDir, 'model.yaml'), '--data-dir', dataDir], { cwd: elsewhere, env: { ...PASSWORDS } });
    // The apply left every tenant as declared: the next plan does not have them judged again, and says so.
    const tenants = (await loadExample(join(modelDir, 'model.yaml'))).tenants.length;
    expect(again.stdout).toBe(`State file: ${join(modelDir, '.idforge', 'state.json')} (next to the model)\nServer ${server.url}\nNo changes: the server matches the model (18 objects).\n${reusedWords(tenants)}\n`);
    const judged = await runCli(['plan', join(modelDir, 'model.yaml'), '--data-dir', dataDir, '--refresh'], { cwd: elsewhere, env: { ...PASSWORDS } });
    expect(judged.stdout).toBe(`State file: ${join(modelDir, '.idforge', 'state.json')} (next to the model)\nServer ${server.url}\nNo changes: the server matches the model (18 objects).\n`);
  });
});
