/**
 * The identity model as admins write it (YAML or JSON), as zod schemas.
 *
 * Shapes only: cross-references (assignments, audiences, scopes) are checked afterwards in
 * checks.ts, so that one pass reports every problem. Defaults are documented where defined.
 */
import { z } from 'zod';
import { DEFAULT_PKCE, DEFAULT_PROXY_COOKIE_REFRESH, DNS_LABEL, KINDS, PKCE_POLICIES, LoginPolicyBody, NAME, PasswordPolicyBody, TenantEventsBody, TenantMailBody, NAME_RULES, EventTypeFilter, WebhookUrl, SCOPE, UNMANAGED_POLICIES, USER_ID, isLocalHost, type ClientKind } from '../contract/index.ts';

const dnsLabel = z.string().regex(DNS_LABEL, { error: NAME_RULES.dnsLabel });
const name = z.string().regex(NAME, { error: NAME_RULES.name });
const scopeName = z.string().regex(SCOPE, { error: NAME_RULES.scope });
const displayName = z.string().min(1).max(128);
/** Absolute URL; the redirect-URI rules (RFC 9700) are applied in checks.ts with a precise message. */
const url = z.string().min(1).max(2048);
const routePath = z.string().regex(/^\/[^\s?#]*$/, { error: "must be a path starting with '/', without query or fragment" });

/** A reference to a secret kept outside Git: never the secret itself. */
export const CredentialRef = z.union(
  [
    z.strictObject({
      /** Name of an environment variable read by `idforge apply`. */
      env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' }),
    }),
    z.strictObject({
      /** Key of a Pulumi secret config value, read by the Pulumi program. */
      config: z.string().regex(/^[A-Za-z0-9_.:-]+$/, { error: 'must be a Pulumi config key' }),
    }),
  ],
  { error: "must be a reference such as {env: VAR_NAME} or {config: key}, never the secret itself" },
);
export type CredentialRef = z.infer<typeof CredentialRef>;

export const ScopeSpec = z.strictObject({
  name: scopeName,
  description: z.string().max(256).optional(),
});

export const UserSpec = z.strictObject({
  /** Stable opaque id; becomes the token's `sub` and the proxy's X-Forwarded-User. */
  id: z.string().regex(USER_ID, { error: NAME_RULES.userId }),
  email: z.email({ error: 'must be an email address' }),
  displayName: displayName.optional(),
  /** Custom scopes of the tenant this user may be granted (e.g. `admin`). Default: none. */
  scopes: z.array(scopeName).default([]),
  /** Initial password, set once when the user is created. Default: none (another login method). */
  password: CredentialRef.optional(),
  /** Disabled users cannot sign in. Default: false. */
  disabled: z.boolean().default(false),
});

export const GroupSpec = z.strictObject({
  name,
  displayName: displayName.optional(),
  /** User ids. */
  members: z.array(z.string()).default([]),
  /** Scopes every member may be granted. Default: none. */
  scopes: z.array(scopeName).default([]),
});

const appCommon = {
  name,
  displayName: displayName.optional(),
  /** Override of the OAuth client id. Default: the application's name. */
  clientId: z.string().regex(USER_ID, { error: NAME_RULES.userId }).optional(),
  /** Present only so checks.ts can explain why a secret never belongs in the model. */
  clientSecret: z.unknown().optional(),
  /**
   * The name the application had until now: a rename in place (client id, secret, assignments and
   * issued tokens kept), not a new application and the deletion of the old one. Remove it once every
   * environment has applied the rename. Default: none.
   */
  previousName: name.optional(),
};
/** Redirect URIs beyond the one derived from the kind's contract shape. Default: none. */
const extraRedirects = { redirectUris: z.array(url).default([]) };

/**
 * PKCE (RFC 7636) in the client's authorization requests. `required`: every request carries a
 * code_challenge (S256), as the generated clients send. `optional`: only for a confidential client
 * (web, proxy) whose OpenID Connect library sends a nonce but no PKCE by default (Authlib, go-oidc
 * with x/oauth2, Nimbus); the server then requires a nonce in each of its requests without PKCE,
 * and PKCE in requests without scope openid. RFC 9700 §2.1.1: "Public clients MUST use PKCE ...
 * For confidential clients, the use of PKCE is RECOMMENDED ... With additional precautions,
 * described in Section 4.5.3.2, confidential OpenID Connect clients MAY use the nonce parameter
 * and the respective Claim in the ID Token instead." The precautions are the client's: it must
 * check the nonce in the ID token from the token endpoint and use no token before that check
 * passes (§4.5.3.2). A public client (spa) must use PKCE. Default: required.
 */
const pkce = { pkce: z.enum(PKCE_POLICIES).default(DEFAULT_PKCE) };

/**
 * Names of api applications of the same tenant whose JWT access tokens the client asks for, at
 * most as many as its kind's tokens can name (KINDS[kind].maxAudiences). Default: none (an opaque
 * access token, good for userinfo only).
 */
function audience(kind: ClientKind) {
  const list = z.array(name);
  const max = KINDS[kind].maxAudiences;
  return (Number.isFinite(max) ? list.max(max) : list).default([]);
}

export const WebAppSpec = z.strictObject({
  ...appCommon,
  ...extraRedirects,
  ...pkce,
  kind: z.literal('web'),
  /** Public origin of the app, e.g. http://portal.localhost:3000. */
  origin: url,
  /** Provider name in grant's routes: /connect/<provider> and /connect/<provider>/callback. Default: the tenant's name. */
  provider: name.optional(),
  /** Where the app sends the user after login, e.g. /hello. Default: /hello. */
  callback: routePath.default('/hello'),
  /** The api whose access tokens grant asks for, e.g. [orders-api]. Default: none. */
  audience: audience('web'),
  /** Requested scopes; `offline` is always added (the session checks its refresh token). Default: openid, profile, email. */
  scopes: z.array(scopeName).default(['openid', 'profile', 'email']),
  /** What grant exposes after login. Default: all three. */
  response: z.array(z.enum(['tokens', 'raw', 'profile'])).min(1).default(['tokens', 'raw', 'profile']),
  /**
   * Where the server POSTs a logout token when a person's session ends: at a sign-out at the
   * server, or when their access is revoked (OpenID Connect Back-Channel Logout 1.0). The web
   * template ends that person's session there at once. null: none (the app is told nothing; its
   * sessions end at their next renewal). Default: <origin>/backchannel-logout, which the web
   * template serves.
   */
  backchannelLogoutUri: url.nullable().optional(),
});

export const ProxyAppSpec = z.strictObject({
  ...appCommon,
  ...extraRedirects,
  ...pkce,
  kind: z.literal('proxy'),
  /** Public origin of the proxy, e.g. http://wiki.localhost:4180. */
  origin: url,
  /** The app behind the proxy. */
  upstream: url,
  /** Email domains allowed through. Default: any (`*`), as in the contract's example. */
  emailDomains: z.array(z.string().min(1)).min(1).default(['*']),
  /**
   * The api whose access tokens the proxy asks for and passes upstream (X-Forwarded-Access-Token),
   * e.g. [orders-api]. Default: none (no token is passed upstream).
   */
  audience: audience('proxy'),
  /**
   * Seconds after which oauth2-proxy refreshes a session's tokens at the server (its
   * `cookie_refresh`): the proxy receives no events, so this is how it learns of a revocation. A
   * refused refresh (the user lost the assignment) ends the session when its access token expires
   * (src/contract/tokens.ts). Keep it below the server's access token lifetime. Default: 30.
   */
  cookieRefresh: z.int().min(1).max(86_400).default(DEFAULT_PROXY_COOKIE_REFRESH),
  /** Requested scopes; `offline` is always added (refresh tokens for cookie refresh). Default: openid, email, profile. */
  scopes: z.array(scopeName).default(['openid', 'email', 'profile']),
});

export const SpaAppSpec = z.strictObject({
  ...appCommon,
  ...extraRedirects,
  ...pkce,
  kind: z.literal('spa'),
  /** Origin of the single-page app; it is also its redirect URI. */
  origin: url,
  /** Names of api applications of the same tenant whose tokens the SPA requests. Default: none. */
  audience: audience('spa'),
  /** Requested scopes. Default: openid, profile, email. */
  scopes: z.array(scopeName).default(['openid', 'profile', 'email']),
  /** Ask for refresh tokens (adds the `offline` scope). Default: false. */
  offline: z.boolean().default(false),
  /** Where the SPA caches the user. Default: in memory (lost on reload). */
  cacheType: z.enum(['in_memory', 'session_storage']).default('in_memory'),
});

export const ApiRouteSpec = z.strictObject({
  path: routePath,
  /** Every scope listed must be in the token's `scp`. Default: none (a valid token suffices). */
  scopes: z.array(scopeName).default([]),
});

export const ApiAppSpec = z.strictObject({
  ...appCommon,
  kind: z.literal('api'),
  /** The `aud` this API accepts, e.g. https://orders.acme.example. */
  audience: z.string().min(1).max(256),
  /** Where the sample API listens when scaffolded. Optional. */
  origin: url.optional(),
  /** Routes that need no token. Default: `/`. */
  publicRoutes: z.array(routePath).default(['/']),
  /** Routes that need a valid token, with the scopes each requires. Default: none. */
  routes: z.array(ApiRouteSpec).default([]),
});

function kindError(input: unknown): string {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return 'must be a mapping describing an application (name, kind, ...)';
  }
  const kind = (input as { kind?: unknown }).kind;
  return kind === undefined
    ? "missing 'kind': one of web, proxy, spa, api"
    : `unknown kind ${JSON.stringify(kind)}: expected one of web, proxy, spa, api`;
}

export const ApplicationSpec = z.discriminatedUnion('kind', [WebAppSpec, ProxyAppSpec, SpaAppSpec, ApiAppSpec], {
  error: (iss) => kindError(iss.input),
});

export const AssignmentSpec = z.strictObject({
  /** Name of a web, proxy or spa application of this tenant. */
  application: name,
  /** User ids. Default: none. */
  users: z.array(z.string()).default([]),
  /** Group names; their members are assigned. Default: none. */
  groups: z.array(z.string()).default([]),
});

/**
 * A webhook: the tenant's events pushed to `url`, signed per Standard Webhooks (README, "Events").
 * The signing secret is a reference (`{env: VAR}` for idforge apply, `{config: key}` for Pulumi),
 * never the secret: `whsec_` and the base64 of 24 to 64 random bytes. Without one, the server makes
 * a secret when it creates the webhook and idforge apply shows it once.
 */
export const WebhookSpec = z.strictObject({
  name,
  /** https, or http on loopback only. */
  url: WebhookUrl,
  /** Event types (`user.created`) or a kind's every type (`user.*`). Default: every event of the tenant. */
  types: z.array(EventTypeFilter).max(100).default([]),
  /** A disabled webhook keeps its place in the log and catches up when enabled. Default: true. */
  enabled: z.boolean().default(true),
  /** The signing secret, as a reference. Default: made by the server on creation. */
  secret: CredentialRef.optional(),
});

export const TenantSpec = z.strictObject({
  /** The subdomain label: `<name>.<baseDomain>`. */
  name: dnsLabel,
  /**
   * The name the tenant had until now: a rename in place, not a new tenant and the deletion of the
   * old one. Applications (client ids and secrets), users (passwords, TOTP), groups and assignments
   * move; the issuer and host change, so sessions and tokens end and passkeys, bound to the old
   * host, must be enrolled again. Remove it once every environment has applied the rename. Default: none.
   */
  previousName: dnsLabel.optional(),
  displayName,
  /** Custom scopes this tenant defines; `openid`, `profile`, `email` and `offline` are built in. */
  scopes: z.array(ScopeSpec).default([]),
  users: z.array(UserSpec).default([]),
  groups: z.array(GroupSpec).default([]),
  applications: z.array(ApplicationSpec).default([]),
  assignments: z.array(AssignmentSpec).default([]),
  /** Where the tenant's events are pushed (README, "Events"). Default: none. */
  webhooks: z.array(WebhookSpec).default([]),
  /**
   * How people sign in: `methods` from password, otp, passkey, totp; `requireSecondFactor`
   * (e.g. password then totp). Default (absent): password only.
   */
  login: LoginPolicyBody.optional(),
  /**
   * What a new password must be, wherever it is set (initial passwords, SCIM, recovery, the account
   * page), per NIST SP 800-63B: `minLength` (8 to 64, default 8; NIST asks 15 when the password is
   * the only factor), never a commonly used or leaked password, never the person's email. No
   * composition rules. Default (absent): `{minLength: 8}`.
   */
  passwordPolicy: PasswordPolicyBody.optional(),
  /**
   * The event log (every change with its actor and Git commit, every sign-in outcome): `retentionDays`,
   * how long the server keeps the tenant's events (1 to 3650; default 90).
   */
  events: TenantEventsBody.optional(),
  /**
   * Outgoing mail (sign-in codes, recovery links, invitations): `from`, the sender people see, and
   * `smtp` ({host, port, security: tls | starttls | none, username, passwordEnv}). The password is
   * never in the model: `passwordEnv` names the server's environment variable that holds it
   * (IDFORGE_SMTP_<NAME>). Default (absent): the server's own mail (--smtp-url; on localhost, the
   * file outbox), and on a server with neither, sending is a clear error.
   */
  mail: TenantMailBody.optional(),
  /**
   * Objects of this tenant on the server that the model does not declare (users, assignments,
   * applications made by hand): `remove` them (default), `report` them as drift, or `keep` them.
   */
  unmanaged: z.enum(UNMANAGED_POLICIES).default('remove'),
});

export const ServerSpec = z.strictObject({
  /** Tenants live at `<tenant>.<baseDomain>`. Default: localhost. */
  baseDomain: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/, {
      error: 'must be a lowercase domain name such as localhost or id.example.com',
    })
    .default('localhost'),
  /** Default: http for localhost, which is the only base domain where plain http is allowed. */
  scheme: z.enum(['http', 'https']).optional(),
  /** Port the server listens on, for local use. Default: the scheme's port. */
  port: z.int().min(1).max(65535).optional(),
});

