/**
 * The HTTP front: dispatch by Host. The base host serves the admin API; `<tenant>.<base>` serves
 * that tenant's oidc-provider under /oauth2/ and its interaction pages; anything else is a 404
 * that says what went wrong.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ServerContext } from './_context.ts';
import { adminRouter, sendJsonError } from './admin/routes.ts';
import { errors } from './errors.ts';
import { interactionRouter } from './login/routes.ts';
import { resolveHost, type ProviderCache } from './tenancy.ts';

export function createApp(ctx: ServerContext, providers: ProviderCache, trustProxy: boolean): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy);

  const admin = adminRouter(ctx);
  const interactions = interactionRouter(ctx);
  const callbacks = new WeakMap<object, ReturnType<import('oidc-provider').default['callback']>>();

  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const target = resolveHost(req.headers.host, ctx.address().baseDomain);
      if (target.kind === 'unknown') throw errors.unknownHost(target.host);
      if (target.kind === 'base') {
        if (req.path === '/admin/v1' || req.path.startsWith('/admin/v1/')) return admin(Object.assign(req, { url: req.url.slice('/admin/v1'.length) || '/' }), res, next);
        if (req.path === '/' || req.path === '/healthz') return res.json({ service: 'idforge', admin: '/admin/v1', openapi: '/admin/v1/openapi.json' });
        throw errors.notFound(`no route ${req.method} ${req.path} on the base host`);
      }
      const provider = await providers.get(target.tenant);
      if (provider === undefined) throw errors.unknownTenant(target.tenant);
      const tenant = await ctx.storage.getTenant(target.tenant);
      if (tenant === undefined) throw errors.unknownTenant(target.tenant);
      res.locals.tenant = tenant;
      res.locals.provider = provider;
      if (req.path === '/oauth2' || req.path.startsWith('/oauth2/')) {
        let cb = callbacks.get(provider);
        if (cb === undefined) {
          cb = provider.callback();
          callbacks.set(provider, cb);
        }
        // oidc-provider is mounted below /oauth2: it sees the rest of the path, like app.use('/oauth2', ...).
        req.url = req.url.slice('/oauth2'.length) || '/';
        return cb(req, res);
      }
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
