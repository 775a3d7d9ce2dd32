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
import { SCIM_PATH, scimRouter } from './scim/index.ts';
import { resolveHost, type ProviderCache } from './tenancy.ts';

/**
 * The node request handler. Tenant protocol requests (/oauth2/...) go straight to the tenant's
 * oidc-provider, skipping express: the token endpoint is the hot path and express's request
 * decoration is pure overhead there. Everything else goes through the express app.
 */
export function createHandler(ctx: ServerContext, providers: ProviderCache, app: express.Express) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    if (url.startsWith('/oauth2/') || url === '/oauth2') {
      const target = resolveHost(req.headers.host, ctx.address().baseDomain);
      if (target.kind === 'tenant') {
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
  };
}

export function createApp(ctx: ServerContext, providers: ProviderCache, trustedProxies: number): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // A hop count, never `true`: with `true` express takes the leftmost X-Forwarded-For entry,
  // which the client writes itself, and per-address lockouts could be dodged by forging it.
  app.set('trust proxy', trustedProxies);

  const admin = adminRouter(ctx);
  const interactions = interactionRouter(ctx);
  const scim = scimRouter(ctx, ctx.scim);

  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const target = resolveHost(req.headers.host, ctx.address().baseDomain);
      if (target.kind === 'unknown') throw errors.unknownHost(target.host);
      if (target.kind === 'base') {
        if (req.path === '/admin/v1' || req.path.startsWith('/admin/v1/')) return admin(Object.assign(req, { url: req.url.slice('/admin/v1'.length) || '/' }), res, next);
        if (req.path === '/' || req.path === '/healthz') return res.json({ service: 'idforge', admin: '/admin/v1', openapi: '/admin/v1/openapi.json' });
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
      if (req.path === SCIM_PATH || req.path.startsWith(`${SCIM_PATH}/`)) return scim(Object.assign(req, { url: req.url.slice(SCIM_PATH.length) || '/' }), res, next);
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
