/**
 * SCIM as the identity providers send it: each vendor's request sequence (test/scim/vendors/*.ts,
 * written from that vendor's published reference) replayed against a real server, step by step,
 * with the answers checked; then cross-checked from outside SCIM, through the admin API and a real
 * sign-in to an application (authorization code flow): a disabled user cannot sign in, an email
 * change moves the sign-in address, and a member removed from a group assigned to the application
 * is turned away. Last, what SCIM stores round-trips: a user with the enterprise extension and every
 * multi-valued core attribute reads back the same, version included, after the server restarts, on
 * SQLite and on PostgreSQL; and what the table does not publish is refused.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, adminClient, authorize, relyingParty, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { PATCH_OP, scimClient, scimTenant } from './_support.ts';
import { ENTERPRISE, GROUP, USER, type Expectation, type Step, type VendorSequence } from './vendors/_steps.ts';
import { entra } from './vendors/entra.ts';
import { google } from './vendors/google.ts';
import { jumpcloud } from './vendors/jumpcloud.ts';
import { okta } from './vendors/okta.ts';
import { onelogin } from './vendors/onelogin.ts';

const SEQUENCES: readonly VendorSequence[] = [okta, entra, google, onelogin, jumpcloud];

/** `{name}` in strings replaced by the values kept so far (recursively through objects and lists). */
function fill<T>(value: T, vars: ReadonlyMap<string, string>): T {
  if (typeof value === 'string') {
    return value.replace(/\{([A-Za-z][A-Za-z0-9]*)\}/g, (whole, name: string) => vars.get(name) ?? whole) as T;
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, vars)) as T;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)])) as T;
  return value;
}

/** The value at a dotted path; keys may hold dots themselves (schema URNs), the longest key that fits is taken. */
function at(value: unknown, path: string): unknown {
  if (path === '') return value;
  if (value === null || typeof value !== 'object') return undefined;
  const key = Object.keys(value).filter((k) => path === k || path.startsWith(`${k}.`)).sort((a, b) => b.length - a.length)[0];
  return key === undefined ? undefined : at((value as Record<string, unknown>)[key], path.slice(key.length + 1));
}

/** A path with a query: each parameter's value encoded as a client would send it. */
function encoded(path: string): string {
  const q = path.indexOf('?');
  if (q < 0) return path;
  const params = path.slice(q + 1).split('&').map((p) => {
    const eq = p.indexOf('=');
    return `${p.slice(0, eq)}=${encodeURIComponent(p.slice(eq + 1))}`;
  });
  return `${path.slice(0, q)}?${params.join('&')}`;
}

function check(where: string, status: number, body: unknown, e: Expectation): void {
  expect(status, `${where}: status (${JSON.stringify(body)?.slice(0, 600)})`).toBe(e.status);
  if (e.body !== undefined) expect(body, where).toMatchObject(e.body as object);
  for (const p of e.absent ?? []) expect(at(body, p), `${where}: ${p} must be absent`).toBeUndefined();
}

