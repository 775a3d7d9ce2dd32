/**
 * The cross-door property (issue "One truth across every door", point 7), shared by the bounded run
 * in npm test (test/doors/cross-door.test.ts) and the soak in bench/soak/doors.ts: random valid
 * models and random sequences of writes through `idforge apply` (two named managers, forced or
 * not), application renames, SCIM, the admin console and the raw admin API, against a real server (and
 * through Pulumi in test/provider/doors.test.ts), with the invariants
 * checked after every step:
 *
 * 1. every object has exactly one manager, and its managedBy/stack say the same;
 * 2. no manager changes another's object without a conflict or a force: a refused step changes
 *    nothing; a successful one leaves every object it declares with its manager, the previous owner
 *    when the object stayed as it was, or itself when it made, adopted or (forced) took it;
 * 3. the round trip is lossless: the export of the tenant holds every application, user and webhook
 *    the last successful apply declared, exactly as declared (normal form), and plans to no changes;
 * 4. nothing is orphaned by a rename: the old name is gone, the new one has the same client id and
 *    creation time, and its assignments;
 * 5. once converged, plan reports no changes;
 * 6. no apply deletes an object another manager keeps (the console's application stays, reported),
 *    but for the assignments of a user or application the writer deletes of its own.
 *
 * The console is driven over HTTP as a browser would (signed in through the tenant's own sign-in
 * by an administrator made by hand, who the next apply removes as drift): it makes applications of
 * its own, and its edit of a Git-managed application is refused, changing nothing.
 */
import fc from 'fast-check';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { AdminClient, endpointFromCredentials } from '../../src/admin-client/index.ts';
import { doorOf, scimBaseUrl, stackOf } from '../../src/contract/index.ts';
import { applicationEntry, userEntry } from '../../src/schema/normal-form.ts';
import { validateSources, type Model } from '../../src/schema/index.ts';
import type { RunningServer } from '../../src/server/index.ts';
import { Browser, PASSWORD, localhostFetch } from '../server/_support.ts';
import { runCli } from '../support/cli.ts';

const TENANT = 'doors';
const USERS = ['u-ann', 'u-ben', 'u-cat'] as const;

export interface ModelChoice {
  readonly apps: { readonly portal?: { displayName?: string }; readonly wiki?: { upstream: string; emailDomains?: string[] }; readonly dash?: { cacheType?: 'in_memory' | 'session_storage'; offline?: boolean }; readonly orders?: { routes: { path: string; scopes?: string[] }[] } };
  readonly users: readonly (typeof USERS)[number][];
  readonly staff?: readonly string[];
  readonly assign: Readonly<Record<string, readonly string[]>>;
  /** Webhooks: siem's URL, audit's `enabled` (their types never happen here: no delivery leaves the machine). */
  readonly hooks?: { readonly siem?: string; readonly audit?: boolean };
}

export type Step =
  | { readonly op: 'apply'; readonly manager: 'a' | 'b'; readonly model: ModelChoice; readonly force: boolean }
  | { readonly op: 'rename'; readonly manager: 'a' | 'b' }
  | { readonly op: 'scim-group'; readonly members: readonly string[] }
  | { readonly op: 'raw'; readonly force: boolean }
  | { readonly op: 'console'; readonly action: 'create' | 'edit' };

