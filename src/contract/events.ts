/**
 * The event log: one record per change through any door (admin API, batch, console, SCIM, `idforge
 * apply`, Pulumi) and per sign-in outcome, factor change, lockout and token revocation. The server
 * writes a change's events in the transaction of the change (an outbox), so a crash loses none and
 * none tells of a change that did not happen; they are read at GET
 * /admin/v1/tenants/{tenant}/events, by `idforge events`, the console's Activity page and webhooks.
 *
 * Anchors: Keycloak's admin events (operation, resource path, representation), Okta's System Log
 * (actor, target, outcome, transaction id), Zitadel's event API. None of them ties a change to the
 * Git commit that made it; here `actor.git` does, sent by plan, apply and the Pulumi provider in the
 * request headers below.
 *
 * Secrets never enter an event: one rule (`isSecretField`) decides which fields are shown only as
 * changed (`redacted: true`), wherever an event is made.
 */
import { z } from 'zod';
import { jsonEqual } from './json.ts';

/** What a change or an outcome was. `<kind>.<verb>`: filters take a whole kind with `<kind>.*`. */
export const EVENT_TYPES = [
  'tenant.created', 'tenant.updated', 'tenant.deleted', 'tenant.renamed', 'tenant.keys_rotated',
  'application.created', 'application.updated', 'application.deleted', 'application.renamed', 'application.secret_rotated',
  'user.created', 'user.updated', 'user.deleted',
  'assignment.created', 'assignment.updated', 'assignment.deleted',
  'group.created', 'group.updated', 'group.deleted',
  'group_assignment.created', 'group_assignment.updated', 'group_assignment.deleted',
  'scim_token.created', 'scim_token.revoked',
  'webhook.created', 'webhook.updated', 'webhook.deleted',
  'login.success', 'login.failure', 'login.refused', 'login.lockout', 'login.error',
  'factor.added', 'factor.removed', 'factor.rejected', 'password.set', 'recovery.requested',
  'token.revoked',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The kinds of object whose changes make a tenant's directory: an event whose type starts with one of
 * them moves the tenant's directory revision (EventStore.revisions). Sign-in outcomes, factors, a
 * password someone set, recovery and token revocations are no directory change and do not.
 */
export const DIRECTORY_EVENT_KINDS: ReadonlySet<string> = new Set(['tenant', 'application', 'user', 'assignment', 'group', 'group_assignment', 'scim_token', 'webhook']);

/** Whether an event of this type is a change to its tenant's directory (DIRECTORY_EVENT_KINDS). */
export const revisesDirectory = (type: string): boolean => DIRECTORY_EVENT_KINDS.has(type.slice(0, type.indexOf('.')));

/**
 * Every tenant's directory revision (GET /admin/v1/revisions): an opaque string that changes, in the
 * transaction of the change, whenever anything of the tenant's directory changes through any door
 * (the id of the last directory event of that tenant). Equal revisions: nothing changed between. A
 * tenant that had no change since the server kept revisions is not listed.
 */
export const TenantRevisions = z.object({ revisions: z.record(z.string(), z.string()) });
export type TenantRevisions = z.infer<typeof TenantRevisions>;

/** The kinds of object an event is about. `account` is what someone typed at a sign-in (it may name no user). */
export const EVENT_OBJECT_KINDS = ['tenant', 'application', 'user', 'assignment', 'group', 'group_assignment', 'scim_token', 'webhook', 'account'] as const;
export type EventObjectKind = (typeof EVENT_OBJECT_KINDS)[number];

/** A Git commit: SHA-1 (40 hex digits) or SHA-256 (64). */
export const GIT_COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Printable, no line breaks or control characters: a value that cannot forge a log line. */
const PRINTABLE = /^[^\u0000-\u001f\u007f]+$/;

export const GitInfo = z.strictObject({
  commit: z.string().regex(GIT_COMMIT, { error: 'must be a full Git commit id (40 or 64 hex digits)' }),
  branch: z.string().min(1).max(255).regex(PRINTABLE).optional(),
  /** The model's path relative to the repository's top (`models/acme.yaml`). */
  path: z.string().min(1).max(1024).regex(PRINTABLE).optional(),
});
export type GitInfo = z.infer<typeof GitInfo>;

/** Who made a change: its manager (src/contract/managers.ts), the principal, and the commit it came from. */
export const EventActor = z.strictObject({
  /** `pulumi:<project>/<stack>`, `apply:<name>`, `console`, `scim`; absent: by hand through the admin API. */
  manager: z.string().optional(),
  /** The console's administrator (user id), the SCIM token (`scim:<id>`), the admin API client, or the person signing in. */
  who: z.string().optional(),
  git: GitInfo.optional(),
});
export type EventActor = z.infer<typeof EventActor>;

export const EventChange = z.strictObject({
  field: z.string(),
  /** Absent: the field had no value (created), or the value is a secret. */
  before: z.unknown().optional(),
  after: z.unknown().optional(),
  /** The field is a secret or a hash: that it changed is all an event says. */
  redacted: z.literal(true).optional(),
});
export type EventChange = z.infer<typeof EventChange>;

export const EventView = z.strictObject({
  /** Stable and unique: a webhook delivered twice carries the same id (`webhook-id`). */
  id: z.string(),
  /** RFC 3339, UTC, milliseconds. */
  time: z.string(),
  tenant: z.string(),
  type: z.enum(EVENT_TYPES),
  actor: EventActor,
  object: z.strictObject({ kind: z.enum(EVENT_OBJECT_KINDS), name: z.string() }),
  changes: z.array(EventChange),
  /** What else the outcome was (factor, reason, client, address); never a secret. */
  details: z.record(z.string(), z.unknown()).optional(),
  /** The X-Request-Id of the request that made it. */
  requestId: z.string().optional(),
});
export type EventView = z.infer<typeof EventView>;

export const EventPage = z.object({
  items: z.array(EventView),
  /** The next page; null: none yet. */
  nextCursor: z.string().nullable(),
  /** Where this page ends, also on the last one: pass it as `cursor` later to read what has come since (`idforge events --follow`). */
  follow: z.string(),
});

/**
 * The request headers that say who writes, read by the admin API on every write and kept in the
 * events it makes. The admin client sends them (`AdminClient` option `actor`): `idforge plan` and
 * `apply` with the model's commit, branch and path when the model is in a Git repository, the Pulumi
 * provider with its stack's, the console with the administrator who acted. An admin token may write
 * anything, so these say who it was on whose behalf, not what may be done.
 */
export const ACTOR_HEADERS = {
  manager: 'idforge-manager',
  who: 'idforge-actor',
  commit: 'idforge-git-commit',
  branch: 'idforge-git-branch',
  path: 'idforge-git-path',
} as const;

/** The headers that carry an actor (for the admin client). */
export function actorHeaders(actor: EventActor): Record<string, string> {
  const h: Record<string, string> = {};
  if (actor.manager !== undefined) h[ACTOR_HEADERS.manager] = actor.manager;
  if (actor.who !== undefined) h[ACTOR_HEADERS.who] = encodeURIComponent(actor.who);
  if (actor.git !== undefined) {
    h[ACTOR_HEADERS.commit] = actor.git.commit;
    if (actor.git.branch !== undefined) h[ACTOR_HEADERS.branch] = encodeURIComponent(actor.git.branch);
    if (actor.git.path !== undefined) h[ACTOR_HEADERS.path] = encodeURIComponent(actor.git.path);
  }
  return h;
}

/**
 * The actor the headers name, or the problems with them (path `headers.<name>`). Values other than
 * the manager and the commit are percent-encoded (branch and path names may hold any character).
 */
export function actorFromHeaders(get: (name: string) => string | undefined): { actor: EventActor; problems: { path: string; message: string }[] } {
  const problems: { path: string; message: string }[] = [];
  const read = (name: string, decode: boolean): string | undefined => {
    const raw = get(name);
    if (raw === undefined || raw === '') return undefined;
    if (!decode) return raw;
    try {
      return decodeURIComponent(raw);
    } catch {
      problems.push({ path: `headers.${name}`, message: 'is not percent-encoded UTF-8' });
      return undefined;
    }
  };
  const manager = read(ACTOR_HEADERS.manager, false);
  const who = read(ACTOR_HEADERS.who, true);
  const commit = read(ACTOR_HEADERS.commit, false);
  const branch = read(ACTOR_HEADERS.branch, true);
  const path = read(ACTOR_HEADERS.path, true);
  if (who !== undefined && (who.length > 256 || !PRINTABLE.test(who))) problems.push({ path: `headers.${ACTOR_HEADERS.who}`, message: 'must be 1 to 256 printable characters' });
  if (manager !== undefined && (manager.length > 256 || !PRINTABLE.test(manager))) problems.push({ path: `headers.${ACTOR_HEADERS.manager}`, message: 'must be 1 to 256 printable characters' });
  let git: GitInfo | undefined;
  if (commit !== undefined) {
    const r = GitInfo.safeParse({ commit, ...(branch === undefined ? {} : { branch }), ...(path === undefined ? {} : { path }) });
    if (r.success) git = r.data;
    else for (const i of r.error.issues) problems.push({ path: `headers.${ACTOR_HEADERS[i.path[0] as 'commit' | 'branch' | 'path'] ?? ACTOR_HEADERS.commit}`, message: i.message });
  } else if (branch !== undefined || path !== undefined) {
    problems.push({ path: `headers.${ACTOR_HEADERS.commit}`, message: 'is required with a branch or path' });
  }
  return { actor: { ...(manager === undefined ? {} : { manager }), ...(who === undefined ? {} : { who }), ...(git === undefined ? {} : { git }) }, problems };
}

/**
 * The one redaction rule: a field whose name says it holds a secret, a hash, a token or a key is
 * never written into an event, only that it changed. Applied to changes and details alike.
 */
const SECRET_FIELD = /secret|password|hash|token|sealed|credential|private|otp|totp|^key$|jwk/i;
/** The rule's answers by field name: a batch asks it for the same few fields thousands of times. */
const secretFields = new Map<string, boolean>();
export const isSecretField = (field: string): boolean => {
  let secret = secretFields.get(field);
  if (secret === undefined) {
    secret = SECRET_FIELD.test(field);
    // Field names are the schemas' and the server's own; the bound is for anything else.
    if (secretFields.size < 4096) secretFields.set(field, secret);
  }
  return secret;
};

/** Fields an event leaves out: the declaration as written, kept for export (its fields are the object's own). */
const UNSHOWN_FIELDS: ReadonlySet<string> = new Set(['lastApplied']);

/**
 * What changed between two states of an object (top-level fields, sorted by name), secrets redacted.
 * `before` undefined: created (every field, after only); `after` undefined: deleted (before only).
 */
export function fieldChanges(before: object | undefined, after: object | undefined): EventChange[] {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  // One side only (a created or deleted object, most events of a batch): its keys, without a set.
  const keys = before === undefined ? Object.keys(a) : after === undefined ? Object.keys(b) : [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const fields = keys.filter((f) => !UNSHOWN_FIELDS.has(f)).sort();
  const out: EventChange[] = [];
  for (const field of fields) {
    const x = b[field];
    const y = a[field];
    // A field on one side only (every field of a created or deleted object) differs without comparing
    // normal forms, which would copy the whole value to learn that.
    if (absent(x) !== absent(y) ? false : jsonEqual(x, y)) continue;
    out.push(changeOf(field, x, y));
  }
  return out;
}

/** A value JSON leaves out: what canonicalJson writes as 'undefined'. */
const absent = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** One change, redacted when the field is a secret. */
export function changeOf(field: string, before: unknown, after: unknown): EventChange {
  if (isSecretField(field)) return { field, redacted: true };
  const change: { field: string; before?: unknown; after?: unknown } = { field };
  if (before !== undefined) change.before = before;
  if (after !== undefined) change.after = after;
  return change as EventChange;
}

/** Details with every secret-named entry dropped (the same rule as changes). */
export function safeDetails(details: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) if (v !== undefined && !isSecretField(k)) out[k] = v;
  return Object.keys(out).length === 0 ? undefined : out;
}

/** A filter of the event log, as GET .../events takes it. */
export interface EventFilter {
  /** Exact types, or whole kinds (`user.*`). */
  readonly types?: readonly string[];
  /** actor.who or actor.manager, exactly; or a commit (its full id or a prefix of at least 7 hex digits). */
  readonly actor?: string;
  readonly objectKind?: string;
  readonly objectName?: string;
  /** Epoch milliseconds, inclusive / exclusive. */
  readonly sinceMs?: number;
  readonly untilMs?: number;
  /** Oldest first (default, what `--follow` and SIEMs read) or newest first (the console). */
  readonly order?: 'asc' | 'desc';
}

/** The query parameters of GET .../events: one row each, for the router, the client and OpenAPI. */
export const EVENT_QUERY = [
  { name: 'type', description: "event types, comma-separated; 'user.*' takes every type of a kind", schema: { type: 'string' } },
  { name: 'actor', description: 'who (console administrator, scim:<token id>, admin client), a manager (apply:default, pulumi:<project>/<stack>, console, scim), or a Git commit (7 or more leading hex digits)', schema: { type: 'string' } },
  { name: 'object', description: "the object: '<kind>' or '<kind>:<name>', e.g. application:portal, user:u-alice, assignment:portal/u-alice", schema: { type: 'string' } },
  { name: 'since', description: 'RFC 3339 time: events at or after it', schema: { type: 'string', format: 'date-time' } },
  { name: 'until', description: 'RFC 3339 time: events before it', schema: { type: 'string', format: 'date-time' } },
  { name: 'order', description: 'asc (oldest first, the default) or desc', schema: { type: 'string', enum: ['asc', 'desc'] } },
] as const;

export type EventQuery = { readonly [K in (typeof EVENT_QUERY)[number]['name']]?: string | undefined } & {
  readonly cursor?: string | undefined;
  readonly limit?: number | undefined;
};

/** The filter a query asks for, or its problems (path `query.<name>`). */
export function parseEventQuery(q: EventQuery): { filter: EventFilter; problems: { path: string; message: string }[] } {
  const problems: { path: string; message: string }[] = [];
  const filter: { -readonly [K in keyof EventFilter]: EventFilter[K] } = {};
  if (q.type !== undefined && q.type !== '') {
    const types = q.type.split(',').map((t) => t.trim()).filter((t) => t !== '');
    for (const t of types) {
      const known = t.endsWith('.*') ? EVENT_TYPES.some((x) => x.startsWith(t.slice(0, -1))) : (EVENT_TYPES as readonly string[]).includes(t);
      if (!known) problems.push({ path: 'query.type', message: `'${t.slice(0, 64)}' is no event type (e.g. user.created, login.*)` });
    }
    filter.types = types;
  }
  if (q.actor !== undefined && q.actor !== '') filter.actor = q.actor.slice(0, 256);
  if (q.object !== undefined && q.object !== '') {
    const at = q.object.indexOf(':');
    const kind = at < 0 ? q.object : q.object.slice(0, at);
    if (!(EVENT_OBJECT_KINDS as readonly string[]).includes(kind)) problems.push({ path: 'query.object', message: `'${kind.slice(0, 64)}' is no object kind (${EVENT_OBJECT_KINDS.join(', ')})` });
    filter.objectKind = kind;
    if (at >= 0) filter.objectName = q.object.slice(at + 1);
  }
  for (const [name, key] of [['since', 'sinceMs'], ['until', 'untilMs']] as const) {
    const v = q[name];
    if (v === undefined || v === '') continue;
    const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)$/.test(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) problems.push({ path: `query.${name}`, message: 'must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z' });
    else filter[key] = ms;
  }
  if (q.order !== undefined && q.order !== '') {
    if (q.order !== 'asc' && q.order !== 'desc') problems.push({ path: 'query.order', message: 'must be asc or desc' });
    else filter.order = q.order;
  }
  return { filter, problems };
}

/** Days a tenant's events are kept when its `events.retentionDays` is not set. */
export const DEFAULT_EVENT_RETENTION_DAYS = 90;
/** Longest retention a tenant may ask for (ten years). */
export const MAX_EVENT_RETENTION_DAYS = 3650;

/** A tenant's event settings (model `events:`, the tenant body's `events`). */
export const TenantEventsBody = z.strictObject({
  /** Days events are kept; default DEFAULT_EVENT_RETENTION_DAYS. Purged by the server's sweep (every 10 minutes). */
  retentionDays: z.number().int().min(1).max(MAX_EVENT_RETENTION_DAYS).optional(),
});
export type TenantEventsBody = z.infer<typeof TenantEventsBody>;
