/**
 * Schemas of the generated JSON artifacts. Exported as JSON Schema under schema/ so that users'
 * tooling (and our tests, with ajv) can check what idforge writes.
 */
import { z } from 'zod';
import { ApplicationBody, ApplicationName, AssignmentBody, TenantBody, TenantName, UserBody, UserId, WebhookBody } from '../contract/index.ts';

/** The single-page client parameters, with exactly the contract's names. */
export const SpaConfig = z.strictObject({
  wellknown_endpoint: z.url(),
  client_id: z.string().min(1),
  audience: z.array(z.string().min(1)),
  scope: z.string().min(1),
  redirect_uri: z.url(),
  cache_type: z.enum(['in_memory', 'session_storage']),
});
export type SpaConfig = z.infer<typeof SpaConfig>;

/** What a resource server needs to verify access tokens offline. */
export const ApiConfig = z.strictObject({
  issuer: z.url(),
  jwks_uri: z.url(),
  audience: z.string().min(1),
  origin: z.url().optional(),
  public_routes: z.array(z.string().regex(/^\//)),
  routes: z.array(z.strictObject({ path: z.string().regex(/^\//), scopes: z.array(z.string()) })),
  /** The tenant's OpenID Shared Signals discovery: the API polls its stream there for revoked sessions. */
  ssf_configuration_url: z.url().optional(),
});
export type ApiConfig = z.infer<typeof ApiConfig>;

/** What the web template needs to verify logout tokens (OpenID Connect Back-Channel Logout 1.0). */
export const BackchannelLogoutConfig = z.strictObject({
  issuer: z.url(),
  jwks_uri: z.url(),
  /** The logout token's `aud`. */
  client_id: z.string().min(1),
  /** Where the app takes logout tokens below its origin; null: the registered URI is elsewhere. */
  path: z.string().regex(/^\//).nullable(),
});
export type BackchannelLogoutConfig = z.infer<typeof BackchannelLogoutConfig>;

export const GrantProvider = z.strictObject({
  oauth: z.literal(2),
  authorize_url: z.string().regex(/\[subdomain\]/),
  access_url: z.string().regex(/\[subdomain\]/),
  profile_url: z.string().regex(/\[subdomain\]/),
  subdomain: z.string().min(1),
  key: z.string().min(1),
  secret: z.string().min(1),
  scope: z.array(z.string()).min(1),
  scope_delimiter: z.literal(' '),
  callback: z.string().regex(/^\//),
  response: z.array(z.enum(['tokens', 'raw', 'profile'])).min(1),
  pkce: z.literal(true),
  nonce: z.literal(true),
  /** Extra authorization request parameters: `resource`, the API the access token is for (RFC 8707). */
  custom_params: z.strictObject({ resource: z.string().min(1) }).optional(),
});

/** grant's configuration: `defaults` plus one provider keyed by its name. */
export const GrantConfig = z
  .object({
    defaults: z.strictObject({
      origin: z.url(),
      prefix: z.literal('/connect'),
      transport: z.literal('session'),
      state: z.literal(true),
    }),
  })
  .catchall(GrantProvider);
export type GrantProvider = z.infer<typeof GrantProvider>;

const tenant = TenantName;
const application = ApplicationName;
const user = UserId;
/** plan.json: the admin API calls in dependency order, each naming its object by identity fields. */
export const PlanSchema = z.strictObject({
  version: z.literal(2),
  steps: z.array(
    z.union([
      z.strictObject({ op: z.literal('put'), kind: z.literal('tenant'), tenant, body: TenantBody }),
      z.strictObject({ op: z.literal('put'), kind: z.literal('application'), tenant, application, body: ApplicationBody }),
      z.strictObject({ op: z.literal('put'), kind: z.literal('user'), tenant, user, body: UserBody }),
      z.strictObject({ op: z.literal('put'), kind: z.literal('assignment'), tenant, application, user, body: AssignmentBody }),
      z.strictObject({ op: z.literal('put'), kind: z.literal('webhook'), tenant, webhook: application, body: WebhookBody }),
      z.strictObject({ op: z.literal('delete'), kind: z.literal('tenant'), tenant }),
      z.strictObject({ op: z.literal('delete'), kind: z.literal('application'), tenant, application }),
      z.strictObject({ op: z.literal('delete'), kind: z.literal('user'), tenant, user }),
      z.strictObject({ op: z.literal('delete'), kind: z.literal('assignment'), tenant, application, user }),
      z.strictObject({ op: z.literal('delete'), kind: z.literal('webhook'), tenant, webhook: application }),
    ]),
  ),
});

export const ARTIFACT_SCHEMAS = {
  'spa-config': SpaConfig,
  'api-config': ApiConfig,
  'grant-config': GrantConfig,
  'backchannel-logout': BackchannelLogoutConfig,
  plan: PlanSchema,
} as const;
