/**
 * Prometheus metrics (prom-client), served at `/metrics` on the base host. Label values come from
 * small fixed sets (route names, status codes, grant types, login outcomes), never from tenant
 * names or paths, so a scrape stays the same size with 10 tenants or 10,000.
 *
 * Under `idforge serve --workers N` every worker counts its own; the one asked for /metrics gets
 * the sum over all workers from the cluster primary (prom-client's AggregatorRegistry).
 */
import { OIDC_ROUTES } from '../../contract/index.ts';
import client from 'prom-client';

const { Counter, Gauge, Registry, collectDefaultMetrics } = client;

/** Route names by path below `/oauth2`, so the label is one of a few values whatever the URL. */
const OAUTH2_ROUTES = new Map<string, string>([
  ...Object.entries(OIDC_ROUTES).map(([name, path]) => [`/${path}`, name] as [string, string]),
  ['/.well-known/openid-configuration', 'discovery'],
]);

/** Which route a request is, for labels: the host kind and the path, never the tenant. */
export function routeLabel(host: 'base' | 'tenant' | 'unknown', url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (host === 'tenant') {
    if (path.startsWith('/oauth2/') || path === '/oauth2') {
      const below = path.slice('/oauth2'.length);
      const known = OAUTH2_ROUTES.get(below);
      if (known !== undefined) return known;
      if (below.startsWith('/auth/')) return 'authorization';
      return 'oauth2_other';
    }
    if (path.startsWith('/interaction/')) return 'interaction';
    if (path.startsWith('/static/')) return 'static';
    return 'tenant_other';
  }
  if (path === '/healthz' || path === '/readyz' || path === '/metrics') return path.slice(1);
  if (host === 'base') {
    if (path === '/admin/v1' || path.startsWith('/admin/v1/')) return 'admin';
    return 'base_other';
  }
  return 'unknown_host';
}

/** Login audit events → the outcome label of `idforge_logins_total`. */
const LOGIN_OUTCOMES: Readonly<Record<string, string>> = {
  'login.success': 'success',
  'login.failure': 'failure',
  'login.lockout': 'lockout',
  'login.refused': 'refused',
  'login.error': 'error',
};

export interface MetricsSources {
  /** Tenants in the database (asked at scrape time, at most every 10 s). */
  tenantCount(): Promise<number>;
  /** Tenant runtimes (oidc-provider instances) built in this process now. */
  runtimes(): number;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

/**
 * Requests by route and status, and latency by route, counted in plain arrays and turned into
 * Prometheus values only when scraped: prom-client's labelled metrics hash their labels on every
 * increment, a measurable share of the token endpoint's few hundred microseconds.
 */
class RequestCounts {
  readonly #byRouteStatus = new Map<string, { readonly route: string; readonly status: string; n: number }>();
  readonly #latency = new Map<string, { readonly buckets: Float64Array; sum: number; count: number }>();

  add(route: string, status: number, seconds: number): void {
    const key = `${route} ${status}`;
    let c = this.#byRouteStatus.get(key);
    if (c === undefined) this.#byRouteStatus.set(key, (c = { route, status: String(status), n: 0 }));
    c.n++;
    let h = this.#latency.get(route);
    if (h === undefined) this.#latency.set(route, (h = { buckets: new Float64Array(LATENCY_BUCKETS.length), sum: 0, count: 0 }));
    // Each observation counts in its own bucket here; cumulated when scraped.
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    if (i < LATENCY_BUCKETS.length) h.buckets[i]!++;
    h.sum += seconds;
    h.count++;
  }

