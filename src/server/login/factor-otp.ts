/**
 * A one-time code sent to the user's email: 6 digits, short-lived (settings.otpLifetimeSeconds),
 * single use, void after settings.otpMaxAttempts wrong entries, at most one mail per 30 s per
 * user; only its HMAC is stored. It can
 * identify a person (first step: email, then code) or confirm one (after a password).
 *
 * "Send" answers the same whether or not the account exists, and delivery is not awaited, so
 * neither wording nor timing (an SMTP round trip) tells which addresses have accounts.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { UserRecord } from '../storage/types.ts';
import { duration, signInCodeMail } from './mail-templates.ts';
import { escapeHtml } from './pages.ts';
import { normalizeEmail, type FactorContext, type LoginFactor } from './types.ts';

export const OTP_INVALID = 'That code is not valid: it may be mistyped, already used or expired. Ask for a new code.';

const hash = (ctx: FactorContext, userId: string, code: string) =>
  createHmac('sha256', ctx.master.derive('login-otp')).update(`${ctx.tenant}\0${userId}\0${code}`).digest('base64url');

const minutes = duration;

/** A new code is mailed at most this often per user, so the button cannot flood a mailbox. */
export const OTP_RESEND_INTERVAL_MS = 30_000;

async function send(ctx: FactorContext, user: UserRecord): Promise<void> {
  const outstanding = await ctx.storage.users.getOtp(ctx.tenant, user.id);
  const issuedAt = outstanding === undefined ? 0 : outstanding.expiresAtMs - ctx.settings.otpLifetimeSeconds * 1000;
  // Too soon: the code already sent stays valid; the page says the same as after a send.
  if (Date.now() - issuedAt < OTP_RESEND_INTERVAL_MS) return;
  const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
  await ctx.storage.users.putOtp(ctx.tenant, user.id, hash(ctx, user.id, code), Date.now() + ctx.settings.otpLifetimeSeconds * 1000);
  ctx.settings.mailer
    .send({ name: ctx.tenant, mail: ctx.tenantMail }, { to: user.body.email, ...signInCodeMail(ctx.tenantDisplayName, code, ctx.settings.otpLifetimeSeconds) })
    .catch((err: unknown) => ctx.settings.audit({ audit: 'mail.failure', tenant: ctx.tenant, user: user.id, error: (err as Error).message }));
}

export const otpFactor: LoginFactor = {
  id: 'otp',
  label: 'Code by email',
  identifies: true,
  multiFactor: false,
  accountOf: (form) => normalizeEmail(form.email) || undefined,
  async renderFields(ctx, previous) {
    const known = ctx.user !== undefined;
    const email = known ? ctx.user!.body.email : previous.email ?? '';
    const who = known
      ? `<p>We can email a sign-in code to ${escapeHtml(email)}.</p>`
      : `<label for="otp-email">Email</label>
<input id="otp-email" name="email" type="email" autocomplete="username" required value="${escapeHtml(email)}">`;
    const codeField = `<label for="otp-code">Code from the email (6 digits)</label>
<input id="otp-code" name="code" type="text" inputmode="numeric" pattern="[0-9 ]{6,8}" autocomplete="one-time-code"${previous.otpSent === '1' ? ' autofocus' : ''}>`;
    // The first submit button is the one Enter presses: "send" before a code was sent, "verify" after.
    if (previous.otpSent !== '1') {
      return `${who}
<button type="submit" name="action" value="send">Email me a code</button>
<p class="detail">Already have a code from us?</p>
${codeField}
<button type="submit" name="action" value="verify" class="secondary">Sign in with the code</button>`;
    }
    return `${known ? '' : `<input type="hidden" name="email" value="${escapeHtml(email)}">`}
${codeField}
<button type="submit" name="action" value="verify">Sign in with the code</button>
<button type="submit" name="action" value="send" class="secondary">Send a new code</button>`;
  },
  async verify(ctx, form) {
    const email = ctx.user?.body.email ?? (form.email ?? '').trim();
    const user = ctx.user ?? (email === '' ? undefined : await ctx.storage.users.getByEmail(ctx.tenant, email));
    const usable = user !== undefined && !user.body.disabled;
    if (form.action === 'send') {
      if (email === '') return { ok: false, message: 'Enter your email address.', reason: 'no email' };
      if (usable) await send(ctx, user);
      return {
        ok: 'pending',
        notice: ctx.user !== undefined
          ? `We sent a code to ${email}. It expires in ${minutes(ctx.settings.otpLifetimeSeconds)}.`
          : `If ${email} has an account here, we sent it a code. It expires in ${minutes(ctx.settings.otpLifetimeSeconds)}.`,
        previous: { email, otpSent: '1' },
      };
    }
    const code = (form.code ?? '').replace(/\s+/g, '');
    const fail = { ok: false as const, message: OTP_INVALID };
    if (!usable) return { ...fail, reason: 'unknown account' };
    const rec = await ctx.storage.users.getOtp(ctx.tenant, user.id);
    if (rec === undefined) return { ...fail, reason: 'no code outstanding (used or never sent)' };
    if (rec.expiresAtMs <= Date.now()) {
      await ctx.storage.users.deleteOtp(ctx.tenant, user.id, rec.codeHash);
      return { ...fail, reason: 'expired code' };
    }
    const given = Buffer.from(hash(ctx, user.id, code));
    const stored = Buffer.from(rec.codeHash);
    if (!/^\d{6}$/.test(code) || given.length !== stored.length || !timingSafeEqual(given, stored)) {
      const attempts = await ctx.storage.users.countOtpAttempt(ctx.tenant, user.id);
      if (attempts >= ctx.settings.otpMaxAttempts) await ctx.storage.users.deleteOtp(ctx.tenant, user.id, rec.codeHash);
      return { ...fail, reason: attempts >= ctx.settings.otpMaxAttempts ? 'wrong code (code voided)' : 'wrong code' };
    }
    // Whoever deletes the row wins: two concurrent submissions of one code cannot both sign in.
    if (!(await ctx.storage.users.deleteOtp(ctx.tenant, user.id, rec.codeHash))) return { ...fail, reason: 'code used concurrently' };
    return { ok: true, user };
  },
};
