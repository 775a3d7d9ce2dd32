/**
 * A tenant's password policy and the one rule every door that sets a password runs: the model's
 * initial passwords (through the admin API's PUT and batch), SCIM's `password`, recovery and
 * invitation links, and the account page. Same function, same words, same paths.
 *
 * NIST SP 800-63B (rev. 4, §3.1.1.2) is the source: a minimum length, a blocklist of commonly used
 * and compromised passwords, context-specific words, and NO composition rules (no "one digit, one
 * symbol") and no periodic expiry. Length counts Unicode code points, as the standard asks.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { problem, type Path, type Problem } from './problems.ts';

/**
 * The longest password accepted, in code points. NIST asks verifiers to permit at least 64; argon2
 * hashes any length, but a bound keeps a hostile 1 MB "password" from costing a megabyte of work.
 */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * The shortest minimum a tenant may set: 8, NIST SP 800-63B's floor for a password that is one of
 * several factors. The default is 8 too, so a tenant without a policy keeps what it had. NIST rev. 4
 * asks 15 when the password is the only factor (no `requireSecondFactor`): such a tenant should say
 * `passwordPolicy: {minLength: 15}`; the default stays 8 so that existing initial passwords and the
 * people who hold them are not refused by an upgrade.
 */
export const MIN_PASSWORD_LENGTH = 8;

export const PasswordPolicyBody = z.strictObject({
  /** Fewest characters (Unicode code points) of a new password, 8 to 64. Default: 8 (see MIN_PASSWORD_LENGTH). */
  minLength: z.number().int().min(MIN_PASSWORD_LENGTH, { error: `must be at least ${MIN_PASSWORD_LENGTH} (NIST SP 800-63B's minimum)` })
    .max(64, { error: 'must be at most 64: NIST SP 800-63B asks that passwords of at least 64 characters be allowed' })
    .default(MIN_PASSWORD_LENGTH),
});
export type PasswordPolicyBody = z.infer<typeof PasswordPolicyBody>;

/** What a password may not be besides a common one: the account's own words (NIST's "context-specific words"). */
export interface PasswordContext {
  /** The person's email address: neither it nor its local part may be the password. */
  readonly email?: string | undefined;
  /** The tenant's name and display name. */
  readonly tenantNames?: readonly string[];
}

/**
 * The blocklist: the 49,233 passwords most common in leaked credential sets (the xato 10-million
 * corpus, ranked), as the npm package `@zxcvbn-ts/language-common` ships them (its `passwords-common`
 * dictionary, lowercase). Only the list is used, as a Set: zxcvbn's own matchers run pattern searches
 * whose cost grows with the square of the input, which a hostile 1024-character password must not
 * buy; a Set lookup costs one hash of the lowercased input. Loaded on first use (about 20 ms), so
 * commands that never judge a password do not pay for it.
 */
let blocklist: ReadonlySet<string> | undefined;
function common(): ReadonlySet<string> {
  if (blocklist === undefined) {
    const pkg = createRequire(import.meta.url)('@zxcvbn-ts/language-common') as { dictionary: Record<string, readonly string[]> };
    blocklist = new Set(pkg.dictionary['passwords-common']);
  }
  return blocklist;
}

/** Code points, not UTF-16 units: an emoji is one character. */
const codePoints = (s: string) => [...s];

/** One character repeated, or one straight run up or down (`aaaaaaaa`, `12345678`, `hgfedcba`). */
function trivial(chars: readonly string[]): boolean {
  if (chars.length < 2) return true;
  const step = chars[1]!.codePointAt(0)! - chars[0]!.codePointAt(0)!;
  if (Math.abs(step) > 1) return false;
  for (let i = 2; i < chars.length; i++) {
    if (chars[i]!.codePointAt(0)! - chars[i - 1]!.codePointAt(0)! !== step) return false;
  }
  return true;
}

/**
 * The rule: problems with a new password under `policy` (absent: the defaults), at `path`. The
 * messages never repeat the password. An empty list: the password may be set.
 */
export function checkPassword(password: string, policy: PasswordPolicyBody | undefined, context: PasswordContext, path: Path): Problem[] {
  const min = policy?.minLength ?? MIN_PASSWORD_LENGTH;
  const chars = codePoints(password);
  if (chars.length < min) {
    return [problem('password-too-short', path, `must be at least ${min} characters long`)];
  }
  if (chars.length > MAX_PASSWORD_LENGTH) {
    return [problem('password-too-long', path, `must be at most ${MAX_PASSWORD_LENGTH} characters long`)];
  }
  if (password.includes('\u0000')) return [problem('password-invalid', path, 'must not contain NUL characters')];
  const folded = password.normalize('NFKC').toLowerCase();
  if (common().has(folded) || trivial(codePoints(folded))) {
    return [problem('password-common', path, 'is too common: it appears in lists of leaked passwords or is a simple pattern; choose another (a few unrelated words make a good password)')];
  }
  const email = context.email?.normalize('NFKC').toLowerCase();
  const own = [email, email?.split('@')[0], ...(context.tenantNames ?? []).map((n) => n.normalize('NFKC').toLowerCase())];
  if (own.some((w) => w !== undefined && w !== '' && folded === w)) {
    return [problem('password-context', path, 'must not be your email address, its name part or the name of this service')];
  }
  return [];
}
