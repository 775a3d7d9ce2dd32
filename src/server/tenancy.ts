/**
 * Tenant = Host subdomain. And what a process keeps per tenant so that requests spread over
 * thousands of tenants stay as fast as over ten:
 *
 * - Published documents (discovery and JWKS), a few KB per tenant, kept for up to 100,000
 *   tenants: served without the tenant's oidc-provider instance. A provider answers them once per
 *   tenant (and after each change of it), and its answer is kept as it was sent.
 * - oidc-provider instances, bounded (least recently used go first): an evicted tenant's provider
 *   is rebuilt on its next request that needs one (everything it needs is persistent), from the
 *   tenant's record, keys and applications as read for the previous build (kept for up to 20,000
 *   tenants, a few KB each), so a rebuild costs no database round trips.
 *
 * Both are dropped for a tenant when it changes, in this process at once and in every other
 * process on the database through the storage's change feed (within a second).
 */
import type { ServerResponse } from 'node:http';
import { DNS_LABEL } from '../contract/index.ts';
import type { ServerContext } from './_context.ts';
import { buildProvider, type TenantRuntime } from './provider.ts';
import type { Storage } from './storage/types.ts';

/** Tenants whose reads are kept for rebuilding their provider. */
const READS_CAPACITY = 20_000;

/**
 * The storage a provider build sees: the tenant's record, keys and application lookups are kept
 * per tenant and dropped with the tenant's provider (ProviderCache.evict), so they are never
 * older than the provider they build. Everything else (users, grants, ...) goes to storage.
 */
class TenantReads {
  readonly #kept = new Map<string, Map<string, Promise<unknown>>>();
  readonly view: Storage;