describe('identity providers, as their references describe their requests', () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;

  beforeAll(async () => {
    server = await testServer();
    admin = await adminClient(server);
  });
  afterAll(async () => {
    await server?.dispose();
  });

  /** A tenant for the vendor: a SCIM token, and the application `portal` that people sign in to. */
  async function setUp(tenant: string) {
    const { scim } = await scimTenant(admin, server, tenant);
    const portal = { clientId: `${tenant}-portal`, secret: `${tenant}-portal-secret-0123456789abcdefghij`, redirectUri: `https://portal.${tenant}.test/callback` };
    await admin.put(`/admin/v1/tenants/${tenant}/applications/portal`, {
      kind: 'web', displayName: 'Portal', clientId: portal.clientId, clientSecret: portal.secret, redirectUris: [portal.redirectUri], scopes: ['openid', 'email', 'profile'],
    });
    const rp = await relyingParty(server.issuer(tenant), portal.clientId, portal.secret);
    return { scim, rp, redirectUri: portal.redirectUri };
  }

  async function signIn(rp: oidc.Configuration, redirectUri: string, email: string, password: string) {
    const flow = await authorize(rp, new Browser(), redirectUri, { email, password });
    if (flow.callback.searchParams.has('error')) {
      const pages = flow.pages.join('\n');
      const outcome = pages.includes('not assigned') ? 'not-assigned' : pages.includes('Invalid email or password.') ? 'refused' : `other: ${flow.callback.searchParams.get('error')}`;
      return { outcome };
    }
    const tokens = await oidc.authorizationCodeGrant(rp, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state });
    return { outcome: 'signed-in', sub: tokens.claims()?.sub };
  }

  async function run(seq: VendorSequence, step: Step, where: string, ctx: Awaited<ReturnType<typeof setUp>>, vars: Map<string, string>) {
    const t = seq.tenant;
    switch (step.kind) {
      case 'scim': {
        const r = await ctx.scim.call(step.method, encoded(fill(step.path, vars)), fill(step.body, vars));
        check(where, r.status, r.body, fill(step.expect, vars));
        for (const [name, path] of Object.entries(step.keep ?? {})) {
          const v = at(r.body, path);
          expect(typeof v, `${where}: keep ${name} from ${path}`).toBe('string');
          vars.set(name, v as string);
        }
        return;
      }
      case 'assign': {
        const path = step.group !== undefined
          ? `/admin/v1/tenants/${t}/applications/portal/group-assignments/${fill(step.group, vars)}`
          : `/admin/v1/tenants/${t}/applications/portal/assignments/${fill(step.user!, vars)}`;
        const r = await admin.call('PUT', path, {});
        expect([200, 201], `${where}: ${JSON.stringify(r.body)}`).toContain(r.status);
        return;
      }
      case 'admin': {
        const r = await admin.call('GET', `/admin/v1/tenants/${t}${fill(step.path, vars)}`);
        check(where, r.status, r.body, fill(step.expect, vars));
        return;
      }
      case 'setPassword': {
        const r = await ctx.scim.call('PATCH', `/Users/${fill(step.user, vars)}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'password', value: step.password }] });
        expect(r.status, `${where}: ${JSON.stringify(r.body)}`).toBe(200);
        return;
      }
      case 'signIn': {
        const got = await signIn(ctx.rp, ctx.redirectUri, step.email, step.password);
        expect(got.outcome, where).toBe(step.outcome);
        if (step.sub !== undefined) expect(got.sub, where).toBe(fill(step.sub, vars));
        return;
      }
    }
  }

  it.each(SEQUENCES.map((s) => [s.vendor, s] as const))('%s', async (_vendor, seq) => {
    const ctx = await setUp(seq.tenant);
    const vars = new Map<string, string>([['base', ctx.scim.base]]);
    for (const [i, step] of seq.steps.entries()) {
      await run(seq, step, `${seq.vendor} step ${i + 1} (${step.kind}: ${step.does})`, ctx, vars);
    }
  });
});

describe('what SCIM keeps', () => {
  let postgres: TestPostgres | undefined;
  afterAll(async () => {
    await postgres?.stop();
  });

  it.each(['sqlite', 'postgres'] as const)('on %s, a user with the enterprise extension and every multi-valued core attribute reads back the same after a restart, version included', async (backend) => {
    const dir = tempDir();
    let database: string | undefined;
    if (backend === 'postgres') {
      postgres ??= await startPostgres();
      database = (await postgres.createDatabase('kept')).url;
    }
    const start = (port = 0) => testServer({ dataDir: dir.path, port, ...(database === undefined ? {} : { database }) });
    let server = await start();
    try {
      const admin = await adminClient(server);
      const { scim: first, token } = await scimTenant(admin, server, 'kept');
      const certificate = Buffer.from('a DER certificate would be here; any bytes do for storage').toString('base64');
      const made = await first.call('POST', '/Users', {
        schemas: [USER, ENTERPRISE], userName: 'ines.k@kept.test', displayName: 'Ines K.',
        emails: [{ value: 'ines.k@kept.test', type: 'work', primary: true }],
        ims: [{ value: 'ines.k', type: 'xmpp' }], photos: [{ value: 'https://photos.kept.test/ines.jpg', type: 'thumbnail' }],
        entitlements: [{ value: 'parking-level-2' }], roles: [{ value: 'Approver', display: 'Invoice approver', primary: 'True' }],
        x509Certificates: [{ value: certificate }],
        [ENTERPRISE]: { employeeNumber: 'E-77', costCenter: 'CC-1', organization: 'Kept', division: 'North', department: 'Finance', manager: { value: 'm-1' } },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      expect(made.body).toMatchObject({ roles: [{ value: 'Approver', primary: true }], x509Certificates: [{ value: certificate }], [ENTERPRISE]: { department: 'Finance', manager: { value: 'm-1' } } });
      const before = await first.call('GET', `/Users/${made.body.id}`);
      await server.close();
      // The same port: the version covers meta.location, whose URL names it.
      server = await start(Number(new URL(server.url).port));
      const after = await scimClient(server, 'kept', token).call('GET', `/Users/${made.body.id}`);
      expect(after.body).toEqual(before.body);
      expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
      const found = await scimClient(server, 'kept', token).call('GET', `/Users?filter=${encodeURIComponent(`${ENTERPRISE}:costCenter eq "CC-1"`)}`);
      expect(found.body.Resources.map((r: { id: string }) => r.id)).toEqual([made.body.id]);
    } finally {
      await server.close();
      dir.remove();
    }
  });

  it('what the table does not publish is refused, never dropped: a malformed certificate, an unknown enterprise attribute, an extension without its schema', async () => {
    const server = await testServer();
    try {
      const admin = await adminClient(server);
      const { scim } = await scimTenant(admin, server, 'strict');
      const base = { schemas: [USER], userName: 'x@strict.test', emails: [{ value: 'x@strict.test', primary: true }] };
      const refusals: [unknown, string][] = [
        [{ ...base, x509Certificates: [{ value: 'not base64!' }] }, 'must be base64-encoded'],
        [{ ...base, schemas: [USER, ENTERPRISE], [ENTERPRISE]: { badgeColour: 'red' } }, 'has no attribute "badgeColour"'],
        [{ ...base, [ENTERPRISE]: { department: 'X' } }, "which 'schemas' does not list"],
        [{ ...base, department: 'X' }, `belongs to the schema extension ${ENTERPRISE}`],
        [{ ...base, schemas: [USER, ENTERPRISE], [ENTERPRISE]: { manager: [{ value: 'a' }, { value: 'b' }] } }, 'must be a single value, not a list'],
      ];
      for (const [body, detail] of refusals) {
        const r = await scim.call('POST', '/Users', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.detail, JSON.stringify(body)).toContain(detail);
      }
      const u = (await scim.call('POST', '/Users', base)).body.id as string;
      const patch = (...Operations: unknown[]) => scim.call('PATCH', `/Users/${u}`, { schemas: [PATCH_OP], Operations });
      expect((await patch({ op: 'replace', path: `${ENTERPRISE}:manager.displayName`, value: 'Boss' })).body).toMatchObject({ status: '400', scimType: 'mutability' });
      expect((await patch({ op: 'replace', path: 'urn:ietf:params:scim:schemas:extension:acme:2.0:User:tier', value: 'gold' })).body).toMatchObject({ status: '400', scimType: 'invalidPath' });
      // An extension as the path: each attribute an operation; its removal removes them all.
      expect((await patch({ op: 'add', path: ENTERPRISE, value: { department: 'Ops', division: 'East' } })).body).toMatchObject({ schemas: [USER, ENTERPRISE], [ENTERPRISE]: { department: 'Ops', division: 'East' } });
      expect((await patch({ op: 'replace', value: { [ENTERPRISE]: { schemas: [ENTERPRISE], department: 'Ops 2' } } })).body).toMatchObject({ [ENTERPRISE]: { department: 'Ops 2', division: 'East' } });
      const removed = await patch({ op: 'remove', path: ENTERPRISE });
      expect(removed.body.schemas).toEqual([USER]);
      expect(removed.body[ENTERPRISE]).toBeUndefined();
      // A member whose $ref names someone else than its value is refused, never guessed.
      const g = await scim.call('POST', '/Groups', { schemas: [GROUP], displayName: 'Refs', members: [{ value: u, $ref: `${scim.base}/Users/${u}`, type: 'User', display: 'anything' }] });
      expect(g.status, JSON.stringify(g.body)).toBe(201);
      const other = await scim.call('PATCH', `/Groups/${g.body.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: u, $ref: `${scim.base}/Groups/${g.body.id}` }] }] });
      expect(other.body).toMatchObject({ status: '400', scimType: 'invalidValue', detail: expect.stringContaining('does not name the user of its value') });
      // A value filter's string boolean (Entra) matches the primary value rather than seeding a second one.
      const primary = await patch({ op: 'replace', path: 'emails[primary eq "True"].value', value: 'y@strict.test' });
      expect(primary.body.emails).toEqual([{ value: 'y@strict.test', primary: true }]);
    } finally {
      await server.dispose();
    }
  });
});
