/**
 * SETs signed with the tenant's active key (the key its tokens are signed with, published at its
 * JWKS), `typ: secevent+jwt` (RFC 8417 §2.3), by jose. Signed when sent, not when queued: a SET
 * waiting through a key rotation goes out under the key a receiver finds in the JWKS then.
 */
import { importJWK, SignJWT, type JWK } from 'jose';
import type { MasterKey } from '../_crypto.ts';
import { activeKey, privateJwks } from '../keys.ts';
import type { Storage } from '../storage/types.ts';

type Key = Awaited<ReturnType<typeof importJWK>>;

export class SetSigner {
  readonly #keys = new Map<string, { kid: string; alg: string; key: Key }>();

  constructor(private readonly storage: Pick<Storage, 'tenants'>, private readonly master: MasterKey) {}

  async sign(tenant: string, claims: Readonly<Record<string, unknown>>): Promise<string> {
    const records = await this.storage.tenants.listKeys(tenant);
    const active = activeKey(records);
    if (active === undefined) throw new Error(`tenant '${tenant}' has no active signing key`);
    const id = `${tenant}\u0000${active.kid}`;
    let k = this.#keys.get(id);
    if (k === undefined) {
      const jwk = privateJwks([active], this.master)[0] as JWK;
      k = { kid: active.kid, alg: active.alg, key: await importJWK(jwk, active.alg) };
      if (this.#keys.size > 1000) this.#keys.clear();
      this.#keys.set(id, k);
    }
    return new SignJWT({ ...claims }).setProtectedHeader({ alg: k.alg, kid: k.kid, typ: 'secevent+jwt' }).sign(k.key);
  }
}