  /** prom-client's metric interface (also what the cluster primary aggregates: sums). */
  metrics(): { name: string; help: string; type: string; aggregator: 'sum'; get(): Promise<object> }[] {
    return [
      {
        name: 'idforge_http_requests_total', help: 'HTTP requests answered, by route and status code', type: 'counter', aggregator: 'sum',
        get: async () => ({
          name: 'idforge_http_requests_total', help: 'HTTP requests answered, by route and status code', type: 'counter', aggregator: 'sum',
          values: [...this.#byRouteStatus.values()].map((c) => ({ labels: { route: c.route, status: c.status }, value: c.n })),
        }),
      },
      {
        name: 'idforge_http_request_duration_seconds', help: 'Time from request to the end of the response, by route', type: 'histogram', aggregator: 'sum',
        get: async () => ({
          name: 'idforge_http_request_duration_seconds', help: 'Time from request to the end of the response, by route', type: 'histogram', aggregator: 'sum',
          values: [...this.#latency.entries()].flatMap(([route, h]) => {
            let cumulative = 0;
            return [
              ...LATENCY_BUCKETS.map((le, i) => {
                cumulative += h.buckets[i]!;
                return { metricName: 'idforge_http_request_duration_seconds_bucket', labels: { le, route }, value: cumulative };
              }),
              { metricName: 'idforge_http_request_duration_seconds_bucket', labels: { le: '+Inf', route }, value: h.count },
              { metricName: 'idforge_http_request_duration_seconds_sum', labels: { route }, value: h.sum },
              { metricName: 'idforge_http_request_duration_seconds_count', labels: { route }, value: h.count },
            ];
          }),
        }),
      },
    ];
  }
}

export class ServerMetrics {
  readonly registry = new Registry();
  readonly #requestCounts = new RequestCounts();
  readonly #grants = new Counter({ name: 'idforge_grants_total', help: 'Token endpoint grants, by grant type and outcome', labelNames: ['grant_type', 'outcome'] as const, registers: [this.registry] });
  readonly #logins = new Counter({ name: 'idforge_logins_total', help: 'Sign-in attempts by outcome (success, failure, lockout, refused, error)', labelNames: ['outcome'] as const, registers: [this.registry] });
  readonly #builds = new Counter({ name: 'idforge_tenant_runtime_builds_total', help: "Tenant runtimes (oidc-provider instances) built from storage", registers: [this.registry] });
  readonly #dbErrors = new Counter({
    name: 'idforge_db_errors_total', help: 'Database faults met (unavailable, timeout, read_only, io_error, disk_full), each answered 503 or 507',
    labelNames: ['kind'] as const, registers: [this.registry],
  });
  readonly #invalidations = new Counter({ name: 'idforge_tenant_invalidations_total', help: 'Tenant changes heard from the change feed (this replica and others)', registers: [this.registry] });
  constructor(sources: MetricsSources) {
    for (const m of this.#requestCounts.metrics()) this.registry.registerMetric(m as never);
    let cached: { at: number; n: number } | undefined;
    new Gauge({
      name: 'idforge_tenants', help: 'Tenants in the database (the system tenant included)', registers: [this.registry], aggregator: 'first',
      async collect() {
        if (cached === undefined || Date.now() - cached.at > 10_000) cached = { at: Date.now(), n: await sources.tenantCount() };
        this.set(cached.n);
      },
    });
    new Gauge({
      name: 'idforge_tenant_runtimes', help: 'Tenant runtimes built and kept in this process', registers: [this.registry],
      collect() {
        this.set(sources.runtimes());
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  request(route: string, status: number, seconds: number): void {
    this.#requestCounts.add(route, status, seconds);
  }

  grant(grantType: unknown, ok: boolean): void {
    // Only the grant types the server enables; anything else a client sends is `other`.
    const type = typeof grantType === 'string' && ['authorization_code', 'refresh_token', 'client_credentials'].includes(grantType) ? grantType : 'other';
    this.#grants.labels(type, ok ? 'success' : 'error').inc();
  }

  audit(event: Readonly<Record<string, unknown>>): void {
    const outcome = typeof event.audit === 'string' ? LOGIN_OUTCOMES[event.audit] : undefined;
    if (outcome !== undefined) this.#logins.labels(outcome).inc();
  }

  built(): void {
    this.#builds.inc();
  }

  databaseFault(kind: string): void {
    this.#dbErrors.labels(kind).inc();
  }

  invalidated(): void {
    this.#invalidations.inc();
  }

  /** In a cluster worker: these are the metrics the primary sums over the workers. */
  shareWithCluster(): void {
    // Constructing one installs prom-client's worker-side listener for the primary's requests.
    new client.AggregatorRegistry();
    client.AggregatorRegistry.setRegistries(this.registry);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
