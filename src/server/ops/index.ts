/**
 * What an operator and a platform ask of a running server, on its base host (and on any host that
 * is no tenant's, e.g. the pod IP a kubelet probe or a Prometheus scrape uses):
 *
 *   GET /healthz   200 while the process serves (liveness: restart it when this fails)
 *   GET /readyz    200 when the storage answers, the change feed listens and the keys unseal;
 *                  503 with the failing checks otherwise, and from the moment shutdown begins
 *   GET /metrics   Prometheus text (ops/metrics.ts)
 *
 * And the bookkeeping for a graceful shutdown: requests in flight are counted, and once draining
 * every response asks its client to close the connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerMetrics } from './metrics.ts';
import { DatabaseFault } from '../errors.ts';

export interface ReadinessCheck {
  readonly name: string;
  /** Resolves when fine; rejects with the reason otherwise. */
  run(): Promise<void>;
}

export interface Ops {
  readonly metrics: ServerMetrics;
  readonly accessLog: boolean;
  readonly log: (line: string) => void;
  /** The metrics text to serve: this process's, or (workers) the sum over the cluster. */
  metricsText(): Promise<string>;
  readonly checks: readonly ReadinessCheck[];
  /** Counts the request in flight until its response closes; then calls `done` (metrics, access log). */
  begin(res: ServerResponse, done: () => void): void;
  readonly draining: boolean;
}

/** A readiness check that takes longer than this has failed. */
const CHECK_TIMEOUT_MS = 2_000;

export class OpsState implements Ops {
  readonly #inFlight = new Set<ServerResponse>();
  #draining = false;
  #idle: (() => void) | undefined;

  constructor(
    readonly metrics: ServerMetrics,
    readonly checks: readonly ReadinessCheck[],
    readonly accessLog: boolean,
    readonly log: (line: string) => void,
    readonly metricsText: () => Promise<string> = () => metrics.text(),
  ) {}

  begin(res: ServerResponse, done: () => void): void {
    this.#inFlight.add(res);
    if (this.#draining) res.setHeader('connection', 'close');
    // One listener per request ('close' follows 'finish', and also ends an aborted request).
    res.once('close', () => {
      this.#inFlight.delete(res);
      done();
      if (this.#inFlight.size === 0) this.#idle?.();
    });
  }

  get draining(): boolean {
    return this.#draining;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * From now on /readyz answers 503 and responses close their connections, also those of requests
   * in flight whose answer has not started yet.
   */
  startDraining(): void {
    this.#draining = true;
    for (const res of this.#inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
  }

  /** Resolves when no request is in flight, or after `ms`; true when none is left. */
  async drained(ms: number): Promise<boolean> {
    if (this.#inFlight.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      new Promise<boolean>((r) => { this.#idle = () => r(true); }),
      new Promise<boolean>((r) => { timer = setTimeout(() => r(false), ms); }),
    ]);
    clearTimeout(timer);
    this.#idle = undefined;
    return done;
  }
}

async function runCheck(c: ReadinessCheck): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([c.run(), new Promise((_, fail) => { timer = setTimeout(() => fail(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS); })]);
    return undefined;
  } catch (err) {
    // The database's own words: readiness is for the operator.
    if (err instanceof DatabaseFault) return `${err.kind.replace('_', ' ')}: ${err.detail}`;
    return (err as Error).message.split('\n')[0];
  } finally {
    clearTimeout(timer);
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/** Answers /healthz, /readyz and /metrics; false for every other request. */
export function serveOps(ops: Ops, req: IncomingMessage, res: ServerResponse, url: string): boolean {
  const path = url.split('?')[0];
  if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' });
    res.end();
    return true;
  }
  if (path === '/healthz') {
    json(res, 200, { status: 'ok' });
    return true;
  }
  if (path === '/readyz') {
    if (ops.draining) {
      json(res, 503, { status: 'draining', checks: { shutdown: 'the server is shutting down' } });
      return true;
    }
    void Promise.all(ops.checks.map(async (c) => [c.name, await runCheck(c)] as const)).then((results) => {
      const failed = results.filter(([, why]) => why !== undefined);
      json(res, failed.length === 0 ? 200 : 503, {
        status: failed.length === 0 ? 'ready' : 'not ready',
        checks: Object.fromEntries(results.map(([name, why]) => [name, why ?? 'ok'])),
      });
    });
    return true;
  }
  ops.metricsText().then(
    (text) => {
      res.writeHead(200, { 'content-type': ops.metrics.contentType, 'cache-control': 'no-store' });
      res.end(text);
    },
    (err: unknown) => json(res, 500, { error: 'metrics unavailable', detail: (err as Error).message }),
  );
  return true;
}
