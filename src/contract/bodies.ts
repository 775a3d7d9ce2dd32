/**
 * The admin API's bodies: what `PUT /admin/v1/...` accepts and what GETs answer. The generators emit
 * them (the provisioning plan), the server validates requests with them and publishes them in its
 * OpenAPI document, the Pulumi providers check their inputs with them. Bodies are declarative: a PUT
 * carries the full desired state of one object, so repeating it changes nothing.
 *
 * The rules beyond shape (redirect URIs, scope definitions, login policy) are refinements of these
 * schemas, so every door that parses a body runs them, with the same messages and paths.
 */
import { z } from 'zod';
import { APPLICATION_KINDS, type ApplicationKind } from './kinds.ts';
import { checkLoginPolicy, LoginPolicyBody } from './login-policy.ts';
import { MAX_PASSWORD_LENGTH, PasswordPolicyBody } from './password-policy.ts';
import { DNS_LABEL, NAME, NAME_RULES, SCOPE, USER_ID } from './names.ts';
import { checkPkcePolicy, PKCE_POLICIES } from './pkce.ts';
import type { Problem } from './problems.ts';
import { checkRedirectUrl, MAX_URL_LENGTH } from './redirect-uri.ts';
import { checkScopeDefinitions } from './scopes.ts';
import { LastApplied } from './last-applied.ts';
import { MANAGER, MANAGER_RULE } from './managers.ts';
import { TenantEventsBody } from './events.ts';
import { TenantMailBody } from './mail.ts';

export { LoginPolicyBody } from './login-policy.ts';

/** Adds rule problems to a zod parse as issues at their paths (the problem's code kept in params). */
function report(ctx: z.RefinementCtx, problems: readonly Problem[]): void {
  for (const p of problems) ctx.addIssue({ code: 'custom', message: p.message, path: [...p.path], params: { code: p.code } });
}

export const TenantName = z.string().regex(DNS_LABEL, { error: NAME_RULES.dnsLabel });
export const ApplicationName = z.string().regex(NAME, { error: NAME_RULES.name });
export const UserId = z.string().regex(USER_ID, { error: NAME_RULES.userId });
const ScopeToken = z.string().regex(SCOPE, { error: NAME_RULES.scope });
export const ManagedBy = z.string().max(64).optional().describe('who owns the object; idforge deletes only objects marked `idforge`');
/**
 * The Pulumi stack (`project/stack`) whose resource made the object, when one did. A stack takes back
 * an object it made itself (a create cut short by a crash) without adoption, and refuses one it did
 * not make.
 */
export const Stack = z.string().min(1).max(200).optional().describe('the Pulumi stack (project/stack) that manages the object, when one does');
/** Who manages the object (src/contract/managers.ts); absent: made by hand, or said by managedBy and stack as before. */
export const Manager = z.string().regex(MANAGER, { error: MANAGER_RULE }).optional()
  .describe('the named manager of the object: pulumi:<project>/<stack>, apply:<name>, console or scim; a write by another manager that changes the object is a 409 unless forced');

export const ScopeDefinition = z.strictObject({
  name: ScopeToken,
  description: z.string().max(256).optional(),
});
export type ScopeDefinition = z.infer<typeof ScopeDefinition>;

/** PUT /admin/v1/tenants/{tenant} */
export const TenantBody = z
  .strictObject({
    displayName: z.string().min(1).max(128),
    /** Custom scopes the tenant defines (standard OIDC scopes are always known). */
    scopes: z.array(ScopeDefinition).default([]),
    /** Sign-in policy. Default (absent): password only, no second factor. */
    login: LoginPolicyBody.optional(),
    /** What a new password must be (src/contract/password-policy.ts). Default (absent): at least 8 characters, not a common one. */
    passwordPolicy: PasswordPolicyBody.optional(),
    /** The event log's settings (src/contract/events.ts). Default (absent): events kept 90 days. */
    events: TenantEventsBody.optional(),
    /** Outgoing mail (src/contract/mail.ts). Default (absent): the server's own (--smtp-url, or the outbox on localhost). */
    mail: TenantMailBody.optional(),
    managedBy: ManagedBy,
    stack: Stack,
    manager: Manager,
    lastApplied: LastApplied.optional(),
  })
  .superRefine((b, ctx) => {
    report(ctx, checkScopeDefinitions(b.scopes, ['scopes']));
    if (b.login !== undefined) report(ctx, checkLoginPolicy(b.login, ['login']));
  });
