/**
 * Per-tenant signing keys and their rotation.
 *
 * A tenant always has one `active` key (signs) and one `next` key (already published in the JWKS,
 * not yet signing). Rotation promotes `next` to `active`, retires the old active key and makes a
 * fresh `next`. So a key is in every verifier's cached JWKS before it ever signs, and a retired key
 * stays published until every token it signed has expired: rotation needs no downtime.
 * Private keys are stored sealed with the master key, bound to tenant and kid.
 */
import { generateKeyPair as generateKeyPairCb, type JsonWebKey } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { SigningAlg } from '../contract/index.ts';
import type { MasterKey } from './_crypto.ts';
import type { KeyRecord, Storage } from './storage/types.ts';
import { LIFETIMES } from './config.ts';

const generateKeyPair = promisify(generateKeyPairCb);

/** The associated data a tenant's signing key is sealed with: a key moved to another tenant does not unseal. */
export const keySealedFor = (tenant: string, kid: string): string => `key:${tenant}:${kid}`;

export { SIGNING_ALGS, type SigningAlg } from '../contract/index.ts';

/**
 * A retired key stays published for the longest token lifetime it may have signed (access, client
 * credentials and ID tokens), plus 5 minutes for clock skew.
 */
export const RETIRED_KEY_RETENTION_SECONDS =
  Math.max(LIFETIMES.AccessToken, LIFETIMES.ClientCredentials, LIFETIMES.IdToken) + 300;

async function newKey(tenant: string, alg: SigningAlg, state: KeyRecord['state'], master: MasterKey): Promise<KeyRecord> {
  // generateKeyPair (not the Sync variant) runs on the libuv pool: RSA generation takes tens of ms.
  const { privateKey } = alg === 'RS256'
    ? await generateKeyPair('rsa', { modulusLength: 2048 })
    : await generateKeyPair('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' }) as JsonWebKey & JWK;
  const kid = await calculateJwkThumbprint(jwk as JWK);
  const full = { ...jwk, kid, alg, use: 'sig' };
  return {
    tenant, kid, alg, state, sealedJwk: master.seal(JSON.stringify(full), keySealedFor(tenant, kid)),
    createdAt: Math.floor(Date.now() / 1000), retiredAt: null,
  };
}

/** The keys a new tenant starts with: one active, one next, both of `alg`. */
/**
 * A new tenant's first keys: one that signs and the next one, already published. Made before the
 * tenant is stored so that both are written in one transaction: a tenant is never visible (or,
 * after a crash, left behind) without a signing key.
 */
export async function newTenantKeys(master: MasterKey, tenant: string, alg: SigningAlg): Promise<readonly KeyRecord[]> {
  return Promise.all([newKey(tenant, alg, 'active', master), newKey(tenant, alg, 'next', master)]);
}

/**
 * next → active, active → retired, new next (of `alg`, default: the current next key's alg; so
 * switching algorithm takes two rotations, keeping "published before it signs"). Also drops
 * retired keys past their retention.
 */
export async function rotateTenantKeys(storage: Storage, master: MasterKey, tenant: string, alg?: SigningAlg): Promise<readonly KeyRecord[]> {
  // The fresh key is made first (RSA takes a while, off the transaction); the read-modify-write
  // runs in one transaction, so overlapping rotations never write back a stale set and drop a key
  // that another rotation had already published or made active.
  const seen = await storage.tenants.listKeys(tenant);
  const fresh = await newKey(tenant, alg ?? seen.find((k) => k.state === 'next')?.alg ?? activeKey(seen)?.alg ?? 'RS256', 'next', master);
  return storage.tenants.updateKeys(tenant, (keys) => {
    const t = Math.floor(Date.now() / 1000);
    const active = keys.find((k) => k.state === 'active');
    const next = keys.find((k) => k.state === 'next');
    const kept = keys.filter((k) => k.state === 'retired' && (k.retiredAt ?? t) + RETIRED_KEY_RETENTION_SECONDS > t);
    return [
      ...(next ? [{ ...next, state: 'active' as const }] : []),
      ...(active ? [{ ...active, state: next ? ('retired' as const) : ('active' as const), retiredAt: next ? t : null }] : []),
      ...kept,
      fresh,
    ];
  });
}

/**
 * Unsealed private JWKs by their sealed text: a tenant's provider is rebuilt whenever the
 * provider cache dropped it, and unsealing its keys each time showed in profiles. Bounded; the
 * keys are in memory anyway while a provider holds them.
 */
const UNSEALED = new Map<string, JWK>();
const UNSEALED_CAPACITY = 50_000;

/** Private JWKs in the order oidc-provider wants: the signing key first (it signs with the first match). */
export function privateJwks(keys: readonly KeyRecord[], master: MasterKey): JWK[] {
  const t = Math.floor(Date.now() / 1000);
  const order = { active: 0, next: 1, retired: 2 } as const;
  return [...keys]
    .filter((k) => k.state !== 'retired' || (k.retiredAt ?? t) + RETIRED_KEY_RETENTION_SECONDS > t)
    .sort((a, b) => order[a.state] - order[b.state])
    .map((k) => {
      // Keyed by tenant, kid and the sealed text: the associated data is part of what was checked.
      const id = `${k.tenant}\u0000${k.kid}\u0000${k.sealedJwk}`;
      let jwk = UNSEALED.get(id);
      if (jwk === undefined) {
        jwk = JSON.parse(master.unseal(k.sealedJwk, keySealedFor(k.tenant, k.kid))) as JWK;
        if (UNSEALED.size >= UNSEALED_CAPACITY) UNSEALED.delete(UNSEALED.keys().next().value as string);
        UNSEALED.set(id, jwk);
      }
      // A copy: whoever gets it may keep or change it.
      return { ...jwk };
    });
}

/** The public half of every published key, for verifying tokens inside the server (admin API). */
export function publicJwks(keys: readonly KeyRecord[], master: MasterKey): JWK[] {
  return privateJwks(keys, master).map(({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub }) => pub);
}

export function activeKey(keys: readonly KeyRecord[]): KeyRecord | undefined {
  return keys.find((k) => k.state === 'active');
}
