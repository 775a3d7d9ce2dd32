/**
 * The one client of the admin API, typed by the contract's route table: the CLI, the Pulumi
 * providers, the tests and the benchmarks all talk to a server through it. Identity travels as typed
 * parameters (tenant, application, user); the route table turns them into a path.
 *
 * It never imports the server: only the contract and node's HTTP.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ADMIN_AUDIENCE, ADMIN_BASE_PATH, ADMIN_CREDENTIALS_FILE, ADMIN_ROUTES, ADMIN_SCOPE, AdminCredentials, actorHeaders, routePath, stepName,
  type EventActor,
  type ErrorBody, type PutStep, type ResourceRef, type RouteBody, type RouteName, type RouteParams, type RouteQuery, type RouteResponse,
  type TenantBatchBody, type TenantBatchResult,
} from '../contract/index.ts';
import { localhostFetch } from './fetch.ts';

/** Where the admin API is and how to get an `admin` token for it. A secret. */
export interface AdminEndpoint {
  /** e.g. http://localhost:9080/admin/v1 */
  readonly adminUrl: string;
  /** Token endpoint of the server's system tenant. */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Resource indicator (RFC 8707) the server issues admin tokens for. Default: the admin API's. */
  readonly resource?: string;
  /** Scope that grants the admin API. Default: admin. */
  readonly scope?: string;
}

/**
 * How to reach a server: an explicit endpoint, or the credentials file a server rewrites on every
 * start (read at first use, so it is never stale: the server may have moved to another port).
 */
export type AdminConnection = AdminEndpoint | { readonly credentialsFile: string };

/** Any refusal or failure of the admin API, with the server's error body when it sent one. */
export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';
  constructor(
    /** HTTP status; 0 when the server could not be reached. */
    readonly status: number,
    /** The operation, e.g. `PUT acme/portal`. */
    readonly operation: string,
    readonly body: ErrorBody | undefined,
    detail: string,
  ) {
    super(operation === '' ? detail : `${operation}: ${status === 0 ? '' : `HTTP ${status}: `}${detail}`);
  }
  /** The server's stable error code (`conflict`, `invalid_request`, ...), if it answered. */
  get error(): string | undefined {
    return this.body?.error;
  }
}