const name = fc.constantFrom('alpha', 'beta', 'gamma');
export const modelArb: fc.Arbitrary<ModelChoice> = fc.record({
  apps: fc.record({
    portal: fc.option(fc.record({ displayName: fc.option(name, { nil: undefined }) }, { requiredKeys: [] }), { nil: undefined }),
    wiki: fc.option(fc.record({ upstream: fc.constantFrom('http://127.0.0.1:4181', 'http://127.0.0.1:9000'), emailDomains: fc.option(fc.constant(['acme.example']), { nil: undefined }) }, { requiredKeys: ['upstream'] }), { nil: undefined }),
    dash: fc.option(fc.record({ cacheType: fc.option(fc.constantFrom('in_memory', 'session_storage'), { nil: undefined }), offline: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: [] }), { nil: undefined }),
    orders: fc.option(fc.record({ routes: fc.subarray([{ path: '/whoami' }, { path: '/admin', scopes: ['admin'] }]) }), { nil: undefined }),
  }, { requiredKeys: [] }),
  users: fc.subarray([...USERS], { minLength: 1 }),
  staff: fc.option(fc.subarray([...USERS]), { nil: undefined }),
  assign: fc.record({ portal: fc.subarray([...USERS, 'staff']), wiki: fc.subarray([...USERS, 'staff']), dash: fc.subarray([...USERS, 'staff']) }),
  hooks: fc.option(fc.record({ siem: fc.constantFrom('https://siem.doors.example/a', 'https://siem.doors.example/b'), audit: fc.boolean() }, { requiredKeys: [] }), { nil: undefined }),
});

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('apply' as const), manager: fc.constantFrom('a' as const, 'b' as const), model: modelArb, force: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('rename' as const), manager: fc.constantFrom('a' as const, 'b' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('scim-group' as const), members: fc.subarray([...USERS]) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('raw' as const), force: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('console' as const), action: fc.constantFrom('create' as const, 'edit' as const) }) },
);

/** The model file of a choice; `renamed` gives portal its new name (previousName portal). */
export function modelText(port: number, c: ModelChoice, renamed = false): string {
  const users = c.users.map((id) => ({ id, email: `${id}@doors.example`, ...(id === 'u-ann' ? { scopes: ['admin'] } : {}) }));
  const apps: Record<string, unknown>[] = [];
  const portalName = renamed ? 'portal-web' : 'portal';
  if (c.apps.orders) apps.push({ name: 'orders', kind: 'api', audience: 'https://orders.doors.example', ...(c.apps.orders.routes.length > 0 ? { routes: c.apps.orders.routes } : {}) });
  if (c.apps.portal) apps.push({ name: portalName, ...(renamed ? { previousName: 'portal' } : {}), kind: 'web', origin: 'http://portal.localhost:3000', ...(c.apps.portal.displayName ? { displayName: c.apps.portal.displayName } : {}) });
  if (c.apps.wiki) apps.push({ name: 'wiki', kind: 'proxy', origin: 'http://wiki.localhost:4180', upstream: c.apps.wiki.upstream, ...(c.apps.wiki.emailDomains ? { emailDomains: c.apps.wiki.emailDomains } : {}), ...(c.apps.orders ? { audience: ['orders'] } : {}) });
  if (c.apps.dash) apps.push({ name: 'dash', kind: 'spa', origin: 'http://dash.localhost:5173', ...(c.apps.dash.cacheType ? { cacheType: c.apps.dash.cacheType } : {}), ...(c.apps.dash.offline !== undefined ? { offline: c.apps.dash.offline } : {}) });
  const members = (c.staff ?? []).filter((u) => c.users.includes(u as never));
  const groups = c.staff !== undefined ? [{ name: 'staff', members }] : [];
  const declared = new Set(apps.map((a) => a.name as string));
  const assignments = Object.entries(c.assign).flatMap(([app, who]) => {
    const appName = app === 'portal' ? portalName : app;
    if (!declared.has(appName)) return [];
    const u = who.filter((w) => c.users.includes(w as never));
    const g = who.includes('staff') && c.staff !== undefined ? ['staff'] : [];
    return u.length + g.length === 0 ? [] : [{ application: appName, ...(u.length > 0 ? { users: u } : {}), ...(g.length > 0 ? { groups: g } : {}) }];
  });
  const webhooks = [
    ...(c.hooks?.audit === undefined ? [] : [{ name: 'audit', url: 'https://audit.doors.example/hook', types: ['tenant.keys_rotated'], ...(c.hooks.audit ? {} : { enabled: false }) }]),
    ...(c.hooks?.siem === undefined ? [] : [{ name: 'siem', url: c.hooks.siem, types: ['tenant.keys_rotated'] }]),
  ];
  return stringify({
    server: { baseDomain: 'localhost', port },
    tenants: [{
      name: TENANT, displayName: 'Doors', scopes: [{ name: 'admin' }], users, ...(groups.length > 0 ? { groups } : {}),
      ...(apps.length > 0 ? { applications: apps } : {}), ...(assignments.length > 0 ? { assignments } : {}),
      ...(webhooks.length > 0 ? { webhooks } : {}),
    }],
  });
}

