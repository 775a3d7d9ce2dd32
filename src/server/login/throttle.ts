/**
 * Guessing defence, on every factor: failures are counted per account (the identifier typed,
 * whether or not such an account exists, so answers never tell) and per client address. A few
 * failures cost nothing; then each try must wait a doubling delay (backoff); at the threshold the
 * key locks for `lockoutSeconds`. A locked key refuses even the right credentials, with the same
 * words for every account. Each failure, refusal and lockout is one JSON audit line.
 */
import type { ThrottleStore } from '../storage/types.ts';
import { LOGIN_DEFAULTS, type LoginSettings } from './options.ts';

export interface ThrottleKeys {
  /** Lowercased email (or the identified user's email); undefined when unknown (passkey). */
  readonly account: string | undefined;
  readonly address: string;
}

/** The same words for every account and address: the configured duration, never the time left. */
export const lockedMessage = (seconds: number) => {
  const minutes = Math.ceil(seconds / 60);
  const span = seconds < 120 ? `${Math.ceil(seconds)} seconds` : `${minutes} minutes`;
  return `Too many failed attempts. Sign-in is paused for up to ${span} to protect the account; try again later.`;
};
export const backoffMessage = (seconds: number) =>
  `Too many failed attempts in a row. Wait ${seconds} second${seconds === 1 ? '' : 's'}, then try again.`;

interface KeyRule {
  readonly key: string;
  readonly lockAt: number;
  readonly free: number;
}

export class GuessingDefence {
  constructor(
    private readonly storage: ThrottleStore,
    private readonly s: LoginSettings,
  ) {}

  /**
   * Runs one attempt (check, verify, record) while holding every throttle key it counts against.
   * Without this, parallel requests all pass `check` before the first slow verification (argon2 on
   * the threadpool) records a failure, so a burst gets far more guesses than the threshold. The
   * store holds the keys against every process on the same database (ThrottleStore.serialize).
   */
  serialize<T>(tenant: string, k: ThrottleKeys, attempt: () => Promise<T>): Promise<T> {
    return this.storage.serialize(tenant, this.#rules(k).map((r) => r.key), attempt);
  }

  #rules(k: ThrottleKeys): KeyRule[] {
    const rules: KeyRule[] = [{ key: `address:${k.address}`, lockAt: this.s.addressLockoutThreshold, free: LOGIN_DEFAULTS.addressFreeFailures }];
    if (k.account !== undefined) rules.unshift({ key: `account:${k.account}`, lockAt: this.s.lockoutThreshold, free: LOGIN_DEFAULTS.accountFreeFailures });
    return rules;
  }

  /** A refusal message when the keys are locked or backing off; undefined when a try may proceed. */
  async check(tenant: string, k: ThrottleKeys, factor: string): Promise<string | undefined> {
    const now = Date.now();
    for (const rule of this.#rules(k)) {
      const t = await this.storage.get(tenant, rule.key);
      if (t === undefined) continue;
      if (t.lockedUntilMs > now) {
        this.s.audit({ audit: 'login.refused', reason: 'locked', tenant, factor, key: rule.key, address: k.address, lockedUntil: new Date(t.lockedUntilMs).toISOString() });
        return lockedMessage(this.s.lockoutSeconds);
      }
      if (now - t.lastFailureMs > this.s.failureWindowSeconds * 1000) continue;
      const over = t.failures - rule.free;
      if (over <= 0 || this.s.backoffBaseMs === 0) continue;
      const wait = Math.min(this.s.backoffBaseMs * 2 ** (over - 1), LOGIN_DEFAULTS.backoffMaxMs);
      const left = t.lastFailureMs + wait - now;
      if (left > 0) {
        this.s.audit({ audit: 'login.refused', reason: 'backoff', tenant, factor, key: rule.key, address: k.address, waitMs: left });
        return backoffMessage(Math.ceil(left / 1000));
      }
    }
    return undefined;
  }

  /** Counts a failure (one audit line); returns the lockout message when it locked a key. */
  async failure(tenant: string, k: ThrottleKeys, factor: string, reason: string): Promise<string | undefined> {
    const now = Date.now();
    const counts: Record<string, number> = {};
    const lockouts: { key: string; until: number }[] = [];
    for (const rule of this.#rules(k)) {
      const r = await this.storage.recordFailure(tenant, rule.key, now, this.s.failureWindowSeconds * 1000, rule.lockAt, this.s.lockoutSeconds * 1000);
      counts[rule.key] = r.locked ? rule.lockAt : r.failures;
      if (r.locked) lockouts.push({ key: rule.key, until: r.lockedUntilMs });
    }
    this.s.audit({ audit: 'login.failure', tenant, factor, reason, account: k.account ?? null, address: k.address, failures: counts });
    for (const l of lockouts) {
      this.s.audit({ audit: 'login.lockout', tenant, factor, key: l.key, address: k.address, lockedUntil: new Date(l.until).toISOString(), seconds: this.s.lockoutSeconds });
    }
    return lockouts.length > 0 ? lockedMessage(this.s.lockoutSeconds) : undefined;
  }

  /** A success clears the account's count (not the address's: one good login must not reset a spray). */
  async success(tenant: string, k: ThrottleKeys): Promise<void> {
    if (k.account !== undefined) await this.storage.clear(tenant, `account:${k.account}`);
  }
}
