/** What both backends share of webhooks (types.ts, WebhookStore): rows, and which events a webhook takes. */
import type { EventView } from '../../contract/index.ts';
import type { Row } from './_common.ts';
import type { DeliveryRecord, DeliveryStatus, WebhookRecord } from './types.ts';

export const webhookRow = (r: Row): WebhookRecord => ({
  tenant: String(r.tenant), name: String(r.name), body: JSON.parse(String(r.body)) as WebhookRecord['body'], sealedSecret: String(r.sealed_secret),
  createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export const deliveryRow = (r: Row): DeliveryRecord => ({
  tenant: String(r.tenant), webhook: String(r.webhook), seq: Number(r.seq), eventId: String(r.event_id), type: String(r.type),
  status: String(r.status) as DeliveryStatus, attempts: Number(r.attempts), nextAttemptMs: Number(r.next_attempt_ms),
  lastStatus: num(r.last_status), lastError: r.last_error === null || r.last_error === undefined ? null : String(r.last_error),
  deliveredAtMs: num(r.delivered_at_ms), createdAtMs: Number(r.created_at_ms),
});

/** Whether a webhook whose `types` are these takes an event of `type`: none listed takes all; `kind.*` takes a kind. */
export function takesType(types: readonly string[], type: string): boolean {
  return types.length === 0 || types.some((t) => (t.endsWith('.*') ? type.startsWith(t.slice(0, -1)) : t === type));
}

/** The event a delivery carries, from its stored body (null when retention purged it before it went). */
export const eventOf = (body: unknown): EventView | null => (typeof body === 'string' ? (JSON.parse(body) as EventView) : null);

/** Columns of webhook_deliveries, in insert order. */
export const DELIVERY_COLUMNS = ['tenant', 'webhook', 'seq', 'event_id', 'type', 'status', 'attempts', 'next_attempt_ms', 'lease_until_ms', 'created_at_ms'] as const;
