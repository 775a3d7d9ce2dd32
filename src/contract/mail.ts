/**
 * A tenant's outgoing mail: the sender its people see and the SMTP server that carries its codes,
 * recovery links and invitations. Declared in the model (`tenants[].mail`) and held by the server
 * with the tenant (PUT /admin/v1/tenants/{tenant}); one schema and one rule for both doors.
 *
 * The SMTP password is never in Git, in the admin API, in the database or in the event log: the
 * tenant names an environment variable of the server (`passwordEnv`), which the server reads when it
 * sends. Only names that start with IDFORGE_SMTP_ may be named, so a tenant's settings can never make
 * the server present another of its secrets (its master key, a database URL) to a mail server.
 */
import { z } from 'zod';
import { isLocalHost } from './hosts.ts';

/** How the connection is protected: implicit TLS (port 465), STARTTLS required (587), or none (loopback only). */
export const SMTP_SECURITY = ['tls', 'starttls', 'none'] as const;
export type SmtpSecurity = (typeof SMTP_SECURITY)[number];

/** The port each security mode listens on by convention (RFC 8314 for 465, RFC 6409 for 587). */
export const SMTP_DEFAULT_PORT: Readonly<Record<SmtpSecurity, number>> = { tls: 465, starttls: 587, none: 25 };

/** Environment variables a tenant may name for its SMTP password. */
export const SMTP_PASSWORD_ENV = /^IDFORGE_SMTP_[A-Z0-9_]{1,100}$/;

/** A mailbox as people read it: `Acme sign-in <no-reply@acme.example>` or a bare address; one line, no list. */
const MAILBOX = /^(?:[^<>\r\n",;]{1,100} )?<[^\s<>@",;]{1,64}@[^\s<>@",;]{1,253}>$|^[^\s<>@",;]{1,64}@[^\s<>@",;]{1,253}$/;

const SmtpHost = z.string().min(1).max(253)
  .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$|^\[?[0-9A-Fa-f:.]+\]?$/, {
    error: 'must be a host name or an IP address, without scheme or port (e.g. smtp.example.com)',
  });

export const TenantSmtpBody = z.strictObject({
  /** The SMTP server's host name. */
  host: SmtpHost,
  /** Default: 465 for tls, 587 for starttls, 25 for none. */
  port: z.int().min(1).max(65535).optional(),
  /** `tls` (implicit TLS), `starttls` (upgrade required; the default), or `none`, allowed only for a loopback host. */
  security: z.enum(SMTP_SECURITY).default('starttls'),
  /** User name for SMTP AUTH. Absent: no authentication. */
  username: z.string().min(1).max(256).optional(),
  /** Environment variable of the server that holds the password, named IDFORGE_SMTP_<something>. */
  passwordEnv: z.string().regex(SMTP_PASSWORD_ENV, { error: 'must be an environment variable named IDFORGE_SMTP_<NAME> (capitals, digits, _), e.g. IDFORGE_SMTP_ACME_PASSWORD' }).optional(),
});
export type TenantSmtpBody = z.infer<typeof TenantSmtpBody>;

export const TenantMailBody = z.strictObject({
  /** The sender people see, e.g. `Acme sign-in <no-reply@acme.example>`. */
  from: z.string().max(400).regex(MAILBOX, { error: 'must be one mailbox, e.g. no-reply@acme.example or "Acme <no-reply@acme.example>"' }),
  smtp: TenantSmtpBody,
}).superRefine((m, ctx) => {
  if (m.smtp.security === 'none' && !isLocalHost(m.smtp.host)) {
    ctx.addIssue({ code: 'custom', path: ['smtp', 'security'], message: `'none' sends mail and any password in clear: allowed only for a loopback host (localhost, 127.0.0.1, ::1), not ${m.smtp.host}; use tls or starttls` });
  }
  if (m.smtp.passwordEnv !== undefined && m.smtp.username === undefined) {
    ctx.addIssue({ code: 'custom', path: ['smtp', 'passwordEnv'], message: 'a password needs a username: set smtp.username too' });
  }
});
export type TenantMailBody = z.infer<typeof TenantMailBody>;

/** The port a tenant's SMTP settings reach. */
export const smtpPortOf = (s: TenantSmtpBody): number => s.port ?? SMTP_DEFAULT_PORT[s.security];