/** Reads and checks `<dataDir>/admin-credentials.json`. */
export async function readAdminCredentials(dataDir: string): Promise<AdminCredentials> {
  const file = join(dataDir, ADMIN_CREDENTIALS_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AdminApiError(0, '', undefined, `cannot read admin credentials from ${file}: ${code ?? (err as Error).message} (has a server started with this data dir?)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = AdminCredentials.safeParse(json);
  if (!parsed.success) throw new AdminApiError(0, '', undefined, `${file} is not an idforge admin credentials file`);
  return parsed.data;
}

export function endpointFromCredentials(c: AdminCredentials): AdminEndpoint {
  return { adminUrl: c.adminUrl, tokenUrl: c.tokenEndpoint, clientId: c.clientId, clientSecret: c.clientSecret, resource: c.resource, scope: c.scope };
}

async function resolveEndpoint(conn: AdminConnection): Promise<AdminEndpoint> {
  if (!('credentialsFile' in conn)) return conn;
  const { dirname, basename } = await import('node:path');
  if (basename(conn.credentialsFile) === ADMIN_CREDENTIALS_FILE) return endpointFromCredentials(await readAdminCredentials(dirname(conn.credentialsFile)));
  const text = await readFile(conn.credentialsFile, 'utf8');
  const parsed = AdminCredentials.safeParse(JSON.parse(text));
  if (!parsed.success) throw new AdminApiError(0, '', undefined, `${conn.credentialsFile} is not an idforge admin credentials file`);
  return endpointFromCredentials(parsed.data);
}

/** Per process and endpoint, so a bulk run fetches one token, not thousands. */
const tokens = new Map<string, { readonly token: string; readonly expiresAt: number }>();

/** An admin access token via client_credentials (client_secret_basic) for the admin resource. */
export async function fetchAdminToken(endpoint: AdminEndpoint, timeoutMs = 30_000): Promise<{ token: string; expiresIn: number }> {
  const basic = Buffer.from(`${encodeURIComponent(endpoint.clientId)}:${encodeURIComponent(endpoint.clientSecret)}`).toString('base64');
  let res: Response;
  try {
    res = await localhostFetch(endpoint.tokenUrl, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: endpoint.scope ?? ADMIN_SCOPE, resource: endpoint.resource ?? ADMIN_AUDIENCE }).toString(),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new AdminApiError(0, '', undefined, `cannot get an admin token from ${endpoint.tokenUrl}: ${reason(err)}`);
  }
  const json = (await res.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error?: string; error_description?: string };
  if (!res.ok || typeof json.access_token !== 'string') {
    throw new AdminApiError(res.status, '', undefined, `cannot get an admin token from ${endpoint.tokenUrl}: HTTP ${res.status} ${json.error ?? ''} ${json.error_description ?? ''}`.trim());
  }
  return { token: json.access_token, expiresIn: json.expires_in ?? 300 };
}

function reason(err: unknown): string {
  const e = err as { cause?: { code?: string }; code?: string; name?: string; message?: string };
  if (e.name === 'TimeoutError') return 'timed out';
  const code = e.cause?.code ?? e.code;
  if (code === 'ECONNREFUSED') return 'connection refused (is the server running on that port?)';
  if (code === 'ENOTFOUND') return 'no such host';
  return code ?? e.message ?? String(err);
}

export interface CallOptions<R extends RouteName> {
  readonly body?: RouteBody<R>;
  readonly query?: RouteQuery<R>;
}

/** How many times one request rides out a 503 with Retry-After before its answer is returned. */
const BUSY_RETRIES = 3;

/** A Retry-After in seconds (RFC 9110: delay-seconds; an HTTP date is not waited for), at most 30. */
function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Math.min(Number(value.trim()), 30);
}

/** The answer of a call, as sent: for code that asserts on statuses (tests) or handles them itself. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

/** The item type of a listing operation's page. */
type ItemOf<R extends RouteName> = RouteResponse<R> extends { readonly items: readonly (infer I)[] } ? I : never;

export class AdminClient {
  #endpoint: Promise<AdminEndpoint> | undefined;

  constructor(
    private readonly connection: AdminConnection,
    private readonly options: {
      readonly timeoutMs?: number;
      /** Who writes, sent with every call (src/contract/events.ts ACTOR_HEADERS) and kept in the events the writes make. */
      readonly actor?: EventActor;
    } = {},
  ) {}

  /** A client for the server whose data dir holds these credentials; it talks only to their adminUrl. */
  static async forDataDir(dataDir: string): Promise<AdminClient> {
    return new AdminClient(endpointFromCredentials(await readAdminCredentials(dataDir)));
  }

  /** The same server and credentials, writing as `actor` (its headers on every call). */
  as(actor: EventActor): AdminClient {
    return new AdminClient(this.connection, { ...this.options, actor });
  }

  get endpoint(): Promise<AdminEndpoint> {
    this.#endpoint ??= resolveEndpoint(this.connection);
    return this.#endpoint;
  }

  /** `http://localhost:9080`: the server's base origin, for messages. */
  async server(): Promise<string> {
    return new URL((await this.endpoint).adminUrl).origin;
  }

  async token(fresh = false): Promise<string> {
    const ep = await this.endpoint;
    const key = `${ep.tokenUrl} ${ep.clientId} ${ep.clientSecret}`;
    const cached = tokens.get(key);
    if (!fresh && cached !== undefined && cached.expiresAt > Date.now() + 10_000) return cached.token;
    const { token, expiresIn } = await fetchAdminToken(ep, this.options.timeoutMs);
    tokens.set(key, { token, expiresAt: Date.now() + expiresIn * 1000 });
    return token;
  }

  /**
   * One HTTP exchange with an admin API path (below /admin/v1 or absolute on the server), with a
   * token; any status is returned. A 401 (a restarted server forgot the token) is retried once with
   * a new token. With `retryBusy` (the typed operations), a 503 with Retry-After (the database busy
   * or briefly away) is sent again after the time it asks, up to BUSY_RETRIES times, when the request
   * is idempotent (every read, PUT and DELETE, and a tenant batch): a long apply rides out another
   * writer's lock instead of stopping half way.
   */
  async raw(method: string, path: string, body?: unknown, opts: { readonly token?: string | null; readonly retryBusy?: boolean } = {}): Promise<RawResponse> {
    const ep = await this.endpoint;
    const base = new URL(ep.adminUrl);
    const url = new URL(path.startsWith(ADMIN_BASE_PATH) || path.startsWith('/') ? path : `${ADMIN_BASE_PATH}/${path}`, base.origin).href;
    const idempotent = method !== 'POST' || /\/batch(?:\?|$)/.test(path);
    let busy = 0;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json', ...(this.options.actor === undefined ? {} : actorHeaders(this.options.actor)) };
      const token = opts.token === undefined ? await this.token(attempt > 0) : opts.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      let res: Response;
      try {
        res = await localhostFetch(url, {
          method, headers,
          body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
        });
      } catch (err) {
        throw new AdminApiError(0, '', undefined, `cannot reach the server at ${base.origin}: ${reason(err)}`);
      }
      if (res.status === 401 && attempt === 0 && opts.token === undefined) continue;
      const wait = res.status === 503 && opts.retryBusy === true && idempotent && busy < BUSY_RETRIES ? retryAfterSeconds(res.headers.get('retry-after')) : undefined;
      if (wait !== undefined) {
        busy++;
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, wait * 1000));
        continue;
      }
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, headers: res.headers, body: parsed };
    }
  }

  /** Calls one operation of the route table; refusals throw AdminApiError. */
  async call<R extends RouteName>(name: R, params: RouteParams<R>, opts: CallOptions<R> = {}): Promise<RouteResponse<R>> {
    const spec = ADMIN_ROUTES[name];
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries((opts.query ?? {}) as Record<string, unknown>)) if (v !== undefined && v !== false) query.set(k, String(v));
    const path = routePath(name, params) + (query.size > 0 ? `?${query}` : '');
    const r = await this.raw(spec.method, path, opts.body ?? (spec.method === 'PUT' ? {} : undefined), { retryBusy: true });
    if (r.status >= 200 && r.status < 300) return r.body as RouteResponse<R>;
    throw refusal(`${spec.method} ${describe(params)}`, r);
  }

  /** The object, or undefined when the server has no such object (404). */
  async find<R extends RouteName>(name: R, params: RouteParams<R>): Promise<RouteResponse<R> | undefined> {
    try {
      return await this.call(name, params);
    } catch (err) {
      if (err instanceof AdminApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Every item of a collection, 500 per request; undefined when its owner does not exist (404). */
  async listAll<R extends 'listTenants' | 'listApplications' | 'listUsers' | 'listAssignments'>(
    name: R,
    params: RouteParams<R>,
  ): Promise<ItemOf<R>[] | undefined> {
    const items: ItemOf<R>[] = [];
    let cursor: string | undefined;
    do {
      let page;
      try {
        page = (await this.call(name, params, { query: { limit: 500, cursor } as RouteQuery<R> })) as { items: never[]; nextCursor: string | null };
      } catch (err) {
        if (err instanceof AdminApiError && err.status === 404) return undefined;
        throw err;
      }
      items.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return items;
  }

  /** Deleting what is already gone succeeds: delete is idempotent like PUT. */
  async remove<R extends 'deleteTenant' | 'deleteApplication' | 'deleteUser' | 'deleteAssignment' | 'deleteGroupAssignment' | 'deleteWebhook'>(name: R, params: RouteParams<R>): Promise<void> {
    try {
      await this.call(name, params);
    } catch (err) {
      if (!(err instanceof AdminApiError && err.status === 404)) throw err;
    }
  }

  /**
   * Sends one tenant batch, or dry-runs it. A refused batch (422) is an answer here, not an error:
   * `refused` is true, nothing was written, and `results` gives every entry's outcome, refusals with
   * their status, reason and path. Any other failure throws AdminApiError.
   */
  async batch(tenant: string, body: TenantBatchBody, opts: { readonly dryRun?: boolean } = {}): Promise<TenantBatchResult & { readonly refused: boolean }> {
    const path = routePath('applyTenantBatch', { tenant }) + (opts.dryRun === true ? '?dryRun=true' : '');
    const r = await this.raw(ADMIN_ROUTES.applyTenantBatch.method, path, body, { retryBusy: true });
    if (r.status === 200 || (r.status === 422 && Array.isArray((r.body as { results?: unknown } | undefined)?.results))) {
      const { applied, before, results, unchanged, undeclared, revision } = r.body as TenantBatchResult;
      return { applied, before, results, unchanged, ...(undeclared === undefined ? {} : { undeclared }), ...(revision === undefined ? {} : { revision }), refused: r.status === 422 };
    }
    throw refusal(`POST ${tenant} batch`, r);
  }

  // The provisioning plan's steps, by identity.

  /** PUTs one step (or dry-runs it); the server says what it did. */
  async putStep(step: PutStep, opts: { readonly dryRun?: boolean } = {}) {
    const query = { dryRun: opts.dryRun === true };
    switch (step.kind) {
      case 'tenant':
        return this.call('putTenant', { tenant: step.tenant }, { body: step.body, query });
      case 'application':
        return this.call('putApplication', { tenant: step.tenant, application: step.application }, { body: step.body, query });
      case 'user':
        return this.call('putUser', { tenant: step.tenant, userId: step.user }, { body: step.body, query });
      case 'assignment':
        return this.call('putAssignment', { tenant: step.tenant, application: step.application, userId: step.user }, { body: step.body, query });
      case 'webhook':
        return this.call('putWebhook', { tenant: step.tenant, webhook: step.webhook }, { body: step.body, query });
    }
  }

  /** The live object a reference names, or undefined. */
  async findRef(ref: ResourceRef): Promise<Record<string, unknown> | undefined> {
    return (await this.find(REF_ROUTES[ref.kind].get, paramsOf(ref) as never)) as Record<string, unknown> | undefined;
  }

  /** Deletes the object a reference names; already gone is fine. */
  async removeRef(ref: ResourceRef): Promise<void> {
    await this.remove(REF_ROUTES[ref.kind].delete, paramsOf(ref) as never);
  }
}

/** The operations that read and delete each kind of object. */
const REF_ROUTES = {
  tenant: { get: 'getTenant', delete: 'deleteTenant' },
  application: { get: 'getApplication', delete: 'deleteApplication' },
  user: { get: 'getUser', delete: 'deleteUser' },
  assignment: { get: 'getAssignment', delete: 'deleteAssignment' },
  'group assignment': { get: 'getGroupAssignment', delete: 'deleteGroupAssignment' },
  webhook: { get: 'getWebhook', delete: 'deleteWebhook' },
} as const satisfies Record<ResourceRef['kind'], { get: RouteName; delete: RouteName }>;

/** A reference's identity fields as route parameters. */
function paramsOf(ref: ResourceRef): Record<string, string> {
  return {
    tenant: ref.tenant,
    ...('application' in ref ? { application: ref.application } : {}),
    ...('user' in ref ? { userId: ref.user } : {}),
    ...('group' in ref ? { group: ref.group } : {}),
    ...('webhook' in ref ? { webhook: ref.webhook } : {}),
  };
}

/** `acme/portal` from route parameters, for messages. */
function describe(params: object): string {
  const p = params as { tenant?: string; application?: string; userId?: string };
  if (p.tenant === undefined) return 'tenants';
  if (p.application !== undefined && p.userId !== undefined) return stepName({ kind: 'assignment', tenant: p.tenant, application: p.application, user: p.userId });
  if (p.application !== undefined) return stepName({ kind: 'application', tenant: p.tenant, application: p.application });
  if (p.userId !== undefined) return stepName({ kind: 'user', tenant: p.tenant, user: p.userId });
  return stepName({ kind: 'tenant', tenant: p.tenant });
}

function refusal(operation: string, r: RawResponse): AdminApiError {
  const b = r.body as Partial<ErrorBody> | undefined;
  if (b !== undefined && typeof b === 'object' && typeof b.message === 'string') {
    return new AdminApiError(r.status, operation, b as ErrorBody, `${b.message}${b.path ? ` (at ${b.path})` : ''}`);
  }
  return new AdminApiError(r.status, operation, undefined, typeof r.body === 'string' ? r.body.slice(0, 300) : 'no error body');
}

/**
 * Runs `fn` over `items` with at most `limit` in flight; the first failure rejects, and no item
 * is started after it (those in flight finish).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
