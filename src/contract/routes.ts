/**
 * The admin API, one row per operation: method, path, parameters, body and answer. The server
 * registers its routes from this table, the admin client builds its requests from it, and the
 * OpenAPI document is generated from it: one source, three uses.
 */
import { z } from 'zod';
import {
  ApplicationBody, ApplicationView, ConsoleSessionBody, ConsoleSessionCreated, ConsoleSessionView, AssignmentBatchBody, AssignmentBatchResult, AssignmentBody, AssignmentView, GroupAssignmentBody,
  GroupAssignmentList, GroupAssignmentView, GroupBody, GroupSummaryView, GroupView, KeyList, Page, PasswordLinkSent, ChangePasswordBody, TotpEnrolmentBody, PasskeyEnrolmentBody, PasskeyOptionsView, UserFactorsView, UserSessionsView, PutResult, RenameBody, RotateKeysBody, TenantRenameBody, ScimTokenBody,
  ScimTokenCreated, ScimTokenList, SecretRotation, SecretVerification, SecretVerificationResult, TenantBody, TenantView, UserBody, UserView,
} from './bodies.ts';
import { BATCH_MAX_BYTES, TenantBatchBody, TenantBatchRefusal, TenantBatchResult } from './batch.ts';
import { DNS_LABEL, NAME, NAME_RULES, USER_ID } from './names.ts';
import { EventPage, TenantRevisions, type EventQuery } from './events.ts';
import { WebhookBody, WebhookDeliveryView, WebhookList, WebhookPutResult, WebhookView } from './webhooks.ts';

/** Where the admin API lives on the server's base host. */
export const ADMIN_BASE_PATH = '/admin/v1';

/** Path parameters: what each one must look like, and how the API names it in messages. */
export const PATH_PARAMS = {
  tenant: { pattern: DNS_LABEL, what: 'tenant name', rule: NAME_RULES.dnsLabel },
  application: { pattern: NAME, what: 'application name', rule: NAME_RULES.name },
  userId: { pattern: USER_ID, what: 'user id', rule: NAME_RULES.userId },
  group: { pattern: USER_ID, what: 'group id', rule: NAME_RULES.userId },
  tokenId: { pattern: NAME, what: 'token id', rule: NAME_RULES.name },
  webhook: { pattern: NAME, what: 'webhook name', rule: NAME_RULES.name },
  sessionId: { pattern: /^[A-Za-z0-9_-]{43}$/, what: 'session id', rule: 'must be 43 characters of base64url (32 random bytes)' },
  credentialId: { pattern: /^[A-Za-z0-9_-]{1,1400}$/, what: 'passkey credential id', rule: 'must be base64url (a WebAuthn credential id)' },
} as const;
export type PathParam = keyof typeof PATH_PARAMS;

/** Query parameters an operation takes: a page of a collection, or a dry run of a change. */
export type QueryKind = 'page' | 'people' | 'dryRun' | 'events';
export const PAGE_LIMIT = { default: 100, max: 500 } as const;
/** The longest `q` of a people search (listUsers). */
export const MAX_PEOPLE_QUERY = 200;

/** A people search's `q` as the storage compares it (trimmed, lower case), undefined for everyone; a problem when too long or not text. */
export function parsePeopleQuery(q: unknown): { search?: string; problem?: string } {
  if (q === undefined) return {};
  if (typeof q !== 'string') return { problem: 'q must be given once, as text' };
  const t = q.trim().toLowerCase();
  if (t.length > MAX_PEOPLE_QUERY) return { problem: `q must be at most ${MAX_PEOPLE_QUERY} characters long` };
  if (t.includes('\u0000')) return { problem: 'q must not contain NUL characters' };
  return t === '' ? {} : { search: t };
}

