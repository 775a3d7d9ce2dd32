/**
 * Login steps ("factors"), pluggable. A tenant's login policy is a sequence of steps; each step
 * offers one or more factors to choose from. The first step must identify the user (password
 * today; a passkey can too); later steps (TOTP, email OTP, WebAuthn) verify the identified user.
 * Adding a factor is adding one LoginFactor here and listing it in a policy: the interaction
 * routes only drive the sequence.
 */
import { verifyPassword } from '../_crypto.ts';
import type { Storage, UserRecord } from '../storage/types.ts';
import { escapeHtml } from './pages.ts';

export interface FactorContext {
  readonly storage: Storage;
  readonly tenant: string;
  /** The user identified by an earlier step; undefined in the first step. */
  readonly user: UserRecord | undefined;
}

export type FactorOutcome =
  | { readonly ok: true; readonly user: UserRecord }
  /** Messages never say which part was wrong or whether the account exists (no enumeration). */
  | { readonly ok: false; readonly message: string };

export interface LoginFactor {
  /** Stable id, used in form field `factor` and in policies: `password`, `totp`, `otp`, `webauthn`. */
  readonly id: string;
  readonly label: string;
  /** Whether it can be a first step (identifies the user) rather than only confirm one. */
  readonly identifies: boolean;
  /** Form fields (already-escaped HTML); `previous` holds non-secret values to refill. */
  renderFields(ctx: FactorContext, previous: Readonly<Record<string, string>>): string;
  verify(ctx: FactorContext, form: Readonly<Record<string, string>>): Promise<FactorOutcome>;
}

/** Ordered steps; each step lists the factors a person may choose between. */
export interface LoginPolicy {
  readonly steps: readonly (readonly string[])[];
}

export const INVALID_CREDENTIALS = 'Invalid email or password.';

export const passwordFactor: LoginFactor = {
  id: 'password',
  label: 'Password',
  identifies: true,
  renderFields: (_ctx, previous) => `
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(previous.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>`,
  async verify(ctx, form) {
    const email = (form.email ?? '').trim();
    const password = form.password ?? '';
    const user = email === '' ? undefined : await ctx.storage.getUserByEmail(ctx.tenant, email);
    // Unknown users, disabled users and wrong passwords cost the same argon2 verification and get
    // the same answer, so neither timing nor wording tells which accounts exist.
    const ok = await verifyPassword(user?.passwordHash ?? undefined, password);
    if (!ok || user === undefined || user.body.disabled) return { ok: false, message: INVALID_CREDENTIALS };
    return { ok: true, user };
  },
};

export const FACTORS: ReadonlyMap<string, LoginFactor> = new Map([[passwordFactor.id, passwordFactor]]);

/** Today every tenant signs in with a password; per-tenant policies come with more factors. */
export function policyFor(_tenant: string): LoginPolicy {
  return { steps: [['password']] };
}
