/**
 * The admin API's OpenAPI 3.1 document, generated from the route table and the same zod schemas
 * that validate requests, so the document cannot drift from the behaviour.
 */
import { z } from 'zod';
import { ApplicationBody, AssignmentBody, GroupBody, RotateKeysBody, TenantBody, UserBody } from './bodies.ts';
import { TenantBatchBody } from './batch.ts';
import { ErrorBody } from './errors.ts';
import { ADMIN_AUDIENCE, ADMIN_SCOPE, SYSTEM_TENANT } from './names.ts';
import { ADMIN_ROUTES, MAX_PEOPLE_QUERY, PAGE_LIMIT, PATH_PARAMS, type RouteSpec } from './routes.ts';
import { ACTOR_HEADERS, EVENT_QUERY } from './events.ts';
import { adminBaseUrl, issuerUrl, type ServerAddress } from './urls.ts';

const schemaOf = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;

const json = (schema: object) => ({ 'application/json': { schema } });

/** Request bodies published by name under components.schemas, so tools can refer to them. */
const NAMED_BODIES = new Map<z.ZodType, string>([
  [TenantBody, 'TenantBody'], [ApplicationBody, 'ApplicationBody'], [UserBody, 'UserBody'], [AssignmentBody, 'AssignmentBody'], [RotateKeysBody, 'RotateKeysBody'],
  [TenantBatchBody, 'TenantBatchBody'], [GroupBody, 'GroupBody'],
]);
const bodyRef = (schema: z.ZodType) => {
  const name = NAMED_BODIES.get(schema);
  return name === undefined ? schemaOf(schema, 'input') : { $ref: `#/components/schemas/${name}` };
};
const errorRef = { $ref: '#/components/schemas/Error' };
const COMMON_ERRORS = {
  400: { description: 'Invalid request; `path` names the offending field and `problems` lists every problem', content: json(errorRef) },
  401: { description: 'Missing or invalid access token', content: json(errorRef) },
  403: { description: `Token lacks the '${ADMIN_SCOPE}' scope, or the tenant is reserved`, content: json(errorRef) },
  404: { description: 'No such object', content: json(errorRef) },
};

/** Who writes, kept in the events a write makes (src/contract/events.ts). */
const ACTOR_PARAMETERS = [
  { name: ACTOR_HEADERS.manager, in: 'header', required: false, description: 'the manager writing (apply:<name>, pulumi:<project>/<stack>, console), for the event log', schema: { type: 'string' } },
  { name: ACTOR_HEADERS.who, in: 'header', required: false, description: 'who acts (percent-encoded), for the event log; default: the admin client', schema: { type: 'string' } },
  { name: ACTOR_HEADERS.commit, in: 'header', required: false, description: 'the Git commit of the model being applied', schema: { type: 'string', pattern: '^(?:[0-9a-f]{40}|[0-9a-f]{64})$' } },
  { name: ACTOR_HEADERS.branch, in: 'header', required: false, description: 'its branch (percent-encoded)', schema: { type: 'string' } },
  { name: ACTOR_HEADERS.path, in: 'header', required: false, description: "the model's path in the repository (percent-encoded)", schema: { type: 'string' } },
];

function parameters(spec: RouteSpec): object[] {
  const out: object[] = [];
  for (const name of spec.path.match(/\{(\w+)\}/g) ?? []) {
    const p = PATH_PARAMS[name.slice(1, -1) as keyof typeof PATH_PARAMS];
    out.push({ name: name.slice(1, -1), in: 'path', required: true, description: `${p.what}: ${p.rule}`, schema: { type: 'string', pattern: p.pattern.source } });
  }
  if (spec.query === 'page' || spec.query === 'people' || spec.query === 'events') {
    out.push(
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: PAGE_LIMIT.max, default: PAGE_LIMIT.default } },
      { name: 'cursor', in: 'query', required: false, description: 'nextCursor of the previous page', schema: { type: 'string' } },
    );
  }
  if (spec.query === 'people') {
    out.push({ name: 'q', in: 'query', required: false, description: `text the id, email or display name holds, case-insensitive (at most ${MAX_PEOPLE_QUERY} characters; blank: everyone)`, schema: { type: 'string', maxLength: MAX_PEOPLE_QUERY } });
  }
  if (spec.query === 'events') for (const q of EVENT_QUERY) out.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
  if (spec.method !== 'GET') out.push(...ACTOR_PARAMETERS);
  if (spec.query === 'dryRun') {
    out.push({ name: 'dryRun', in: 'query', required: false, description: 'compute the outcome without changing anything', schema: { type: 'boolean' } });
    if (spec.method === 'PUT') {
      out.push({ name: 'force', in: 'query', required: false, description: 'take over an object another manager keeps (its `manager`); without it such a change is a 409 naming the manager', schema: { type: 'boolean' } });
    }
  }
  return out;
}

function operation(operationId: string, spec: RouteSpec): object {
  const responses: Record<string, object> = {};
  if (spec.response === undefined) responses[204] = { description: 'Done' };
  else if (spec.method === 'PUT') {
    const body = json(schemaOf(spec.response, 'output'));
    responses[200] = { description: 'Updated or unchanged', content: body };
    responses[201] = { description: 'Created', content: body };
  } else responses[spec.status ?? 200] = { description: spec.status === 201 ? 'Created' : 'OK', content: json(schemaOf(spec.response, 'output')) };
  if (spec.conflicts !== undefined) responses[409] = { description: `Conflict: ${spec.conflicts}`, content: json(errorRef) };
  if (spec.refusal !== undefined) responses[422] = { description: spec.refusal.description, content: json(schemaOf(spec.refusal.body, 'output')) };
  if (spec.maxBodyBytes !== undefined) responses[413] = { description: `The body is larger than ${spec.maxBodyBytes} bytes`, content: json(errorRef) };
  return {
    operationId,
    tags: [spec.tag],
    summary: spec.summary,
    parameters: parameters(spec),
    ...(spec.body === undefined ? {} : { requestBody: { required: spec.optionalBody !== true, content: json(bodyRef(spec.body)) } }),
    responses: { ...responses, ...COMMON_ERRORS },
  };
}

export function openApiDocument(addr: ServerAddress): Record<string, unknown> {
  const paths: Record<string, Record<string, object>> = {};
  for (const [operationId, spec] of Object.entries(ADMIN_ROUTES) as [string, RouteSpec][]) {
    (paths[spec.path] ??= {})[spec.method.toLowerCase()] = operation(operationId, spec);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'idforge admin API',
      version: '1',
      description: 'Declarative, idempotent management of tenants, applications, users, groups and assignments. '
        + `Authenticate with an access token from the '${SYSTEM_TENANT}' tenant (client_credentials, resource ${ADMIN_AUDIENCE}, scope ${ADMIN_SCOPE}).`,
    },
    servers: [{ url: adminBaseUrl(addr) }],
    security: [{ adminToken: [ADMIN_SCOPE] }],
    paths,
    components: {
      securitySchemes: {
        adminToken: {
          type: 'oauth2',
          flows: { clientCredentials: { tokenUrl: `${issuerUrl(addr, SYSTEM_TENANT)}token`, scopes: { [ADMIN_SCOPE]: 'administer every tenant' } } },
        },
      },
      schemas: {
        Error: schemaOf(ErrorBody, 'output'),
        ...Object.fromEntries([...NAMED_BODIES].map(([schema, name]) => [name, schemaOf(schema, 'input')])),
      },
    },
  };
}
