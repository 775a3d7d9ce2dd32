/**
 * SCIM settings and their defaults, one block per key; `idforge serve` exposes each as a flag.
 * The guessing defence on tokens (lockout, backoff) is the sign-in's own (login/options.ts).
 */

export interface ScimOptions {
  /**
   * Requests per second one SCIM token may make, sustained; above it the answer is 429 with
   * Retry-After. Default 100: an identity provider's full sync of 10,000 users takes under two
   * minutes, and one runaway client cannot take the server from everyone else.
   */
  readonly requestsPerSecond?: number;
  /** Requests a token may make at once before the rate applies (a token bucket of this size). Default 1000. */
  readonly burst?: number;
}

export const SCIM_DEFAULTS = {
  requestsPerSecond: 100,
  burst: 1000,
  /** Largest request body: a group of 10,000 members with their $ref URLs fits. Larger is a 413. */
  maxBodyBytes: 2 * 1024 * 1024,
  /** Deepest JSON nesting a request may have; SCIM's deepest (a PATCH of a complex list) is 5. */
  maxDepth: 16,
} as const;

export interface ScimSettings {
  readonly requestsPerSecond: number;
  readonly burst: number;
}

export function scimSettings(o: ScimOptions = {}): ScimSettings {
  const positive = (name: string, v: number | undefined, fallback: number) => {
    if (v === undefined) return fallback;
    if (!Number.isFinite(v) || v <= 0) throw new RangeError(`SCIM option ${name} must be a positive number, got ${v}`);
    return v;
  };
  return {
    requestsPerSecond: positive('requestsPerSecond', o.requestsPerSecond, SCIM_DEFAULTS.requestsPerSecond),
    burst: positive('burst', o.burst, SCIM_DEFAULTS.burst),
  };
}
