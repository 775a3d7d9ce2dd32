/**
 * The providers' pure parts: input checks in Pulumi's terms, diffs (what replaces, what updates,
 * what is no change), per-entry change sets of the bulk resources, and the component's mapping of
 * a model onto resource bodies. Engine runs are in engine.test.ts.
 */
import fc from 'fast-check';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UNKNOWN, checkWith, jsonEqual, propertyPath } from '../../src/provider/_common.ts';
import { applicationsToFree } from '../../src/provider/application.ts';
import { authServerProvider, needsRestart, serverUrls, type AuthServerInputs } from '../../src/provider/auth-server.ts';
import { clientConfigsProvider, filesOf, syncFiles } from '../../src/provider/client-configs.ts';
import { packJson, packValue, sameJsonText, unpackJson } from '../../src/provider/_packed.ts';
import { inventoryOf, tenantSpecs } from '../../src/provider/identity-stack.ts';
import { stableSecretProvider } from '../../src/provider/stable-secret.ts';
import { assignmentChanges } from '../../src/provider/tenant-assignments.ts';
import { valuesFor } from '../../src/provider/tenant-secrets.ts';
import { userChanges } from '../../src/provider/tenant-users.ts';
import { checkUnchanged, describe as describeChange, findingsOf, fromWire, othersOf, slimOutputs, tenantBatch, tenantDifferences, tenantProvider, toWire, withInputs, type TenantInputs } from '../../src/provider/tenant.ts';
import { loadModel, validateSources } from '../../src/schema/index.ts';
import { modelArb, modelText } from '../doors/_cross-door.ts';
import { leftAsDeclared } from '../../src/contract/index.ts';
import { z } from 'zod';

// Port 1: nothing answers there, so the checks that ask the server find it unreachable at once.
const connection = {
  adminUrl: 'http://localhost:1/admin/v1',
  tokenUrl: 'http://system.localhost:1/oauth2/token',
  clientId: 'bootstrap',
  clientSecret: 's3cret',
};

const tenant: TenantInputs = {
  connection, name: 'acme', body: { displayName: 'Acme', scopes: [], managedBy: 'idforge' }, applications: {}, users: {}, assignments: {}, unmanaged: 'remove',
};
const web = { kind: 'web' as const, clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [] };

describe('check', () => {
  it('maps zod issues to property paths and reasons', async () => {
    const r = await tenantProvider.check({} as never, { ...tenant, name: 'Acme!', body: { displayName: '', scopes: [{ name: 'a b' }] } } as never);
    expect(r.failures).toEqual([
      { property: 'name', reason: 'must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters' },
      { property: 'body.displayName', reason: expect.stringContaining('>=1') },
      { property: 'body.scopes[0].name', reason: expect.stringMatching(/^must be a scope token/) },
    ]);
  });

  it('fills defaults, so diffs compare normalized inputs', async () => {
    const r = await tenantProvider.check({} as never, { connection, name: 'acme', body: { displayName: 'Acme' }, assignments: { portal: ['b', 'a', 'b'], wiki: [] } } as never);
    expect(r.failures).toBeUndefined();
    // Kept on the wire one JSON string per object (TenantWire).
    expect(r.inputs?.body).toBe('{"displayName":"Acme","scopes":[]}');
    expect(fromWire(r.inputs).body).toEqual({ displayName: 'Acme', scopes: [] });
    // Sorted and unique; an application that assigns nobody is no entry.
    expect(fromWire(r.inputs).assignments).toEqual({ portal: ['a', 'b'] });
  });

  it('does not judge inputs that are unknown during a preview', async () => {
    const r = await tenantProvider.check({} as never, { ...tenant, connection: UNKNOWN } as never);
    expect(r.failures).toBeUndefined();
    const nested = checkWith(z.strictObject({ a: z.strictObject({ b: z.number() }) }), { a: UNKNOWN });
    expect(nested.failures).toBeUndefined();
  });

  it('refuses a client secret in an application body: the stack keeps it', async () => {
    const r = await tenantProvider.check({} as never, {
      ...tenant, applications: { portal: { kind: 'web', clientId: 'portal', redirectUris: ['http://portal.localhost/cb'], clientSecret: 'x'.repeat(40) } },
    } as never);
    expect(r.failures).toEqual([{ property: 'applications.portal.clientSecret', reason: 'the stack makes and keeps the client secret (clientSecrets); leave it out' }]);
  });

  it('refuses pkce: optional for a single-page app with the rule every door runs', async () => {
    const r = await tenantProvider.check({} as never, {
      ...tenant, applications: { dash: { kind: 'spa', clientId: 'dash', redirectUris: ['http://dash.localhost:5173'], pkce: 'optional' } },
    } as never);
    expect(r.failures).toEqual([{ property: 'applications.dash.pkce', reason: expect.stringMatching(/^pkce: optional is allowed only for confidential clients \(web, proxy\)/) }]);
  });

  it('names map keys in property paths', () => {
    expect(propertyPath(['users', 'u-alice@x', 'email'])).toBe('users["u-alice@x"].email');
    expect(propertyPath(['files', 'acme/portal/grant.json'])).toBe('files["acme/portal/grant.json"]');
  });

  it('refuses paths that leave the client config directory', async () => {
    const r = await clientConfigsProvider.check({} as never, { dir: '/tmp/x', files: { '../etc/passwd': '' } } as never);
    expect(r.failures?.[0]?.property).toBe('files["../etc/passwd"]');
  });
});

