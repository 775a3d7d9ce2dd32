/**
 * Per-tenant webhooks: the tenant's events (src/contract/events.ts) pushed to an HTTP endpoint,
 * signed per the Standard Webhooks specification (https://www.standardwebhooks.com/, spec v1):
 * headers `webhook-id` (the event's id: the same on every retry), `webhook-timestamp` (Unix
 * seconds of the attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`
 * under the secret's bytes), the secret written `whsec_<base64>`. The body is
 * `{"type", "timestamp", "data"}`, `data` the event.
 *
 * Delivery is at least once (a receiver dedupes by `webhook-id`), from the event log's outbox, with
 * retries and backoff, and a delivery log per endpoint. URLs must be https, except on loopback; the
 * server never delivers to private, loopback or link-local addresses unless its operator allows it
 * (server option), checked on the addresses the name resolves to, and connects to the address it
 * checked.
 */
import { z } from 'zod';
import { ManagedBy, Manager, Stack } from './bodies.ts';
import { EVENT_TYPES } from './events.ts';
import { MAX_URL_LENGTH } from './redirect-uri.ts';

/** `whsec_` and the base64 of 24 to 64 random bytes. */
export const WEBHOOK_SECRET = /^whsec_(?:[A-Za-z0-9+/]{4}){8,22}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Hosts an `http:` URL may name: loopback only (a receiver on the server's own machine, tests). */
const LOOPBACK_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Why a webhook URL is refused, or undefined. */
export function webhookUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK_HOST.test(u.hostname))) return 'must use https (http only on loopback: localhost, 127.0.0.1, [::1])';
  if (u.username !== '' || u.password !== '') return 'must not hold a user name or password (the signature authenticates the sender)';
  if (u.hash !== '') return 'must not have a fragment';
  return undefined;
}

export const EventTypeFilter = z.string().refine((t) => (t.endsWith('.*') ? EVENT_TYPES.some((x) => x.startsWith(t.slice(0, -1))) : (EVENT_TYPES as readonly string[]).includes(t)), {
  error: "must be an event type (user.created) or a kind's every type (user.*)",
});

/** A webhook's URL: one rule for the admin API, the batch and the model. */
export const WebhookUrl = z.string().max(MAX_URL_LENGTH).superRefine((u, ctx) => {
  const p = webhookUrlProblem(u);
  if (p !== undefined) ctx.addIssue({ code: 'custom', message: p });
});

/** The secret's rule, said once for every door. */
export const WEBHOOK_SECRET_RULE = 'must be whsec_ followed by the base64 of 24 to 64 random bytes';

export const WebhookBody = z.strictObject({
  url: WebhookUrl,
  /** Which events to send; empty or absent: every event of the tenant. */
  types: z.array(EventTypeFilter).max(100).default([]),
  /** Whether events are sent; a disabled webhook keeps its place and catches up when enabled (within retention). */
  enabled: z.boolean().default(true),
  /** The signing secret (`whsec_...`); absent on creation: the server makes one and answers it once. Never answered otherwise. */
  secret: z.string().regex(WEBHOOK_SECRET, { error: WEBHOOK_SECRET_RULE }).optional(),
  /** Who manages the webhook (src/contract/managers.ts): a model's webhooks are its manager's, as its applications are. */
  managedBy: ManagedBy,
  stack: Stack,
  manager: Manager,
});
export type WebhookBody = z.infer<typeof WebhookBody>;

export const WebhookView = z.object({
  name: z.string(),
  url: z.string(),
  types: z.array(z.string()),
  enabled: z.boolean(),
  /** Its manager (src/contract/managers.ts); absent: made by hand. */
  manager: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookView = z.infer<typeof WebhookView>;

export const WebhookPutResult = z.object({
  outcome: z.enum(['created', 'updated', 'unchanged']),
  changes: z.array(z.string()),
  resource: WebhookView,
  /** The secret the server made for a new webhook: shown once. */
  secret: z.string().optional(),
});

export const WebhookList = z.object({ items: z.array(WebhookView) });

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export const WebhookDeliveryView = z.object({
  eventId: z.string(),
  type: z.string(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  attempts: z.number(),
  /** The receiver's HTTP status of the last attempt (absent: no answer). */
  lastStatus: z.number().optional(),
  /** Why the last attempt failed (timeout, refused address, connection error, HTTP status). */
  lastError: z.string().optional(),
  nextAttemptAt: z.string().optional(),
  deliveredAt: z.string().optional(),
  createdAt: z.string(),
});
export type WebhookDeliveryView = z.infer<typeof WebhookDeliveryView>;

/**
 * After the n-th failed attempt, the next comes this many seconds later (Standard Webhooks suggests
 * a schedule of this shape); after the last, the delivery is failed. About 28 hours in all.
 */
export const WEBHOOK_RETRY_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 18_000, 36_000, 36_000] as const;

/** The standard headers of a delivery. */
export const WEBHOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;