export type TenantBody = z.infer<typeof TenantBody>;

const RedirectUriList = z.array(z.string().min(1).max(MAX_URL_LENGTH));

const clientFields = {
  displayName: z.string().min(1).max(128).optional(),
  clientId: z.string().min(1).max(128).regex(USER_ID, { error: NAME_RULES.userId }),
  /** Where the server may return the browser after login: exact, absolute, https unless local (RFC 9700). */
  redirectUris: RedirectUriList.min(1),
  postLogoutRedirectUris: RedirectUriList.default([]),
  /** Scopes the client may request. */
  scopes: z.array(ScopeToken).default(['openid']),
  /** Resource identifiers (audiences of api applications) the client's access tokens are for. */
  audience: z.array(z.string().min(1)).default([]),
  /**
   * PKCE in every authorization request (`required`), or only in requests without a nonce
   * (`optional`: a confidential OpenID Connect client may bind the ID token with a nonce instead,
   * RFC 9700 §2.1.1; src/contract/pkce.ts). Absent: required.
   */
  pkce: z.enum(PKCE_POLICIES).optional(),
  managedBy: ManagedBy,
  stack: Stack,
  manager: Manager,
  lastApplied: LastApplied.optional(),
};

/** Confidential client (login-helper web app or reverse proxy): code flow, client secret. */
export const ConfidentialApplicationBody = z.strictObject({
  kind: z.enum(['web', 'proxy']),
  ...clientFields,
  /** Set by idforge so generated configs can be written before apply; omitted → server makes one. */
  clientSecret: z.string().min(32).max(256).optional(),
  /**
   * Where the server POSTs a logout token when a person's session with this client ends (OpenID
   * Connect Back-Channel Logout 1.0, src/contract/backchannel.ts): same rule as a redirect URI.
   * Absent: none is sent.
   */
  backchannelLogoutUri: z.string().min(1).max(MAX_URL_LENGTH).optional(),
});

/** Public client (single-page app): code + PKCE S256, no secret, refresh tokens when `offline`. */
export const PublicApplicationBody = z.strictObject({
  kind: z.literal('spa'),
  ...clientFields,
  offline: z.boolean().default(false),
});

/** Resource server: no client; registers an audience and the scopes its tokens may carry. */
export const ApiApplicationBody = z.strictObject({
  kind: z.literal('api'),
  displayName: z.string().min(1).max(128).optional(),
  identifier: z.string().min(1).max(256).regex(/^[^\u0000]*$/, { error: 'must not contain NUL characters' }),
  scopes: z.array(ScopeToken).default([]),
  managedBy: ManagedBy,
  stack: Stack,
  manager: Manager,
  lastApplied: LastApplied.optional(),
});

/** The rules beyond shape on a client body: redirect URIs (checkClientUris) and PKCE (checkPkcePolicy). */
export function checkClientBody(body: { readonly kind: Exclude<ApplicationKind, 'api'>; readonly pkce?: 'required' | 'optional' | undefined; readonly redirectUris?: readonly string[]; readonly postLogoutRedirectUris?: readonly string[]; readonly backchannelLogoutUri?: string | undefined }): Problem[] {
  return [...checkClientUris(body), ...checkPkcePolicy(body.kind, body.pkce, ['pkce'])];
}

/** The redirect-URI rule on every URI a client body registers. */
export function checkClientUris(body: { readonly redirectUris?: readonly string[]; readonly postLogoutRedirectUris?: readonly string[]; readonly backchannelLogoutUri?: string | undefined }): Problem[] {
  return [
    ...(body.redirectUris ?? []).flatMap((u, i) => checkRedirectUrl(u, ['redirectUris', i])),
    ...(body.postLogoutRedirectUris ?? []).flatMap((u, i) => checkRedirectUrl(u, ['postLogoutRedirectUris', i])),
    ...(body.backchannelLogoutUri === undefined ? [] : checkRedirectUrl(body.backchannelLogoutUri, ['backchannelLogoutUri'])),
  ];
}

