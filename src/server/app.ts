/**
 * The HTTP front: dispatch by Host. The base host serves the admin API; `<tenant>.<base>` serves
 * that tenant's oidc-provider under /oauth2/ and its interaction pages; anything else is a 404
 * that says what went wrong.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ServerContext } from './_context.ts';
import { adminRouter, sendJsonError } from './admin/routes.ts';
import { errors } from './errors.ts';
import { interactionRouter } from './login/routes.ts';
import { serveOps, type Ops } from './ops/index.ts';
import { routeLabel } from './ops/metrics.ts';
import { requestIdFrom, runInRequest } from './ops/request-context.ts';
import { SCIM_PATH, scimRouter } from './scim/index.ts';
import { isSsfPath } from './ssf/router.ts';
import { PUBLISHED_PATHS, resolveHost, type ProviderCache, type PublishedPath } from './tenancy.ts';
import type { TenantRecord } from './storage/types.ts';

/**
 * The node request handler. Every request gets a request id (X-Request-Id, echoed), is counted
 * and timed by route (metrics), and is logged when the access log is on. Health, readiness and
 * metrics on the base host (and on any host that is no tenant's, such as an IP address) are answered here. Tenant protocol requests (/oauth2/...) go straight
 * to the tenant's oidc-provider, skipping express: the token endpoint is the hot path and
 * express's request decoration is pure overhead there; discovery and JWKS are answered from the
 * tenant's published documents when kept (tenancy.ts). Everything else goes through express.
 */
export function createHandler(ctx: ServerContext, providers: ProviderCache, app: express.Express, ops: Ops, budgetMs: number) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const url = req.url ?? '/';
    const target = resolveHost(req.headers.host, ctx.address().baseDomain);
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader('x-request-id', requestId);
    const route = routeLabel(target.kind, url);
    if (!(target.kind === 'base' && req.method === 'POST' && BATCH_PATH.test(url))) withinBudget(req, res, budgetMs, requestId, ctx.log);
    ops.begin(res, () => {
      const ms = performance.now() - started;
      // A connection closed before the answer was sent counts as 499 (nginx's "client closed request").
      const status = res.writableFinished ? res.statusCode : 499;
      ops.metrics.request(route, status, ms / 1000);
      if (ops.accessLog) {
        ops.log(JSON.stringify({
          time: new Date().toISOString(), level: 'info', msg: 'request', requestId, method: req.method, host: req.headers.host, path: url.split('?')[0],
          route, status, ms: Math.round(ms * 10) / 10, ...(target.kind === 'tenant' ? { tenant: target.tenant } : {}),
        }));
      }
    });
    runInRequest({ requestId }, () => dispatch(req, res, url, target));
  };

  function dispatch(req: IncomingMessage, res: ServerResponse, url: string, target: ReturnType<typeof resolveHost>): void {
    // Also for hosts that are no tenant's (a pod's IP): kubelet probes and Prometheus scrapes send those.
    if (target.kind !== 'tenant' && serveOps(ops, req, res, url)) return;
    if (url.startsWith('/oauth2/') || url === '/oauth2') {
      if (target.kind === 'tenant') {
        const below = url.slice('/oauth2'.length);
        const published = req.method === 'GET' && (PUBLISHED_PATHS as readonly string[]).includes(below) ? (below as PublishedPath) : undefined;
        if (published !== undefined) {
          const origin = req.headers.origin;
          if (providers.servePublished(target.tenant, published, origin, res)) return;
          providers.capture(target.tenant, published, res);
        }
        providers.get(target.tenant).then(
          (runtime) => {
            if (runtime === undefined) return app(req, res);
            // As express would leave it: originalUrl is how oidc-provider finds its mount path.
            (req as IncomingMessage & { originalUrl?: string }).originalUrl = url;
            req.url = url.slice('/oauth2'.length) || '/';
            return runtime.callback(req, res);
          },
          () => app(req, res),
        );
        return;
      }
    }
    app(req, res);
  }
}

