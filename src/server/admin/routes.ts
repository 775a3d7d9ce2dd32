/**
 * The admin API router, mounted at /admin/v1 on the base host. Routes are registered from the
 * contract's route table (src/contract/routes.ts), each with its handler below; the table also feeds
 * the admin client and the OpenAPI document, so the three cannot disagree. Handlers read in the order
 * of the resources' dependencies: tenants, keys, applications, secrets, users, assignments.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { z } from 'zod';
import {
  ADMIN_ROUTES, DEFAULT_MAX_BODY_BYTES, PAGE_LIMIT, PATH_PARAMS, formatPath, openApiDocument, parsePeopleQuery,
  type PathParam, type RouteName, type RouteParams, type RouteParsedBody, type RouteResponse, type RouteSpec,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError, errorBody, errors } from '../errors.ts';
import { createScimToken, deleteScimToken, listScimTokens } from '../scim/tokens.ts';
import { requireAdmin } from './auth.ts';
import { RefusedBatch } from '../directory/batch.ts';
import { ConsoleSessions } from '../directory/console-sessions.ts';
import { sendPasswordLinkFor } from '../directory/password-links.ts';
import { changePassword, endAllSessions, endApplication, endSession, factorsOf, enrolPasskey, enrolTotp, removePasskey, startPasskeyEnrolment, removeTotp, resetFactors, sessionsOf, unlockUser } from '../directory/account.ts';
import { GroupAdmin } from './groups.ts';
import { listEvents } from './events.ts';
import { WebhookAdmin } from '../directory/webhooks.ts';
import { AdminService } from './service.ts';

interface HandlerInput<R extends RouteName> {
  readonly params: RouteParams<R>;
  readonly body: RouteParsedBody<R>;
  readonly page: { readonly cursor: string | undefined; readonly limit: number };
  readonly dryRun: boolean;
  /** `force=true`: take over an object another manager keeps (src/contract/managers.ts). */
  readonly force: boolean;
  /** The query string's single values (the event log's filters). */
  readonly query: Readonly<Record<string, string | undefined>>;
}
/** A response as the handlers may answer it: read-only all the way down (the services answer readonly lists). */
type ReadonlyDeep<T> = T extends readonly (infer U)[] ? readonly ReadonlyDeep<U>[] : T extends object ? { readonly [K in keyof T]: ReadonlyDeep<T[K]> } : T;
type Handlers = { readonly [R in RouteName]: (input: HandlerInput<R>) => Promise<ReadonlyDeep<RouteResponse<R>> | void> };

