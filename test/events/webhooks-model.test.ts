/**
 * Webhooks declared in the model, on a real server and a real receiver on loopback: `idforge plan`
 * shows them like every other object, `idforge apply` makes them (the signing secret from the
 * environment the model names, never from Git), the receiver verifies what it gets with the
 * Standard Webhooks authors' library under that secret, a new secret is a rotation, the model's
 * webhooks are its manager's (a raw admin API change is refused), one made by hand in the tenant is
 * drift, one the model drops is deleted, and `idforge export` gives them back with their references.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';
import { until } from '../support/holding-receiver.ts';

/** The first delivery `match` takes, once it has arrived (a deadline fails the test instead of a hang). */
async function delivered(what: string, match: (g: { headers: Record<string, string>; body: string }) => boolean) {
  await until(what, () => got.some(match), 20_000);
  return got.find(match)!;
}

const SECRET_A = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-webhooks-model-');
const got: { headers: Record<string, string>; body: string }[] = [];
let receiver: http.Server;
let hookUrl = '';

async function idforge(args: string[], env: Record<string, string> = { SIEM_SECRET: SECRET_A }) {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (t) => { stdout += t; }, stderr: (t) => { stderr += t; }, env: { IDFORGE_STATE: join(work.path, 'state.json'), ...env }, cwd: work.path, color: false };
  const code = await main([...args, ...(args[0] === 'validate' ? [] : ['--data-dir', server.dataDir])], io);
  return { code, stdout, stderr };
}

const model = (opts: { users?: string[]; hook?: string | undefined } = {}) => `server: { baseDomain: localhost, port: ${server.port} }
tenants:
  - name: acme
    displayName: Acme
    users:
${(opts.users ?? ['ann']).map((u) => `      - { id: u-${u}, email: ${u}@acme.example }`).join('\n')}
${opts.hook === undefined ? '' : `    webhooks:\n${opts.hook}`}`;
const siem = (url: string, extra = '') => `      - name: siem\n        url: "${url}"\n        types: [user.*]\n        secret: { env: SIEM_SECRET }\n${extra}`;

const write = (text: string) => writeFileSync(join(work.path, 'acme.yaml'), text);

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // The receiver is on loopback, which the server refuses to deliver to unless its operator allows it.
  server = await testServer({ webhooks: { allowPrivateAddresses: true, pollMs: 50, retrySeconds: [0.2, 0.2, 0.2] } });
  admin = await adminClient(server);
});
afterAll(async () => {
  await server?.dispose();
  receiver?.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  work.remove();
});