/** Tenant batches run as long as their work needs (bounded by their size): `/admin/v1/tenants/<t>/batch`. */
const BATCH_PATH = /^\/admin\/v1\/tenants\/[a-z0-9-]{1,63}\/batch(?:\?|$)/;

/**
 * The request's time budget: unanswered when it runs out, the request gets a 503 with Retry-After
 * (or, if its answer had begun, its connection is closed), whatever its handler is still waiting
 * for: a slow database, a slow upstream, a slow client body. No request holds a client, a socket
 * and a worker for longer than the operator allowed.
 */
function withinBudget(req: IncomingMessage, res: ServerResponse, budgetMs: number, requestId: string, log: (line: string) => void): void {
  const timer = setTimeout(() => {
    log(JSON.stringify({ level: 'warn', msg: 'request over its time budget', requestId, method: req.method, path: (req.url ?? '/').split('?')[0], budgetMs }));
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const seconds = Math.max(1, Math.ceil(budgetMs / 1000));
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(Math.min(seconds, 30)), connection: 'close' });
    res.end(JSON.stringify({ error: 'temporarily_unavailable', message: `the server could not answer within its time budget of ${seconds} s; try again` }));
  }, budgetMs);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
  res.once('finish', () => clearTimeout(timer));
}

export function createApp(ctx: ServerContext, providers: ProviderCache, trustedProxies: number, ssf?: express.Router): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // A hop count, never `true`: with `true` express takes the leftmost X-Forwarded-For entry,
  // which the client writes itself, and per-address lockouts could be dodged by forging it.
  app.set('trust proxy', trustedProxies);

  const admin = adminRouter(ctx);
  const interactions = interactionRouter(ctx);
  // Apps the entry point mounted at the edge (the admin console): each on its path of every tenant host.
  const edge = ctx.edge.map((e) => ({
    path: e.path,
    handle: e.handler(ctx.edgeHost, (res) => {
      const t = (res as Response).locals.tenant as TenantRecord;
      return { name: t.name, displayName: t.body.displayName };
    }),
  }));
  const scim = scimRouter(ctx, ctx.scim);

  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const target = resolveHost(req.headers.host, ctx.address().baseDomain);
      if (target.kind === 'unknown') throw errors.unknownHost(target.host);
      if (target.kind === 'base') {
        if (req.path === '/admin/v1' || req.path.startsWith('/admin/v1/')) return admin(Object.assign(req, { url: req.url.slice('/admin/v1'.length) || '/' }), res, next);
        if (req.path === '/') return res.json({ service: 'idforge', admin: '/admin/v1', openapi: '/admin/v1/openapi.json', healthz: '/healthz', readyz: '/readyz', metrics: '/metrics' });
        throw errors.notFound(`no route ${req.method} ${req.path} on the base host`);
      }
      const runtime = await providers.get(target.tenant);
      if (runtime === undefined) throw errors.unknownTenant(target.tenant);
      res.locals.tenant = runtime.tenant;
      res.locals.provider = runtime.provider;
      if (req.path === '/oauth2' || req.path.startsWith('/oauth2/')) {
        // oidc-provider is mounted below /oauth2: it sees the rest of the path, like app.use('/oauth2', ...).
        req.url = req.url.slice('/oauth2'.length) || '/';
        return runtime.callback(req, res);
      }
      const app = edge.find((e) => req.path === e.path || req.path.startsWith(`${e.path}/`));
      if (app !== undefined) return app.handle(req, res, next);
      if (req.path === SCIM_PATH || req.path.startsWith(`${SCIM_PATH}/`)) return scim(Object.assign(req, { url: req.url.slice(SCIM_PATH.length) || '/' }), res, next);
      // The tenant's SSF transmitter (ssf/router.ts): discovery and /ssf/*.
      if (ssf !== undefined && isSsfPath(req.path)) return ssf(req, res, next);
      return interactions(req, res, (err?: unknown) => {
        if (err !== undefined) return next(err);
        next(errors.notFound(`no route ${req.method} ${req.path} on tenant '${target.tenant}'`));
      });
    } catch (err) {
      next(err);
    }
  });

  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendJsonError(res, err, ctx);
  });
  return app;
}
