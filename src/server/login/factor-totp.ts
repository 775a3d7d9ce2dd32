/**
 * TOTP (RFC 6238, authenticator apps) with otplib: a second step only. A user without a secret
 * enrols on the spot: the page shows a QR code and the key (only during this setup, bound to the
 * interaction), and the first correct code confirms it. Secrets are sealed with the master key;
 * each accepted time step is recorded, so a code (or any earlier one) never works twice.
 */
import { generateSecret, generateURI, verify } from 'otplib';
import QRCode from 'qrcode';
import { escapeHtml } from './pages.ts';
import type { FactorContext, LoginFactor } from './types.ts';

/** ±1 time step (30 s) for clock drift between phone and server, as RFC 6238 §5.2 suggests. */
const TOLERANCE_SECONDS = 30;
const ENROLMENT_MODEL = 'TotpEnrolment';

/** The associated data an enrolled TOTP secret is sealed with (tenant and user). */
export const totpSealedFor = (tenant: string, userId: string): string => `totp:${tenant}:${userId}`;
const sealedFor = (ctx: FactorContext, userId: string) => totpSealedFor(ctx.tenant, userId);
const pendingFor = (ctx: FactorContext, userId: string) => `totp-pending:${ctx.tenant}:${ctx.uid}:${userId}`;

/** The secret being set up in this interaction, made on first display. */
async function pendingSecret(ctx: FactorContext, userId: string, create: boolean): Promise<string | undefined> {
  const p = await ctx.storage.grants.find(ctx.tenant, ENROLMENT_MODEL, ctx.uid);
  if (p !== undefined && p.userId === userId && typeof p.sealed === 'string') return ctx.master.unseal(p.sealed, pendingFor(ctx, userId));
  if (!create) return undefined;
  const secret = generateSecret();
  await ctx.storage.grants.upsert(ctx.tenant, ENROLMENT_MODEL, ctx.uid, { userId, sealed: ctx.master.seal(secret, pendingFor(ctx, userId)) }, 3600);
  return secret;
}

const codeField = (hint: string) => `
<label for="totp-code">${escapeHtml(hint)}</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" pattern="[0-9 ]{6,8}" autocomplete="one-time-code" required autofocus>`;

/** The time step a code matches for `secret` (±1 step), or undefined: one check for sign-in and for the account page. */
export async function totpStep(secret: string, code: string): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const r = await verify({ strategy: 'totp', secret, token: code, epochTolerance: TOLERANCE_SECONDS });
  // The matched time step (TOTP results carry it): what the replay guard records.
  return r.valid && 'timeStep' in r ? r.timeStep : undefined;
}

export const totpFactor: LoginFactor = {
  id: 'totp',
  label: 'Authenticator app',
  identifies: false,
  multiFactor: false,
  accountOf: () => undefined,
  async renderFields(ctx) {
    const user = ctx.user;
    if (user === undefined) return '<p>An authenticator app code confirms your identity after you sign in.</p>';
    if (await ctx.storage.users.getTotp(ctx.tenant, user.id)) {
      return `${codeField('Code from your authenticator app (6 digits)')}
<button type="submit">Verify code</button>`;
    }
    const secret = (await pendingSecret(ctx, user.id, true))!;
    const uri = generateURI({ issuer: ctx.tenantDisplayName, label: user.body.email, secret });
    const qr = await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 1, width: 200 });
    return `<p>Set up an authenticator app: scan this QR code with it, or type the key below. The key is shown only during this setup.</p>
<img src="${escapeHtml(qr)}" width="200" height="200" alt="QR code that adds ${escapeHtml(user.body.email)} at ${escapeHtml(ctx.tenantDisplayName)} to an authenticator app">
<p>Key: <code id="totp-secret">${escapeHtml(secret)}</code></p>
<input type="hidden" name="enrol" value="1">
${codeField('Code the app now shows (6 digits), to finish setup')}
<button type="submit">Finish setup</button>`;
  },
  async verify(ctx, form) {
    const user = ctx.user;
    if (user === undefined) return { ok: false, message: 'Sign in first.', reason: 'no user' };
    const code = (form.code ?? '').replace(/\s+/g, '');
    const enrolled = await ctx.storage.users.getTotp(ctx.tenant, user.id);
    if (enrolled === undefined) {
      const secret = await pendingSecret(ctx, user.id, false);
      if (secret === undefined) return { ok: false, message: 'The setup expired. Scan the new QR code and enter its code.', reason: 'no enrolment' };
      const step = await totpStep(secret, code);
      if (step === undefined) return { ok: false, message: 'That code is not right. Check that the app shows the key above and that its clock is correct, then try again.', reason: 'wrong totp (enrolment)' };
      await ctx.storage.users.putTotp(ctx.tenant, user.id, ctx.master.seal(secret, sealedFor(ctx, user.id)), step);
      await ctx.storage.grants.destroy(ctx.tenant, ENROLMENT_MODEL, ctx.uid);
      ctx.settings.audit({ audit: 'totp.enrolled', tenant: ctx.tenant, user: user.id, factor: 'totp' });
      return { ok: true, user };
    }
    const step = await totpStep(ctx.master.unseal(enrolled.sealedSecret, sealedFor(ctx, user.id)), code);
    if (step === undefined) return { ok: false, message: 'That code is not right. Enter the code your authenticator app shows now.', reason: 'wrong totp' };
    if (!(await ctx.storage.users.claimTotpStep(ctx.tenant, user.id, step))) {
      return { ok: false, message: 'That code was already used. Wait for the app to show a new code, then enter it.', reason: 'replayed totp' };
    }
    return { ok: true, user };
  },
};
