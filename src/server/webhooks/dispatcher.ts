/**
 * Delivers the event log to the tenants' webhooks, in the background of every server process:
 * every `pollMs` it queues deliveries for events committed since (WebhookStore.enqueue, from the
 * outbox), claims the ones due (a lease: another process, or this one after a crash, takes a
 * delivery again only once its lease has lapsed), and attempts each: a POST of
 * `{"type","timestamp","data"}` signed per Standard Webhooks (sign.ts), to the address its host
 * resolves to when checked (destination.ts), within the timeout, redirects not followed. A 2xx
 * answer delivers; anything else is retried after the next wait of the schedule, then failed; each
 * attempt's outcome is kept in the delivery log.
 *
 * At least once: an attempt whose process dies before its outcome is written is made again with the
 * same `webhook-id` (the event's id), so receivers dedupe by it. Writes and sign-ins never wait for
 * a delivery: they only write the outbox, in their own transaction; a receiver that hangs holds one
 * of `concurrency` attempt slots for at most the timeout.
 */
import type { MasterKey } from '../_crypto.ts';
import type { DueDelivery, Storage } from '../storage/types.ts';
import { post } from './post.ts';
import type { WebhookSettings } from './options.ts';
import { signedHeaders } from './sign.ts';

/** The associated data a webhook's secret is sealed under. */
export const webhookSecretSealedFor = (name: string) => `webhook-secret:${name}`;

/** Events read per webhook per turn. */
const ENQUEUE_BATCH = 500;

export class WebhookDispatcher {
  #timer: NodeJS.Timeout | undefined;
  #turn: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;

  constructor(
    private readonly storage: Pick<Storage, 'webhooks'>,
    private readonly master: MasterKey,
    private readonly settings: WebhookSettings,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.#timer ??= setInterval(() => {
      this.#turn ??= this.#once().catch((err: unknown) => this.log(`webhooks: ${(err as Error).message}`)).finally(() => (this.#turn = undefined));
    }, this.settings.pollMs).unref();
  }

  /** Stops taking deliveries; attempts in flight are left to finish (or to be taken again once their lease lapses). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#turn;
  }

  async #once(): Promise<void> {
    if (this.#stopped) return;
    await this.storage.webhooks.enqueue(Date.now(), ENQUEUE_BATCH);
    const free = this.settings.concurrency - this.#inFlight.size;
    if (free <= 0 || this.#stopped) return;
    for (const due of await this.storage.webhooks.claim(Date.now(), this.settings.leaseMs, free)) {
      const p: Promise<void> = this.#attempt(due)
        .catch((err: unknown) => this.log(`webhooks: delivery of ${due.event.id} to ${due.webhook.tenant}/${due.webhook.name}: ${(err as Error).message}`))
        .finally(() => this.#inFlight.delete(p));
      this.#inFlight.add(p);
    }
  }

  async #attempt(due: DueDelivery): Promise<void> {
    const { webhook, event, delivery } = due;
    const secret = this.master.unseal(webhook.sealedSecret, webhookSecretSealedFor(webhook.name));
    const body = JSON.stringify({ type: event.type, timestamp: event.time, data: event });
    const outcome = await post(new URL(webhook.body.url), body, signedHeaders(secret, event.id, Math.floor(Date.now() / 1000), body), this.settings);
    const delivered = outcome.error === null;
    // `attempts` counts this one: after the n-th failure the n-th wait, after the last none.
    const wait = this.settings.retrySeconds[delivery.attempts - 1];
    const nowMs = Date.now();
    await this.storage.webhooks.settle(delivery, {
      delivered, status: outcome.status, error: outcome.error, nowMs, nextAttemptMs: delivered || wait === undefined ? null : nowMs + wait * 1000,
    });
  }
}
