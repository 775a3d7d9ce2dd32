/**
 * A real SMTP server on loopback for tests that follow mail: `smtp-server` (nodemailer's maintained
 * server, from the npm registry) accepts every message, and `mailparser` reads each one back into
 * its parts (text, HTML, headers), as a mail client would. The server under test talks to it with its
 * ordinary SMTP transport (`--smtp-url smtp://127.0.0.1:<port>`); nothing in the server is stubbed.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  readonly to: readonly string[];
  readonly from: string;
  /** The user the client authenticated as (AUTH PLAIN/LOGIN), when the sink asks for it. */
  readonly user?: string;
  /** The From header as sent. */
  readonly fromHeader: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /** The message as it arrived (RFC 5322). */
  readonly raw: string;
}

export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, for the server's smtpUrl. */
  readonly url: string;
  readonly messages: readonly ReceivedMail[];
  /** The first message to `to` after the first `skip` ones that match, waiting for it (delivery is not awaited by the server). */
  next(to: string, options?: { readonly after?: number; readonly timeoutMs?: number }): Promise<ReceivedMail>;
  /** How many messages reached `to` so far. */
  count(to: string): number;
  close(): Promise<void>;
}

export interface SmtpSinkOptions {
  /** Ask for AUTH (PLAIN or LOGIN, allowed without TLS: loopback) and take only this user and password. */
  readonly auth?: { readonly user: string; readonly pass: string };
}

export async function smtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const auth = options.auth;
  const server = new SMTPServer({
    // Loopback only, no TLS: a test mail server, reached by nothing else. Authentication only when asked.
    secure: false,
    authOptional: auth === undefined,
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    disabledCommands: auth === undefined ? ['STARTTLS', 'AUTH'] : ['STARTTLS'],
    onAuth(a, _session, callback) {
      if (auth !== undefined && a.username === auth.user && a.password === auth.pass) callback(null, { user: a.username });
      else callback(new Error('Invalid username or password'));
    },
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then((m) => {
          messages.push({
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            from: typeof session.envelope.mailFrom === 'object' && session.envelope.mailFrom !== null ? session.envelope.mailFrom.address : '',
            ...(typeof session.user === 'string' ? { user: session.user } : {}),
            fromHeader: m.from?.text ?? '',
            subject: m.subject ?? '',
            text: m.text ?? '',
            html: typeof m.html === 'string' ? m.html : '',
            raw,
          });
          callback();
        }, (err: Error) => callback(err));
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const to = (address: string) => messages.filter((m) => m.to.includes(address.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    count: (address) => to(address).length,
    async next(address, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 10_000);
      for (;;) {
        const found = to(address)[options.after ?? 0];
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error(`no mail to ${address} (after ${options.after ?? 0}) within the time; got ${messages.length} for others`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The first link in a message's text whose path starts with `path`. */
export function linkIn(mail: ReceivedMail, path: string): string {
  const url = mail.text.match(/https?:\/\/\S+/g)?.find((u) => new URL(u).pathname.startsWith(path));
  if (url === undefined) throw new Error(`no ${path} link in:\n${mail.text}`);
  return url;
}