/** PUT /admin/v1/tenants/{tenant}/applications/{application} */
export const ApplicationBody = z
  .discriminatedUnion('kind', [ConfidentialApplicationBody, PublicApplicationBody, ApiApplicationBody], {
    error: (iss) => (iss.code === 'invalid_union' ? `kind must be one of ${APPLICATION_KINDS.join(', ')}` : undefined),
  })
  .superRefine((b, ctx) => report(ctx, b.kind === 'api' ? [] : checkClientBody(b)));
export type ApplicationBody = z.infer<typeof ApplicationBody>;
export type ClientApplicationBody = Exclude<ApplicationBody, { kind: 'api' }>;

/** The body variant of each kind, for code that needs a kind's own fields (e.g. to read a GET back). */
export const BODY_OF_KIND: Readonly<Record<ApplicationKind, z.ZodObject>> = {
  web: ConfidentialApplicationBody,
  proxy: ConfidentialApplicationBody,
  spa: PublicApplicationBody,
  api: ApiApplicationBody,
};

/** PUT /admin/v1/tenants/{tenant}/users/{userId} */
export const UserBody = z.strictObject({
  email: z.email(),
  displayName: z.string().min(1).max(128).optional(),
  /** Custom scopes this user may be granted (group scopes already folded in by idforge). */
  scopes: z.array(ScopeToken).default([]),
  /**
   * Set only when the user has no password yet: an initial password, hashed by the server. Judged by
   * the tenant's password policy (checkPassword) where it is set, not here: the rule needs the tenant.
   */
  initialPassword: z.string().max(4 * MAX_PASSWORD_LENGTH).optional(),
  disabled: z.boolean().default(false),
  managedBy: ManagedBy,
  stack: Stack,
  manager: Manager,
  lastApplied: LastApplied.optional(),
});
export type UserBody = z.infer<typeof UserBody>;

/** PUT /admin/v1/tenants/{tenant}/applications/{application}/assignments/{userId} */
export const AssignmentBody = z.strictObject({ managedBy: ManagedBy, stack: Stack, manager: Manager });
export type AssignmentBody = z.infer<typeof AssignmentBody>;

/** Entries one assignments batch may hold (adds and removes together). */
export const ASSIGNMENT_BATCH_MAX = 1000;

/**
 * POST /admin/v1/tenants/{tenant}/applications/{application}/assignments:batch: several
 * assignments of one application added and removed in one storage transaction, all or nothing.
 * `add` ensures a user is assigned (an existing assignment is left as it is, owner included);
 * `remove` ensures one is not (already absent is fine, as DELETE is idempotent).
 */
export const AssignmentBatchBody = z
  .strictObject({
    add: z.array(UserId).default([]),
    remove: z.array(UserId).default([]),
    /** Owner recorded on the assignments this batch creates. */
    managedBy: ManagedBy,
    manager: Manager,
  })
  .superRefine((b, ctx) => {
    if (b.add.length + b.remove.length > ASSIGNMENT_BATCH_MAX) {
      ctx.addIssue({ code: 'custom', path: [], message: `a batch holds at most ${ASSIGNMENT_BATCH_MAX} entries (add and remove together)` });
    }
    const seen = new Map<string, string>();
    for (const op of ['add', 'remove'] as const) {
      b[op].forEach((id, i) => {
        const first = seen.get(id);
        if (first !== undefined) ctx.addIssue({ code: 'custom', path: [op, i], message: `user '${id}' is already listed at ${first}: list each user once` });
        else seen.set(id, `${op}[${i}]`);
      });
    }
  });
export type AssignmentBatchBody = z.infer<typeof AssignmentBatchBody>;