function handlers(svc: AdminService, groups: GroupAdmin, ctx: ServerContext): Handlers {
  const consoleSessions = new ConsoleSessions(ctx);
  const webhooks = new WebhookAdmin(ctx);
  // Every operation of the route table has its handler, answering the contract's response type for
  // it: a missing handler or an answer of another shape does not compile.
  return {
    listTenants: ({ page }) => svc.listTenants(page),
    getTenant: ({ params }) => svc.getTenant(params.tenant),
    listTenantRevisions: async () => ({ revisions: await ctx.storage.events.revisions() }),
    putTenant: ({ params, body, dryRun, force }) => svc.putTenant(params.tenant, body, dryRun, force),
    deleteTenant: async ({ params, dryRun }) => void (await svc.deleteTenant(params.tenant, dryRun)),
    renameTenant: ({ params, body }) => svc.renameTenant(params.tenant, body.to),

    listKeys: async ({ params }) => ({ items: await svc.listKeys(params.tenant) }),
    rotateKeys: async ({ params, body }) => ({ items: await svc.rotateKeys(params.tenant, body.alg) }),

    listApplications: ({ params, page }) => svc.listApplications(params.tenant, page),
    getApplication: ({ params }) => svc.getApplication(params.tenant, params.application),
    putApplication: ({ params, body, dryRun, force }) => svc.putApplication(params.tenant, params.application, body, dryRun, force),
    deleteApplication: ({ params, dryRun }) => svc.deleteApplication(params.tenant, params.application, dryRun),
    renameApplication: ({ params, body }) => svc.renameApplication(params.tenant, params.application, body.to),
    verifyClientSecret: ({ params, body }) => svc.verifyClientSecret(params.tenant, params.application, body.clientSecret),
    rotateClientSecret: ({ params }) => svc.rotateClientSecret(params.tenant, params.application),

    listUsers: ({ params, page, query }) => {
      const { search, problem } = parsePeopleQuery(query.q);
      if (problem !== undefined) throw errors.invalidRequest(`query.q: ${problem}`, 'query.q');
      return svc.listUsers(params.tenant, page, search);
    },
    getUser: ({ params }) => svc.getUser(params.tenant, params.userId),
    putUser: ({ params, body, dryRun, force }) => svc.putUser(params.tenant, params.userId, body, dryRun, force),
    deleteUser: ({ params, dryRun }) => svc.deleteUser(params.tenant, params.userId, dryRun),
    inviteUser: ({ params }) => sendPasswordLinkFor(ctx, params.tenant, params.userId, 'invitation'),
    sendRecovery: ({ params }) => sendPasswordLinkFor(ctx, params.tenant, params.userId, 'recovery'),
    changeUserPassword: async ({ params, body }) => changePassword(ctx, params.tenant, params.userId, body.currentPassword, body.newPassword, body.clientAddress),
    getUserFactors: ({ params }) => factorsOf(ctx, params.tenant, params.userId),
    enrolUserTotp: ({ params, body }) => enrolTotp(ctx, params.tenant, params.userId, body.secret, body.code),
    deleteUserTotp: ({ params }) => removeTotp(ctx, params.tenant, params.userId),
    startUserPasskeyEnrolment: ({ params }) => startPasskeyEnrolment(ctx, params.tenant, params.userId),
    enrolUserPasskey: ({ params, body }) => enrolPasskey(ctx, params.tenant, params.userId, body.credential),
    deleteUserPasskey: ({ params }) => removePasskey(ctx, params.tenant, params.userId, params.credentialId),
    resetUserFactors: ({ params }) => resetFactors(ctx, params.tenant, params.userId),
    listUserSessions: ({ params }) => sessionsOf(ctx, params.tenant, params.userId),
    unlockUser: ({ params }) => unlockUser(ctx, params.tenant, params.userId),
    deleteUserSession: ({ params }) => endSession(ctx, params.tenant, params.userId, params.sessionId),
    deleteUserSessions: ({ params }) => endAllSessions(ctx, params.tenant, params.userId),
    revokeUserApplication: ({ params }) => endApplication(ctx, params.tenant, params.userId, params.application),

    listAssignments: ({ params, page }) => svc.listAssignments(params.tenant, params.application, page),
    getAssignment: ({ params }) => svc.getAssignment(params.tenant, params.application, params.userId),
    listUserAssignments: ({ params }) => svc.listUserAssignments(params.tenant, params.userId),
    putAssignment: ({ params, body, dryRun, force }) => svc.putAssignment(params.tenant, params.application, params.userId, body, dryRun, force),
    deleteAssignment: ({ params, dryRun }) => svc.deleteAssignment(params.tenant, params.application, params.userId, dryRun),
    changeAssignments: ({ params, body, dryRun }) => svc.changeAssignments(params.tenant, params.application, body, dryRun),

    applyTenantBatch: ({ params, body, dryRun }) => svc.applyTenantBatch(params.tenant, body, dryRun),

    listGroups: ({ params, page }) => groups.listGroups(params.tenant, page),
    getGroup: ({ params }) => groups.getGroup(params.tenant, params.group),
    putGroup: ({ params, body, dryRun, force }) => groups.putGroup(params.tenant, params.group, body, dryRun, force),
    deleteGroup: ({ params, dryRun }) => groups.deleteGroup(params.tenant, params.group, dryRun),

    listTenantGroupAssignments: async ({ params }) => ({ items: await groups.listTenantGroupAssignments(params.tenant) }),
    listGroupAssignments: ({ params, page }) => groups.listGroupAssignments(params.tenant, params.application, page),
    getGroupAssignment: ({ params }) => groups.getGroupAssignment(params.tenant, params.application, params.group),
    putGroupAssignment: ({ params, body, dryRun, force }) => groups.putGroupAssignment(params.tenant, params.application, params.group, body, dryRun, force),
    deleteGroupAssignment: ({ params, dryRun }) => groups.deleteGroupAssignment(params.tenant, params.application, params.group, dryRun),

    createScimToken: ({ params, body }) => createScimToken(ctx, params.tenant, body.description),
    listScimTokens: ({ params }) => listScimTokens(ctx, params.tenant),
    deleteScimToken: ({ params }) => deleteScimToken(ctx, params.tenant, params.tokenId),

    createConsoleSession: ({ params, body }) => consoleSessions.create(params.tenant, body.userId),
    getConsoleSession: ({ params }) => consoleSessions.get(params.tenant, params.sessionId),
    deleteConsoleSession: ({ params }) => consoleSessions.delete(params.tenant, params.sessionId),

    listEvents: ({ params, query, page }) => listEvents(ctx, params.tenant, query, page),

    listWebhooks: ({ params }) => webhooks.list(params.tenant),
    getWebhook: ({ params }) => webhooks.get(params.tenant, params.webhook),
    putWebhook: ({ params, body, dryRun, force }) => webhooks.put(params.tenant, params.webhook, body, dryRun, force),
    deleteWebhook: ({ params, dryRun }) => webhooks.delete(params.tenant, params.webhook, dryRun),
    listWebhookDeliveries: ({ params, page }) => webhooks.deliveries(params.tenant, params.webhook, page),
  };
}

