/**
 * What a login factor is and what it gets. The interaction routes (routes.ts) drive a tenant's
 * policy step by step; each factor only renders its fields and verifies what came back.
 */
import type { TenantMailBody } from '../../contract/index.ts';
import type { MasterKey } from '../_crypto.ts';
import type { Storage, UserRecord } from '../storage/types.ts';
import type { LoginSettings } from './options.ts';

export interface FactorContext {
  readonly storage: Storage;
  readonly master: MasterKey;
  readonly settings: LoginSettings;
  readonly tenant: string;
  readonly tenantDisplayName: string;
  /** The tenant's own mail settings, when it declares them (login/mailer.ts). */
  readonly tenantMail: TenantMailBody | undefined;
  /** The interaction: challenges and enrolments in progress are bound to it. */
  readonly uid: string;
  /** The tenant's origin (WebAuthn expected origin) and host name (relying party id). */
  readonly origin: string;
  readonly rpId: string;
  /** The user identified by an earlier step; undefined in the first step. */
  readonly user: UserRecord | undefined;
}

export type FactorOutcome =
  | { readonly ok: true; readonly user: UserRecord }
  /** A failure: counted by the guessing defence. Messages never tell whether an account exists. */
  | { readonly ok: false; readonly message: string; readonly reason: string }
  /** Not a failure, not done: e.g. a code was sent; the step is shown again with `notice`. */
  | { readonly ok: 'pending'; readonly notice: string; readonly previous: Readonly<Record<string, string>> };

export interface LoginFactor {
  /** Stable id, used in form field `factor` and in policies: `password`, `totp`, `otp`, `passkey`. */
  readonly id: string;
  /** What the person is asked for, as a heading: "Password", "Authenticator app", ... */
  readonly label: string;
  /** Whether it can be a first step (identifies the user) rather than only confirm one. */
  readonly identifies: boolean;
  /** Whether it is two factors by itself (a passkey with user verification): no step follows it. */
  readonly multiFactor: boolean;
  /**
   * The account a first-step attempt is about, as typed (lowercased email), for the per-account
   * guessing defence; undefined when the form names none (a passkey).
   */
  accountOf(form: Readonly<Record<string, string>>): string | undefined;
  /** Form fields and buttons (already-escaped HTML); `previous` holds non-secret values to refill. */
  renderFields(ctx: FactorContext, previous: Readonly<Record<string, string>>): Promise<string>;
  verify(ctx: FactorContext, form: Readonly<Record<string, string>>): Promise<FactorOutcome>;
}

/** Ordered steps; each step lists the factors a person may choose between. */
export interface LoginPolicy {
  readonly steps: readonly (readonly string[])[];
  /** Whether people are offered to register a passkey once signed in. */
  readonly offerPasskey: boolean;
}

export const INVALID_CREDENTIALS = 'Invalid email or password.';

export const normalizeEmail = (s: string | undefined) => (s ?? '').trim().toLowerCase();
