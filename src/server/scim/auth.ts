/**
 * Who may use a tenant's /scim/v2: a bearer token of that tenant (tokens.ts). A missing, malformed,
 * revoked or other tenant's token is a 401. Guessing runs into the sign-in's own defence (backoff,
 * then lockout, login/throttle.ts). Failures count against the token id named *from that client
 * address* and against the address: the id is not secret (it is the visible prefix of the token,
 * shown in listings), so counting guesses per id alone let anyone lock out the real holder with
 * five wrong secrets. A valid token is held to its rate (a token bucket per token), kept in the
 * database, so every worker and replica draws from the same bucket: 429 with Retry-After beyond it.
 */
import type { NextFunction, Request, Response } from 'express';
import type { ServerContext } from '../_context.ts';
import { GuessingDefence } from '../login/throttle.ts';
import { scimErrors } from './errors.ts';
import type { ScimSettings } from './options.ts';
import { tokenId, verifyScimToken } from './tokens.ts';
import { setActor } from '../ops/request-context.ts';
import { SCIM_MANAGED_BY } from '../../contract/index.ts';

export function requireScimToken(ctx: ServerContext, settings: ScimSettings) {
  const defence = new GuessingDefence(ctx.storage.throttle, ctx.login);
  const intervalMs = 1000 / settings.requestsPerSecond;
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tenant = (res.locals.tenant as { name: string }).name;
    const m = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    if (m === null) throw scimErrors.unauthorized(`a SCIM bearer token of tenant '${tenant}' is required (an administrator makes one with POST /admin/v1/tenants/${tenant}/scim/tokens)`);
    const presented = m[1]!;
    const id = tokenId(presented);
    const address = req.ip ?? 'unknown';
    const keys = { account: id === undefined ? undefined : `scim-token:${id}@${address}`, address };
    const refusal = await defence.check(tenant, keys, 'scim-token');
    if (refusal !== undefined) throw scimErrors.tooManyRequests(refusal);
    const token = await verifyScimToken(ctx, tenant, presented);
    if (token === undefined) {
      const locked = await defence.failure(tenant, keys, 'scim-token', id === undefined ? 'not a SCIM token' : 'unknown, revoked or another tenant\'s token');
      if (locked !== undefined) throw scimErrors.tooManyRequests(locked);
      throw scimErrors.unauthorized(`the bearer token is not a SCIM token of tenant '${tenant}' (it may have been revoked)`, 'invalid_token');
    }
    const waitMs = await ctx.storage.throttle.takeRate(tenant, `rate:scim-token:${token.id}`, Date.now(), intervalMs, settings.burst);
    if (waitMs > 0) {
      const wait = Math.ceil(waitMs / 1000);
      throw scimErrors.tooManyRequests(`SCIM token '${token.id}' is over its rate of ${settings.requestsPerSecond} requests per second; retry after ${wait} s`, wait);
    }
    res.locals.scimToken = token.id;
    // The token is who acts in the events SCIM's writes make; its door is SCIM's manager.
    setActor({ manager: SCIM_MANAGED_BY, who: `scim:${token.id}` });
    next();
  };
}