const CONSOLE_ADMIN = 'u-console-op';

/**
 * A console session of an administrator made by hand (no manager: the next apply removes it as drift,
 * which ends the session), signed in as a browser does, through the tenant's own sign-in.
 */
async function consoleSignIn(h: Harness, admin: AdminClient) {
  await admin.call('putUser', { tenant: TENANT, userId: CONSOLE_ADMIN }, { body: { email: `${CONSOLE_ADMIN}@doors.example`, scopes: ['admin'], initialPassword: PASSWORD } });
  const origin = `http://${TENANT}.localhost:${h.server.port}`;
  const browser = new Browser();
  const never = 'never:';
  const start = await browser.follow(`${origin}/console/`, never);
  if (start.html === undefined) throw new Error(`no console sign-in page at ${start.url}`);
  const done = await browser.submit(start.url, start.html, '/login', { email: `${CONSOLE_ADMIN}@doors.example`, password: PASSWORD }, never);
  const csrf = /name="csrf" value="([^"]+)"/.exec(done.html ?? '')?.[1];
  const sid = browser.cookie(origin, 'idforge_console');
  if (csrf === undefined || sid === undefined || sid === '') throw new Error(`console sign-in did not complete at ${done.url} (${done.response?.status})`);
  return {
    async post(path: string, fields: Record<string, string>) {
      const r = await localhostFetch(`${origin}${path}`, {
        method: 'POST', redirect: 'manual',
        headers: { cookie: `idforge_console=${sid}`, origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, ...fields }).toString(),
      });
      return { status: r.status, location: r.headers.get('location') ?? undefined, text: await r.text() };
    },
  };
}

/** What an object is and who keeps it, for comparing states across a step. */
interface Snap { readonly manager: string | undefined; readonly body: string }
type State = Map<string, Snap>;

async function snapshot(admin: AdminClient): Promise<State> {
  const out: State = new Map();
  const add = (key: string, v: Record<string, unknown>) => {
    const { createdAt: _c, updatedAt: _u, manager, ...body } = v;
    out.set(key, { manager: manager as string | undefined, body: JSON.stringify(body) });
  };
  const t = await admin.find('getTenant', { tenant: TENANT });
  if (t === undefined) return out;
  add('tenant', t as never);
  for (const a of (await admin.listAll('listApplications', { tenant: TENANT })) ?? []) {
    add(`application ${a.name}`, a as never);
    if (a.kind !== 'api') for (const x of (await admin.listAll('listAssignments', { tenant: TENANT, application: a.name })) ?? []) add(`assignment ${a.name}/${x.userId}`, x as never);
  }
  for (const u of (await admin.listAll('listUsers', { tenant: TENANT })) ?? []) add(`user ${u.id}`, u as never);
  for (const w of (await admin.call('listWebhooks', { tenant: TENANT })).items) add(`webhook ${w.name}`, w as never);
  return out;
}

