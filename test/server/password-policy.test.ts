/**
 * The password policy (src/contract/password-policy.ts): one rule, declared in the model and run at
 * every door that sets a password, with the same words and a path. Pure cases first, then the model,
 * then a real server's doors: the admin API's PUT and tenant batch, and SCIM.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPassword, routePath } from '../../src/contract/index.ts';
import { resolvePasswords } from '../../src/cli/_state.ts';
import { formatProblems, validateSources } from '../../src/schema/index.ts';
import { scimTenant, scimUser } from '../scim/_support.ts';
import { adminClient, testServer, type AdminClient } from './_support.ts';

const messages = (password: string, policy?: { minLength: number }, email = 'ann@acme.test') =>
  checkPassword(password, policy, { email, tenantNames: ['acme', 'Acme Corporation'] }, ['password']).map((p) => `${p.code}: ${p.message}`);

describe('the rule', () => {
  it('asks for a length, never for composition', () => {
    expect(messages('short')).toEqual(['password-too-short: must be at least 8 characters long']);
    expect(messages('eight ch', { minLength: 12 })).toEqual(['password-too-short: must be at least 12 characters long']);
    // No digits, no capitals, no symbols: long and uncommon is enough (NIST SP 800-63B, no composition rules).
    expect(messages('marmalade tugboat')).toEqual([]);
    // Code points, not UTF-16 units: eight emoji are eight characters.
    expect(messages('🦊🐢🦉🐙🦀🐝🦋🐞')).toEqual([]);
    expect(messages('🦊🐢🦉🐙🦀🐝🦋')).toEqual(['password-too-short: must be at least 8 characters long']);
  });

  it('refuses leaked and trivial passwords, whatever their case', () => {
    for (const p of ['password1', 'PassWord1', 'qwertyuiop', 'iloveyou', 'trustno1', 'aaaaaaaaaa', '12345678', 'HGFEDCBA']) {
      expect(messages(p), p).toEqual([expect.stringMatching(/^password-common: is too common/)]);
    }
  });

  it("refuses the person's own email and the service's name", () => {
    expect(messages('ann@acme.test', undefined, 'Ann@Acme.test')).toEqual([expect.stringMatching(/^password-context:/)]);
    expect(messages('Acme Corporation')).toEqual([expect.stringMatching(/^password-context:/)]);
    expect(messages('zebulonquix', undefined, 'zebulonquix@acme.test')).toEqual([expect.stringMatching(/^password-context:/)]);
  });

  // A hang fails by the test's deadline; the time is no assertion (house rule: no timing assertions).
  it('answers hostile input without repeating it', { timeout: 30_000 }, () => {
    const huge = 'x'.repeat(1_000_000);
    expect(messages(huge)).toEqual(['password-too-long: must be at most 1024 characters long']);
    expect(messages(`abc\u0000defghij`)).toEqual(['password-invalid: must not contain NUL characters']);
    const lone = '\ud800'.repeat(20);
    expect(messages(lone).every((m) => !m.includes(lone))).toBe(true);
    for (let i = 0; i < 1000; i++) expect(messages(`${'ab'.repeat(500)}${i}`)).toEqual(messages(`${'ab'.repeat(500)}0`));
  });
});

describe('in the model', () => {
  const model = (policy: string) => `tenants:
  - name: acme
    displayName: Acme
    passwordPolicy: ${policy}
    users:
      - { id: u-ann, email: ann@acme.test, password: { env: ANN_PASSWORD } }
`;
  it('is declared per tenant, and a minimum below NIST\'s is a located problem', () => {
    expect(validateSources([{ file: 'm.yaml', content: model('{ minLength: 15 }') }]).ok).toBe(true);
    const bad = validateSources([{ file: 'm.yaml', content: model('{ minLength: 6, composition: true }') }]);
    expect(bad.ok).toBe(false);
    expect(formatProblems(bad.ok ? [] : bad.problems)).toMatchInlineSnapshot(`
      "m.yaml:4:34  'minLength' must be at least 8  (at tenants[0].passwordPolicy.minLength)
      m.yaml:4:37  unknown field 'composition'  (at tenants[0].passwordPolicy.composition)"
    `);
  });

  it('judges initial passwords from the environment before anything is sent (idforge plan and apply)', () => {
    const loaded = validateSources([{ file: 'm.yaml', content: model('{ minLength: 15 }') }]);
    if (!loaded.ok) throw new Error('valid model expected');
    const weak = resolvePasswords(loaded.model, { ANN_PASSWORD: 'twelve chars' });
    expect(weak.unresolved.get('acme/u-ann')).toMatchObject({
      code: 'password-too-short', path: ['tenants', 0, 'users', 0, 'password'],
      message: 'password of u-ann: the value of ANN_PASSWORD must be at least 15 characters long',
    });
    expect(resolvePasswords(loaded.model, { ANN_PASSWORD: 'a long enough passphrase' }).passwords).toEqual({ 'acme/u-ann': 'a long enough passphrase' });
  });
});

describe('at every door of a real server', () => {
  let server: Awaited<ReturnType<typeof testServer>>;
  let admin: AdminClient;
  beforeAll(async () => {
    server = await testServer();
    admin = await adminClient(server);
  });
  afterAll(async () => server?.dispose());

  it('admin API: the tenant keeps its policy, and PUT user refuses a weak initial password at its path', async () => {
    const t = await admin.put(routePath('getTenant', { tenant: 'pol' }), { displayName: 'Policy Inc.', passwordPolicy: { minLength: 12 } });
    expect(t.resource.passwordPolicy).toEqual({ minLength: 12 });
    const short = await admin.call('PUT', routePath('putUser', { tenant: 'pol', userId: 'u-a' }), { email: 'a@pol.test', initialPassword: 'eleven char' });
    expect(short.status).toBe(400);
    expect(short.body).toMatchObject({ error: 'invalid_request', path: 'initialPassword', message: 'initialPassword must be at least 12 characters long' });
    const leaked = await admin.call('PUT', routePath('putUser', { tenant: 'pol', userId: 'u-a' }), { email: 'a@pol.test', initialPassword: 'qwertyuiop123' });
    expect(leaked.status).toBe(400);
    expect(leaked.body.message).toMatch(/^initialPassword is too common/);
    expect((await admin.call('GET', routePath('getUser', { tenant: 'pol', userId: 'u-a' }))).status).toBe(404);
    const ok = await admin.call('PUT', routePath('putUser', { tenant: 'pol', userId: 'u-a' }), { email: 'a@pol.test', initialPassword: 'a sound passphrase' });
    expect(ok.status).toBe(201);
    // A password already set is kept: re-sending a now-too-weak initial password changes nothing and is no error.
    await admin.put(routePath('getTenant', { tenant: 'pol' }), { displayName: 'Policy Inc.', passwordPolicy: { minLength: 20 } });
    const again = await admin.call('PUT', routePath('putUser', { tenant: 'pol', userId: 'u-a' }), { email: 'a@pol.test', initialPassword: 'a sound passphrase' });
    expect(again.status).toBe(200);
    expect(again.body.outcome).toBe('unchanged');
  });

  it('admin API: a policy below the minimum is refused with its path', async () => {
    const r = await admin.call('PUT', routePath('getTenant', { tenant: 'pol2' }), { displayName: 'P', passwordPolicy: { minLength: 4 } });
    expect(r.status).toBe(400);
    expect(r.body.path).toBe('passwordPolicy.minLength');
  });

  it('tenant batch: the entry is refused with the same words, against the policy the same batch declares', async () => {
    const r = await admin.call('POST', routePath('applyTenantBatch', { tenant: 'polb' }), {
      tenant: { displayName: 'Batch Inc.', passwordPolicy: { minLength: 16 } },
      users: [
        { id: 'u-ok', body: { email: 'ok@polb.test', initialPassword: 'sixteen chars ok' } },
        { id: 'u-weak', body: { email: 'weak@polb.test', initialPassword: 'fifteen chars!!' } },
      ],
    });
    expect(r.status).toBe(422);
    const weak = r.body.results.find((x: { user?: string }) => x.user === 'u-weak');
    expect(weak).toMatchObject({ outcome: 'refused', status: 400, path: 'initialPassword', reason: 'initialPassword must be at least 16 characters long' });
  });

  it("SCIM: a password the tenant's policy refuses is an invalidValue with the same words", async () => {
    const { scim } = await scimTenant(admin, server, 'pols');
    const weak = await scim.call('POST', '/Users', scimUser('sam', 'sam@pols.test', { password: 'letmein123' }));
    expect(weak.status).toBe(400);
    expect(weak.body).toMatchObject({ scimType: 'invalidValue', detail: expect.stringMatching(/^password is too common/) });
    const own = await scim.call('POST', '/Users', scimUser('sam', 'sam@pols.test', { password: 'sam@pols.test' }));
    expect(own.body.detail).toBe('password must not be your email address, its name part or the name of this service');
    const ok = await scim.call('POST', '/Users', scimUser('sam', 'sam@pols.test', { password: 'provisioned passphrase' }));
    expect(ok.status).toBe(201);
  });
});
