/**
 * UserInfo for JWT access tokens.
 *
 * A client with an audience gets JWT access tokens for its API (RFC 9068, the contract's `scp`).
 * oidc-provider's userinfo endpoint serves only its own opaque tokens, so a client that also
 * fetches the profile with its access token (grant's `profile`, most OIDC libraries) would be
 * refused. As Auth0 does, a user's JWT with `openid` also names the userinfo endpoint in `aud`
 * (provider.ts), and this answers it: signed by one of the tenant's published keys, this issuer,
 * `typ: at+jwt`, not expired, the userinfo endpoint among its audiences; then the same account
 * check every token gets (the user exists, is enabled and is still assigned to the token's
 * client), and only the claims of the token's scopes. Opaque tokens go on to oidc-provider.
 */
import { createLocalJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Account, KoaContextWithOIDC } from 'oidc-provider';
import { SCOPE_CLAIMS } from './accounts.ts';
import type { TenantApps } from './adapter.ts';

/** What the handler needs of koa's context. */
export interface UserinfoRequest {
  readonly method: string;
  get(field: string): string;
  set(fields: { [key: string]: string }): void;
  status: number;
  body: unknown;
}

export interface JwtUserinfoOptions {
  readonly issuer: string;
  readonly userinfoUrl: string;
  readonly publicJwks: readonly object[];
  readonly apps: TenantApps;
  /** oidc-provider's findAccount: undefined when the user is gone, disabled or unassigned. */
  readonly findAccount: (oidc: KoaContextWithOIDC, sub: string, token: { clientId: string; kind: string }) => Promise<Account | undefined>;
}

/** A compact JWS: three base64url parts. Opaque tokens of oidc-provider have no dots. */
const JWT = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;

/** Returns a handler that answers userinfo requests carrying a JWT, and false for any other request. */
export function jwtUserinfo(o: JwtUserinfoOptions): (koa: UserinfoRequest) => Promise<boolean> {
  const keys: JWTVerifyGetKey = createLocalJWKSet({ keys: [...o.publicJwks] as never });

  const refuse = (koa: UserinfoRequest, description: string) => {
    koa.status = 401;
    koa.set({ 'www-authenticate': `Bearer realm="${o.issuer}", error="invalid_token", error_description="${description}"` });
    koa.body = { error: 'invalid_token', error_description: description };
  };

  return async (koa) => {
    if (koa.method !== 'GET' && koa.method !== 'POST') return false;
    const token = JWT.exec(koa.get('authorization'))?.[1];
    if (token === undefined) return false;
    koa.set({ 'cache-control': 'no-store' });

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, { issuer: o.issuer, audience: o.userinfoUrl, typ: 'at+jwt', algorithms: ['RS256', 'ES256'] }));
    } catch {
      refuse(koa, 'invalid token provided');
      return true;
    }
    const scopes = Array.isArray(payload.scp) ? payload.scp.filter((s): s is string => typeof s === 'string') : [];
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : undefined;
    if (typeof payload.sub !== 'string' || clientId === undefined || !scopes.includes('openid')) {
      refuse(koa, 'invalid token provided');
      return true;
    }
    const account = await o.findAccount(koa as unknown as KoaContextWithOIDC, payload.sub, { clientId, kind: 'AccessToken' });
    if (account === undefined) {
      refuse(koa, 'invalid token provided');
      return true;
    }

    // Browsers may read the answer from the token's client's own origins (as clientBasedCORS).
    const origin = koa.get('origin');
    if (origin !== '') {
      const app = await o.apps.byClientId(clientId);
      const uris = app !== undefined && 'redirectUris' in app.body ? app.body.redirectUris : [];
      if (uris.some((u) => URL.parse(u)?.origin === origin)) koa.set({ 'access-control-allow-origin': origin, vary: 'Origin' });
    }

    const all = (await account.claims('userinfo', scopes.join(' '), {}, [])) as Record<string, unknown>;
    const released = new Set<string>(scopes.flatMap((s) => (s in SCOPE_CLAIMS ? [...SCOPE_CLAIMS[s as keyof typeof SCOPE_CLAIMS]] : [])));
    koa.status = 200;
    koa.body = Object.fromEntries(Object.entries(all).filter(([claim]) => released.has(claim)));
    return true;
  };
}