describe('diff', () => {
  it('tenant: a new name replaces, a declared rename updates, a display name updates, a new connection is no change', async () => {
    const w = (t: TenantInputs) => toWire(t);
    expect(await tenantProvider.diff('acme', w(tenant), w({ ...tenant, name: 'acme2' }))).toMatchObject({ changes: true, replaces: ['name'] });
    expect(await tenantProvider.diff('acme', w(tenant), w({ ...tenant, name: 'acme2', previousName: 'acme' }))).toMatchObject({ changes: true, replaces: [] });
    expect(await tenantProvider.diff('acme', w(tenant), w({ ...tenant, body: { ...tenant.body, displayName: 'Acme Inc' } }))).toEqual({
      changes: true,
      replaces: [],
      detailedDiff: { body: 'update' },
    });
    expect(await tenantProvider.diff('acme', w(tenant), w({ ...tenant, connection: { ...connection, clientSecret: 'rotated' } }))).toEqual({ changes: false, replaces: [] });
    // Initial passwords matter only to users being made: a new one for an existing user is no change.
    const withUser = { ...tenant, users: { a: { email: 'a@x.io', scopes: [], disabled: false } } };
    expect(await tenantProvider.diff('acme', w(withUser), w({ ...withUser, initialPasswords: { a: 'changed-later' } }))).toEqual({ changes: false, replaces: [] });
    // Each changed object is named: the engine shows its fields (it decodes the JSON), preview --json lists it.
    expect(await tenantProvider.diff('acme', w({ ...withUser, applications: { portal: web } }), w({ ...withUser, applications: { portal: { ...web, scopes: ['openid', 'email'] }, wiki: web }, users: {}, drift: {} })))
      .toMatchObject({ detailedDiff: { 'applications.portal': 'update', 'applications.wiki': 'add', 'users.a': 'delete' } });
  });

  it('the detailed diff names each application, user and field, and says it in one line each', () => {
    const olds: TenantInputs = { ...tenant, applications: { portal: web }, users: { 'u-bob': { email: 'bob@x.io', scopes: [], disabled: false } }, assignments: { portal: ['u-bob'] } };
    const news: TenantInputs = {
      ...olds,
      applications: { portal: { ...web, redirectUris: [...web.redirectUris, 'http://portal.localhost:3001/connect/acme/callback'] }, reports: { ...web, clientId: 'reports' } },
      users: { 'u-bob': { email: 'bob@y.io', scopes: [], disabled: false } },
      assignments: { portal: ['u-bob', 'u-carol'] },
    };
    const found = tenantDifferences({ ...olds, drift: { applications: ['backdoor'] } }, news);
    expect(found.map((d) => [d.path.join('/'), d.kind])).toEqual([
      ['applications/portal/redirectUris/1', 'add'],
      ['applications/reports', 'add'],
      ['users/u-bob/email', 'update'],
      ['drift/applications', 'delete'],
      ['assignments/portal', 'update'],
    ]);
    expect(found.flatMap((d) => describeChange('acme', d, { ...olds, drift: { applications: ['backdoor'] } }, news))).toEqual([
      'acme/portal: redirectUris[1] added',
      'acme/reports: application added',
      'acme user u-bob: email changed',
      'acme: application backdoor is in the tenant but not in the model: removed',
      'acme/portal: assignment of u-carol added',
    ]);
  });

  it('applications freed before the batch: a new client id or kind, and a client id another declared application takes', () => {
    const api = { kind: 'api' as const, identifier: 'https://api.example', scopes: [] };
    expect(applicationsToFree({ portal: web }, { portal: web })).toEqual([]);
    expect(applicationsToFree({ portal: web }, { portal: { ...web, clientId: 'portal2' } })).toEqual(['portal']);
    // Renamed by a new name that keeps the client id: the old one goes first.
    expect(applicationsToFree({ portal: web, api }, { intranet: web, api })).toEqual(['portal']);
    // Declared with previousName: moved in place, nothing freed.
    expect(applicationsToFree({ portal: web }, { intranet: web }, { intranet: 'portal' })).toEqual([]);
  });

  it("a dry run's answers, sorted: missing, changed, a secret not the stack's, drift, and other managers' objects", () => {
    const ours = 'pulumi:idforge/test';
    const f = findingsOf([
      { kind: 'application', application: 'portal', outcome: 'updated', changes: ['redirectUris', 'clientSecret'] },
      { kind: 'application', application: 'wiki', outcome: 'created' },
      { kind: 'user', user: 'u-bob', outcome: 'unchanged', manager: 'apply:other' },
      { kind: 'user', user: 'u-left', outcome: 'deleted', manager: ours },
      { kind: 'user', user: 'u-mallory', outcome: 'deleted' },
      { kind: 'application', application: 'backdoor', outcome: 'deleted', manager: 'console' },
      { kind: 'assignment', application: 'portal', user: 'u-x', outcome: 'deleted', manager: 'scim' },
    ], ours, 'remove');
    expect(f).toMatchObject({
      gone: false,
      missing: { applications: ['wiki'], users: [], assignments: [] },
      changed: { tenant: false, applications: ['portal'], users: [] },
      drift: { users: ['u-left', 'u-mallory'], secrets: ['portal'] },
      others: [{ kind: 'application', name: 'backdoor', manager: 'console' }, { kind: 'assignment', name: 'portal/u-x', manager: 'scim' }],
      held: [{ kind: 'user', name: 'u-bob', manager: 'apply:other' }],
    });
    // Under `keep`, what nobody manages is not looked for; the stack's own leftovers still are.
    expect(findingsOf([{ kind: 'user', user: 'u-mallory', outcome: 'deleted' }, { kind: 'user', user: 'u-left', outcome: 'deleted', manager: ours }], ours, 'keep').drift).toEqual({ users: ['u-left'] });
  });

  it("what the read's one dry run says the tenant holds undeclared: other managers' objects, not the stack's or nobody's", () => {
    const ours = 'pulumi:idforge/test';
    expect(othersOf({
      applications: [{ application: 'backdoor', manager: 'console' }, { application: 'old', manager: ours }, { application: 'hand' }],
      users: [{ user: 'u-scim', manager: 'scim' }],
      assignments: [{ application: 'portal', user: 'u-scim', manager: 'scim' }],
      groupAssignments: [{ application: 'portal', group: 'staff', manager: 'scim' }],
    }, ours)).toEqual([
      { kind: 'application', name: 'backdoor', manager: 'console' },
      { kind: 'user', name: 'u-scim', manager: 'scim' },
      { kind: 'assignment', name: 'portal/u-scim', manager: 'scim' },
    ]);
    expect(othersOf(undefined, ours)).toEqual([]);
  });

  it("a write records the tenant's revision only when it leaves the tenant exactly as declared", () => {
    const ours = 'pulumi:idforge/test';
    const none = { applications: [], users: [], assignments: [], groupAssignments: [], webhooks: [] };
    const wrote = { kind: 'user' as const, user: 'u-bob', outcome: 'updated' as const, manager: ours };
    expect(leftAsDeclared(undefined, ours, true)).toBe(false);
    expect(leftAsDeclared({ results: [wrote], undeclared: none }, ours, true)).toBe(true);
    // Another manager's object it left alone, or one that nobody declared (under report): read in full next time.
    expect(leftAsDeclared({ results: [wrote, { kind: 'application', application: 'reports', outcome: 'unchanged', manager: 'console' }], undeclared: none }, ours, true)).toBe(false);
    expect(leftAsDeclared({ results: [wrote], undeclared: { ...none, users: [{ user: 'u-eve', manager: 'scim' }] } }, ours, true)).toBe(false);
    expect(leftAsDeclared({ results: [wrote], undeclared: { ...none, groupAssignments: [{ application: 'portal', group: 'g1' }] } }, ours, true)).toBe(false);
    // Looked for nothing undeclared (unmanaged: keep): what it wrote is all there is to know; asked to look and not answered: not known.
    expect(leftAsDeclared({ results: [wrote] }, ours, false)).toBe(true);
    expect(leftAsDeclared({ results: [wrote] }, ours, true)).toBe(false);
  });

  it('outputs leave the declared objects and the body to the inputs, and get them back from there; outputs of before stay whole', () => {
    const full = toWire({ ...tenant, applications: { portal: web }, users: { a: { email: 'a@x.io', scopes: [], disabled: false } }, assignments: { portal: ['a'] } });
    const slim = slimOutputs(full);
    expect(slim).not.toHaveProperty('applications');
    expect(slim).not.toHaveProperty('users');
    expect(slim).not.toHaveProperty('assignments');
    expect(slim).not.toHaveProperty('body');
    expect(slim.name).toBe(full.name);
    expect(withInputs(slim, full as never)).toEqual(full);
    // Outputs of the round before (the body kept, the objects left out) read with the inputs' objects.
    const { applications: _a, users: _u, assignments: _s, ...withBody } = full;
    expect(withInputs(withBody as never, full as never)).toEqual(full);
    // Outputs that hold the objects (a state of before) win over the inputs.
    expect(withInputs(full, { ...full, users: {} } as never)).toBe(full);
    expect(withInputs(slim, undefined)).toBe(slim);
  });

  it('a check of unchanged declared objects parses only the rest, with the same answer as the whole check', async () => {
    const declared = { ...tenant, applications: { portal: web }, users: { a: { email: 'a@x.io', scopes: [], disabled: false } }, assignments: { portal: ['a'] } };
    const olds = (await tenantProvider.check({} as never, toWire(declared))).inputs!;
    const same = checkUnchanged(olds, toWire(declared));
    expect(same?.inputs).toEqual(olds);
    // Anything declared that differs, or a state of before, takes the whole check.
    expect(checkUnchanged(olds, toWire({ ...declared, users: {} }))).toBeUndefined();
    expect(checkUnchanged({ ...olds, users: undefined } as never, toWire(declared))).toBeUndefined();
    // The other inputs are still judged.
    expect(checkUnchanged(olds, { ...toWire(declared), unmanaged: 'sometimes' } as never)).toBeUndefined();
  });

  it('users and assignments travel packed, one string each; a state of before (one string per entry) reads as the same, a changed user is named', async () => {
    const declared = { ...tenant, applications: { portal: web }, users: { a: { email: 'a@x.io', scopes: [], disabled: false }, b: { email: 'b@x.io', scopes: [], disabled: false } }, assignments: { portal: ['a', 'b'] } };
    const wire = toWire(declared);
    expect(typeof wire.users).toBe('string');
    expect(typeof wire.assignments).toBe('string');
    expect(fromWire(wire)).toEqual(fromWire({ ...wire, users: declared.users, assignments: declared.assignments }));
    // The state's shape before: each user and each application's assignments one string.
    const before = { ...wire, users: { a: JSON.stringify(declared.users.a), b: JSON.stringify(declared.users.b) }, assignments: { portal: '["a","b"]' } };
    expect(fromWire(before)).toEqual(fromWire(wire));
    expect(checkUnchanged(before, wire)?.inputs).toMatchObject({ users: wire.users, assignments: wire.assignments });
    expect(await tenantProvider.diff('acme', before, wire)).toEqual({ changes: false, replaces: [] });
    const changed = toWire({ ...declared, users: { ...declared.users, b: { ...declared.users.b, disabled: true } }, assignments: { portal: ['a'] } });
    expect(await tenantProvider.diff('acme', before, changed)).toMatchObject({ changes: true, detailedDiff: { 'users.b': 'update', 'assignments.portal': 'update' } });
  });

  it('the largest values are packed: deterministic, lossless, and a state of plain JSON reads as the same (no change previewed)', async () => {
    // Any JSON value: packing is a function of the text, and unpacks to it exactly.
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v) ?? 'null';
      const packed = packJson(text);
      expect(packed.startsWith('deflate:')).toBe(true);
      expect(packJson(text)).toBe(packed);
      expect(unpackJson(packed)).toBe(text);
      expect(unpackJson(text)).toBe(text);
      expect(sameJsonText(text, packed)).toBe(true);
      expect(sameJsonText(packed, packJson(JSON.stringify([v])))).toBe(false);
    }), { numRuns: 200 });
    // Generated users: a state whose users and assignments are plain JSON (written before) diffs as no
    // change against the packed declaration, and its check keeps the cheap path; one changed user is named.
    const userArb = fc.record({ email: fc.emailAddress(), displayName: fc.string({ maxLength: 20 }), scopes: fc.uniqueArray(fc.constantFrom('admin', 'read', 'write')), disabled: fc.boolean() });
    await fc.assert(fc.asyncProperty(fc.dictionary(fc.stringMatching(/^u-[a-z0-9]{1,8}$/), userArb, { minKeys: 1, maxKeys: 30 }), async (users) => {
      const declared = { ...tenant, applications: { portal: web }, users, assignments: { portal: Object.keys(users).sort() } };
      const wire = toWire(declared);
      const plain = { ...wire, users: unpackJson(wire.users as string), assignments: unpackJson(wire.assignments as string) };
      expect(plain.users.startsWith('{')).toBe(true);
      expect(fromWire(plain)).toEqual(fromWire(wire));
      expect(checkUnchanged(plain, wire)?.inputs).toMatchObject({ users: wire.users });
      expect(await tenantProvider.diff('acme', plain, wire)).toEqual({ changes: false, replaces: [] });
      const first = Object.keys(users)[0]!;
      const changed = toWire({ ...declared, users: { ...users, [first]: { ...users[first]!, disabled: !users[first]!.disabled } } });
      const found = await tenantProvider.diff('acme', plain, changed);
      expect(found).toMatchObject({ changes: true, replaces: [] });
      expect(Object.entries((found as { detailedDiff?: Record<string, string> }).detailedDiff ?? {})).toEqual([[expect.stringContaining(first), 'update']]);
    }), { numRuns: 50 });
    // The client files: a state of plain JSON and the packed declaration of the same files are no change.
    const files = { 'acme/portal/grant.json': '{"a":1}', 'acme/proxy/oauth2-proxy.env': 'X=1\n' };
    const plainFiles = JSON.stringify(files);
    const packedFiles = packJson(plainFiles);
    expect(await clientConfigsProvider.diff('/tmp/x', { dir: '/tmp/x', files: plainFiles }, { dir: '/tmp/x', files: packedFiles })).toEqual({ changes: false, replaces: [] });
    expect((await clientConfigsProvider.check({ dir: '/tmp/x', files: plainFiles }, { dir: '/tmp/x', files: packedFiles })).inputs).toEqual({ dir: '/tmp/x', files: packedFiles });
    expect(filesOf(packedFiles)).toEqual(files);
  });

  it("the tenant's batch: the whole declared state, secrets with confidential clients, passwords only where asked", () => {
    const b = tenantBatch({
      ...tenant, body: { ...tenant.body, stack: 'idforge/test', manager: 'pulumi:idforge/test' },
      applications: { portal: web, dash: { kind: 'spa', clientId: 'dash', redirectUris: ['http://dash.localhost:5173'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [], offline: false } },
      clientSecrets: { portal: 's'.repeat(43), dash: 'never sent' },
      users: { a: { email: 'a@x.io', scopes: [], disabled: false }, b: { email: 'b@x.io', scopes: [], disabled: false } },
      initialPasswords: { a: 'password-a', b: 'password-b' },
      assignments: { portal: ['a', 'b'] },
    }, { passwordsFor: (id) => id === 'b', prune: { managers: ['pulumi:idforge/test'], drift: true } });
    expect(b.applications?.map((a) => [a.name, 'clientSecret' in a.body])).toEqual([['portal', true], ['dash', false]]);
    expect(b.users?.map((u) => [u.id, u.body.initialPassword])).toEqual([['a', undefined], ['b', 'password-b']]);
    expect(b.assignments).toEqual([{ application: 'portal', users: ['a', 'b'], body: { managedBy: 'idforge', stack: 'idforge/test', manager: 'pulumi:idforge/test' } }]);
    expect(b).toMatchObject({ prune: { managers: ['pulumi:idforge/test'], drift: true }, force: false, report: 'changes' });
  });

  it('users and assignments: per-entry change sets; order in the model is no change', async () => {
    const u = (email: string) => ({ email, scopes: [], disabled: false });
    expect(userChanges({ a: u('a@x.io'), b: u('b@x.io') }, { b: u('b2@x.io'), c: u('c@x.io') })).toEqual({
      add: ['c'],
      change: ['b'],
      remove: ['a'],
    });
    expect(assignmentChanges({ portal: ['a', 'b'], wiki: ['a'] }, { portal: ['b', 'a'], dashboard: ['a'] })).toEqual({
      add: [['dashboard', 'a']],
      remove: [['wiki', 'a']],
    });
  });

  it('auth server: port restarts in place, data dir replaces (old one stopped first), tenants only update outputs', async () => {
    const base: AuthServerInputs = {
      mode: 'local',
      scheme: 'http',
      baseDomain: 'localhost',
      port: 9080,
      local: { dataDir: '/tmp/a', startTimeoutSeconds: 60 },
      tenants: ['acme'],
    };
    expect(needsRestart(base, { ...base, port: 9081 })).toBe(true);
    expect(needsRestart(base, { ...base, tenants: ['acme', 'globex'] })).toBe(false);
    expect(needsRestart(base, { ...base, local: { ...base.local, env: { A: '1' } } })).toBe(true);
    const olds = { ...base, ...serverUrls(base), pid: 0, connection };
    expect(await authServerProvider.diff('/tmp/a', olds, { ...base, local: { ...base.local, dataDir: '/tmp/b' } })).toEqual({
      changes: true,
      replaces: ['local.dataDir'],
      deleteBeforeReplace: true,
    });
    // pid 0: the server was found stopped, so an unchanged config is still an update (a restart).
    expect(await authServerProvider.diff('/tmp/a', olds, base)).toMatchObject({ changes: true, replaces: [] });
    expect(serverUrls({ ...base, tenants: ['globex', 'acme'] })).toEqual({
      baseUrl: 'http://localhost:9080',
      adminUrl: 'http://localhost:9080/admin/v1',
      issuers: { acme: 'http://acme.localhost:9080/oauth2/', globex: 'http://globex.localhost:9080/oauth2/' },
      credentialsFile: '/tmp/a/admin-credentials.json',
    });
  });

  it('auth server check: local mode serves http only, and says so', async () => {
    const r = await authServerProvider.check({} as never, { scheme: 'https', port: 9080, local: { dataDir: '/tmp/a' } } as never);
    expect(r.failures).toEqual([{ property: 'scheme', reason: "local mode serves plain HTTP: use 'http'" }]);
  });
});

