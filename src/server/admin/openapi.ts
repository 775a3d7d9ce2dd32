/**
 * OpenAPI 3.1 description of the admin API, generated from the same zod schemas that validate
 * requests (src/schema/admin-api.ts), so the document cannot drift from the behaviour.
 */
import { z } from 'zod';
import { ApplicationBody, AssignmentBody, TenantBody, UserBody } from '../../schema/admin-api.ts';
import { adminBaseUrl, issuerUrl, type ServerAddress } from '../../schema/urls.ts';
import { ADMIN_AUDIENCE, ADMIN_SCOPE, SYSTEM_TENANT } from '../config.ts';

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const content = (schemaRef: object) => ({ 'application/json': { schema: schemaRef } });
const errorResponses = {
  400: { description: 'Invalid request; `path` names the offending field', content: content(ref('Error')) },
  401: { description: 'Missing or invalid access token', content: content(ref('Error')) },
  403: { description: `Token lacks the '${ADMIN_SCOPE}' scope, or the tenant is reserved`, content: content(ref('Error')) },
  404: { description: 'No such object', content: content(ref('Error')) },
};

const p = (name: string, description: string) => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const listParams = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
  { name: 'cursor', in: 'query', required: false, description: 'nextCursor of the previous page', schema: { type: 'string' } },
];
const dryRun = { name: 'dryRun', in: 'query', required: false, description: 'compute the outcome without changing anything', schema: { type: 'boolean' } };

function resourceOps(tag: string, body: string, params: object[]) {
  return {
    parameters: params,
    get: { tags: [tag], summary: `Get one ${tag}`, responses: { 200: { description: 'The object', content: content({ type: 'object' }) }, ...errorResponses } },
    put: {
      tags: [tag],
      summary: `Create or replace a ${tag} (full desired state; idempotent)`,
      parameters: [dryRun],
      requestBody: { required: true, content: content(ref(body)) },
      responses: {
        200: { description: 'Updated or unchanged', content: content(ref('PutResult')) },
        201: { description: 'Created', content: content(ref('PutResult')) },
        409: { description: 'Conflicts with another object', content: content(ref('Error')) },
        ...errorResponses,
      },
    },
    delete: {
      tags: [tag], summary: `Delete a ${tag}`, parameters: [dryRun],
      responses: {
        204: { description: 'Deleted' },
        // Only applications: an api still named in a client's audience.
        ...(tag === 'application' ? { 409: { description: 'Still in use (an api named in client audiences)', content: content(ref('Error')) } } : {}),
        ...errorResponses,
      },
    },
  };
}

const listOp = (tag: string, params: object[]) => ({
  parameters: params,
  get: { tags: [tag], summary: `List ${tag}s`, parameters: listParams, responses: { 200: { description: 'A page', content: content(ref('Page')) }, ...errorResponses } },
});

export function openApiDocument(addr: ServerAddress): Record<string, unknown> {
  const t = p('tenant', 'tenant name (DNS label)');
  const a = p('application', 'application name');
  const u = p('userId', 'opaque user id');
  const base = '/tenants/{tenant}';
  return {
    openapi: '3.1.0',
    info: {
      title: 'idforge admin API',
      version: '1',
      description: 'Declarative, idempotent management of tenants, applications, users and assignments. '
        + `Authenticate with an access token from the '${SYSTEM_TENANT}' tenant (client_credentials, resource ${ADMIN_AUDIENCE}, scope ${ADMIN_SCOPE}).`,
    },
    servers: [{ url: adminBaseUrl(addr) }],
    security: [{ adminToken: [ADMIN_SCOPE] }],
    paths: {
      '/tenants': listOp('tenant', []),
      [base]: resourceOps('tenant', 'TenantBody', [t]),
      [`${base}/keys`]: { parameters: [t], get: { tags: ['key'], summary: 'List signing keys (public facts only)', responses: { 200: { description: 'Keys', content: content({ type: 'object' }) }, ...errorResponses } } },
      [`${base}/keys/rotate`]: {
        parameters: [t],
        post: {
          tags: ['key'],
          summary: 'Rotate: next key starts signing, active key retires (stays published until its tokens expire), a new next key is published',
          requestBody: { required: false, content: content(ref('RotateKeysBody')) },
          responses: { 200: { description: 'The new key set', content: content({ type: 'object' }) }, ...errorResponses },
        },
      },
      [`${base}/applications`]: listOp('application', [t]),
      [`${base}/applications/{application}`]: resourceOps('application', 'ApplicationBody', [t, a]),
      [`${base}/applications/{application}/secret/rotate`]: {
        parameters: [t, a],
        post: { tags: ['application'], summary: 'Replace the client secret; the new one is returned once', responses: { 200: { description: 'clientId and clientSecret', content: content({ type: 'object' }) }, ...errorResponses } },
      },
      [`${base}/applications/{application}/assignments`]: listOp('assignment', [t, a]),
      [`${base}/applications/{application}/assignments/{userId}`]: resourceOps('assignment', 'AssignmentBody', [t, a, u]),
      [`${base}/users`]: listOp('user', [t]),
      [`${base}/users/{userId}`]: resourceOps('user', 'UserBody', [t, u]),
    },
    components: {
      securitySchemes: {
        adminToken: {
          type: 'oauth2',
          flows: { clientCredentials: { tokenUrl: `${issuerUrl(addr, SYSTEM_TENANT)}token`, scopes: { [ADMIN_SCOPE]: 'administer every tenant' } } },
        },
      },
      schemas: {
        TenantBody: json(TenantBody),
        ApplicationBody: json(ApplicationBody),
        UserBody: json(UserBody),
        AssignmentBody: json(AssignmentBody),
        RotateKeysBody: { type: 'object', properties: { alg: { enum: ['RS256', 'ES256'] } }, additionalProperties: false },
        PutResult: {
          type: 'object',
          required: ['outcome', 'changes', 'resource'],
          properties: {
            outcome: { enum: ['created', 'updated', 'unchanged'] },
            changes: { type: 'array', items: { type: 'string' } },
            resource: { type: 'object' },
            clientSecret: { type: 'string', description: 'only when the server generated the secret' },
          },
        },
        Page: {
          type: 'object',
          required: ['items', 'nextCursor'],
          properties: { items: { type: 'array', items: { type: 'object' } }, nextCursor: { type: ['string', 'null'] } },
        },
        Error: {
          type: 'object',
          required: ['error', 'message', 'path'],
          properties: {
            error: { type: 'string' },
            message: { type: 'string' },
            path: { type: 'string', description: 'the offending field, empty when none' },
            problems: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
          },
        },
      },
    },
  };
}
