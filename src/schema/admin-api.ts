/**
 * The admin API's resources: the desired-state bodies that `PUT /admin/v1/...` accepts.
 *
 * Shared by the generators (the provisioning plan is a list of these calls) and the server (which
 * validates requests with these schemas and publishes them in its OpenAPI document). Bodies are
 * declarative: a PUT carries the full desired state of one object, so repeating it changes nothing.
 */
import { z } from 'zod';

/** Lowercase DNS label, 1..63 ASCII chars: a tenant is a subdomain. */
export const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Names of applications, scopes, groups, providers: safe in URLs and file names. */
export const NAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
/** Scope tokens (RFC 6749 §3.3 NQCHAR minus space), kept simple on purpose. */
export const SCOPE = /^[A-Za-z0-9._:/-]{1,128}$/;
/** Opaque user ids: printable ASCII without spaces or slashes, so they fit in a URL path segment. */
export const USER_ID = /^[A-Za-z0-9._@+~-]{1,128}$/;

/** Marks objects that idforge created; only these are ever deleted by `idforge apply`. */
export const MANAGED_BY = 'idforge';

export const ScopeDefinition = z.strictObject({
  name: z.string().regex(SCOPE),
  description: z.string().max(256).optional(),
});
export type ScopeDefinition = z.infer<typeof ScopeDefinition>;

/**
 * Sign-in methods. `password`, `otp` (a one-time code sent to the user's email) and `passkey`
 * (WebAuthn, with user verification) identify a person; `totp` (authenticator app) only confirms
 * a person another method identified, so it needs `requireSecondFactor`.
 */
export const LOGIN_METHODS = ['password', 'otp', 'passkey', 'totp'] as const;
export type LoginMethod = (typeof LOGIN_METHODS)[number];

/** A tenant's sign-in policy. Absent from a tenant: password only, as if `{methods: [password]}`. */
export const LoginPolicyBody = z.strictObject({
  /** Methods this tenant's people may use, each at most once. Default: [password]. */
  methods: z.array(z.enum(LOGIN_METHODS)).min(1).default(['password']),
  /**
   * Whether a second, different factor must follow `password` or `otp`: `totp`, or `otp` after a
   * password. A passkey with user verification is two factors by itself. Default: false.
   */
  requireSecondFactor: z.boolean().default(false),
});
export type LoginPolicyBody = z.infer<typeof LoginPolicyBody>;

/** PUT /admin/v1/tenants/{tenant} */
export const TenantBody = z.strictObject({
  displayName: z.string().min(1).max(128),
  /** Custom scopes the tenant defines (standard OIDC scopes are always known). */
  scopes: z.array(ScopeDefinition).default([]),
  /** Sign-in policy. Default (absent): password only, no second factor. */
  login: LoginPolicyBody.optional(),
  managedBy: z.string().max(64).optional(),
});
export type TenantBody = z.infer<typeof TenantBody>;

const clientCommon = {
  displayName: z.string().min(1).max(128).optional(),
  clientId: z.string().min(1).max(128).regex(USER_ID),
  redirectUris: z.array(z.url()).min(1),
  postLogoutRedirectUris: z.array(z.url()).default([]),
  /** Scopes the client may request. */
  scopes: z.array(z.string().regex(SCOPE)).default(['openid']),
  /** Resource identifiers (audiences of api applications) the client's access tokens are for. */
  audience: z.array(z.string().min(1)).default([]),
  managedBy: z.string().max(64).optional(),
};

/** Confidential client (login-helper web app or reverse proxy): code flow, client secret. */
export const ConfidentialApplicationBody = z.strictObject({
  kind: z.enum(['web', 'proxy']),
  ...clientCommon,
  /** Set by idforge so generated configs can be written before apply; omitted → server makes one. */
  clientSecret: z.string().min(32).max(256).optional(),
});

/** Public client (single-page app): code + PKCE S256, no secret, refresh tokens when `offline`. */
export const PublicApplicationBody = z.strictObject({
  kind: z.literal('spa'),
  ...clientCommon,
  offline: z.boolean().default(false),
});

/** Resource server: no client; registers an audience and the scopes its tokens may carry. */
export const ApiApplicationBody = z.strictObject({
  kind: z.literal('api'),
  displayName: z.string().min(1).max(128).optional(),
  identifier: z.string().min(1).max(256),
  scopes: z.array(z.string().regex(SCOPE)).default([]),
  managedBy: z.string().max(64).optional(),
});

/** PUT /admin/v1/tenants/{tenant}/applications/{application} */
export const ApplicationBody = z.discriminatedUnion('kind', [
  ConfidentialApplicationBody,
  PublicApplicationBody,
  ApiApplicationBody,
]);
export type ApplicationBody = z.infer<typeof ApplicationBody>;

/** PUT /admin/v1/tenants/{tenant}/users/{userId} */
export const UserBody = z.strictObject({
  email: z.email(),
  displayName: z.string().min(1).max(128).optional(),
  /** Custom scopes this user may be granted (group scopes already folded in by idforge). */
  scopes: z.array(z.string().regex(SCOPE)).default([]),
  /** Set only when the user has no password yet: an initial password, hashed by the server. */
  initialPassword: z.string().min(8).max(1024).optional(),
  disabled: z.boolean().default(false),
  managedBy: z.string().max(64).optional(),
});
export type UserBody = z.infer<typeof UserBody>;

/** PUT /admin/v1/tenants/{tenant}/applications/{application}/assignments/{userId} */
export const AssignmentBody = z.strictObject({
  managedBy: z.string().max(64).optional(),
});
export type AssignmentBody = z.infer<typeof AssignmentBody>;

export type AdminResourceKind = 'tenant' | 'application' | 'user' | 'assignment';

/** One idempotent call of the provisioning plan. */
export type PlanStep =
  | { readonly op: 'put'; readonly kind: 'tenant'; readonly path: string; readonly body: TenantBody }
  | { readonly op: 'put'; readonly kind: 'application'; readonly path: string; readonly body: ApplicationBody }
  | { readonly op: 'put'; readonly kind: 'user'; readonly path: string; readonly body: UserBody }
  | { readonly op: 'put'; readonly kind: 'assignment'; readonly path: string; readonly body: AssignmentBody }
  | { readonly op: 'delete'; readonly kind: AdminResourceKind; readonly path: string };

/** The calls, in dependency order, that make a server match a model. */
export interface ProvisioningPlan {
  readonly version: 1;
  readonly steps: readonly PlanStep[];
}

/** Admin API paths, in one place so the plan, the server router and the CLI agree. */
export const adminPaths = {
  base: '/admin/v1',
  tenant: (t: string) => `/admin/v1/tenants/${encodeURIComponent(t)}`,
  application: (t: string, a: string) =>
    `/admin/v1/tenants/${encodeURIComponent(t)}/applications/${encodeURIComponent(a)}`,
  user: (t: string, u: string) => `/admin/v1/tenants/${encodeURIComponent(t)}/users/${encodeURIComponent(u)}`,
  assignment: (t: string, a: string, u: string) =>
    `/admin/v1/tenants/${encodeURIComponent(t)}/applications/${encodeURIComponent(a)}/assignments/${encodeURIComponent(u)}`,
} as const;