  constructor(storage: Storage) {
    const memo = <A extends unknown[], T>(key: (...a: A) => string, load: (...a: A) => Promise<T>) => (tenant: string, ...rest: A): Promise<T> => {
      let kept = this.#kept.get(tenant);
      const k = key(...rest);
      const hit = kept?.get(k) as Promise<T> | undefined;
      if (hit !== undefined) return hit;
      const loaded = load(...rest);
      // Failures and absent tenants are not kept: a retry or a creation must see the database.
      loaded.then((v) => { if (v === undefined) this.#kept.get(tenant)?.delete(k); }, () => this.#kept.get(tenant)?.delete(k));
      if (kept === undefined) {
        this.#kept.set(tenant, (kept = new Map()));
        if (this.#kept.size > READS_CAPACITY) this.#kept.delete(this.#kept.keys().next().value as string);
      }
      kept.set(k, loaded);
      return loaded;
    };
    const wrap = <T extends object>(store: T, overrides: Partial<T>): T => new Proxy(store, {
      get: (target, prop) => {
        if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof T];
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    this.view = {
      ...storage,
      tenants: wrap(storage.tenants, {
        get: (name: string) => memo(() => 'record', () => storage.tenants.get(name))(name),
        listKeys: (tenant: string) => memo(() => 'keys', () => storage.tenants.listKeys(tenant))(tenant),
      }),
      applications: wrap(storage.applications, {
        list: (tenant: string, page: { cursor?: string | undefined; limit: number }) =>
          memo(() => `list ${page.cursor ?? ''} ${page.limit}`, () => storage.applications.list(tenant, page))(tenant),
        getByClientId: (tenant: string, clientId: string) => memo(() => `client ${clientId}`, () => storage.applications.getByClientId(tenant, clientId))(tenant),
        getByIdentifier: (tenant: string, id: string) => memo(() => `api ${id}`, () => storage.applications.getByIdentifier(tenant, id))(tenant),
      }),
    };
  }

  forget(tenant: string): void {
    this.#kept.delete(tenant);
  }

  clear(): void {
    this.#kept.clear();
  }
}

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

/** The published documents, by their path below `/oauth2`. */
export const PUBLISHED_PATHS = ['/.well-known/openid-configuration', '/.well-known/jwks.json'] as const;
export type PublishedPath = (typeof PUBLISHED_PATHS)[number];

/** One published document as oidc-provider sent it: what varies per request (CORS) is added when served. */
interface Published {
  readonly contentType: string;
  readonly body: Buffer;
}

/** Tenants whose published documents are kept: ~3 KB each, so at most ~300 MB. */
const PUBLISHED_CAPACITY = 100_000;

export interface ProviderCacheHooks {
  /** A provider was built (metrics). */
  readonly built?: (runtime: TenantRuntime) => void;
}

export class ProviderCache {
  readonly #entries = new Map<string, Promise<TenantRuntime | undefined>>();
  readonly #published = new Map<string, Map<PublishedPath, Published>>();
  readonly #reads: TenantReads;
  readonly #buildCtx: ServerContext;
  /** Bumped by every eviction of a tenant: a document captured from an older provider is not kept. */
  readonly #generation = new Map<string, number>();
  #allGeneration = 0;

  constructor(
    private readonly ctx: Omit<ServerContext, 'evictTenant'> & { evictTenant?: (t: string) => void },
    private readonly capacity: number,
    private readonly hooks: ProviderCacheHooks = {},
  ) {
    this.#reads = new TenantReads(ctx.storage);
    this.#buildCtx = { ...(ctx as ServerContext), storage: this.#reads.view };
  }

  /** The tenant's runtime, built on first use; undefined when the tenant does not exist. */
  get(tenant: string): Promise<TenantRuntime | undefined> {
    const hit = this.#entries.get(tenant);
    if (hit !== undefined) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.#entries.delete(tenant);
      this.#entries.set(tenant, hit);
      return hit;
    }
    const built = buildProvider(this.#buildCtx, tenant).then(
      (p) => {
        // Unknown tenants are not cached: creating the tenant must take effect immediately.
        if (p === undefined && this.#entries.get(tenant) === built) this.#entries.delete(tenant);
        if (p !== undefined) this.hooks.built?.(p);
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

  /**
   * Answers a published document from the cache: true when it did (the response is sent), false
   * when the provider must answer (then `capture` keeps its answer for next time).
   */
  servePublished(tenant: string, path: PublishedPath, origin: string | undefined, res: ServerResponse): boolean {
    const doc = this.#published.get(tenant)?.get(path);
    if (doc === undefined) return false;
    // As oidc-provider's CORS middleware answers these public documents: any origin may read them.
    res.writeHead(200, {
      'content-type': doc.contentType,
      'content-length': doc.body.length,
      'access-control-allow-origin': origin ?? '*',
      vary: 'Origin',
    });
    res.end(doc.body);
    return true;
  }

  /** Keeps the provider's 200 answer to a published document, unless the tenant changed meanwhile. */
  capture(tenant: string, path: PublishedPath, res: ServerResponse): void {
    const generation = this.#generationOf(tenant);
    const end = res.end;
    // oidc-provider (koa) sends a JSON body in one res.end(body) call.
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      const type = res.getHeader('content-type');
      if (res.statusCode === 200 && (typeof chunk === 'string' || Buffer.isBuffer(chunk)) && typeof type === 'string' && this.#generationOf(tenant) === generation) {
        let docs = this.#published.get(tenant);
        if (docs === undefined) {
          this.#published.set(tenant, (docs = new Map()));
          if (this.#published.size > PUBLISHED_CAPACITY) this.#published.delete(this.#published.keys().next().value as string);
        }
        docs.set(path, { contentType: type, body: Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk) });
      }
      return (end as (...a: unknown[]) => ServerResponse).call(res, chunk, ...rest);
    }) as typeof res.end;
  }

  #generationOf(tenant: string): number {
    return this.#allGeneration + (this.#generation.get(tenant) ?? 0);
  }

  /** Forgets what is kept for `tenant` ('*': for every tenant). */
  evict(tenant: string): void {
    if (tenant === '*') return this.clear();
    this.#entries.delete(tenant);
    this.#published.delete(tenant);
    this.#reads.forget(tenant);
    this.#generation.set(tenant, (this.#generation.get(tenant) ?? 0) + 1);
    // Generations only need to outlive a request in flight; forget them in bulk now and then.
    if (this.#generation.size > PUBLISHED_CAPACITY) {
      this.#generation.clear();
      this.#allGeneration += 1_000_000;
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#published.clear();
    this.#reads.clear();
    this.#generation.clear();
    this.#allGeneration += 1_000_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Tenants whose published documents are kept. */
  get publishedSize(): number {
    return this.#published.size;
  }
}
