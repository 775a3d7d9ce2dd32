/**
 * Mail delivery (sign-in codes, recovery links, invitations), per tenant: a tenant's own SMTP
 * settings (src/contract/mail.ts) when it declares them, else the server's own mail: its relay
 * (`--smtp-url`), else a file outbox (one RFC 5322 .eml file per message, built by nodemailer too)
 * for local use and tests, which is there by default only on a localhost server. A tenant with none
 * of these gets a clear MailNotConfigured. Sending never blocks or fails a sign-in answer: see
 * factor-otp.ts.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { smtpPortOf, type TenantMailBody, type TenantSmtpBody } from '../../contract/index.ts';
import { randomId } from '../_crypto.ts';

export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  /** The same message as HTML (mail-templates.ts); sent as multipart/alternative with the text. */
  readonly html?: string;
}

/** The tenant a message is sent for: its name, and its own mail settings when it has them. */
export interface MailTenant {
  readonly name: string;
  readonly mail?: TenantMailBody | undefined;
}

/**
 * No way to send for this tenant: it has no mail settings and the server has no mail of its own, or
 * its settings name a password variable the server's environment lacks. The message says which and
 * what to do; nothing was sent.
 */
export class MailNotConfigured extends Error {}

export interface Mailer {
  /** Where the server's own mail goes, for the start-up notice: `smtp://host`, the outbox directory, or `none`. */
  readonly describe: string;
  /** Where a tenant's mail goes (its SMTP server, or the server's own), never with credentials. */
  describeFor(tenant: MailTenant): string;
  /** Sends with the tenant's settings, else the server's own; rejects with MailNotConfigured when there are none. */
  send(tenant: MailTenant, message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailerConfig {
  /** The server's own SMTP relay (`--smtp-url`), for tenants without mail settings. */
  readonly smtpUrl: string | undefined;
  /** The file outbox for tenants without mail settings when there is no relay; undefined: none. */
  readonly outboxDir: string | undefined;
  /** The sender of the server's own mail. */
  readonly from: string;
  readonly log: (line: string) => void;
  /** Where `passwordEnv` is read. Default: the process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** A mail server that does not answer is given up on within these, not nodemailer's two minutes. */
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 } as const;

const mailOf = (from: string, m: MailMessage) => ({ from, to: m.to, subject: m.subject, text: m.text, ...(m.html === undefined ? {} : { html: m.html }) });

type Send = (m: MailMessage) => Promise<void>;

export function createMailer(c: MailerConfig): Mailer {
  const env = c.env ?? process.env;
  // The server's own mail: its relay, else its outbox, else none.
  let own: { readonly describe: string; readonly send: Send; readonly close: () => void } | undefined;
  if (c.smtpUrl !== undefined && c.smtpUrl !== '') {
    const transport = nodemailer.createTransport({ url: c.smtpUrl, ...TIMEOUTS } as SMTPTransport.Options);
    const u = new URL(c.smtpUrl);
    own = {
      // Never the credentials of the URL.
      describe: `${u.protocol}//${u.host}`,
      send: async (m) => { await transport.sendMail(mailOf(c.from, m)); },
      close: () => transport.close(),
    };
  } else if (c.outboxDir !== undefined) {
    const dir = c.outboxDir;
    const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
    own = {
      describe: dir,
      async send(m) {
        const info = await transport.sendMail(mailOf(c.from, m));
        // Codes are secrets: only the server's user may read the outbox. Written under a temporary
        // name and renamed, so a reader never sees half a message.
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const name = `${Date.now()}-${randomId(6)}.eml`;
        const tmp = join(dir, `.${name}.tmp`);
        writeFileSync(tmp, info.message as Buffer, { mode: 0o600 });
        renameSync(tmp, join(dir, name));
      },
      close: () => transport.close(),
    };
  }
  // One transport per tenant with settings, made again when the settings or the password change.
  const tenants = new Map<string, { readonly key: string; readonly transport: Transporter }>();
  const transportFor = (name: string, mail: TenantMailBody): Transporter => {
    const smtp = mail.smtp;
    let pass: string | undefined;
    if (smtp.passwordEnv !== undefined) {
      pass = env[smtp.passwordEnv];
      if (pass === undefined || pass === '') {
        throw new MailNotConfigured(`tenant ${name}'s mail settings name ${smtp.passwordEnv} for the SMTP password, which is not set in the server's environment: set it where the server runs (nothing was sent)`);
      }
    }
    const key = JSON.stringify([smtp, createHash('sha256').update(pass ?? '').digest('base64url')]);
    const held = tenants.get(name);
    if (held?.key === key) return held.transport;
    held?.transport.close();
    const transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtpPortOf(smtp),
      secure: smtp.security === 'tls',
      requireTLS: smtp.security === 'starttls',
      ignoreTLS: smtp.security === 'none',
      ...(smtp.username === undefined ? {} : { auth: { user: smtp.username, ...(pass === undefined ? {} : { pass }) } }),
      ...TIMEOUTS,
    });
    tenants.set(name, { key, transport });
    return transport;
  };
  const describeSmtp = (s: TenantSmtpBody) => `${s.security === 'tls' ? 'smtps' : 'smtp'}://${s.host}:${smtpPortOf(s)}`;
  return {
    describe: own?.describe ?? 'none',
    describeFor: (t) => (t.mail !== undefined ? describeSmtp(t.mail.smtp) : own?.describe ?? 'none'),
    async send(t, m) {
      if (t.mail !== undefined) {
        await transportFor(t.name, t.mail).sendMail(mailOf(t.mail.from, m));
        return;
      }
      if (own === undefined) {
        throw new MailNotConfigured(`tenant ${t.name} has no mail settings and this server has no mail of its own: declare the tenant's mail (from, smtp) in the model, or start the server with --smtp-url (nothing was sent)`);
      }
      await own.send(m);
    },
    close() {
      own?.close();
      for (const t of tenants.values()) t.transport.close();
      tenants.clear();
    },
  };
}
