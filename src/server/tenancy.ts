/**
 * Tenant = Host subdomain. And a bounded LRU cache of oidc-provider instances, so thousands of
 * tenants do not mean thousands of live instances: an evicted tenant's provider is rebuilt from
 * storage on its next request (everything it needs is persistent).
 */
import { DNS_LABEL } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { buildProvider, type TenantRuntime } from './provider.ts';

export type HostTarget =
  | { readonly kind: 'base' }
  | { readonly kind: 'tenant'; readonly tenant: string }
  | { readonly kind: 'unknown'; readonly host: string };

/** `acme.example.com:8443` with base `example.com` → tenant `acme`; the base itself → base. */
export function resolveHost(hostHeader: string | undefined, baseDomain: string): HostTarget {
  const raw = (hostHeader ?? '').toLowerCase();
  // Strip the port (IPv6 literals are never tenant hosts, so a simple split is enough).
  const host = raw.startsWith('[') ? raw : raw.replace(/:\d+$/, '').replace(/\.$/, '');
  const base = baseDomain.toLowerCase();
  if (host === base) return { kind: 'base' };
  if (host.endsWith(`.${base}`)) {
    const label = host.slice(0, -(base.length + 1));
    if (DNS_LABEL.test(label)) return { kind: 'tenant', tenant: label };
  }
  return { kind: 'unknown', host: raw };
}

export class ProviderCache {
  readonly #entries = new Map<string, Promise<TenantRuntime | undefined>>();

  constructor(
    private readonly ctx: Omit<ServerContext, 'evictTenant'> & { evictTenant?: (t: string) => void },
    private readonly capacity: number,
  ) {}

  /** The tenant's runtime, built on first use; undefined when the tenant does not exist. */
  get(tenant: string): Promise<TenantRuntime | undefined> {
    const hit = this.#entries.get(tenant);
    if (hit !== undefined) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.#entries.delete(tenant);
      this.#entries.set(tenant, hit);
      return hit;
    }
    const built = buildProvider(this.ctx as ServerContext, tenant).then(
      (p) => {
        // Unknown tenants are not cached: creating the tenant must take effect immediately.
        if (p === undefined && this.#entries.get(tenant) === built) this.#entries.delete(tenant);
        return p;
      },
      (err: unknown) => {
        if (this.#entries.get(tenant) === built) this.#entries.delete(tenant);
        throw err;
      },
    );
    this.#entries.set(tenant, built);
    while (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
    return built;
  }

  evict(tenant: string): void {
    this.#entries.delete(tenant);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
