/** Webhook delivery settings and their defaults, one block per key (in-process: `startServer({ webhooks })`). */
import { WEBHOOK_RETRY_SECONDS } from '../../contract/index.ts';

export interface WebhookOptions {
  /**
   * Deliver to private, loopback and link-local addresses too (`idforge serve
   * --webhook-private-addresses`). Default false: a tenant administrator could otherwise aim the
   * server at its own admin API, a database or a cloud metadata endpoint (SSRF).
   */
  readonly allowPrivateAddresses?: boolean;
  /** Seconds an attempt may take, connection and answer included; then it failed (a timeout). Default 15 (Standard Webhooks suggests 15 s or less). */
  readonly timeoutSeconds?: number;
  /** How often the outbox is read for new events and due retries, in ms. Default 500. */
  readonly pollMs?: number;
  /** Seconds to wait after each failed attempt; after the last, the delivery has failed. Default WEBHOOK_RETRY_SECONDS (about 28 h). */
  readonly retrySeconds?: readonly number[];
  /** Attempts in flight at once per process. Default 16. */
  readonly concurrency?: number;
}

export const WEBHOOK_DEFAULTS = { timeoutSeconds: 15 } as const;

/**
 * A claimed delivery is held by the process attempting it this much longer than the timeout; a
 * process that dies mid-attempt leaves it to be attempted again once the hold has passed.
 */
const LEASE_MARGIN_MS = 5000;

export interface WebhookSettings {
  readonly allowPrivateAddresses: boolean;
  readonly timeoutMs: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly retrySeconds: readonly number[];
  readonly concurrency: number;
}

export function webhookSettings(o: WebhookOptions = {}): WebhookSettings {
  const timeoutMs = (o.timeoutSeconds ?? WEBHOOK_DEFAULTS.timeoutSeconds) * 1000;
  return {
    allowPrivateAddresses: o.allowPrivateAddresses ?? false,
    timeoutMs,
    leaseMs: timeoutMs + LEASE_MARGIN_MS,
    pollMs: o.pollMs ?? 500,
    retrySeconds: o.retrySeconds ?? WEBHOOK_RETRY_SECONDS,
    concurrency: o.concurrency ?? 16,
  };
}
