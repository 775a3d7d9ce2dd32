/**
 * The admin API router, mounted at /admin/v1 on the base host. Routes read in the order of the
 * resources' dependencies: tenants, keys, applications, secrets, users, assignments.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import {
  ApplicationBody,
  AssignmentBody,
  DNS_LABEL,
  NAME,
  TenantBody,
  USER_ID,
  UserBody,
} from '../../schema/admin-api.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError, errorBody, errors } from '../errors.ts';
import { SIGNING_ALGS } from '../keys.ts';
import { requireAdmin } from './auth.ts';
import { openApiDocument } from './openapi.ts';
import { AdminService, type PutResult } from './service.ts';

export const RotateKeysBody = z.strictObject({ alg: z.enum(SIGNING_ALGS as ['RS256', 'ES256']).optional() });

/** zod issues → one ServerError listing every problem with its body path. */
function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const problems = r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
  const first = problems[0]!;
  throw errors.invalidRequest(`invalid body: ${first.path === '' ? '' : `${first.path}: `}${first.message}`, first.path, problems);
}

function param(req: Request, name: string, pattern: RegExp, what: string): string {
  const v = String(req.params[name] ?? '');
  if (!pattern.test(v)) throw errors.invalidRequest(`'${v}' is not a valid ${what}`, `params.${name}`);
  return v;
}

const tenantOf = (req: Request) => param(req, 'tenant', DNS_LABEL, 'tenant name (a DNS label)');
const appOf = (req: Request) => param(req, 'application', NAME, 'application name');
const userOf = (req: Request) => param(req, 'userId', USER_ID, 'user id');

function dryRun(req: Request): boolean {
  const v = req.query.dryRun;
  return v === 'true' || v === '1';
}

function page(req: Request): { cursor: string | undefined; limit: number } {
  const limit = req.query.limit === undefined ? 100 : Number(req.query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw errors.invalidRequest('limit must be an integer from 1 to 500', 'query.limit');
  const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
  return { cursor, limit };
}

/** 201 when created, 200 otherwise; the body says what happened. */
function sendPut(res: Response, r: PutResult<unknown>): void {
  res.status(r.outcome === 'created' ? 201 : 200).json(r);
}

export function adminRouter(ctx: ServerContext): Router {
  const svc = new AdminService(ctx);
  const router = express.Router();

  // The API's own description is public: it holds no data, and tools need it before they have a token.
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument(ctx.address()));
  });

  router.use(requireAdmin(ctx));
  router.use(express.json({ limit: '256kb', strict: false }));

  // Tenants
  router.get('/tenants', async (req, res) => { res.json(await svc.listTenants(page(req))); });
  router.get('/tenants/:tenant', async (req, res) => { res.json(await svc.getTenant(tenantOf(req))); });
  router.put('/tenants/:tenant', async (req, res) => {
    const t = tenantOf(req);
    sendPut(res, await svc.putTenant(t, parse(TenantBody, req.body), dryRun(req)));
  });
  router.delete('/tenants/:tenant', async (req, res) => {
    await svc.deleteTenant(tenantOf(req), dryRun(req));
    res.status(204).end();
  });

  // Signing keys
  router.get('/tenants/:tenant/keys', async (req, res) => { res.json({ items: await svc.listKeys(tenantOf(req)) }); });
  router.post('/tenants/:tenant/keys/rotate', async (req, res) => {
    const t = tenantOf(req);
    const body = parse(RotateKeysBody, req.body ?? {});
    res.json({ items: await svc.rotateKeys(t, body.alg) });
  });

  // Applications
  router.get('/tenants/:tenant/applications', async (req, res) => { res.json(await svc.listApplications(tenantOf(req), page(req))); });
  router.get('/tenants/:tenant/applications/:application', async (req, res) => {
    res.json(await svc.getApplication(tenantOf(req), appOf(req)));
  });
  router.put('/tenants/:tenant/applications/:application', async (req, res) => {
    const [t, a] = [tenantOf(req), appOf(req)];
    sendPut(res, await svc.putApplication(t, a, parse(ApplicationBody, req.body), dryRun(req)));
  });
  router.delete('/tenants/:tenant/applications/:application', async (req, res) => {
    await svc.deleteApplication(tenantOf(req), appOf(req), dryRun(req));
    res.status(204).end();
  });
  router.post('/tenants/:tenant/applications/:application/secret/rotate', async (req, res) => {
    res.json(await svc.rotateClientSecret(tenantOf(req), appOf(req)));
  });

  // Users
  router.get('/tenants/:tenant/users', async (req, res) => { res.json(await svc.listUsers(tenantOf(req), page(req))); });
  router.get('/tenants/:tenant/users/:userId', async (req, res) => { res.json(await svc.getUser(tenantOf(req), userOf(req))); });
  router.put('/tenants/:tenant/users/:userId', async (req, res) => {
    const [t, u] = [tenantOf(req), userOf(req)];
    sendPut(res, await svc.putUser(t, u, parse(UserBody, req.body), dryRun(req)));
  });
  router.delete('/tenants/:tenant/users/:userId', async (req, res) => {
    await svc.deleteUser(tenantOf(req), userOf(req), dryRun(req));
    res.status(204).end();
  });

  // Assignments
  router.get('/tenants/:tenant/applications/:application/assignments', async (req, res) => {
    res.json(await svc.listAssignments(tenantOf(req), appOf(req), page(req)));
  });
  router.get('/tenants/:tenant/applications/:application/assignments/:userId', async (req, res) => {
    res.json(await svc.getAssignment(tenantOf(req), appOf(req), userOf(req)));
  });
  router.put('/tenants/:tenant/applications/:application/assignments/:userId', async (req, res) => {
    const [t, a, u] = [tenantOf(req), appOf(req), userOf(req)];
    sendPut(res, await svc.putAssignment(t, a, u, parse(AssignmentBody, req.body ?? {}), dryRun(req)));
  });
  router.delete('/tenants/:tenant/applications/:application/assignments/:userId', async (req, res) => {
    await svc.deleteAssignment(tenantOf(req), appOf(req), userOf(req), dryRun(req));
    res.status(204).end();
  });

  router.use((req: Request) => {
    throw errors.notFound(`no admin API route ${req.method} ${req.baseUrl}${req.path}`);
  });

  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendJsonError(res, err, ctx);
  });
  return router;
}

/** Maps any error (ours, body-parser's, a bug) to status + JSON; logs bugs, never sends stacks. */
export function sendJsonError(res: Response, err: unknown, ctx: ServerContext): void {
  let e: unknown = err;
  const status = (err as { status?: unknown; type?: unknown })?.status;
  const type = (err as { type?: unknown })?.type;
  if (!(err instanceof ServerError)) {
    if (err instanceof RangeError && err.message === 'invalid cursor') e = errors.invalidRequest('invalid cursor', 'query.cursor');
    else if (type === 'entity.parse.failed') e = errors.invalidRequest('the request body is not valid JSON');
    else if (type === 'entity.too.large') e = new ServerError(413, 'invalid_request', 'the request body is too large');
    else if (typeof status === 'number' && status >= 400 && status < 500) e = new ServerError(status, 'invalid_request', 'the request could not be read');
    else ctx.log(`admin API internal error: ${(err as Error)?.stack ?? String(err)}`);
  }
  const { status: s, body } = errorBody(e);
  res.status(s).json(body);
}
