/**
 * Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4): JWTs signed with the tenant's active
 * key (the one its ID tokens are signed with, published at its JWKS), `typ: logout+jwt` (§2.4: so a
 * logout token is never taken for an ID token), with `iss`, `aud` (the client), `iat`, `exp`, `jti`,
 * the back-channel logout event, `sub` and, for a sign-out, `sid`; never a `nonce` (§2.4: that is
 * what tells it from an ID token to receivers that do not check `typ`). Signed when sent, not when
 * queued: a token waiting through a key rotation goes out under the key the JWKS publishes then.
 */
import { BACKCHANNEL_LOGOUT_EVENT, LOGOUT_TOKEN_LIFETIME, LOGOUT_TOKEN_TYP } from '../../contract/index.ts';
import type { MasterKey } from '../_crypto.ts';
import type { LogoutDraft, Storage } from '../storage/types.ts';
import { TenantSigner } from '../tenant-signer.ts';

export class LogoutTokenSigner {
  readonly #signer: TenantSigner;

  constructor(storage: Pick<Storage, 'tenants'>, master: MasterKey, private readonly issuer: (tenant: string) => string) {
    this.#signer = new TenantSigner(storage, master);
  }

  sign(l: LogoutDraft, nowMs: number = Date.now()): Promise<string> {
    const iat = Math.floor(nowMs / 1000);
    return this.#signer.sign(l.tenant, LOGOUT_TOKEN_TYP, { events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...(l.sid === undefined ? {} : { sid: l.sid }) }, (jwt) => jwt
      .setIssuer(this.issuer(l.tenant))
      .setAudience(l.clientId)
      .setSubject(l.sub)
      .setJti(l.jti)
      .setIssuedAt(iat)
      .setExpirationTime(iat + LOGOUT_TOKEN_LIFETIME));
  }
}
