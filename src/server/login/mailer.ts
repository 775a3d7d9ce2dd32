/**
 * Mail delivery for emailed sign-in codes, pluggable: SMTP through nodemailer for real use, or a
 * file outbox (one RFC 5322 .eml file per message, built by nodemailer too) for local use and
 * tests. Sending never blocks or fails a sign-in answer: see factor-otp.ts.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { randomId } from '../_crypto.ts';

export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  /** The same message as HTML (mail-templates.ts); sent as multipart/alternative with the text. */
  readonly html?: string;
}

export interface Mailer {
  /** Where mail goes, for the start-up notice: `smtp://host` or the outbox directory. */
  readonly describe: string;
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailerConfig {
  readonly smtpUrl: string | undefined;
  readonly outboxDir: string;
  readonly from: string;
  readonly log: (line: string) => void;
}

export function createMailer(c: MailerConfig): Mailer {
  if (c.smtpUrl !== undefined && c.smtpUrl !== '') {
    const transport = nodemailer.createTransport(c.smtpUrl);
    const u = new URL(c.smtpUrl);
    return {
      // Never the credentials of the URL.
      describe: `${u.protocol}//${u.host}`,
      async send(m) {
        await transport.sendMail({ from: c.from, to: m.to, subject: m.subject, text: m.text, ...(m.html === undefined ? {} : { html: m.html }) });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    describe: c.outboxDir,
    async send(m) {
      const info = await transport.sendMail({ from: c.from, to: m.to, subject: m.subject, text: m.text, ...(m.html === undefined ? {} : { html: m.html }) });
      // Codes are secrets: only the server's user may read the outbox. Written under a temporary
      // name and renamed, so a reader never sees half a message.
      mkdirSync(c.outboxDir, { recursive: true, mode: 0o700 });
      const name = `${Date.now()}-${randomId(6)}.eml`;
      const tmp = join(c.outboxDir, `.${name}.tmp`);
      writeFileSync(tmp, info.message as Buffer, { mode: 0o600 });
      renameSync(tmp, join(c.outboxDir, name));
    },
    close: () => transport.close(),
  };
}