/** Invariant 1: one manager per object, and the older marks agree with it. */
function oneManager(state: State, admin: Record<string, unknown>[]): void {
  for (const v of admin) {
    const m = v.manager as string | undefined;
    if (m === undefined) continue;
    if (typeof m !== 'string') throw new Error(`an object has a manager that is no string: ${JSON.stringify(v).slice(0, 200)}`);
    if (v.managedBy !== undefined && v.managedBy !== doorOf(m)) throw new Error(`managedBy ${String(v.managedBy)} disagrees with manager ${m}`);
    if (stackOf(m) !== undefined && v.stack !== stackOf(m)) throw new Error(`stack ${String(v.stack)} disagrees with manager ${m}`);
  }
  void state;
}

export interface Harness {
  readonly server: RunningServer & { dataDir: string; dispose(): Promise<void> };
  /** Steps run, for the soak's report. */
  tried: number;
  /** Steps that acted (not skipped for want of a tenant or an application), by door. */
  readonly ran: Record<string, number>;
}

/** Runs one sequence against a fresh tenant on `server`; throws with what broke. */
export async function runSequence(h: Harness, steps: readonly Step[]): Promise<void> {
  const admin = new AdminClient(endpointFromCredentials(h.server.adminCredentials));
  await admin.remove('deleteTenant', { tenant: TENANT });
  const work = mkdtempSync(join(tmpdir(), 'idforge-doors-'));
  const cli = (args: string[]) => runCli([...args, '--data-dir', h.server.dataDir], { cwd: work, env: { IDFORGE_STATE: join(work, 'state.json') } });
  let last: { manager: 'a' | 'b'; choice: ModelChoice; renamed: boolean } | undefined;
  let scimToken: string | undefined;
  try {
    for (const [i, step] of steps.entries()) {
      h.tried++;
      const where = `step ${i} ${JSON.stringify(step)}`;
      const before = await snapshot(admin);
      if (step.op === 'apply' || step.op === 'rename') {
        if (step.op === 'rename' && (last === undefined || last.renamed || last.choice.apps.portal === undefined)) continue;
        const choice = step.op === 'apply' ? step.model : last!.choice;
        const renamed = step.op === 'rename' ? true : (last?.renamed === true && choice.apps.portal !== undefined);
        const manager = step.manager;
        const force = step.op === 'apply' && step.force;
        writeFileSync(join(work, 'm.yaml'), modelText(h.server.port, choice, renamed));
        const r = await cli(['apply', 'm.yaml', '--manager', manager, ...(force ? ['--force-conflicts'] : []), '--allow-mass-delete']);
        const after = await snapshot(admin);
        if (r.code !== 0) {
          // Invariant 2: refused (a conflict, or a rule such as an api still some client's audience), and nothing changed.
          if (/internal|HTTP 5\d\d/.test(r.stderr) || !/HTTP 4\d\d|is managed by|refusing/.test(r.stderr)) throw new Error(`${where}: apply failed for another reason: ${r.stderr}`);
          if (JSON.stringify([...after]) !== JSON.stringify([...before])) throw new Error(`${where}: a refused apply changed the server`);
          continue;
        }
        // Invariant 6: what another manager keeps is never deleted by an apply, but as the child of
        // what the writer deletes of its own (an assignment goes with its user or its application).
        const cascaded = (key: string) => {
          const m = /^assignment ([^/]+)\/(.+)$/.exec(key);
          return m !== null && (!after.has(`application ${m[1]}`) || !after.has(`user ${m[2]}`));
        };
        for (const [key, was] of before) {
          if (was.manager !== undefined && was.manager !== `apply:${manager}` && !after.has(key) && !cascaded(key) && !(step.op === 'rename' && key.startsWith('application portal'))) {
            throw new Error(`${where}: ${key} of ${was.manager} was deleted`);
          }
        }
        // Invariant 2: each object it declares keeps its owner, or is the writer's.
        for (const [key, now] of after) {
          const was = before.get(key);
          if (was === undefined || was.manager === now.manager) continue;
          const mine = `apply:${manager}`;
          if (now.manager !== mine) throw new Error(`${where}: ${key} went from ${was.manager} to ${now.manager}`);
          if (was.manager !== undefined && !force && was.body !== now.body) throw new Error(`${where}: ${key} was taken from ${was.manager} without force`);
        }
        // Invariant 4: a rename orphans nothing.
        if (step.op === 'rename') {
          const oldApp = await admin.find('getApplication', { tenant: TENANT, application: 'portal' });
          const newApp = await admin.find('getApplication', { tenant: TENANT, application: 'portal-web' });
          const was = before.get('application portal');
          if (oldApp !== undefined) throw new Error(`${where}: the old name is still there`);
          if (newApp === undefined || was === undefined) throw new Error(`${where}: the renamed application is missing`);
          if ((newApp as { clientId?: string }).clientId !== (JSON.parse(was.body) as { clientId?: string }).clientId) throw new Error(`${where}: the client id changed`);
        }
        last = { manager, choice, renamed };
        // Invariant 5: converged.
        const plan = await cli(['plan', 'm.yaml', '--manager', manager]);
        if (plan.code !== 0 || !plan.stdout.includes('No changes')) throw new Error(`${where}: not converged: ${plan.stdout}${plan.stderr}`);
        // Invariant 3: the export holds what was declared, as declared, and plans to nothing.
        const ex = await cli(['export', TENANT, '--out', 'export.yaml']);
        if (ex.code !== 0) throw new Error(`${where}: export failed: ${ex.stderr}`);
        const exported = validateSources([{ file: 'export.yaml', content: readFileSync(join(work, 'export.yaml'), 'utf8') }]);
        const declared = validateSources([{ file: 'm.yaml', content: modelText(h.server.port, choice, renamed) }]);
        if (!exported.ok || !declared.ok) throw new Error(`${where}: the export or the model does not validate`);
        lossless(where, declared.model, exported.model, before, manager, force);
        const again = await cli(['plan', 'export.yaml', '--manager', manager]);
        if (again.code !== 0 || !again.stdout.includes('No changes')) throw new Error(`${where}: plan of the export is not empty: ${again.stdout}${again.stderr}`);
      } else if (step.op === 'scim-group') {
        if ((await admin.find('getTenant', { tenant: TENANT })) === undefined) continue;
        scimToken ??= (await admin.call('createScimToken', { tenant: TENANT }, { body: {} })).token;
        const users = new Set(((await admin.listAll('listUsers', { tenant: TENANT })) ?? []).map((u) => u.id));
        const members = step.members.filter((m) => users.has(m)).map((value) => ({ value }));
        const r = await localhostFetch(`${scimBaseUrl(h.server.address, TENANT)}/Groups`, {
          method: 'POST', headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
          body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: `g-${i}`, members }),
        });
        if (r.status !== 201) throw new Error(`${where}: SCIM group create answered ${r.status}`);
        // The model's objects are untouched by a SCIM group.
        const after = await snapshot(admin);
        for (const [key, was] of before) if (JSON.stringify(after.get(key)) !== JSON.stringify(was)) throw new Error(`${where}: SCIM changed ${key}`);
      } else if (step.op === 'console') {
        if ((await admin.find('getTenant', { tenant: TENANT })) === undefined) continue;
        const c = await consoleSignIn(h, admin);
        if (step.action === 'create') {
          const made = `c-${i}`;
          const r = await c.post('/console/marketplace/spa', { name: made, origin: `http://${made}.localhost:5173` });
          if (r.status !== 303 || r.location !== `/console/applications/${made}/created`) throw new Error(`${where}: the console did not create ${made}: ${r.status} ${r.text.slice(0, 500)}`);
          const app = await admin.find('getApplication', { tenant: TENANT, application: made });
          if (app?.manager !== 'console') throw new Error(`${where}: the console's application has manager ${String(app?.manager)}`);
        } else {
          const managed = (await admin.listAll('listApplications', { tenant: TENANT }))?.find((a) => a.manager?.startsWith('apply:') && a.kind === 'web');
          if (managed === undefined) continue;
          const before2 = await snapshot(admin);
          const r = await c.post(`/console/applications/${managed.name}`, { displayName: `console ${i}`, origin: 'http://portal.localhost:3000' });
          if (r.status >= 500) throw new Error(`${where}: the console answered ${r.status}`);
          const after = await snapshot(admin);
          if (JSON.stringify([...after]) !== JSON.stringify([...before2])) throw new Error(`${where}: the console changed a Git-managed application (${r.status})`);
        }
      } else {
        const app = (await admin.listAll('listApplications', { tenant: TENANT }).catch(() => undefined))?.find((a) => a.manager !== undefined);
        if (app === undefined) continue;
        const { name: n, createdAt: _c, updatedAt: _u, manager: _m, managedBy: _d, stack: _s, lastApplied: _l, ...body } = app as typeof app & Record<string, unknown>;
        const r = await admin.raw('PUT', `/admin/v1/tenants/${TENANT}/applications/${n}${step.force ? '?force=true' : ''}`, { ...body, displayName: `by hand ${i}` });
        const after = await snapshot(admin);
        if (!step.force) {
          if (r.status !== 409) throw new Error(`${where}: a raw write to a managed application answered ${r.status}`);
          if (JSON.stringify([...after]) !== JSON.stringify([...before])) throw new Error(`${where}: a refused raw write changed the server`);
        } else if (r.status !== 200 || after.get(`application ${n}`)?.manager !== undefined) {
          throw new Error(`${where}: a forced raw write did not take the application (${r.status})`);
        }
        // The next apply of the last model is a change again (its displayName): the model wins it back.
      }
      h.ran[step.op] = (h.ran[step.op] ?? 0) + 1;
      oneManager(await snapshot(admin), [
        ...((await admin.listAll('listApplications', { tenant: TENANT }).catch(() => [])) ?? []),
        ...((await admin.listAll('listUsers', { tenant: TENANT }).catch(() => [])) ?? []),
      ] as never);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Invariant 3: every application and user the model declares comes back from the export as declared (those this apply could write). */
function lossless(where: string, declared: Model, exported: Model, before: State, manager: string, force: boolean): void {
  const d = declared.tenants[0]!;
  const e = exported.tenants[0];
  if (e === undefined) throw new Error(`${where}: the export has no tenant`);
  // An object another manager keeps, declared exactly as it is, stays its own: its entry is the owner's.
  const foreign = (key: string) => {
    const m = before.get(key)?.manager;
    return !force && m !== undefined && m !== `apply:${manager}`;
  };
  for (const a of d.applications) {
    if (foreign(`application ${a.previousName ?? a.name}`)) continue;
    const back = e.applications.find((x) => x.name === a.name);
    if (back === undefined || JSON.stringify(applicationEntry(back)) !== JSON.stringify(applicationEntry(a))) {
      throw new Error(`${where}: application ${a.name} came back as ${JSON.stringify(back && applicationEntry(back))}, declared ${JSON.stringify(applicationEntry(a))}`);
    }
  }
  for (const u of d.users) {
    if (foreign(`user ${u.id}`)) continue;
    const back = e.users.find((x) => x.id === u.id);
    if (back === undefined || JSON.stringify(userEntry(back)) !== JSON.stringify(userEntry(u))) throw new Error(`${where}: user ${u.id} came back as ${JSON.stringify(back)}`);
  }
  for (const w of d.webhooks) {
    if (foreign(`webhook ${w.name}`)) continue;
    const back = e.webhooks.find((x) => x.name === w.name);
    if (back === undefined || JSON.stringify(back) !== JSON.stringify(w)) throw new Error(`${where}: webhook ${w.name} came back as ${JSON.stringify(back)}, declared ${JSON.stringify(w)}`);
  }
}
