/**
 * A tenant's sign-in policy and its rules, run by the model loader and the admin API alike, so a
 * policy that would lock everyone out never reaches a server by any path.
 */
import { z } from 'zod';
import { problem, type Path, type Problem } from './problems.ts';

/**
 * Sign-in methods. `password`, `otp` (a one-time code sent to the user's email) and `passkey`
 * (WebAuthn, with user verification) identify a person; `totp` (authenticator app) only confirms
 * a person another method identified, so it needs `requireSecondFactor`.
 */
export const LOGIN_METHODS = ['password', 'otp', 'passkey', 'totp'] as const;
export type LoginMethod = (typeof LOGIN_METHODS)[number];

/** A tenant's sign-in policy. Absent from a tenant: password only, as if `{methods: [password]}`. */
export const LoginPolicyBody = z.strictObject({
  /** Methods this tenant's people may use, each at most once. Default: [password]. */
  methods: z.array(z.enum(LOGIN_METHODS)).min(1).default(['password']),
  /**
   * Whether a second, different factor must follow `password` or `otp`: `totp`, or `otp` after a
   * password. A passkey with user verification is two factors by itself. Default: false.
   */
  requireSecondFactor: z.boolean().default(false),
});
export type LoginPolicyBody = z.infer<typeof LoginPolicyBody>;

/** Rules of a policy beyond its schema; `lp` is where the policy sits. */
export function checkLoginPolicy(policy: LoginPolicyBody, lp: Path): Problem[] {
  const out: Problem[] = [];
  const mp: Path = [...lp, 'methods'];
  const seen = new Set<string>();
  policy.methods.forEach((m, i) => {
    if (seen.has(m)) out.push(problem('duplicate-entry', [...mp, i], `login method '${m}' is listed twice`));
    seen.add(m);
  });
  const has = (m: string) => seen.has(m);
  if (!has('password') && !has('otp') && !has('passkey')) {
    out.push(problem('login-no-first-factor', mp, 'login methods must include password, otp or passkey: totp only confirms a person another method identified'));
  }
  if (policy.requireSecondFactor) {
    // Each identifying method other than a passkey needs a different factor to follow it.
    if (has('password') && !has('totp') && !has('otp')) {
      out.push(problem('login-no-second-factor', [...lp, 'requireSecondFactor'], 'a second factor is required, but nothing can follow a password: allow totp or otp as well (a passkey alone counts as two factors)'));
    }
    // otp can follow a password; it can start only when totp can follow it.
    if (has('otp') && !has('totp') && !has('password')) {
      out.push(problem('login-no-second-factor', [...lp, 'requireSecondFactor'], 'a second factor is required, but nothing can follow an emailed code (otp): allow totp as well, or password for the code to follow'));
    }
  } else if (has('totp')) {
    out.push(problem('login-unused-method', mp, "totp only confirms a person after another method: set 'requireSecondFactor: true' or remove totp"));
  }
  return out;
}
