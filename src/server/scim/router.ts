/**
 * The tenant's SCIM 2.0 service provider (RFC 7644), mounted at `<tenant host>/scim/v2`. Routes read
 * like the protocol: the token first, then the body (bounded in size and depth), then discovery,
 * Users, Groups and search across both. Every answer is `application/scim+json`; every refusal a
 * SCIM error (errors.ts), unknown paths and methods included.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { excerpt, scimBaseUrl } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { requireScimToken } from './auth.ts';
import { scimErrors, sendScim, sendScimError } from './errors.ts';
import { createGroup, deleteGroup, getGroup, patchGroup, queryGroups, replaceGroup } from './groups.ts';
import { listParams, listResponse, matchesIfMatch, project, sortResources, type ListParams, type Resource } from './list.ts';
import { SCIM_DEFAULTS, scimSettings, type ScimSettings } from './options.ts';
import { RESOURCE_TYPES, URN, resourceTypeResources, schemaResources, type ResourceKind } from './_schema.ts';
import type { ScimScope } from './_scope.ts';
import { createUser, deleteUser, getUser, patchUser, queryUsers, replaceUser } from './users.ts';
import { MAX_RESULTS } from './list.ts';

/** Where the SCIM service provider lives on a tenant host. */
export const SCIM_PATH = '/scim/v2';

/** The deepest nesting of a JSON value, found without recursion (a deep body must not exhaust the stack). */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, d);
    if (deepest > limit) return deepest;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

function serviceProviderConfig(base: string) {
  return {
    schemas: [URN.serviceProviderConfig],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [{
      type: 'oauthbearertoken',
      name: 'SCIM bearer token',
      description: 'A static bearer token of the tenant, made with POST /admin/v1/tenants/{tenant}/scim/tokens',
      primary: true,
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

const KINDS = {
  User: { get: getUser, create: createUser, replace: replaceUser, patch: patchUser, remove: deleteUser, query: queryUsers },
  Group: { get: getGroup, create: createGroup, replace: replaceGroup, patch: patchGroup, remove: deleteGroup, query: queryGroups },
} as const;

/** `attributes`/`excludedAttributes` of a single-resource request. */
const projection = (req: Request) => listParams(undefined, { attributes: req.query.attributes, excludedAttributes: req.query.excludedAttributes });

export function scimRouter(ctx: ServerContext, settings: ScimSettings = scimSettings()): Router {
  const router = express.Router();
  const scope = (res: Response): ScimScope => {
    const tenant = (res.locals.tenant as { name: string }).name;
    return { ctx, tenant, base: scimBaseUrl(ctx.address(), tenant) };
  };
  const notAllowed = (allow: string) => (req: Request) => {
    throw scimErrors.methodNotAllowed(`${req.method} is not allowed on ${SCIM_PATH}${req.path}; allowed: ${allow}`, allow);
  };
  /** One resource as an answer: its version as ETag, the parts asked for. */
  const sendResource = (req: Request, res: Response, kind: ResourceKind, r: Resource, status = 200) => {
    const version = (r.meta as { version: string }).version;
    const headers: Record<string, string> = { etag: version };
    if (status === 201) headers.location = (r.meta as { location: string }).location;
    sendScim(res, status, project(kind, r, projection(req)), headers);
  };
  const ifMatch = (req: Request) => (typeof req.headers['if-match'] === 'string' ? req.headers['if-match'] : undefined);

  router.use(requireScimToken(ctx, settings));
  router.use(express.json({ limit: SCIM_DEFAULTS.maxBodyBytes, type: ['application/scim+json', 'application/json', 'application/*+json'] }));
  router.use((req: Request, _res: Response, next: NextFunction) => {
    if (req.body !== undefined && depthOf(req.body, SCIM_DEFAULTS.maxDepth) > SCIM_DEFAULTS.maxDepth) {
      throw scimErrors.invalidSyntax(`the request body is nested deeper than ${SCIM_DEFAULTS.maxDepth} levels`);
    }
    next();
  });

  router.route('/ServiceProviderConfig')
    .get((_req, res) => sendScim(res, 200, serviceProviderConfig(scope(res).base)))
    .all(notAllowed('GET'));
  router.route('/ResourceTypes')
    .get((_req, res) => {
      const all = resourceTypeResources((p) => `${scope(res).base}${p}`);
      sendScim(res, 200, listResponse(all, all.length, 1));
    })
    .all(notAllowed('GET'));
  router.route('/ResourceTypes/:name')
    .get((req, res) => {
      const found = resourceTypeResources((p) => `${scope(res).base}${p}`).find((t) => t.id === req.params.name);
      if (found === undefined) throw scimErrors.notFound(`no resource type ${excerpt(req.params.name)}: there are ${Object.keys(RESOURCE_TYPES).join(', ')}`);
      sendScim(res, 200, found);
    })
    .all(notAllowed('GET'));
  router.route('/Schemas')
    .get((_req, res) => {
      const all = schemaResources((p) => `${scope(res).base}${p}`);
      sendScim(res, 200, listResponse(all, all.length, 1));
    })
    .all(notAllowed('GET'));
  router.route('/Schemas/:id')
    .get((req, res) => {
      const all = schemaResources((p) => `${scope(res).base}${p}`);
      const found = all.find((s) => s.id === req.params.id);
      if (found === undefined) throw scimErrors.notFound(`no schema ${excerpt(req.params.id)} here: there are ${all.map((s) => s.id).join(', ')}`);
      sendScim(res, 200, found);
    })
    .all(notAllowed('GET'));

  for (const kind of ['User', 'Group'] as const) {
    const ops = KINDS[kind];
    const endpoint = RESOURCE_TYPES[kind].endpoint;
    router.route(endpoint)
      .get(async (req, res) => sendScim(res, 200, await ops.query(scope(res), listParams(kind, req.query as Record<string, unknown>))))
      .post(async (req, res) => sendResource(req, res, kind, await ops.create(scope(res), req.body), 201))
      .all(notAllowed('GET, POST'));
    router.route(`${endpoint}/.search`)
      .post(async (req, res) => sendScim(res, 200, await ops.query(scope(res), searchParams(kind, req.body))))
      .all(notAllowed('POST'));
    router.route(`${endpoint}/:id`)
      .get(async (req, res) => {
        const r = await ops.get(scope(res), req.params.id!);
        const none = req.headers['if-none-match'];
        if (typeof none === 'string' && matchesIfMatch(none, (r.meta as { version: string }).version)) {
          res.status(304).set('etag', (r.meta as { version: string }).version).end();
          return;
        }
        sendResource(req, res, kind, r);
      })
      .put(async (req, res) => sendResource(req, res, kind, await ops.replace(scope(res), req.params.id!, req.body, ifMatch(req))))
      .patch(async (req, res) => sendResource(req, res, kind, await ops.patch(scope(res), req.params.id!, req.body, ifMatch(req))))
      .delete(async (req, res) => {
        await ops.remove(scope(res), req.params.id!, ifMatch(req));
        res.status(204).end();
      })
      .all(notAllowed('GET, PUT, PATCH, DELETE'));
  }

  router.route('/.search')
    .post(async (req, res) => sendScim(res, 200, await searchAll(scope(res), req.body)))
    .all(notAllowed('POST'));
  router.route('/Bulk').all(() => {
    throw scimErrors.notImplemented('bulk operations are not supported here (ServiceProviderConfig bulk.supported is false)');
  });

  router.use((req: Request) => {
    throw scimErrors.notFound(`no SCIM endpoint ${req.method} ${SCIM_PATH}${req.path}; see ${SCIM_PATH}/ResourceTypes`);
  });
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendScimError(res, err, ctx.log);
  });
  return router;
}

/** A SearchRequest body (RFC 7644 §3.4.3) as list parameters. */
function searchParams(kind: ResourceKind | undefined, body: unknown): ListParams {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw scimErrors.invalidSyntax('the request body must be a SearchRequest (a JSON object)');
  const b = body as Record<string, unknown>;
  const schemas = b.schemas;
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === URN.searchRequest.toLowerCase())) {
    throw scimErrors.invalidSyntax(`'schemas' of a search must be ["${URN.searchRequest}"]`);
  }
  for (const k of ['attributes', 'excludedAttributes']) {
    if (b[k] !== undefined && (!Array.isArray(b[k]) || !(b[k] as unknown[]).every((x) => typeof x === 'string'))) throw scimErrors.invalidValue(`${excerpt(k)} must be a list of attribute names`);
  }
  return listParams(kind, b);
}

