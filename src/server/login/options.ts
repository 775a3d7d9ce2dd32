/**
 * Login settings: guessing defence, emailed codes, mail delivery. Defaults documented here, one
 * block per key; `idforge serve` exposes each as a flag (see src/server/README.md).
 */
import { join } from 'node:path';
import { isLocalHost } from '../../contract/index.ts';
import { createMailer, type Mailer } from './mailer.ts';

export interface LoginOptions {
  /**
   * Consecutive failed attempts on one account (the email typed, whether or not it exists) that
   * lock it. Default 5. Every factor counts: password, TOTP, emailed code, passkey.
   */
  readonly lockoutThreshold?: number;
  /** How long a lockout lasts. Default 900 s (15 minutes). */
  readonly lockoutSeconds?: number;
  /**
   * How long a failure counts towards backoff and lockout; a failure-free spell this long starts
   * the count afresh. Default 900 s (15 minutes).
   */
  readonly failureWindowSeconds?: number;
  /**
   * Failed attempts from one client address (any accounts) that lock the address. Default 50:
   * high enough for an office behind one NAT, low enough to stop spraying one password over
   * many accounts.
   */
  readonly addressLockoutThreshold?: number;
  /**
   * Backoff: after the 2nd consecutive failure on an account (10th on an address) the next try
   * must wait this long, doubling with each further failure, at most 60 s. Default 1000 ms.
   */
  readonly backoffBaseMs?: number;
  /** Lifetime of an emailed sign-in code. Default 600 s (10 minutes). */
  readonly otpLifetimeSeconds?: number;
  /** Wrong entries that void an emailed code. Default 5. */
  readonly otpMaxAttempts?: number;
  /**
   * The server's own SMTP relay, e.g. `smtps://user:pass@mail.example.com` (nodemailer), for tenants
   * without mail settings of their own. When unset, their mail goes to the file outbox.
   */
  readonly smtpUrl?: string;
  /** Directory that receives one .eml file per message when no SMTP URL is set. Default `<dataDir>/outbox` on a localhost server; elsewhere none. */
  readonly mailOutbox?: string;
  /** Sender address. Default `idforge <no-reply@<baseDomain>>`. */
  readonly mailFrom?: string;
}

export const LOGIN_DEFAULTS = {
  lockoutThreshold: 5,
  lockoutSeconds: 15 * 60,
  failureWindowSeconds: 15 * 60,
  addressLockoutThreshold: 50,
  backoffBaseMs: 1000,
  /** Failures that cost nothing before backoff starts: a typo or two must not slow anyone down. */
  accountFreeFailures: 2,
  addressFreeFailures: 10,
  backoffMaxMs: 60_000,
  otpLifetimeSeconds: 10 * 60,
  otpMaxAttempts: 5,
  /**
   * A mailed recovery link ("Forgot password?") works once within 30 minutes: long enough to reach a
   * mailbox and act, short enough that an old message in a mailbox opens nothing (OWASP's Forgot
   * Password Cheat Sheet: short-lived, single use).
   */
  recoveryLifetimeSeconds: 30 * 60,
  /** An invitation link works once within 7 days: people do not read mail from one day to the next. */
  invitationLifetimeSeconds: 7 * 86_400,
  /** At most one recovery or invitation mail per person and kind this often, so neither form nor API can flood a mailbox. */
  passwordLinkResendSeconds: 30,
} as const;

export interface LoginSettings {
  readonly lockoutThreshold: number;
  readonly lockoutSeconds: number;
  readonly failureWindowSeconds: number;
  readonly addressLockoutThreshold: number;
  readonly backoffBaseMs: number;
  readonly otpLifetimeSeconds: number;
  readonly otpMaxAttempts: number;
  readonly mailer: Mailer;
  /** One structured audit line (JSON) to the server log. */
  readonly audit: (event: Readonly<Record<string, unknown>>) => void;
}

function positive(name: string, v: number | undefined, fallback: number, allowZero = false): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) throw new RangeError(`login option ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${v}`);
  return v;
}

export function loginSettings(o: LoginOptions, dataDir: string, baseDomain: string, log: (line: string) => void): LoginSettings {
  return {
    lockoutThreshold: positive('lockoutThreshold', o.lockoutThreshold, LOGIN_DEFAULTS.lockoutThreshold),
    lockoutSeconds: positive('lockoutSeconds', o.lockoutSeconds, LOGIN_DEFAULTS.lockoutSeconds),
    failureWindowSeconds: positive('failureWindowSeconds', o.failureWindowSeconds, LOGIN_DEFAULTS.failureWindowSeconds),
    addressLockoutThreshold: positive('addressLockoutThreshold', o.addressLockoutThreshold, LOGIN_DEFAULTS.addressLockoutThreshold),
    backoffBaseMs: positive('backoffBaseMs', o.backoffBaseMs, LOGIN_DEFAULTS.backoffBaseMs, true),
    otpLifetimeSeconds: positive('otpLifetimeSeconds', o.otpLifetimeSeconds, LOGIN_DEFAULTS.otpLifetimeSeconds),
    otpMaxAttempts: positive('otpMaxAttempts', o.otpMaxAttempts, LOGIN_DEFAULTS.otpMaxAttempts),
    mailer: createMailer({
      smtpUrl: o.smtpUrl,
      // The outbox by default only where nobody else could read the mail: a localhost server.
      outboxDir: o.mailOutbox ?? (isLocalHost(baseDomain) ? join(dataDir, 'outbox') : undefined),
      from: o.mailFrom ?? `idforge <no-reply@${baseDomain}>`,
      log,
    }),
    audit: (event) => log(JSON.stringify({ time: new Date().toISOString(), ...event })),
  };
}
