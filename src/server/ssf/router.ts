/**
 * A tenant's SSF transmitter on its host (src/contract/ssf.ts): discovery, stream management,
 * status, verification and poll, in the order SSF 1.0 describes them. Bodies are JSON of at most
 * SSF_MAX_BODY_BYTES; problems are the server's JSON errors with a path.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { SSF_MAX_BODY_BYTES, SSF_PATHS, SsfPollBody, SsfStatusBody, SsfStreamBody, SsfStreamPatch, SsfVerifyBody } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { parseBody, sendJsonError } from '../admin/routes.ts';
import { errors } from '../errors.ts';
import { requireSsfCaller, type SsfCaller } from './auth.ts';
import type { SsfDispatcher } from './dispatcher.ts';
import { poll } from './poll.ts';
import type { SetSigner } from './sign.ts';
import { SsfStreams, discoveryDocument, streamView } from './streams.ts';

/** Whether a tenant host's path is the transmitter's. */
export const isSsfPath = (path: string) => path === SSF_PATHS.discovery || path.startsWith(`${SSF_PATHS.discovery}/`) || path.startsWith('/ssf/');

export function ssfRouter(ctx: ServerContext, dispatcher: SsfDispatcher, signer: SetSigner, longPollMs: number): Router {
  const router = express.Router();
  const streams = new SsfStreams(ctx, dispatcher);
  const json = express.json({ limit: SSF_MAX_BODY_BYTES, strict: false });
  const caller = requireSsfCaller(ctx);
  const tenantOf = (res: Response) => (res.locals.tenant as { name: string }).name;
  const who = (res: Response) => res.locals.ssfCaller as SsfCaller;
  const streamId = (req: Request) => (typeof req.query.stream_id === 'string' ? req.query.stream_id : undefined);

  // Discovery, at the root and where SSF 1.0 §7.1 derives it from the issuer (`<origin>/oauth2/`).
  router.get([SSF_PATHS.discovery, `${SSF_PATHS.discovery}/oauth2`], (_req, res) => {
    res.set('cache-control', 'public, max-age=300').json(discoveryDocument(ctx, tenantOf(res)));
  });

  router.post(SSF_PATHS.configuration, caller, json, async (req, res) => {
    res.status(201).json(await streams.create(tenantOf(res), who(res), parseBody(SsfStreamBody, req.body) as SsfStreamBody));
  });
  router.get(SSF_PATHS.configuration, caller, async (req, res) => {
    const id = streamId(req);
    if (id === undefined) res.json(await streams.list(tenantOf(res), who(res)));
    else res.json(streamView(ctx, await streams.reach(tenantOf(res), who(res), id)));
  });
  router.put(SSF_PATHS.configuration, caller, json, async (req, res) => {
    res.json(await streams.replace(tenantOf(res), who(res), parseBody(SsfStreamBody, req.body) as SsfStreamBody));
  });
  router.patch(SSF_PATHS.configuration, caller, json, async (req, res) => {
    res.json(await streams.update(tenantOf(res), who(res), parseBody(SsfStreamPatch, req.body) as SsfStreamPatch));
  });
  router.delete(SSF_PATHS.configuration, caller, async (req, res) => {
    await streams.delete(tenantOf(res), who(res), streamId(req));
    res.status(204).end();
  });

  router.get(SSF_PATHS.status, caller, async (req, res) => {
    res.json(await streams.status(tenantOf(res), who(res), streamId(req)));
  });
  router.post(SSF_PATHS.status, caller, json, async (req, res) => {
    res.json(await streams.setStatus(tenantOf(res), who(res), parseBody(SsfStatusBody, req.body) as SsfStatusBody));
  });

  router.post(SSF_PATHS.verification, caller, json, async (req, res) => {
    await streams.verify(tenantOf(res), who(res), parseBody(SsfVerifyBody, req.body) as SsfVerifyBody);
    res.status(204).end();
  });

  router.post(`${SSF_PATHS.poll}/:stream`, caller, json, async (req, res) => {
    const stream = await streams.reach(tenantOf(res), who(res), req.params.stream);
    const body = parseBody(SsfPollBody, req.body ?? {}) as SsfPollBody;
    let gone = false;
    res.once('close', () => (gone = true));
    res.json(await poll(ctx, dispatcher, signer, stream, body, longPollMs, () => gone));
  });

  router.use((req: Request) => {
    throw errors.notFound(`no SSF route ${req.method} ${req.path}`);
  });
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendJsonError(res, err, ctx);
  });
  return router;
}