/** What one entry of a batch did: `created`/`unchanged` for add, `deleted`/`unchanged` for remove. */
export const AssignmentBatchEntry = z.object({
  op: z.enum(['add', 'remove']),
  userId: z.string(),
  outcome: z.enum(['created', 'deleted', 'unchanged']),
});
export type AssignmentBatchEntry = z.infer<typeof AssignmentBatchEntry>;
/** The answer: every entry in request order (adds, then removes). A refused batch changed nothing and answers the error body, with one problem per failed entry at `add[i]` or `remove[i]`. */
export const AssignmentBatchResult = z.object({ results: z.array(AssignmentBatchEntry) });
export type AssignmentBatchResult = z.infer<typeof AssignmentBatchResult>;
/**
 * Members one group PUT may carry: 10,000 ids fit the admin API's 256 KiB body limit. Larger
 * groups are kept through SCIM, whose PATCH adds and removes members without resending them all.
 */
export const MAX_GROUP_MEMBERS = 10_000;

/**
 * PUT /admin/v1/tenants/{tenant}/groups/{group}: a group of users of the tenant. Assigned to an
 * application (a group assignment), it gives its members access there; a member who leaves loses
 * it, with their grants and refresh tokens at that application.
 */
export const GroupBody = z.strictObject({
  displayName: z.string().min(1).max(256).regex(/^[^\u0000]*$/, { error: 'must not contain NUL characters' }).describe('unique in the tenant, case-insensitively'),
  /** User ids of the members; order and repeats do not matter (the server keeps them sorted and once). */
  members: z.array(UserId).max(MAX_GROUP_MEMBERS).default([]),
  /** The group's id in the system that provisions it (SCIM `externalId`). */
  externalId: z.string().min(1).max(256).regex(/^[^\u0000]*$/, { error: 'must not contain NUL characters' }).optional(),
  managedBy: ManagedBy,
  stack: Stack,
  manager: Manager,
});
export type GroupBody = z.infer<typeof GroupBody>;

/** PUT /admin/v1/tenants/{tenant}/applications/{application}/group-assignments/{group} */
export const GroupAssignmentBody = z.strictObject({ managedBy: ManagedBy, stack: Stack, manager: Manager });
export type GroupAssignmentBody = z.infer<typeof GroupAssignmentBody>;

/** POST /admin/v1/tenants/{tenant}/scim/tokens */
export const ScimTokenBody = z.strictObject({
  /** What the token is for, e.g. the identity provider that holds it. */
  description: z.string().min(1).max(200).regex(/^[^\u0000]*$/, { error: 'must not contain NUL characters' }).optional(),
});
export type ScimTokenBody = z.infer<typeof ScimTokenBody>;

/** POST /admin/v1/tenants/{tenant}/console-sessions: an administrator signed in to the console. */
export const ConsoleSessionBody = z.strictObject({ userId: z.string().regex(USER_ID, { error: NAME_RULES.userId }) });
export type ConsoleSessionBody = z.infer<typeof ConsoleSessionBody>;

