/**
 * The policy's path through the product without a browser: the admin API refuses policies that
 * would lock everyone out (whatever the client: apply, Pulumi, curl) and returns what was PUT;
 * a tenant without a policy keeps password-only sign-in; the serve command's login flags.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, SERVE_SUMMARY } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { compilePlan } from '../../src/generators/index.ts';
import { routePath } from '../../src/contract/index.ts';
import { validateSources } from '../../src/schema/index.ts';
import { policyFor } from '../../src/server/login/factors.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
});

describe('login policy in the admin API', () => {
  it('stores a policy and returns it as given; a tenant without one has none', async () => {
    await admin.put(routePath('getTenant', { tenant: 'plain' }), { displayName: 'Plain' });
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'plain' }))).body.login).toBeUndefined();
    await admin.put(routePath('getTenant', { tenant: 'strict' }), { displayName: 'Strict', login: { methods: ['password', 'totp'], requireSecondFactor: true } });
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'strict' }))).body.login).toEqual({ methods: ['password', 'totp'], requireSecondFactor: true });
    const again = await admin.call('PUT', routePath('getTenant', { tenant: 'strict' }), { displayName: 'Strict', login: { methods: ['password', 'totp'], requireSecondFactor: true } });
    expect(again.body.outcome).toBe('unchanged');
  });

  it('refuses a policy nobody could sign in with, saying why', async () => {
    const r = await admin.call('PUT', routePath('getTenant', { tenant: 'broken' }), { displayName: 'Broken', login: { methods: ['password'], requireSecondFactor: true } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('a second factor is required, but nothing can follow a password');
    const unknown = await admin.call('PUT', routePath('getTenant', { tenant: 'broken' }), { displayName: 'Broken', login: { methods: ['sms'] } });
    expect(unknown.status).toBe(400);
  });
});

describe('login policy in the plan', () => {
  const tenantBody = (login: string) => {
    const r = validateSources([{ file: 'm.yaml', content: `tenants:\n  - name: acme\n    displayName: Acme\n${login}` }]);
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    return compilePlan(r.model, { secrets: {} }).steps.find((s) => s.kind === 'tenant' && s.op === 'put') as { body: Record<string, unknown> };
  };
  it('carries the policy into the tenant PUT, with defaults filled in', () => {
    expect(tenantBody('    login: { methods: [password, totp], requireSecondFactor: true }\n').body.login).toEqual({ methods: ['password', 'totp'], requireSecondFactor: true });
    expect(tenantBody('    login: {}\n').body.login).toEqual({ methods: ['password'], requireSecondFactor: false });
  });
  it('leaves the body of a tenant without a policy exactly as before', () => {
    // No login key at all; the declared entry (for export) is the only addition since policies existed.
    expect(Object.keys(tenantBody('').body)).toEqual(['displayName', 'scopes', 'managedBy', 'lastApplied']);
  });
});

describe('policy steps', () => {
  it('password only by default; second steps only where another factor can follow', () => {
    expect(policyFor({ displayName: 'x', scopes: [] }).steps).toEqual([['password']]);
    expect(policyFor({ displayName: 'x', scopes: [], login: { methods: ['password', 'otp'], requireSecondFactor: true } }).steps).toEqual([['password'], ['otp']]);
    expect(policyFor({ displayName: 'x', scopes: [], login: { methods: ['password', 'otp', 'passkey', 'totp'], requireSecondFactor: true } }))
      .toEqual({ steps: [['password', 'otp', 'passkey'], ['totp', 'otp']], offerPasskey: true });
  });
});

describe('idforge serve login flags', () => {
  async function serve(args: string[]) {
    let out = '';
    const io: CliIo = { stdout: (t) => { out += t; }, stderr: (t) => { out += t; }, env: {}, cwd: process.cwd(), color: false };
    // As bin/idforge.js composes it: the CLI's main with the server's own serve command.
    const serve = { summary: SERVE_SUMMARY, load: () => import('../../src/server/serve-command.ts') };
    return { code: await main(['serve', ...args], io, { serve }), out };
  }
  it('documents them in --help', async () => {
    const { code, out } = await serve(['--help']);
    expect(code).toBe(0);
    for (const flag of ['--smtp-url', '--mail-outbox', '--otp-lifetime', '--lockout-threshold', '--lockout-seconds', '--address-lockout-threshold', '--backoff-ms']) expect(out).toContain(flag);
    expect(out).toMatch(/--lockout-threshold <n>\n\s+failed attempts that lock an account [^-]*\(default 5\)/);
  });
  it('refuses nonsense values before starting anything', async () => {
    const dir = tempDir();
    try {
      const { code, out } = await serve(['--data-dir', dir.path, '--lockout-threshold', '0']);
      expect(code).toBe(2);
      expect(out).toContain("--lockout-threshold must be a positive number, got '0'");
      const both = await serve(['--data-dir', dir.path, '--smtp-url', 'smtp://localhost', '--mail-outbox', 'x']);
      expect(both.out).toContain('--smtp-url and --mail-outbox exclude each other');
    } finally {
      dir.remove();
    }
  });
});
