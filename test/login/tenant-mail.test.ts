/**
 * Each tenant's own mail: a tenant that declares SMTP settings sends through its own server, as its
 * own sender, authenticated with the password the server's environment holds; a tenant without
 * settings uses the server's relay; a tenant whose settings cannot be used, or a server with no mail
 * at all, gets a clear refusal naming what to set. Real SMTP servers on loopback (smtp-server), a
 * real idforge server, the admin API and the model's validation: the same rule at both doors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../src/contract/index.ts';
import { formatProblems, validateSources } from '../../src/schema/index.ts';
import { createMailer, MailNotConfigured } from '../../src/server/login/mailer.ts';
import { loginSettings } from '../../src/server/login/options.ts';
import { adminClient, testServer, type AdminClient } from '../server/_support.ts';
import { smtpSink, type SmtpSink } from '../support/smtp.ts';

const PASSWORD_ENV = 'IDFORGE_SMTP_TMAIL_TEST_PASSWORD';
const SMTP_USER = 'tmail-mailer';
const SMTP_PASS = 'correct horse battery staple 7';

let own: SmtpSink;
let tenantSmtp: SmtpSink;
let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;

const portOf = (sink: SmtpSink) => Number(new URL(sink.url).port);
const mailOf = (sink: SmtpSink, extra: Record<string, unknown> = {}) => ({
  from: 'Tmail sign-in <no-reply@tmail.example>',
  smtp: { host: '127.0.0.1', port: portOf(sink), security: 'none', username: SMTP_USER, passwordEnv: PASSWORD_ENV, ...extra },
});

async function tenantWithPerson(tenant: string, body: Record<string, unknown>, email: string): Promise<void> {
  await admin.put(routePath('getTenant', { tenant }), body);
  await admin.put(routePath('getUser', { tenant, userId: 'u-1' }), { email });
}
const invite = (tenant: string) => admin.call('POST', routePath('inviteUser', { tenant, userId: 'u-1' }));

beforeAll(async () => {
  process.env[PASSWORD_ENV] = SMTP_PASS;
  own = await smtpSink();
  tenantSmtp = await smtpSink({ auth: { user: SMTP_USER, pass: SMTP_PASS } });
  server = await testServer({ login: { smtpUrl: own.url, mailFrom: 'Server <server@localhost>' } });
  admin = await adminClient(server);
});
afterAll(async () => {
  delete process.env[PASSWORD_ENV];
  await server?.dispose();
  await own?.close();
  await tenantSmtp?.close();
});

describe("a tenant's own SMTP settings", () => {
  it('carry its mail, as its sender, authenticated with the password from the server environment', async () => {
    await tenantWithPerson('tmail', { displayName: 'Tmail', mail: mailOf(tenantSmtp) }, 'ann@tmail.example');
    const r = await invite('tmail');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ kind: 'invitation', email: 'ann@tmail.example', sent: true });
    const mail = await tenantSmtp.next('ann@tmail.example');
    expect(mail.user).toBe(SMTP_USER);
    expect(mail.from).toBe('no-reply@tmail.example');
    expect(mail.fromHeader).toContain('Tmail sign-in');
    expect(mail.text).toContain('Tmail');
    expect(own.count('ann@tmail.example')).toBe(0);
  });

  it('are shown by the admin API as declared, and hold no password anywhere', async () => {
    const got = await admin.call('GET', routePath('getTenant', { tenant: 'tmail' }));
    expect(got.body.mail).toEqual({ ...mailOf(tenantSmtp) });
    expect(JSON.stringify(got.body)).not.toContain(SMTP_PASS);
    const events = await admin.call('GET', `${routePath('listEvents', { tenant: 'tmail' })}?type=tenant.created`);
    expect(JSON.stringify(events.body)).not.toContain(SMTP_PASS);
  });

  it('a tenant without settings uses the server relay', async () => {
    await tenantWithPerson('tplain', { displayName: 'Tplain' }, 'bob@tplain.example');
    expect((await invite('tplain')).status).toBe(200);
    const mail = await own.next('bob@tplain.example');
    expect(mail.from).toBe('server@localhost');
    expect(mail.text).toContain('Tplain');
    expect(tenantSmtp.count('bob@tplain.example')).toBe(0);
  });

  it('a password variable the server lacks is a clear 409 that names it, and no link is left behind', async () => {
    await tenantWithPerson('tunset', { displayName: 'Tunset', mail: mailOf(tenantSmtp, { passwordEnv: 'IDFORGE_SMTP_NOT_SET_ANYWHERE' }) }, 'cy@tunset.example');
    const r = await invite('tunset');
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('mail_not_configured');
    expect(r.body.message).toContain('IDFORGE_SMTP_NOT_SET_ANYWHERE');
    expect(r.body.message).toContain("not set in the server's environment");
    // Nothing held back the next try: once set, the invitation goes at once (no 30 s wait).
    process.env.IDFORGE_SMTP_NOT_SET_ANYWHERE = SMTP_PASS;
    try {
      const again = await invite('tunset');
      expect(again.status).toBe(200);
      expect(again.body.sent).toBe(true);
      expect((await tenantSmtp.next('cy@tunset.example')).user).toBe(SMTP_USER);
    } finally {
      delete process.env.IDFORGE_SMTP_NOT_SET_ANYWHERE;
    }
  });

  it('a wrong password is the mail server refusing, named without credentials', async () => {
    process.env.IDFORGE_SMTP_WRONG = 'not the password';
    try {
      await tenantWithPerson('twrong', { displayName: 'Twrong', mail: mailOf(tenantSmtp, { passwordEnv: 'IDFORGE_SMTP_WRONG' }) }, 'di@twrong.example');
      const r = await invite('twrong');
      expect(r.status).toBe(502);
      expect(r.body.message).toContain(`the mail server (smtp://127.0.0.1:${portOf(tenantSmtp)}) refused or could not be reached`);
      expect(r.body.message).not.toContain('not the password');
    } finally {
      delete process.env.IDFORGE_SMTP_WRONG;
    }
  });
});

describe('one rule at every door', () => {
  const bad: readonly [string, Record<string, unknown>, string, string][] = [
    ['clear text to a remote host', { security: 'none', host: 'smtp.example.com' }, 'mail.smtp.security', "'none' sends mail and any password in clear"],
    ['a variable that is not an SMTP one', { passwordEnv: 'IDFORGE_MASTER_KEY' }, 'mail.smtp.passwordEnv', 'IDFORGE_SMTP_'],
    ['a password without a user', { username: undefined }, 'mail.smtp.passwordEnv', 'a password needs a username'],
    ['a host with a scheme', { host: 'smtp://mail.example.com' }, 'mail.smtp.host', 'without scheme or port'],
  ];
  for (const [what, change, path, words] of bad) {
    it(`refuses ${what}: admin API and model say where and what`, async () => {
      const smtp = { ...mailOf(tenantSmtp).smtp, ...change };
      if (change.username === undefined && 'username' in change) delete (smtp as Record<string, unknown>).username;
      const r = await admin.call('PUT', routePath('getTenant', { tenant: 'tbad' }), { displayName: 'Tbad', mail: { from: 'x@tbad.example', smtp } });
      expect(r.status).toBe(400);
      expect(r.body.problems.map((p: { path: string }) => p.path)).toContain(path);
      expect(JSON.stringify(r.body)).toContain(words);
      const yaml = `tenants:\n  - name: tbad\n    displayName: Tbad\n    mail:\n      from: x@tbad.example\n      smtp: ${JSON.stringify(smtp)}\n`;
      const v = validateSources([{ file: 'm.yaml', content: yaml }]);
      expect(v.ok).toBe(false);
      const text = formatProblems(v.ok ? [] : v.problems);
      expect(text).toContain(`tenants[0].${path}`);
      expect(text).toContain(words);
    });
  }
  it('nothing was made by the refused writes', async () => {
    expect((await admin.call('GET', routePath('getTenant', { tenant: 'tbad' }))).status).toBe(404);
  });
});

describe('a server with no mail of its own', () => {
  it('has no outbox by default away from localhost, and refuses a tenant without settings in words', async () => {
    const settings = loginSettings({}, '/nonexistent-data-dir', 'id.example.com', () => {});
    try {
      expect(settings.mailer.describe).toBe('none');
      const sent = settings.mailer.send({ name: 'acme' }, { to: 'a@acme.example', subject: 's', text: 't' });
      await expect(sent).rejects.toBeInstanceOf(MailNotConfigured);
      await expect(sent).rejects.toThrow("tenant acme has no mail settings and this server has no mail of its own: declare the tenant's mail (from, smtp) in the model, or start the server with --smtp-url (nothing was sent)");
    } finally {
      settings.mailer.close();
    }
  });
  it('still sends a tenant that declares its own', async () => {
    const mailer = createMailer({ smtpUrl: undefined, outboxDir: undefined, from: 'x@localhost', log: () => {}, env: { [PASSWORD_ENV]: SMTP_PASS } });
    try {
      await mailer.send({ name: 'own', mail: { ...mailOf(tenantSmtp), smtp: { ...mailOf(tenantSmtp).smtp, security: 'none' as const } } }, { to: 'eve@own.example', subject: 'Hello', text: 'hi' });
      expect((await tenantSmtp.next('eve@own.example')).subject).toBe('Hello');
    } finally {
      mailer.close();
    }
  });
});