describe('tenant secrets', () => {
  it('makes each value once: kept while its size stays, moved by a declared rename, made for a new key', () => {
    let n = 0;
    const random = (bytes: number) => `v${++n}-${bytes}`;
    const first = { sizes: { 'portal/clientSecret': 32, 'wiki/cookieSecret': 16 } };
    const values = valuesFor(first, undefined, random);
    expect(values).toEqual({ 'portal/clientSecret': 'v1-32', 'wiki/cookieSecret': 'v2-16' });
    const olds = { ...first, values };
    expect(valuesFor({ sizes: { 'intranet/clientSecret': 32, 'wiki/cookieSecret': 16 }, moved: { 'intranet/clientSecret': 'portal/clientSecret' } }, olds, random))
      .toEqual({ 'intranet/clientSecret': 'v1-32', 'wiki/cookieSecret': 'v2-16' });
    expect(valuesFor({ sizes: { 'wiki/cookieSecret': 32 } }, olds, random)).toEqual({ 'wiki/cookieSecret': 'v3-32' });
  });
});

describe('stable secret', () => {
  it('makes the value once: a later diff with the same inputs is no change, a new size replaces', async () => {
    const checked = await stableSecretProvider.check({} as never, { bytes: 16 } as never);
    const created = await stableSecretProvider.create(checked.inputs!);
    expect(Buffer.from(created.outs!.value, 'base64url')).toHaveLength(16);
    expect(await stableSecretProvider.diff(created.id, created.outs!, checked.inputs!)).toEqual({ changes: false, replaces: [] });
    expect(await stableSecretProvider.diff(created.id, created.outs!, { ...checked.inputs!, bytes: 32 })).toEqual({
      changes: true,
      replaces: ['bytes'],
    });
  });
});

