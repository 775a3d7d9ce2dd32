/**
 * A small client of the server's admin API for the provider implementations (never captured by a
 * shell: providers receive an {@link AdminConnection} as a secret input and build a client per call).
 *
 * HTTP goes through node:http(s) with a resolver that maps `localhost` and `*.localhost` to
 * loopback (RFC 6761 §6.3), because the system resolver on many Linux machines does not, and the
 * system tenant's token endpoint lives at `http://<system>.localhost:<port>/oauth2/token`.
 */
import type { LookupFunction } from 'node:net';

/** Where the admin API is and how to get an `admin` token for it. A secret. */
export interface AdminEndpoint {
  /** e.g. http://localhost:8080/admin/v1 */
  readonly adminUrl: string;
  /** Token endpoint of the server's system tenant. */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Resource indicator (RFC 8707) the server issues admin tokens for; the token's audience. */
  readonly resource?: string;
  /** Scope that grants the admin API. Default: admin. */
  readonly scope?: string;
}

/**
 * How a resource reaches the admin API: an explicit endpoint (a secret), or the credentials file
 * that a local `idforge serve` rewrites on every start. The file form is what the IdentityStack
 * uses: it puts no secret in any resource's state, and it stays right when the server moves to
 * another port (the state of an unchanged resource keeps its old outputs, so an embedded URL would
 * go stale and a later refresh or destroy would call the old port).
 */
export type AdminConnection = AdminEndpoint | { readonly credentialsFile: string };

/** Reads a connection's endpoint; the credentials file is read at each call, so it is never stale. */
export async function resolveEndpoint(conn: AdminConnection): Promise<AdminEndpoint> {
  if (!('credentialsFile' in conn)) return conn;
  const { readFile } = await import('node:fs/promises');
  const c = JSON.parse(await readFile(conn.credentialsFile, 'utf8')) as Record<string, string | undefined>;
  if (!c.adminUrl || !c.tokenEndpoint || !c.clientId || !c.clientSecret) {
    throw new Error(`${conn.credentialsFile}: not an idforge admin credentials file`);
  }
  return {
    adminUrl: c.adminUrl,
    tokenUrl: c.tokenEndpoint,
    clientId: c.clientId,
    clientSecret: c.clientSecret,
    ...(c.resource ? { resource: c.resource } : {}),
    ...(c.scope ? { scope: c.scope } : {}),
  };
}

export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    detail: string,
  ) {
    super(`admin API ${method} ${path}: HTTP ${status}${detail ? `: ${detail}` : ''}`);
  }
}

interface HttpResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

const loopbackLookup: LookupFunction = (hostname, options, callback) => {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: '127.0.0.1', family: 4 },
      ]);
    } else {
      callback(null, '127.0.0.1', 4);
    }
    return;
  }
  void import('node:dns').then((dns) => dns.lookup(hostname, options, callback));
};

/** One HTTP exchange; resolves on any status, rejects only on network failure or timeout. */
export async function httpRequest(
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpResponse> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = mod.request(
      u,
      { method, headers: opts.headers, lookup: loopbackLookup, timeout: opts.timeoutMs ?? 30_000, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timed out: ${method} ${url}`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Tokens are cached per process and connection, so a bulk update fetches one token, not thousands. */
const tokens = new Map<string, { readonly token: string; readonly expiresAt: number }>();

export class AdminClient {
  private endpoint: Promise<AdminEndpoint> | undefined;

  constructor(private readonly connection: AdminConnection) {}

  private get conn(): Promise<AdminEndpoint> {
    this.endpoint ??= resolveEndpoint(this.connection);
    return this.endpoint;
  }

  private async token(fresh = false): Promise<string> {
    const conn = await this.conn;
    const key = `${conn.tokenUrl} ${conn.clientId} ${conn.clientSecret}`;
    const cached = tokens.get(key);
    if (!fresh && cached && cached.expiresAt > Date.now() + 10_000) return cached.token;
    const res = await httpRequest('POST', conn.tokenUrl, {
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(
          `${encodeURIComponent(conn.clientId)}:${encodeURIComponent(conn.clientSecret)}`,
        ).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: conn.scope ?? 'admin',
        ...(conn.resource ? { resource: conn.resource } : {}),
      }).toString(),
    });
    if (res.status !== 200) {
      throw new AdminApiError(res.status, 'POST', new URL(conn.tokenUrl).pathname, 'could not get an admin token');
    }
    const body = JSON.parse(res.text) as { access_token: string; expires_in?: number };
    tokens.set(key, { token: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 300) * 1000 });
    return body.access_token;
  }

  /** `path` is one of `adminPaths` (it starts with /admin/v1). */
  private async call(method: string, path: string, body?: unknown): Promise<HttpResponse> {
    const url = new URL(path, (await this.conn).adminUrl).href;
    let retried = false;
    for (;;) {
      const headers: Record<string, string> = { authorization: `Bearer ${await this.token(retried)}`, accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await httpRequest(method, url, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
      // A restarted server may have forgotten our token: fetch a new one once.
      if (res.status === 401 && !retried) {
        retried = true;
        continue;
      }
      return res;
    }
  }

  private fail(res: HttpResponse, method: string, path: string): never {
    let detail = res.text.slice(0, 500);
    try {
      const j = JSON.parse(res.text) as { message?: string; path?: unknown };
      if (j.message) detail = `${j.message}${j.path ? ` (at ${JSON.stringify(j.path)})` : ''}`;
    } catch {
      // not JSON: keep the raw text
    }
    throw new AdminApiError(res.status, method, path, detail);
  }

  /** The object, or undefined when the server has no such object. */
  async get<T = Record<string, unknown>>(path: string): Promise<T | undefined> {
    const res = await this.call('GET', path);
    if (res.status === 404) return undefined;
    if (res.status !== 200) this.fail(res, 'GET', path);
    return JSON.parse(res.text) as T;
  }

  async put<T = Record<string, unknown>>(path: string, body: unknown): Promise<T> {
    const res = await this.call('PUT', path, body);
    if (res.status < 200 || res.status >= 300) this.fail(res, 'PUT', path);
    return (res.text ? JSON.parse(res.text) : {}) as T;
  }

  /**
   * Every item of a paged collection (`{items, nextCursor}`), 500 per request; undefined when the
   * collection's owner does not exist (404).
   */
  async list<T = Record<string, unknown>>(path: string): Promise<T[] | undefined> {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.get<{ items: T[]; nextCursor?: string | null }>(
        `${path}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (page === undefined) return undefined;
      items.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return items;
  }

  /** Deleting what is already gone succeeds: delete is idempotent like PUT. */
  async delete(path: string): Promise<void> {
    const res = await this.call('DELETE', path);
    if (res.status === 404 || (res.status >= 200 && res.status < 300)) return;
    this.fail(res, 'DELETE', path);
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; the first failure rejects. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
