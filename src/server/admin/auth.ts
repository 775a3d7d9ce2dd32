/**
 * The admin API eats its own cooking: callers present an access token (JWT) issued by the built-in
 * system tenant for the admin API audience, with `admin` in `scp`. Verified locally against the
 * system tenant's published keys: no network call, no shared secret.
 */
import type { NextFunction, Request, Response } from 'express';
import { createLocalJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { actorFromHeaders, issuerUrl } from '../../contract/index.ts';
import { setActor } from '../ops/request-context.ts';
import type { ServerContext } from '../_context.ts';
import { ADMIN_AUDIENCE, ADMIN_SCOPE, SYSTEM_TENANT } from '../config.ts';
import { ServerError, errorBody, errors } from '../errors.ts';
import { publicJwks } from '../keys.ts';

/** Keys are re-read at most this often, so a rotation of the system tenant is picked up. */
const KEY_CACHE_MS = 30_000;
/** Tokens whose verification is kept (a plan sends its token with each of 500 requests); more empty the cache. */
const VERIFIED_MAX = 1024;

interface Verified {
  readonly scp: unknown;
  readonly clientId: unknown;
  /** Until when the verification holds: the token's expiry, and never past the keys it was verified with. */
  readonly untilMs: number;
}

export function requireAdmin(ctx: ServerContext) {
  let cached: { at: number; jwks: JWTVerifyGetKey } | undefined;
  /** Tokens verified against the keys in `cached`, by their exact text: forgotten when the keys are read again. */
  let verified = new Map<string, Verified>();
  const keys = async () => {
    if (cached === undefined || Date.now() - cached.at > KEY_CACHE_MS) {
      const records = await ctx.storage.tenants.listKeys(SYSTEM_TENANT);
      cached = { at: Date.now(), jwks: createLocalJWKSet({ keys: publicJwks(records, ctx.master) }) };
      verified = new Map();
    }
    return cached;
  };

  /** RFC 6750 §3: say what credential is expected and, when one was given, why it failed. */
  const fail = (res: Response, err: ServerError, challenge: string) => {
    const { status, body } = errorBody(err);
    res.status(status).set('www-authenticate', `Bearer realm="idforge-admin"${challenge}`).json(body);
  };

  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
    if (m === null) return fail(res, errors.unauthorized(), '');
    // Outside the try: a database that cannot give the keys is the request's 503, not a bad token.
    const { at, jwks } = await keys();
    const token = m[1]!;
    let known = verified.get(token);
    if (known !== undefined && Date.now() >= known.untilMs) {
      verified.delete(token);
      known = undefined;
    }
    if (known === undefined) {
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: issuerUrl(ctx.address(), SYSTEM_TENANT),
          audience: ADMIN_AUDIENCE,
          algorithms: ['RS256', 'ES256'],
        });
        known = { scp: payload.scp, clientId: payload.client_id, untilMs: Math.min(typeof payload.exp === 'number' ? payload.exp * 1000 : 0, at + KEY_CACHE_MS) };
      } catch {
        return fail(res, errors.unauthorized('the access token is invalid, expired, or not issued for the admin API'), ', error="invalid_token"');
      }
      if (verified.size >= VERIFIED_MAX) verified.clear();
      verified.set(token, known);
    }
    const { scp, clientId } = known;
    if (!Array.isArray(scp) || !scp.includes(ADMIN_SCOPE)) {
      return fail(res, errors.forbidden(`the access token lacks the '${ADMIN_SCOPE}' scope`), `, error="insufficient_scope", scope="${ADMIN_SCOPE}"`);
    }
    // Who acts, for the events the request's writes make: the actor headers, else the token's client.
    const { actor, problems } = actorFromHeaders((name) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    });
    if (problems.length > 0) {
      const { status, body } = errorBody(errors.invalidRequest(`invalid header ${problems[0]!.path.slice('headers.'.length)}: ${problems[0]!.message}`, problems[0]!.path, problems));
      return void res.status(status).json(body);
    }
    setActor({ ...actor, ...(actor.who === undefined && typeof clientId === 'string' ? { who: clientId } : {}) });
    next();
  };
}