describe('client configs on disk', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('writes 0600 files, replaces changed ones, removes dropped ones and the folders they leave empty', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'idforge-configs-'));
    dirs.push(dir);
    await syncFiles(dir, {}, { 'acme/portal/grant.json': '{"a":1}', 'acme/wiki/oauth2-proxy.env': 'A=1\n' });
    expect((await stat(join(dir, 'acme/portal/grant.json'))).mode & 0o777).toBe(0o600);
    await syncFiles(dir, { 'acme/portal/grant.json': '{"a":1}', 'acme/wiki/oauth2-proxy.env': 'A=1\n' }, { 'acme/portal/grant.json': '{"a":2}' });
    expect(await readFile(join(dir, 'acme/portal/grant.json'), 'utf8')).toBe('{"a":2}');
    expect(await readdir(join(dir, 'acme'))).toEqual(['portal']);
    // A file the state holds and the disk lacks (deleted by hand, a fresh checkout) is written again, though the model did not change it.
    await rm(join(dir, 'acme/portal/grant.json'));
    await syncFiles(dir, { 'acme/portal/grant.json': '{"a":2}' }, { 'acme/portal/grant.json': '{"a":2}', 'acme/spa/config.json': '{}' });
    expect(await readFile(join(dir, 'acme/portal/grant.json'), 'utf8')).toBe('{"a":2}');
    expect(await readFile(join(dir, 'acme/spa/config.json'), 'utf8')).toBe('{}');
    // So is every file of a folder removed by hand, however deep; the files the disk has are left alone.
    await rm(join(dir, 'acme/spa'), { recursive: true });
    const portalBefore = (await stat(join(dir, 'acme/portal/grant.json'))).mtimeMs;
    await syncFiles(dir, { 'acme/portal/grant.json': '{"a":2}', 'acme/spa/config.json': '{}' }, { 'acme/portal/grant.json': '{"a":2}', 'acme/spa/config.json': '{}' });
    expect(await readFile(join(dir, 'acme/spa/config.json'), 'utf8')).toBe('{}');
    expect((await stat(join(dir, 'acme/portal/grant.json'))).mtimeMs).toBe(portalBefore);
    await syncFiles(dir, { 'acme/portal/grant.json': '{"a":2}', 'acme/spa/config.json': '{}' }, { 'acme/portal/grant.json': '{"a":2}' });
    const read = await clientConfigsProvider.read(dir, { dir, files: { 'acme/portal/grant.json': '{"a":1}' } });
    expect(read.inputs).toEqual({ dir, files: { 'acme/portal/grant.json': '{"a":2}' } });
    // On the wire the files are one packed JSON string; a state of before holds the object or plain JSON, and reads the same.
    const packed = packJson(JSON.stringify({ 'acme/portal/grant.json': '{"a":2}' }));
    expect((await clientConfigsProvider.read(dir, { dir, files: packed })).inputs).toEqual({ dir, files: packed });
    expect((await clientConfigsProvider.read(dir, { dir, files: unpackJson(packed) })).inputs).toEqual({ dir, files: packed });
    expect((await clientConfigsProvider.check({ dir, files: packed }, { dir, files: packed })).inputs).toEqual({ dir, files: packed });
    expect((await clientConfigsProvider.check({} as never, { dir, files: JSON.stringify({ '../x': '' }) })).failures?.[0]?.property).toBe('files["../x"]');
    // A change judges the paths the stack does not hold yet, and passes the packed string on as it came.
    const changed = packValue({ 'acme/portal/grant.json': '{"a":3}', 'acme/wiki/oauth2-proxy.env': 'X=1' });
    expect((await clientConfigsProvider.check({ dir, files: packed }, { dir, files: changed })).inputs?.files).toBe(changed);
    const escaping = packValue({ 'acme/portal/grant.json': '{"a":3}', 'acme/../../etc/cron.d/x': '' });
    expect((await clientConfigsProvider.check({ dir, files: packed }, { dir, files: escaping })).failures?.map((f) => f.property)).toEqual(['files["acme/../../etc/cron.d/x"]']);
    expect((await clientConfigsProvider.check({ dir, files: packed }, { dir: 'relative', files: changed })).failures?.map((f) => f.property)).toEqual(['dir']);
    expect(await clientConfigsProvider.diff(dir, { dir, files: { 'acme/portal/grant.json': '{"a":2}' } }, { dir, files: packed })).toEqual({ changes: false, replaces: [] });
    expect((await clientConfigsProvider.diff(dir, { dir, files: packed }, { dir, files: '{}' })).changes).toBe(true);
  });

  it("under idforge's host the outputs leave the files to the inputs, which the host hands back", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'idforge-configs-'));
    dirs.push(dir);
    const files = JSON.stringify({ 'acme/portal/grant.json': '{"a":1}' });
    const ctx = (inputs?: Record<string, unknown>) => ({ urn: 'urn:x', inputs, log: async () => {} });
    // The host passes the context as a last argument, which Pulumi's provider type does not name.
    const provider = clientConfigsProvider as unknown as {
      create(i: object, c: object): Promise<{ outs?: object }>; diff(id: string, o: object, n: object, c: object): Promise<{ changes?: boolean }>;
      read(id: string, p: object, c: object): Promise<{ props?: object; inputs?: object }>; update(id: string, o: object, n: object, c: object): Promise<{ outs?: object }>;
      delete(id: string, p: object, c: object): Promise<void>;
    };
    const made = await provider.create({ dir, files }, ctx());
    expect(made.outs).toEqual({ dir });
    expect(await provider.diff(dir, made.outs!, { dir, files }, ctx({ dir, files }))).toEqual({ changes: false, replaces: [] });
    expect((await provider.diff(dir, made.outs!, { dir, files: '{}' }, ctx({ dir, files }))).changes).toBe(true);
    // A file edited by hand: read shows it in the inputs (what the next diff compares with), the outputs stay slim.
    await writeFile(join(dir, 'acme/portal/grant.json'), 'edited');
    const read = await provider.read(dir, made.outs!, ctx({ dir, files }));
    expect(read.props).toEqual({ dir });
    expect(read.inputs).toMatchObject({ dir });
    expect(filesOf((read.inputs as { files: string }).files)).toEqual({ 'acme/portal/grant.json': 'edited' });
    const next = JSON.stringify({ 'acme/spa/config.json': '{}' });
    expect((await provider.update(dir, made.outs!, { dir, files: next }, ctx({ dir, files }))).outs).toEqual({ dir });
    expect(await readdir(join(dir, 'acme'))).toEqual(['spa']);
    await provider.delete(dir, { dir }, ctx({ dir, files: next }));
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('model → resources', () => {
  it('takes bodies from the same plan as idforge apply, minus the secrets Pulumi keeps', async () => {
    const loaded = await loadModel([join(import.meta.dirname, '../../examples/acme.yaml')]);
    if (!loaded.ok) throw new Error('example model invalid');
    const [acme] = tenantSpecs(loaded.model);
    expect(acme?.tenant).toBe('acme');
    expect(acme?.applications.map((a) => [a.name, a.body.kind])).toEqual([
      ['orders-api', 'api'],
      ['dashboard', 'spa'],
      ['portal', 'web'],
      ['wiki', 'proxy'],
    ]);
    expect(acme?.applications.some((a) => 'clientSecret' in a.body)).toBe(false);
    expect(Object.keys(acme?.users ?? {})).toEqual(['u-alice', 'u-bob']);
    expect(Object.values(acme?.users ?? {}).some((u) => 'initialPassword' in u)).toBe(false);
    expect(acme?.assignments).toEqual({ dashboard: ['u-alice', 'u-bob'], portal: ['u-alice', 'u-bob'], wiki: ['u-alice'] });
    expect(jsonEqual(tenantSpecs(loaded.model), tenantSpecs(loaded.model))).toBe(true);
  });

  // The delete guard registers before any tenant is compiled (IdentityStack makes the tenants a few at
  // a time), so its inventory is read off the model: it must count exactly what the compiled bodies hold.
  it.each([
    ['the acme example', [join(import.meta.dirname, '../../examples/acme.yaml')]],
    ['the multi-tenant example', [join(import.meta.dirname, '../../examples/multi-tenant')]],
    ['the bench model (groups, 20 applications, 200 users per tenant)', 'bench'],
  ] as const)('the delete guard counts what the compiled tenants hold: %s', async (_name, source) => {
    let paths: readonly string[];
    if (source === 'bench') {
      const dir = await mkdtemp(join(tmpdir(), 'idforge-inventory-'));
      const { generateModel } = await import('../../bench/compile/generate.ts');
      await generateModel(dir, 3);
      paths = [dir];
    } else paths = source;
    const loaded = await loadModel([...paths]);
    if (source === 'bench') await rm(paths[0]!, { recursive: true, force: true });
    if (!loaded.ok) throw new Error(`model invalid: ${JSON.stringify(loaded.problems)}`);
    const counted = Object.fromEntries(tenantSpecs(loaded.model).map((s) => [s.tenant, {
      applications: s.applications.map((a) => a.name).sort(),
      users: Object.keys(s.users).length,
      assignments: Object.values(s.assignments).reduce((n, ids) => n + ids.length, 0),
    }]));
    expect(Object.values(counted).some((t) => t.assignments > 0)).toBe(true);
    expect(inventoryOf(loaded.model)).toEqual(counted);
  });

  it('the delete guard counts what the compiled tenants hold, over generated models (groups, renames, any assignments)', () => {
    fc.assert(fc.property(modelArb, fc.boolean(), (choice, renamed) => {
      const loaded = validateSources([{ file: 'm.yaml', content: modelText(4000, choice, renamed) }]);
      if (!loaded.ok) throw new Error(`model invalid: ${JSON.stringify(loaded.problems)}`);
      const counted = Object.fromEntries(tenantSpecs(loaded.model).map((s) => [s.tenant, {
        applications: s.applications.map((a) => a.name).sort(),
        users: Object.keys(s.users).length,
        assignments: Object.values(s.assignments).reduce((n, ids) => n + ids.length, 0),
      }]));
      expect(inventoryOf(loaded.model)).toEqual(counted);
    }), { numRuns: 200 });
  });
});
