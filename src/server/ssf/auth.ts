/**
 * Who may use a tenant's SSF endpoints (src/contract/ssf.ts): the admin API's access token (an
 * operator, any stream of any tenant: verified by the admin API's own check), or a stream's
 * receiver token (that stream only). A receiver token is `ssf_<stream id>.<secret>`; the server
 * keeps the secret's SHA-256 and compares in constant time. Another tenant's receiver token names a
 * stream this tenant does not have: 401 like any wrong token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { SSF_STREAM_TOKEN } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { requireAdmin } from '../admin/auth.ts';
import { errorBody, errors } from '../errors.ts';

/** What the caller may reach: every stream of the tenant, or one. */
export type SsfCaller = { readonly kind: 'admin' } | { readonly kind: 'stream'; readonly stream: string };

export const tokenHash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

/** A new receiver token for a stream, and the hash kept. */
export function newStreamToken(stream: string): { token: string; hash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { token: `ssf_${stream}.${secret}`, hash: tokenHash(secret) };
}

export function requireSsfCaller(ctx: ServerContext) {
  const admin = requireAdmin(ctx);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const tenant = (res.locals.tenant as { name: string }).name;
    const m = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    const stream = m === null ? null : SSF_STREAM_TOKEN.exec(m[1]!);
    if (stream === null) {
      // Not a receiver token: the admin API's token, or the admin check's 401/403.
      await admin(req, res, (err?: unknown) => {
        if (err !== undefined) return next(err);
        res.locals.ssfCaller = { kind: 'admin' } satisfies SsfCaller;
        next();
      });
      return;
    }
    const record = await ctx.storage.ssf.get(tenant, stream[1]!);
    const want = Buffer.from(record?.tokenHash ?? '0'.repeat(64), 'hex');
    const got = Buffer.from(tokenHash(stream[2]!), 'hex');
    if (record === undefined || !timingSafeEqual(want, got)) {
      const { status, body } = errorBody(errors.unauthorized(`the bearer token is not a receiver token of a stream of tenant '${tenant}' (the stream may have been deleted)`));
      res.status(status).set('www-authenticate', 'Bearer realm="ssf", error="invalid_token"').json(body);
      return;
    }
    res.locals.ssfCaller = { kind: 'stream', stream: record.id } satisfies SsfCaller;
    next();
  };
}