export interface RouteSpec {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** Below ADMIN_BASE_PATH, parameters in braces. */
  readonly path: string;
  readonly tag: 'tenant' | 'key' | 'application' | 'user' | 'assignment' | 'batch' | 'group' | 'scim' | 'console' | 'event' | 'webhook';
  readonly summary: string;
  readonly query?: QueryKind;
  readonly body?: z.ZodType;
  /** A body may be left out (it defaults to {}). */
  readonly optionalBody?: boolean;
  /** The JSON answer; absent: 204 No Content. */
  readonly response?: z.ZodType;
  /** 201 when the operation makes something (a POST that creates); default 200 (PUT: 201 when created). */
  readonly status?: 201;
  /** Error statuses beyond the ones every operation may answer (400, 401, 403, 404). */
  readonly conflicts?: string;
  /** The largest body read, in bytes. Default: 256 KiB, enough for any one object. */
  readonly maxBodyBytes?: number;
  /** An answer with status 422 when some part of the request is refused and nothing was done. */
  readonly refusal?: { readonly description: string; readonly body: z.ZodType };
}

/** The body size every operation accepts unless its row says otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

const route = <const R extends RouteSpec>(r: R): R => r;

export const ADMIN_ROUTES = {
  listTenants: route({ method: 'GET', path: '/tenants', tag: 'tenant', summary: 'List tenants', query: 'page', response: Page(TenantView) }),
  getTenant: route({ method: 'GET', path: '/tenants/{tenant}', tag: 'tenant', summary: 'Get one tenant', response: TenantView }),
  listTenantRevisions: route({
    method: 'GET', path: '/revisions', tag: 'tenant',
    summary: "Every tenant's directory revision: changes, in the change's transaction, whenever anything in the tenant's directory changes through any door; " +
      'a reader that kept a revision reads the tenant again only when it differs',
    response: TenantRevisions,
  }),
  putTenant: route({
    method: 'PUT', path: '/tenants/{tenant}', tag: 'tenant', summary: 'Create or replace a tenant (full desired state; idempotent)',
    query: 'dryRun', body: TenantBody, response: PutResult(TenantView), maxBodyBytes: 8 * 1024 * 1024,
  }),
  deleteTenant: route({ method: 'DELETE', path: '/tenants/{tenant}', tag: 'tenant', summary: 'Delete a tenant and everything in it', query: 'dryRun' }),
  renameTenant: route({
    method: 'POST', path: '/tenants/{tenant}/rename', tag: 'tenant',
    summary: 'Give a tenant a new name (its subdomain and issuer): applications, client ids and secrets, users, passwords, TOTP, groups, ' +
      'assignments and signing keys move with it; sessions and tokens of the old issuer end, and passkeys (bound to the old host) are removed ' +
      '(a rename declared in the model with previousName)',
    body: TenantRenameBody, response: TenantView, conflicts: 'the new name is taken',
  }),

  listKeys: route({ method: 'GET', path: '/tenants/{tenant}/keys', tag: 'key', summary: 'List signing keys (public facts only)', response: KeyList }),
  rotateKeys: route({
    method: 'POST', path: '/tenants/{tenant}/keys/rotate', tag: 'key',
    summary: 'Rotate: the next key starts signing, the active key retires (published until its tokens expire), a new next key is published',
    body: RotateKeysBody, optionalBody: true, response: KeyList,
  }),

  listApplications: route({ method: 'GET', path: '/tenants/{tenant}/applications', tag: 'application', summary: 'List applications', query: 'page', response: Page(ApplicationView) }),
  getApplication: route({ method: 'GET', path: '/tenants/{tenant}/applications/{application}', tag: 'application', summary: 'Get one application', response: ApplicationView }),
  putApplication: route({
    method: 'PUT', path: '/tenants/{tenant}/applications/{application}', tag: 'application',
    summary: 'Create or replace an application (full desired state; idempotent)', query: 'dryRun', body: ApplicationBody,
    response: PutResult(ApplicationView), conflicts: 'clientId or identifier taken by another application, or an api still named in client audiences',
  }),
  deleteApplication: route({
    method: 'DELETE', path: '/tenants/{tenant}/applications/{application}', tag: 'application', summary: 'Delete an application', query: 'dryRun',
    conflicts: 'an api still named in client audiences',
  }),
  renameApplication: route({
    method: 'POST', path: '/tenants/{tenant}/applications/{application}/rename', tag: 'application',
    summary: 'Give an application a new name, keeping its client id, secret, assignments and issued tokens (a rename declared in the model with previousName)',
    body: RenameBody, response: ApplicationView, conflicts: 'the new name is taken',
  }),
  verifyClientSecret: route({
    method: 'POST', path: '/tenants/{tenant}/applications/{application}/secret/verify', tag: 'application',
    summary: 'Whether a client secret is the one the application has (the server keeps only a hash): how a stack finds a secret changed behind its back',
    body: SecretVerification, response: SecretVerificationResult,
  }),
  rotateClientSecret: route({
    method: 'POST', path: '/tenants/{tenant}/applications/{application}/secret/rotate', tag: 'application',
    summary: 'Replace the client secret; the new one is returned once', response: SecretRotation,
  }),

  listUsers: route({ method: 'GET', path: '/tenants/{tenant}/users', tag: 'user', summary: 'List users, by id; `q` keeps those whose id, email or display name holds it (case-insensitive)', query: 'people', response: Page(UserView) }),
  getUser: route({ method: 'GET', path: '/tenants/{tenant}/users/{userId}', tag: 'user', summary: 'Get one user', response: UserView }),
  putUser: route({
    method: 'PUT', path: '/tenants/{tenant}/users/{userId}', tag: 'user', summary: 'Create or replace a user (full desired state; idempotent)',
    query: 'dryRun', body: UserBody, response: PutResult(UserView), conflicts: 'email taken by another user of the tenant',
  }),
  deleteUser: route({ method: 'DELETE', path: '/tenants/{tenant}/users/{userId}', tag: 'user', summary: 'Delete a user, its assignments and its grants', query: 'dryRun' }),
  inviteUser: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/invitation', tag: 'user',
    summary: "Mail an invitation to a user without a password: a single-use link (7 days) where they choose one, judged by the tenant's password policy; " +
      'answered once the mail server took the message (502 when it refused)',
    response: PasswordLinkSent, conflicts: 'the user is disabled, or has a password already (send a recovery link instead)',
  }),
  sendRecovery: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/recovery', tag: 'user',
    summary: "Mail a user a password recovery link: single use, 30 minutes; the new password is judged by the tenant's password policy, " +
      "the user's sessions and tokens end when it is set, and signing in still asks for a required second factor",
    response: PasswordLinkSent, conflicts: 'the user is disabled',
  }),
  changeUserPassword: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/password', tag: 'user',
    summary: "Change a user's password, the current one required (403 when wrong; counted by the guessing defence, 429 when locked); the new one is judged by the tenant's password policy",
    body: ChangePasswordBody, conflicts: 'the user has no password (send an invitation)',
  }),
  getUserFactors: route({ method: 'GET', path: '/tenants/{tenant}/users/{userId}/factors', tag: 'user', summary: "A user's sign-in factors: password, authenticator app, passkeys (never a secret)", response: UserFactorsView }),
  enrolUserTotp: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/factors/totp', tag: 'user', status: 201,
    summary: "Set up a user's authenticator app from its key and a code it shows now (400 when the code does not match the key)",
    body: TotpEnrolmentBody, response: UserFactorsView, conflicts: 'the user has an authenticator app already (remove it first)',
  }),
  deleteUserTotp: route({
    method: 'DELETE', path: '/tenants/{tenant}/users/{userId}/factors/totp', tag: 'user', summary: "Remove a user's authenticator app",
    conflicts: "it is the last factor the tenant's required second step or the user's sign-in needs",
  }),
  startUserPasskeyEnrolment: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/factors/passkeys/options', tag: 'user',
    summary: 'Begin adding a passkey for a user: WebAuthn registration options for the tenant host, whose challenge is valid 5 minutes',
    response: PasskeyOptionsView, conflicts: "the tenant's login methods do not include passkeys",
  }),
  enrolUserPasskey: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/factors/passkeys', tag: 'user', status: 201,
    summary: "Add a user's passkey: the browser's answer to the options, verified against their challenge and the tenant's origin (400 when it does not verify)",
    body: PasskeyEnrolmentBody, response: UserFactorsView, conflicts: "the tenant's login methods do not include passkeys",
  }),
  deleteUserPasskey: route({
    method: 'DELETE', path: '/tenants/{tenant}/users/{userId}/factors/passkeys/{credentialId}', tag: 'user', summary: 'Remove one passkey of a user',
    conflicts: "it is the last factor the tenant's required second step or the user's sign-in needs",
  }),
  resetUserFactors: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/factors/reset', tag: 'user',
    summary: "Remove a user's authenticator app and passkeys, and end their sessions and tokens: they enrol again at their next sign-in (a lost device)",
  }),
  unlockUser: route({
    method: 'POST', path: '/tenants/{tenant}/users/{userId}/unlock', tag: 'user',
    summary: "Lift the guessing defence's lock (and failure count) on a user's account; the lock on a client address stays",
    response: z.object({ wasLocked: z.boolean() }),
  }),
  listUserAssignments: route({
    method: 'GET', path: '/tenants/{tenant}/users/{userId}/assignments', tag: 'user',
    summary: "A user's direct assignments, one per application they are assigned to (their groups' assignments are the groups')", response: z.object({ items: z.array(AssignmentView) }),
  }),
  listUserSessions: route({ method: 'GET', path: '/tenants/{tenant}/users/{userId}/sessions', tag: 'user', summary: "A user's sessions and the applications holding their grants", response: UserSessionsView }),
  deleteUserSession: route({
    method: 'DELETE', path: '/tenants/{tenant}/users/{userId}/sessions/{sessionId}', tag: 'user',
    summary: "End one of a user's sessions and the grants made in it: its applications' refresh tokens stop working",
  }),
  deleteUserSessions: route({ method: 'DELETE', path: '/tenants/{tenant}/users/{userId}/sessions', tag: 'user', summary: "End every session, grant and token of a user (sign out everywhere)" }),
  revokeUserApplication: route({
    method: 'DELETE', path: '/tenants/{tenant}/users/{userId}/applications/{application}', tag: 'user',
    summary: "End a user's grants and tokens at one application (its refresh tokens stop working; the assignment stays)",
  }),

  listAssignments: route({
    method: 'GET', path: '/tenants/{tenant}/applications/{application}/assignments', tag: 'assignment', summary: 'List the users assigned to an application',
    query: 'page', response: Page(AssignmentView),
  }),
  getAssignment: route({
    method: 'GET', path: '/tenants/{tenant}/applications/{application}/assignments/{userId}', tag: 'assignment', summary: 'Get one assignment', response: AssignmentView,
  }),
  putAssignment: route({
    method: 'PUT', path: '/tenants/{tenant}/applications/{application}/assignments/{userId}', tag: 'assignment',
    summary: 'Assign a user to an application (idempotent)', query: 'dryRun', body: AssignmentBody, optionalBody: true, response: PutResult(AssignmentView),
  }),
  deleteAssignment: route({
    method: 'DELETE', path: '/tenants/{tenant}/applications/{application}/assignments/{userId}', tag: 'assignment',
    summary: "Remove an assignment; the user's grants and refresh tokens at the application end with it", query: 'dryRun',
  }),
  changeAssignments: route({
    method: 'POST', path: '/tenants/{tenant}/applications/{application}/assignments:batch', tag: 'assignment',
    summary: 'Add and remove assignments of one application in one transaction: all or nothing, answered per entry ' +
      "(a removed user's grants and refresh tokens at the application end with it)",
    query: 'dryRun', body: AssignmentBatchBody, response: AssignmentBatchResult,
    conflicts: 'a user to add does not exist: one problem per such entry (`add[i]`), and nothing was changed',
  }),

  applyTenantBatch: route({
    method: 'POST', path: '/tenants/{tenant}/batch', tag: 'batch',
    summary: 'Apply a batch to one tenant: its desired state and its applications, users and assignments (full bodies, as the single PUTs take them), ' +
      'and deletions; judged with the single-object rules, entry after entry, and written in one transaction; the answer gives every entry\'s outcome',
    query: 'dryRun', body: TenantBatchBody, response: TenantBatchResult, maxBodyBytes: BATCH_MAX_BYTES,
    refusal: { description: 'Some entry is refused (its status, error, reason and path are in `results`); nothing was written', body: TenantBatchRefusal },
  }),

  listGroups: route({ method: 'GET', path: '/tenants/{tenant}/groups', tag: 'group', summary: 'List groups (members counted, not listed)', query: 'page', response: Page(GroupSummaryView) }),
  getGroup: route({ method: 'GET', path: '/tenants/{tenant}/groups/{group}', tag: 'group', summary: 'Get one group with its members', response: GroupView }),
  putGroup: route({
    method: 'PUT', path: '/tenants/{tenant}/groups/{group}', tag: 'group',
    summary: "Create or replace a group and its members (full desired state; idempotent); a member who leaves loses the group's access, with their grants there",
    query: 'dryRun', body: GroupBody, response: PutResult(GroupView),
    conflicts: 'displayName taken by another group of the tenant, or the group is managed by another door (SCIM, the console)',
  }),
  deleteGroup: route({
    method: 'DELETE', path: '/tenants/{tenant}/groups/{group}', tag: 'group',
    summary: "Delete a group and its assignments; members who lose access to an application lose their grants and refresh tokens there", query: 'dryRun',
  }),

  listTenantGroupAssignments: route({
    method: 'GET', path: '/tenants/{tenant}/group-assignments', tag: 'assignment',
    summary: "Every group assignment of the tenant's applications: who, besides each application's own assignments, may sign in where",
    response: GroupAssignmentList,
  }),
  listGroupAssignments: route({
    method: 'GET', path: '/tenants/{tenant}/applications/{application}/group-assignments', tag: 'assignment',
    summary: 'List the groups assigned to an application', query: 'page', response: Page(GroupAssignmentView),
  }),
  getGroupAssignment: route({
    method: 'GET', path: '/tenants/{tenant}/applications/{application}/group-assignments/{group}', tag: 'assignment',
    summary: 'Get one group assignment', response: GroupAssignmentView,
  }),
  putGroupAssignment: route({
    method: 'PUT', path: '/tenants/{tenant}/applications/{application}/group-assignments/{group}', tag: 'assignment',
    summary: "Assign a group to an application: its members may sign in there (idempotent)", query: 'dryRun', body: GroupAssignmentBody, optionalBody: true,
    response: PutResult(GroupAssignmentView),
  }),
  deleteGroupAssignment: route({
    method: 'DELETE', path: '/tenants/{tenant}/applications/{application}/group-assignments/{group}', tag: 'assignment',
    summary: "Remove a group assignment; members left without access lose their grants and refresh tokens at the application", query: 'dryRun',
  }),

  createScimToken: route({
    method: 'POST', path: '/tenants/{tenant}/scim/tokens', tag: 'scim',
    summary: "Make a bearer token for the tenant's SCIM endpoint (/scim/v2); the answer holds it once, the server keeps a hash",
    body: ScimTokenBody, optionalBody: true, response: ScimTokenCreated, status: 201,
  }),
  listScimTokens: route({ method: 'GET', path: '/tenants/{tenant}/scim/tokens', tag: 'scim', summary: "List the tenant's SCIM tokens (never their values)", response: ScimTokenList }),
  deleteScimToken: route({
    method: 'DELETE', path: '/tenants/{tenant}/scim/tokens/{tokenId}', tag: 'scim', summary: 'Revoke a SCIM token: requests with it are refused from now on',
  }),

  createConsoleSession: route({
    method: 'POST', path: '/tenants/{tenant}/console-sessions', tag: 'console',
    summary: "Start an admin console session for a user who signed in at the tenant and holds its admin scope; the answer holds the session's id once (a bearer secret; the server keeps a hash)",
    body: ConsoleSessionBody, response: ConsoleSessionCreated, status: 201,
  }),
  getConsoleSession: route({
    method: 'GET', path: '/tenants/{tenant}/console-sessions/{sessionId}', tag: 'console',
    summary: 'A console session, while it lasts: 404 once it ended (signed out, expired), 403 when it ended because its user was disabled, deleted or lost the admin scope',
    response: ConsoleSessionView,
  }),
  deleteConsoleSession: route({
    method: 'DELETE', path: '/tenants/{tenant}/console-sessions/{sessionId}', tag: 'console', summary: 'End a console session (sign-out); ending one that already ended is no error',
  }),

  listEvents: route({
    method: 'GET', path: '/tenants/{tenant}/events', tag: 'event',
    summary: "The tenant's event log: every change through every door (with its actor, manager and Git commit, and the fields changed, " +
      'secrets redacted) and every sign-in outcome, factor change, lockout and token revocation; filtered, oldest first, paged by cursor ' +
      '(a cursor of the last page keeps reading what comes after it)',
    query: 'events', response: EventPage,
  }),

  listWebhooks: route({ method: 'GET', path: '/tenants/{tenant}/webhooks', tag: 'webhook', summary: "List the tenant's webhooks (never their secrets)", response: WebhookList }),
  getWebhook: route({ method: 'GET', path: '/tenants/{tenant}/webhooks/{webhook}', tag: 'webhook', summary: 'Get one webhook', response: WebhookView }),
  putWebhook: route({
    method: 'PUT', path: '/tenants/{tenant}/webhooks/{webhook}', tag: 'webhook',
    summary: "Create or replace a webhook: the tenant's events (all, or the `types` named) sent to `url`, signed per Standard Webhooks with its secret " +
      '(made by the server and answered once when none is given); at least once, retried with backoff; sent what happens from its creation on',
    query: 'dryRun', body: WebhookBody, response: WebhookPutResult,
  }),
  deleteWebhook: route({ method: 'DELETE', path: '/tenants/{tenant}/webhooks/{webhook}', tag: 'webhook', summary: 'Delete a webhook and its delivery log', query: 'dryRun' }),
  listWebhookDeliveries: route({
    method: 'GET', path: '/tenants/{tenant}/webhooks/{webhook}/deliveries', tag: 'webhook',
    summary: "A webhook's delivery log, newest first: each event's status (pending, delivered, failed), attempts, the receiver's last answer and the next attempt",
    query: 'page', response: Page(WebhookDeliveryView),
  }),
} as const satisfies Record<string, RouteSpec>;

export type AdminRoutes = typeof ADMIN_ROUTES;
export type RouteName = keyof AdminRoutes;

type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamNames<Rest> : never;
/** The path parameters of an operation, e.g. `{ tenant: string; userId: string }`. */
export type RouteParams<R extends RouteName> = { readonly [K in ParamNames<AdminRoutes[R]['path']>]: string };
/** The body an operation accepts (defaults may be left out). */
export type RouteBody<R extends RouteName> = AdminRoutes[R] extends { body: infer B extends z.ZodType } ? z.input<B> : never;
/** The body after validation (defaults filled in). */
export type RouteParsedBody<R extends RouteName> = AdminRoutes[R] extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
/** The JSON answer of an operation, or undefined for 204. */
export type RouteResponse<R extends RouteName> = AdminRoutes[R] extends { response: infer S extends z.ZodType } ? z.output<S> : undefined;
export type RouteQuery<R extends RouteName> = AdminRoutes[R] extends { query: 'page' }
  ? { readonly cursor?: string | undefined; readonly limit?: number | undefined }
  : AdminRoutes[R] extends { query: 'people' } ? { readonly cursor?: string | undefined; readonly limit?: number | undefined; readonly q?: string | undefined }
  : AdminRoutes[R] extends { query: 'dryRun' } ? { readonly dryRun?: boolean | undefined; readonly force?: boolean | undefined }
  : AdminRoutes[R] extends { query: 'events' } ? EventQuery : Record<string, never>;

/** `/admin/v1/tenants/acme/users/u%2Fx`: every parameter encoded as one path segment. */
export function routePath<R extends RouteName>(name: R, params: RouteParams<R>): string {
  return ADMIN_BASE_PATH + ADMIN_ROUTES[name].path.replace(/\{(\w+)\}/g, (_, p: string) => {
    const v = (params as Record<string, string | undefined>)[p];
    if (v === undefined) throw new Error(`admin route ${name}: parameter ${p} is missing`);
    return encodeURIComponent(v);
  });
}
