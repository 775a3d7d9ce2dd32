/**
 * Login steps ("factors"), pluggable. A tenant's login policy is a sequence of steps; each step
 * offers one or more factors to choose from. The first step must identify the user (password,
 * an emailed code, or a passkey); later steps (TOTP, emailed code) confirm the identified user.
 * Adding a factor is one factor-*.ts file, listed here and in a policy: the interaction routes
 * only drive the sequence.
 */
import type { TenantBody } from '../../contract/index.ts';
import { otpFactor } from './factor-otp.ts';
import { passkeyFactor } from './factor-passkey.ts';
import { passwordFactor } from './factor-password.ts';
import { totpFactor } from './factor-totp.ts';
import type { LoginFactor, LoginPolicy } from './types.ts';

export type { FactorContext, FactorOutcome, LoginFactor, LoginPolicy } from './types.ts';
export { INVALID_CREDENTIALS } from './types.ts';
export { passwordFactor };

export const FACTORS: ReadonlyMap<string, LoginFactor> = new Map(
  [passwordFactor, otpFactor, passkeyFactor, totpFactor].map((f) => [f.id, f]),
);

/** Order on the page: the most familiar first. */
const FIRST = ['password', 'otp', 'passkey'] as const;
const SECOND = ['totp', 'otp'] as const;

/**
 * The tenant's policy (TenantBody.login; absent = password only). With requireSecondFactor the
 * second step offers totp and otp; routes.ts skips it after a passkey (two factors by itself) and
 * never offers the factor that made the first step.
 */
export function policyFor(tenant: TenantBody): LoginPolicy {
  const methods: readonly string[] = tenant.login?.methods ?? ['password'];
  const allowed = (m: string) => methods.includes(m);
  if (!tenant.login?.requireSecondFactor) return { steps: [FIRST.filter(allowed)], offerPasskey: allowed('passkey') };
  const second = SECOND.filter(allowed);
  // A first step is offered only when some other factor can follow it (schema/checks.ts makes
  // sure one can): with [password, otp] the code is the second step, never the first.
  const first = FIRST.filter((m) => allowed(m) && (m === 'passkey' || second.some((s) => s !== m)));
  return { steps: [first, second], offerPasskey: allowed('passkey') };
}