export const ModelFileSpec = z.strictObject({
  /** Editors' schema hint in JSON files; ignored. */
  $schema: z.string().optional(),
  server: ServerSpec.optional(),
  tenants: z.array(TenantSpec).default([]),
});

export type ScopeSpec = z.infer<typeof ScopeSpec>;
export type UserSpec = z.infer<typeof UserSpec>;
export type GroupSpec = z.infer<typeof GroupSpec>;
export type WebAppSpec = z.infer<typeof WebAppSpec>;
export type ProxyAppSpec = z.infer<typeof ProxyAppSpec>;
export type SpaAppSpec = z.infer<typeof SpaAppSpec>;
export type ApiAppSpec = z.infer<typeof ApiAppSpec>;
export type ApplicationSpec = z.infer<typeof ApplicationSpec>;
export type ClientAppSpec = WebAppSpec | ProxyAppSpec | SpaAppSpec;
export type AssignmentSpec = z.infer<typeof AssignmentSpec>;
export type WebhookSpec = z.infer<typeof WebhookSpec>;
export type TenantSpec = z.infer<typeof TenantSpec>;
export type ModelFile = z.infer<typeof ModelFileSpec>;

/** The validated, merged model: every file's tenants, one server section with defaults applied. */
export interface Model {
  readonly server: {
    readonly baseDomain: string;
    readonly scheme: 'http' | 'https';
    readonly port?: number | undefined;
  };
  readonly tenants: readonly TenantSpec[];
}

export { BUILTIN_SCOPES } from '../contract/index.ts';

/** Merged tenants plus the one server section (if any), with the server's defaults applied. */
export function assembleModel(server: ModelFile['server'], tenants: readonly TenantSpec[]): Model {
  const baseDomain = server?.baseDomain ?? 'localhost';
  return { server: { baseDomain, scheme: server?.scheme ?? (isLocalHost(baseDomain) ? 'http' : 'https'), port: server?.port }, tenants };
}

/** The tenant renames the model declares (previousName): new name → previous name. */
export function tenantRenames(model: Pick<Model, 'tenants'>): Map<string, string> {
  return new Map(model.tenants.flatMap((t) => (t.previousName === undefined ? [] : [[t.name, t.previousName] as const])));
}
