/**
 * SETs signed with the tenant's active key (tenant-signer.ts), `typ: secevent+jwt` (RFC 8417 §2.3),
 * by jose. Signed when sent, not when queued: a SET waiting through a key rotation goes out under
 * the key a receiver finds in the JWKS then.
 */
import type { MasterKey } from '../_crypto.ts';
import type { Storage } from '../storage/types.ts';
import { TenantSigner } from '../tenant-signer.ts';

export class SetSigner {
  readonly #signer: TenantSigner;

  constructor(storage: Pick<Storage, 'tenants'>, master: MasterKey) {
    this.#signer = new TenantSigner(storage, master);
  }

  sign(tenant: string, claims: Readonly<Record<string, unknown>>): Promise<string> {
    return this.#signer.sign(tenant, 'secevent+jwt', { ...claims });
  }
}
