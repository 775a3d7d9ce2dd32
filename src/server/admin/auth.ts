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

export function requireAdmin(ctx: ServerContext) {
  let cached: { at: number; jwks: JWTVerifyGetKey } | undefined;
  const keys = async () => {
    if (cached === undefined || Date.now() - cached.at > KEY_CACHE_MS) {
      const records = await ctx.storage.tenants.listKeys(SYSTEM_TENANT);
      cached = { at: Date.now(), jwks: createLocalJWKSet({ keys: publicJwks(records, ctx.master) }) };
    }
    return cached.jwks;
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
    let scp: unknown;
    let clientId: unknown;
    // Outside the try: a database that cannot give the keys is the request's 503, not a bad token.
    const jwks = await keys();
    try {
      const { payload } = await jwtVerify(m[1]!, jwks, {
        issuer: issuerUrl(ctx.address(), SYSTEM_TENANT),
        audience: ADMIN_AUDIENCE,
        algorithms: ['RS256', 'ES256'],
      });
      scp = payload.scp;
      clientId = payload.client_id;
    } catch {
      return fail(res, errors.unauthorized('the access token is invalid, expired, or not issued for the admin API'), ', error="invalid_token"');
    }
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
