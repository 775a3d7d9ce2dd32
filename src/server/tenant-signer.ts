/**
 * JWTs the server signs itself with a tenant's active key (the key its tokens are signed with,
 * published at its JWKS): SETs (ssf/sign.ts) and logout tokens (backchannel/logout-token.ts).
 * Signed when sent, not when queued: a message waiting through a key rotation goes out under the
 * key a receiver finds in the JWKS then. The imported key is kept per tenant and key id.
 */
import { importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { MasterKey } from './_crypto.ts';
import { activeKey, privateJwks } from './keys.ts';
import type { Storage } from './storage/types.ts';

type Key = Awaited<ReturnType<typeof importJWK>>;

/** Keys kept at most; past it the cache starts afresh (a tenant's key is imported again on its next message). */
const MAX_KEYS = 1000;

export class TenantSigner {
  readonly #keys = new Map<string, { kid: string; alg: string; key: Key }>();

  constructor(private readonly storage: Pick<Storage, 'tenants'>, private readonly master: MasterKey) {}

  /** `payload` signed with the header's `typ`; `claims` sets the registered claims on the builder. */
  async sign(tenant: string, typ: string, payload: JWTPayload, claims: (jwt: SignJWT) => SignJWT = (jwt) => jwt): Promise<string> {
    const active = activeKey(await this.storage.tenants.listKeys(tenant));
    if (active === undefined) throw new Error(`tenant '${tenant}' has no active signing key`);
    const id = `${tenant}\u0000${active.kid}`;
    let k = this.#keys.get(id);
    if (k === undefined) {
      const jwk = privateJwks([active], this.master)[0] as JWK;
      k = { kid: active.kid, alg: active.alg, key: await importJWK(jwk, active.alg) };
      if (this.#keys.size >= MAX_KEYS) this.#keys.clear();
      this.#keys.set(id, k);
    }
    return claims(new SignJWT({ ...payload }).setProtectedHeader({ alg: k.alg, kid: k.kid, typ })).sign(k.key);
  }
}
