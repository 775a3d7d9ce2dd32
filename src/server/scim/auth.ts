/**
 * Who may use a tenant's /scim/v2: a bearer token of that tenant (tokens.ts). A missing, malformed,
 * revoked or other tenant's token is a 401. Guessing runs into the sign-in's own defence (backoff,
 * then lockout, login/throttle.ts): failures count against the token named (its id, the part
 * before the secret) and the client address, and a locked key is refused even with the right
 * token. A valid token is held to its rate (a token bucket per token, per replica): 429 with
 * Retry-After beyond it.
 */
import type { NextFunction, Request, Response } from 'express';
import type { ServerContext } from '../_context.ts';
import { GuessingDefence } from '../login/throttle.ts';
import { scimErrors } from './errors.ts';
import type { ScimSettings } from './options.ts';
import { tokenId, verifyScimToken } from './tokens.ts';

/** Tokens whose buckets are remembered; the oldest is forgotten beyond this (it starts full again). */
const MAX_BUCKETS = 10_000;

export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>();
  constructor(private readonly s: ScimSettings) {}

  /** Takes one request from the key's bucket: 0 when allowed, else the seconds until one is. */
  take(key: string, nowMs = Date.now()): number {
    const b = this.#buckets.get(key) ?? { tokens: this.s.burst, atMs: nowMs };
    this.#buckets.delete(key);
    b.tokens = Math.min(this.s.burst, b.tokens + ((nowMs - b.atMs) / 1000) * this.s.requestsPerSecond);
    b.atMs = nowMs;
    this.#buckets.set(key, b);
    if (this.#buckets.size > MAX_BUCKETS) this.#buckets.delete(this.#buckets.keys().next().value as string);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.s.requestsPerSecond));
  }
}

export function requireScimToken(ctx: ServerContext, settings: ScimSettings) {
  const defence = new GuessingDefence(ctx.storage.throttle, ctx.login);
  const limiter = new RateLimiter(settings);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tenant = (res.locals.tenant as { name: string }).name;
    const m = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    if (m === null) throw scimErrors.unauthorized(`a SCIM bearer token of tenant '${tenant}' is required (an administrator makes one with POST /admin/v1/tenants/${tenant}/scim/tokens)`);
    const presented = m[1]!;
    const id = tokenId(presented);
    const keys = { account: id === undefined ? undefined : `scim-token:${id}`, address: req.ip ?? 'unknown' };
    const refusal = await defence.check(tenant, keys, 'scim-token');
    if (refusal !== undefined) throw scimErrors.tooManyRequests(refusal);
    const token = await verifyScimToken(ctx, tenant, presented);
    if (token === undefined) {
      const locked = await defence.failure(tenant, keys, 'scim-token', id === undefined ? 'not a SCIM token' : 'unknown, revoked or another tenant\'s token');
      if (locked !== undefined) throw scimErrors.tooManyRequests(locked);
      throw scimErrors.unauthorized(`the bearer token is not a SCIM token of tenant '${tenant}' (it may have been revoked)`, 'invalid_token');
    }
    const wait = limiter.take(`${tenant}\u0000${token.id}`);
    if (wait > 0) throw scimErrors.tooManyRequests(`SCIM token '${token.id}' is over its rate of ${settings.requestsPerSecond} requests per second; retry after ${wait} s`, wait);
    res.locals.scimToken = token.id;
    next();
  };
}