/**
 * POST /.search: Users and Groups together. A filter is applied to each type that has the
 * attributes it names; sorting and paging run over the union.
 */
async function searchAll(scope: ScimScope, body: unknown): Promise<Record<string, unknown>> {
  const p = searchParams(undefined, body);
  const filterText = (body as { filter?: unknown }).filter;
  const everything = { ...p, startIndex: 1, count: MAX_RESULTS };
  const found: { kind: ResourceKind; r: Resource }[] = [];
  const refused: unknown[] = [];
  for (const kind of ['User', 'Group'] as const) {
    let params: ListParams;
    try {
      params = listParams(kind, { ...(typeof filterText === 'string' ? { filter: filterText } : {}) });
    } catch (err) {
      refused.push(err);
      continue;
    }
    // Every match, unprojected, a page of MAX_RESULTS at a time.
    for (let start = 1; ; start += MAX_RESULTS) {
      const { attributes: _a, excludedAttributes: _e, sortBy: _s, ...whole } = { ...everything, ...params };
      const page = (await KINDS[kind].query(scope, { ...whole, startIndex: start })).Resources as Resource[];
      found.push(...page.map((r) => ({ kind, r })));
      if (page.length < MAX_RESULTS) break;
    }
  }
  // A filter that fits neither type is the client's mistake, said as such.
  if (refused.length === 2) throw refused[0];
  const kindOf = new Map(found.map((f) => [f.r, f.kind]));
  const sorted = sortResources((r) => kindOf.get(r)!, found.map((f) => f.r), p);
  const from = p.startIndex - 1;
  return listResponse(sorted.slice(from, from + p.count).map((r) => project(kindOf.get(r)!, r, p)), sorted.length, p.startIndex);
}

