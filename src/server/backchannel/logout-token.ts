/**
 * Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4): JWTs signed with the tenant's active
 * key (the one its ID tokens are signed with, published at its JWKS), `typ: logout+jwt` (§2.4: so a
 * logout token is never taken for an ID token), with `iss`, `aud` (the client), `iat`, `exp`, `jti`,
 * the back-channel logout event, `sub` and, for a sign-out, `sid`; never a `nonce` (§2.4: that is
 * what tells it from an ID token to receivers that do not check `typ`). Signed when sent, not when
 * queued: a token waiting through a key rotation goes out under the key the JWKS publishes then.
 */
import { importJWK, SignJWT, type JWK } from 'jose';
import { BACKCHANNEL_LOGOUT_EVENT, LOGOUT_TOKEN_LIFETIME, LOGOUT_TOKEN_TYP } from '../../contract/index.ts';
import type { MasterKey } from '../_crypto.ts';
import { activeKey, privateJwks } from '../keys.ts';
import type { LogoutDraft, Storage } from '../storage/types.ts';

type Key = Awaited<ReturnType<typeof importJWK>>;

export class LogoutTokenSigner {
  readonly #keys = new Map<string, { kid: string; alg: string; key: Key }>();

  constructor(private readonly storage: Pick<Storage, 'tenants'>, private readonly master: MasterKey, private readonly issuer: (tenant: string) => string) {}

  async sign(l: LogoutDraft, nowMs: number = Date.now()): Promise<string> {
    const active = activeKey(await this.storage.tenants.listKeys(l.tenant));
    if (active === undefined) throw new Error(`tenant '${l.tenant}' has no active signing key`);
    const id = `${l.tenant}\u0000${active.kid}`;
    let k = this.#keys.get(id);
    if (k === undefined) {
      const jwk = privateJwks([active], this.master)[0] as JWK;
      k = { kid: active.kid, alg: active.alg, key: await importJWK(jwk, active.alg) };
      if (this.#keys.size > 1000) this.#keys.clear();
      this.#keys.set(id, k);
    }
    const iat = Math.floor(nowMs / 1000);
    return new SignJWT({ events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...(l.sid === undefined ? {} : { sid: l.sid }) })
      .setProtectedHeader({ alg: k.alg, kid: k.kid, typ: LOGOUT_TOKEN_TYP })
      .setIssuer(this.issuer(l.tenant))
      .setAudience(l.clientId)
      .setSubject(l.sub)
      .setJti(l.jti)
      .setIssuedAt(iat)
      .setExpirationTime(iat + LOGOUT_TOKEN_LIFETIME)
      .sign(k.key);
  }
}