export const SIGNING_ALGS = ['RS256', 'ES256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/** POST /admin/v1/tenants/{tenant}/keys/rotate */
export const RotateKeysBody = z.strictObject({ alg: z.enum(SIGNING_ALGS).optional() });
export type RotateKeysBody = z.infer<typeof RotateKeysBody>;

// ------------------------------------------------------------------------------------------------
// What the server answers.

const Timestamps = { createdAt: z.iso.datetime(), updatedAt: z.iso.datetime() };

export const TenantView = z.object({ name: z.string(), ...TenantBody.shape, ...Timestamps });
export type TenantView = z.infer<typeof TenantView>;

export const ApplicationView = z.union([
  z.object({ name: z.string(), ...ConfidentialApplicationBody.omit({ clientSecret: true }).shape, ...Timestamps }),
  z.object({ name: z.string(), ...PublicApplicationBody.shape, ...Timestamps }),
  z.object({ name: z.string(), ...ApiApplicationBody.shape, ...Timestamps }),
]);
export type ApplicationView = z.infer<typeof ApplicationView>;

export const UserView = z.object({
  id: z.string(),
  ...UserBody.omit({ initialPassword: true }).shape,
  hasPassword: z.boolean(),
  ...Timestamps,
});
export type UserView = z.infer<typeof UserView>;

export const AssignmentView = z.object({
  application: z.string(),
  userId: z.string(),
  ...AssignmentBody.shape,
  createdAt: z.iso.datetime(),
});
export type AssignmentView = z.infer<typeof AssignmentView>;

export const GroupView = z.object({ id: z.string(), ...GroupBody.shape, ...Timestamps });
export type GroupView = z.infer<typeof GroupView>;
/** A group in a listing: its members counted, not listed (a page of large groups would be huge). */
export const GroupSummaryView = z.object({ id: z.string(), ...GroupBody.omit({ members: true }).shape, memberCount: z.number().int(), ...Timestamps });
export type GroupSummaryView = z.infer<typeof GroupSummaryView>;

export const GroupAssignmentView = z.object({
  application: z.string(),
  group: z.string(),
  ...GroupAssignmentBody.shape,
  createdAt: z.iso.datetime(),
});
/** GET /admin/v1/tenants/{tenant}/group-assignments: every application's group assignments. */
export const GroupAssignmentList = z.object({ items: z.array(GroupAssignmentView) });
export type GroupAssignmentView = z.infer<typeof GroupAssignmentView>;

/** A SCIM token as listed: never its value, which only the answer to its creation holds. */
export const ScimTokenView = z.object({
  id: z.string(),
  description: z.string().optional(),
  createdAt: z.iso.datetime(),
});
export type ScimTokenView = z.infer<typeof ScimTokenView>;
export const ScimTokenList = z.object({ items: z.array(ScimTokenView) });

/** A console session: who, until when. Its id is a bearer secret, answered once, at creation. */
export const ConsoleSessionView = z.object({ userId: z.string(), email: z.string(), expiresAt: z.iso.datetime() });
export type ConsoleSessionView = z.infer<typeof ConsoleSessionView>;
export const ConsoleSessionCreated = z.object({ id: z.string(), ...ConsoleSessionView.shape });
export type ConsoleSessionCreated = z.infer<typeof ConsoleSessionCreated>;
/** POST .../users/{userId}/invitation and .../recovery: a link that sets a password, mailed to the person. */
export const PasswordLinkSent = z.object({
  kind: z.enum(['invitation', 'recovery']),
  email: z.string().describe('where it was mailed'),
  sent: z.boolean().describe('false: a link of this kind was mailed moments ago (at most one per 30 s), and that one stands'),
  expiresAt: z.iso.datetime().describe('when the link stops working (it also stops once used)'),
});
export type PasswordLinkSent = z.infer<typeof PasswordLinkSent>;
/** GET .../users/{userId}/factors: how a person signs in (never a secret). */
export const UserFactorsView = z.object({
  hasPassword: z.boolean(),
  totp: z.object({ createdAt: z.iso.datetime() }).nullable().describe('the authenticator app, when enrolled'),
  passkeys: z.array(z.object({ id: z.string().describe('the credential id (base64url)'), createdAt: z.iso.datetime() })),
  secondFactorRequired: z.boolean().describe("the tenant's login policy asks for a second step"),
  passkeysAllowed: z.boolean().describe("the tenant's login methods include passkeys, so one may be added"),
});
export type UserFactorsView = z.infer<typeof UserFactorsView>;

/** POST .../users/{userId}/password: a person changes their own password. */
/** POST .../users/{userId}/factors/totp: an authenticator app the person set up (the account page), confirmed by a code it shows. */
export const TotpEnrolmentBody = z.strictObject({
  /** The key the app was given (RFC 4648 base32, as otpauth URIs carry it). */
  secret: z.string().regex(/^[A-Z2-7]{16,128}$/, { error: 'must be the base32 key (16 to 128 of A-Z and 2-7)' }),
  code: z.string().regex(/^\d{6}$/, { error: 'must be the 6 digits the app shows' }),
});
export type TotpEnrolmentBody = z.infer<typeof TotpEnrolmentBody>;

/** POST .../users/{userId}/factors/passkeys/options: WebAuthn registration options (PublicKeyCredentialCreationOptionsJSON). */
export const PasskeyOptionsView = z.object({ options: z.record(z.string(), z.unknown()).describe('to pass to navigator.credentials.create (e.g. @simplewebauthn/browser startRegistration)') });
export type PasskeyOptionsView = z.infer<typeof PasskeyOptionsView>;

const Base64url = (max: number) => z.string().max(max).regex(/^[A-Za-z0-9_-]*$/, { error: 'must be base64url' });
/** POST .../users/{userId}/factors/passkeys: the browser's answer to those options (RegistrationResponseJSON, WebAuthn Level 3). */
export const PasskeyEnrolmentBody = z.strictObject({
  credential: z.looseObject({
    id: Base64url(1366).min(1),
    rawId: Base64url(1366).min(1),
    type: z.literal('public-key'),
    response: z.looseObject({
      clientDataJSON: Base64url(16_384).min(1),
      attestationObject: Base64url(65_536).min(1),
      transports: z.array(z.string().max(32)).max(16).optional(),
    }),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
    authenticatorAttachment: z.string().max(32).optional(),
  }),
});
export type PasskeyEnrolmentBody = z.infer<typeof PasskeyEnrolmentBody>;

export const ChangePasswordBody = z.strictObject({
  currentPassword: z.string().max(4096),
  newPassword: z.string().max(4096),
  /** The address of the person's browser, for the guessing defence (the account page passes it on). */
  clientAddress: z.string().min(1).max(64).optional(),
});
export type ChangePasswordBody = z.infer<typeof ChangePasswordBody>;

/** GET .../users/{userId}/sessions: where a person is signed in, and which applications hold their grants. */
export const UserSessionsView = z.object({
  sessions: z.array(z.object({
    id: z.string().describe("the session's handle (not its cookie value): DELETE .../sessions/{id} ends it"),
    signedInAt: z.iso.datetime().nullable(),
    expiresAt: z.iso.datetime().nullable(),
    applications: z.array(z.string()).describe('the applications signed in to in this session'),
  })),
  applications: z.array(z.object({
    clientId: z.string(),
    name: z.string(),
    application: z.string().nullable().describe('the application (null for the admin console and the account page)'),
    since: z.iso.datetime().nullable(),
    expiresAt: z.iso.datetime().nullable(),
  })),
});
export type UserSessionsView = z.infer<typeof UserSessionsView>;
export const ScimTokenCreated = z.object({
  ...ScimTokenView.shape,
  token: z.string().describe('the bearer token for /scim/v2, shown this once: only its hash is stored'),
});
export type ScimTokenCreated = z.infer<typeof ScimTokenCreated>;

export const KeyView = z.object({
  kid: z.string(),
  alg: z.enum(SIGNING_ALGS),
  state: z.enum(['next', 'active', 'retired']).describe('next: published, not yet signing; active: signs; retired: published until its tokens expire'),
  createdAt: z.iso.datetime(),
  retiredAt: z.iso.datetime().optional(),
});
export type KeyView = z.infer<typeof KeyView>;
export const KeyList = z.object({ items: z.array(KeyView) });

export const OUTCOMES = ['created', 'updated', 'unchanged'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The answer to every PUT: what happened, which top-level fields changed, and the object now. */
export function PutResult<T extends z.ZodType>(resource: T) {
  return z.object({
    outcome: z.enum(OUTCOMES),
    /** Top-level fields that differ from the stored state (all fields when created). */
    changes: z.array(z.string()),
    resource,
    /** Only when the server made or replaced the secret and nobody else knows it yet. */
    clientSecret: z.string().optional(),
  });
}
export interface PutResult<R> {
  readonly outcome: Outcome;
  readonly changes: readonly string[];
  readonly resource: R;
  readonly clientSecret?: string;
}

/** One page of a collection; pass `nextCursor` back as `cursor` until it is null. */
export function Page<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

export const SecretRotation = z.object({ clientId: z.string(), clientSecret: z.string() });
export const SecretVerification = z.strictObject({ clientSecret: z.string().min(1).max(256) });
/** POST .../applications/{application}/rename: the application's new name. */
export const RenameBody = z.strictObject({ to: ApplicationName });
export const TenantRenameBody = z.strictObject({ to: TenantName });
export const SecretVerificationResult = z.object({ matches: z.boolean() });
