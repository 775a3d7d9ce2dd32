/**
 * Initial passwords in `idforge plan` and `idforge apply` (against a live server, in-process): a
 * user's password matters only when the user is created, as on the Pulumi path. So both commands
 * refuse exactly the new users whose password variable is unset, in the same words, and apply
 * writes nothing then; users that exist need none.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-initial-passwords-');

beforeAll(async () => {
  server = await testServer();
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

const model = (users: readonly string[]) => {
  writeFileSync(join(work.path, 'model.yaml'), `server:\n  baseDomain: localhost\n  port: ${server.port}\ntenants:\n  - name: acme\n    displayName: Acme\n    users:\n` +
    users.map((u) => `      - { id: ${u}, email: ${u}@acme.example, password: { env: ${u.toUpperCase()}_PASSWORD } }\n`).join(''));
};
const idforge = (command: 'plan' | 'apply', env: Record<string, string>, ...flags: string[]) =>
  runCli([command, 'model.yaml', '--data-dir', server.dataDir, ...flags], { cwd: work.path, env: { IDFORGE_STATE: join(work.path, 'state.json'), ...env } });

describe('plan and apply agree on missing initial passwords', () => {
  it('both refuse the new user whose variable is unset, in the same words; an existing user needs none', async () => {
    model(['alice']);
    expect((await idforge('apply', { ALICE_PASSWORD: 'alice-password-1' })).code).toBe(0);

    // Bob is new and BOB_PASSWORD is unset; alice exists, and ALICE_PASSWORD is unset too.
    model(['alice', 'bob']);
    const plan = await idforge('plan', {});
    const apply = await idforge('apply', {});
    const expected = `${join(work.path, 'model.yaml')}:9:55  password of bob: environment variable BOB_PASSWORD is not set (acme/bob is new on the server and is created with it)  (at tenants[0].users[1].password)\n\n1 problem found.\n`;
    expect(plan).toEqual({ code: 1, stdout: '', stderr: expected });
    expect(apply).toEqual({ code: 1, stdout: '', stderr: expected });
    expect(await admin.typed.find('getUser', { tenant: 'acme', userId: 'bob' })).toBeUndefined();

    const planJson = await idforge('plan', {}, '--json');
    const applyJson = await idforge('apply', {}, '--json');
    expect(planJson.code).toBe(1);
    expect(applyJson).toEqual(planJson);
    expect(JSON.parse(planJson.stdout)).toMatchObject({ ok: false, problems: [{ code: 'missing-secret', path: ['tenants', 0, 'users', 1, 'password'] }] });
  });

  it('with the new user\'s password set, both go ahead, though the existing user\'s is still unset', async () => {
    model(['alice', 'bob']);
    const plan = await idforge('plan', { BOB_PASSWORD: 'bob-password-12' });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stderr).toBe('');
    expect(plan.stdout).toContain('+ user acme/bob');
    const apply = await idforge('apply', { BOB_PASSWORD: 'bob-password-12' });
    expect(apply.code, apply.stderr).toBe(0);
    expect(await admin.typed.find('getUser', { tenant: 'acme', userId: 'bob' })).toMatchObject({ email: 'bob@acme.example' });
    // Now that bob exists, nobody's password is needed.
    expect(await idforge('plan', {})).toMatchObject({ code: 0, stderr: '' });
  });
});