describe('webhooks declared in the model', () => {
  it('plan shows the webhook to create; apply makes it, the manager is the model\'s, and the secret is the one the environment holds', async () => {
    write(model({ hook: siem(hookUrl) }));
    const plan = await idforge(['plan', 'acme.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+ webhook acme/webhooks/siem');
    const applied = await idforge(['apply', 'acme.yaml']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('+ webhook acme/webhooks/siem');
    expect(applied.stdout).not.toContain(SECRET_A);
    const hook = await admin.typed.find('getWebhook', { tenant: 'acme', webhook: 'siem' });
    expect(hook).toMatchObject({ url: hookUrl, types: ['user.*'], enabled: true, manager: 'apply:default' });
    expect(JSON.stringify(hook)).not.toContain('whsec_');
    // The change is in the event log once, with apply as its manager, and the secret only as "changed".
    const events = (await admin.typed.call('listEvents', { tenant: 'acme' }, { query: { object: 'webhook:siem' } })).items;
    expect(events.map((e) => [e.type, e.actor.manager])).toEqual([['webhook.created', 'apply:default']]);
    expect(JSON.stringify(events)).not.toContain(SECRET_A);
    expect(events[0]!.changes.map((c) => c.field)).toContain('secret');

    // The next change the model makes reaches the receiver, signed with the secret the model names.
    write(model({ users: ['ann', 'bob'], hook: siem(hookUrl) }));
    expect((await idforge(['apply', 'acme.yaml'])).code).toBe(0);
    const delivery = await delivered('the user.created delivery', (g) => g.body.includes('"user.created"') && g.body.includes('u-bob'));
    const verified = new Webhook(SECRET_A).verify(delivery.body, delivery.headers) as { type: string; data: { object: { name: string } } };
    expect(verified).toMatchObject({ type: 'user.created', data: { object: { name: 'u-bob' } } });
    expect(() => new Webhook(SECRET_B).verify(delivery.body, delivery.headers)).toThrow();
  });

  it('a second apply changes nothing', async () => {
    const again = await idforge(['plan', 'acme.yaml']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('No changes: the server matches the model');
  });

  it('a new secret in the environment is a rotation that plan names and apply carries out', async () => {
    const plan = await idforge(['plan', 'acme.yaml'], { SIEM_SECRET: SECRET_B });
    expect(plan.stdout).toContain('~ webhook acme/webhooks/siem (secret)');
    expect((await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B })).code).toBe(0);
    write(model({ users: ['ann', 'bob', 'cy'], hook: siem(hookUrl) }));
    expect((await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B })).code).toBe(0);
    const delivery = await delivered('the rotated delivery', (g) => g.body.includes('"user.created"') && g.body.includes('u-cy'));
    expect(new Webhook(SECRET_B).verify(delivery.body, delivery.headers)).toMatchObject({ type: 'user.created' });
  });

  it('a webhook declared without a secret gets one from the server, shown once by apply, which signs its deliveries', async () => {
    write(model({ users: ['ann', 'bob', 'cy'], hook: `${siem(hookUrl)}      - { name: audit, url: "${hookUrl}?audit", types: [user.updated] }\n` }));
    const applied = await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B });
    expect(applied.code, applied.stderr).toBe(0);
    const made = /signing secret made by the server for webhook acme\/webhooks\/audit: (whsec_\S+) \(shown once/.exec(applied.stdout)?.[1];
    expect(made).toBeDefined();
    const again = await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B });
    expect(again.stdout).not.toContain('signing secret made by the server');
    write(model({ users: ['ann', 'bob', 'cy'], hook: `${siem(hookUrl)}      - { name: audit, url: "${hookUrl}?audit", types: [user.updated] }\n` }).replace('email: cy@acme.example }', 'email: cy@acme.example, displayName: Cy }'));
    expect((await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B })).code).toBe(0);
    const delivery = await delivered('the audit delivery', (g) => g.body.includes('"user.updated"') && g.body.includes('u-cy') && (() => {
      try { new Webhook(made!).verify(g.body, g.headers); return true; } catch { return false; }
    })());
    expect(delivery).toBeDefined();
    write(model({ users: ['ann', 'bob', 'cy'], hook: siem(hookUrl) }));
    expect((await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B })).code).toBe(0);
  });

  it('a missing or malformed secret stops plan at its place in the model, before anything is sent', async () => {
    const missing = await idforge(['plan', 'acme.yaml'], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/acme\.yaml:\d+:\d+/);
    expect(missing.stderr).toContain('secret of webhook siem: environment variable SIEM_SECRET is not set');
    const bad = await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: 'hunter2' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('the value of SIEM_SECRET must be whsec_');
    expect(bad.stderr).not.toContain('hunter2');
  });

  it('a URL the rule refuses is a problem at its path in the model', async () => {
    write(model({ hook: siem('http://siem.example.com/hook') }));
    const r = await idforge(['validate', join(work.path, 'acme.yaml')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/acme\.yaml:\d+:\d+/);
    expect(r.stderr).toContain('must use https');
    write(model({ users: ['ann', 'bob', 'cy'], hook: siem(hookUrl) }));
  });

  it('the model\'s webhook is its manager\'s: a raw admin API change is refused, naming it', async () => {
    const res = await admin.call('PUT', '/admin/v1/tenants/acme/webhooks/siem', { url: 'https://elsewhere.example/hook' });
    expect(res.status).toBe(409);
    expect(JSON.stringify(res.body)).toContain("webhook 'siem' is managed by idforge apply (manager 'default')");
    expect(await admin.typed.find('getWebhook', { tenant: 'acme', webhook: 'siem' })).toMatchObject({ url: hookUrl });
  });

  it('a webhook made by hand in the tenant is drift: plan lists it, apply deletes it (unmanaged: remove)', async () => {
    const res = await admin.call('PUT', '/admin/v1/tenants/acme/webhooks/stray', { url: 'https://stray.example/hook' });
    expect(res.status).toBe(201);
    const plan = await idforge(['plan', 'acme.yaml'], { SIEM_SECRET: SECRET_B });
    expect(plan.stdout).toContain('- webhook acme/webhooks/stray: made outside the model (no owner), not in the model: drift, deleted');
    expect((await idforge(['apply', 'acme.yaml'], { SIEM_SECRET: SECRET_B })).code).toBe(0);
    expect(await admin.typed.find('getWebhook', { tenant: 'acme', webhook: 'stray' })).toBeUndefined();
  });

  it('export gives the webhook back with its secret reference', async () => {
    const r = await idforge(['export', 'acme', '--out', 'exported.yaml']);
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(join(work.path, 'exported.yaml'), 'utf8');
    expect(text).toMatch(/webhooks:\s*\n\s*- name: siem\s*\n\s*url: "?http:\/\/127\.0\.0\.1:\d+\/hook"?\s*\n\s*types:\s*\n\s*- user\.\*\s*\n\s*secret:\s*\n\s*env: SIEM_SECRET/);
  });

  it('a webhook the model drops is deleted, and plan says so first', async () => {
    write(model({ users: ['ann', 'bob', 'cy'] }));
    const plan = await idforge(['plan', 'acme.yaml']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('- webhook acme/webhooks/siem');
    expect((await idforge(['apply', 'acme.yaml'])).code).toBe(0);
    expect(await admin.typed.find('getWebhook', { tenant: 'acme', webhook: 'siem' })).toBeUndefined();
  });
});