/** zod issues → one ServerError listing every problem with its body path (the contract's formatter). */
/**
 * Deepest nesting a body may have. The deepest real body (a tenant's last-applied entry: groups,
 * assignments, routes and their scopes) is under 10; zod and JSON.stringify recurse per level, so a
 * body thousands deep would overflow the stack (a 500) before any rule could refuse it.
 */
export const MAX_BODY_DEPTH = 64;

/** Whether a parsed JSON value nests deeper than `max`, measured without recursion. */
function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d >= max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push([x, d + 1]);
  }
  return false;
}

export function parseBody(schema: z.ZodType, value: unknown): unknown {
  if (deeperThan(value, MAX_BODY_DEPTH)) throw errors.invalidRequest(`invalid body: nested more than ${MAX_BODY_DEPTH} levels deep`, '');
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const problems = r.error.issues.map((i) => {
    const code = (i as unknown as { params?: { code?: unknown } }).params?.code;
    return { path: formatPath(i.path as (string | number)[]), message: i.message, ...(typeof code === 'string' ? { code } : {}) };
  });
  const first = problems[0]!;
  throw errors.invalidRequest(`invalid body: ${first.path === '' ? '' : `${first.path}: `}${first.message}`, first.path, problems);
}

function pathParams(req: Request, spec: RouteSpec): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of spec.path.matchAll(/\{(\w+)\}/g)) {
    const name = m[1] as PathParam;
    const v = String(req.params[name] ?? '');
    const rule = PATH_PARAMS[name];
    if (!rule.pattern.test(v)) throw errors.invalidRequest(`'${v}' is not a valid ${rule.what}: it ${rule.rule}`, `params.${name}`);
    out[name] = v;
  }
  return out;
}

function page(req: Request): { cursor: string | undefined; limit: number } {
  const limit = req.query.limit === undefined ? PAGE_LIMIT.default : Number(req.query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT.max) {
    throw errors.invalidRequest(`limit must be an integer from 1 to ${PAGE_LIMIT.max}`, 'query.limit');
  }
  const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
  return { cursor, limit };
}

export function adminRouter(ctx: ServerContext): Router {
  const handle = handlers(new AdminService(ctx), new GroupAdmin(ctx), ctx);
  const router = express.Router();

  // The API's own description is public: it holds no data, and tools need it before they have a token.
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument(ctx.address()));
  });

  router.use(requireAdmin(ctx));

  for (const [name, spec] of Object.entries(ADMIN_ROUTES) as [RouteName, RouteSpec][]) {
    // A literal colon (a custom method such as `assignments:batch`) is escaped: express reads `:x` as a parameter.
    const expressPath = spec.path.replace(/:/g, '\\:').replace(/\{(\w+)\}/g, ':$1');
    const method = spec.method.toLowerCase() as 'get' | 'put' | 'post' | 'delete';
    // Each operation reads at most its row's body size: one object, or a tenant batch.
    const json = express.json({ limit: spec.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, strict: false });
    router[method](expressPath, json, async (req: Request, res: Response) => {
      const params = pathParams(req, spec);
      const raw = req.body === undefined && spec.optionalBody ? {} : req.body;
      const body = spec.body === undefined ? undefined : parseBody(spec.body, raw);
      const dryRun = req.query.dryRun === 'true' || req.query.dryRun === '1';
      const force = req.query.force === 'true' || req.query.force === '1';
      const result = await (handle[name] as (i: HandlerInput<RouteName>) => Promise<unknown>)({
        params: params as never, body: body as never, page: spec.query === 'page' || spec.query === 'people' || spec.query === 'events' ? page(req) : { cursor: undefined, limit: PAGE_LIMIT.default }, dryRun, force,
        query: Object.fromEntries(Object.entries(req.query).map(([k, v]) => [k, typeof v === 'string' ? v : undefined])),
      });
      if (spec.response === undefined) res.status(204).end();
      // PUT: 201 when created, 200 otherwise; the body says what happened.
      else res.status(spec.status ?? (spec.method === 'PUT' && (result as { outcome?: string }).outcome === 'created' ? 201 : 200)).json(result);
    });
  }

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
  const { status: s, body, headers } = errorBody(e);
  // A refused batch also says what would have happened to every entry.
  res.status(s).set(headers).json(e instanceof RefusedBatch ? { ...body, ...e.result } : body);
}
