/**
 * The admin API's webhooks of a tenant (src/contract/webhooks.ts): made, replaced and deleted like
 * every other object (declarative PUT, dry runs, an event per change, the secret never shown but
 * when the server made it), and each one's delivery log.
 */
import { RESERVED_TENANTS, changeOf, managerOf, type Outcome, type WebhookBody, type WebhookDeliveryView, type WebhookView } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { reserved } from './rules.ts';
import { deleteEvent, putEvent, recordWith } from '../events/make.ts';
import type { DeliveryRecord, Page, PageRequest, WebhookRecord } from '../storage/types.ts';
import { webhookSecretSealedFor } from '../webhooks/dispatcher.ts';
import { judgeWebhook, type WebhookDecision } from './webhook-rules.ts';
import { newWebhookSecret } from '../webhooks/sign.ts';

const iso = (epoch: number) => new Date(epoch * 1000).toISOString();
const isoMs = (ms: number) => new Date(ms).toISOString();

export const webhookView = (r: WebhookRecord): WebhookView => ({
  name: r.name, url: r.body.url, types: [...r.body.types], enabled: r.body.enabled,
  ...(managerOf(r.body) === undefined ? {} : { manager: managerOf(r.body)! }), createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt),
});

export const deliveryView = (d: DeliveryRecord): WebhookDeliveryView => ({
  eventId: d.eventId, type: d.type, status: d.status, attempts: d.attempts,
  ...(d.lastStatus === null ? {} : { lastStatus: d.lastStatus }),
  ...(d.lastError === null ? {} : { lastError: d.lastError }),
  ...(d.status === 'pending' ? { nextAttemptAt: isoMs(d.nextAttemptMs) } : {}),
  ...(d.deliveredAtMs === null ? {} : { deliveredAt: isoMs(d.deliveredAtMs) }),
  createdAt: isoMs(d.createdAtMs),
});

export class WebhookAdmin {
  constructor(private readonly ctx: ServerContext) {}

  async #tenant(tenant: string): Promise<void> {
    if (RESERVED_TENANTS.includes(tenant)) throw reserved(tenant);
    if ((await this.ctx.storage.tenants.get(tenant)) === undefined) throw errors.notFound(`tenant '${tenant}' does not exist`);
  }

  async #webhook(tenant: string, name: string): Promise<WebhookRecord> {
    await this.#tenant(tenant);
    const w = await this.ctx.storage.webhooks.get(tenant, name);
    if (w === undefined) throw errors.notFound(`webhook '${name}' does not exist in tenant '${tenant}'`);
    return w;
  }

  async put(tenant: string, name: string, body: WebhookBody, dryRun: boolean, force = false): Promise<{ outcome: Outcome; changes: string[]; resource: WebhookView; secret?: string }> {
    await this.#tenant(tenant);
    const before = await this.ctx.storage.webhooks.get(tenant, name);
    const d = judgeWebhook(name, body, before, this.secretOf(before), force, newWebhookSecret);
    const now = Math.floor(Date.now() / 1000);
    if (dryRun || d.outcome === 'unchanged' || d.foreign !== undefined) {
      return { outcome: d.outcome, changes: [...d.changes], resource: webhookView(before ?? { tenant, name, body: d.stored, sealedSecret: '', createdAt: now, updatedAt: now }) };
    }
    const rec = await this.write(tenant, name, before, d);
    return { outcome: d.outcome, changes: [...d.changes], resource: webhookView(rec), ...(d.made === undefined ? {} : { secret: d.made }) };
  }

  /** A stored webhook's secret, unsealed (undefined for none). */
  secretOf(before: WebhookRecord | undefined): string | undefined {
    return before === undefined ? undefined : this.ctx.master.unseal(before.sealedSecret, webhookSecretSealedFor(before.name));
  }

  /** Writes what `judgeWebhook` decided, with its event, in one transaction. */
  write(tenant: string, name: string, before: WebhookRecord | undefined, d: WebhookDecision): Promise<WebhookRecord> {
    const event = putEvent(tenant, 'webhook', name, before?.body, d.stored, managerOf(d.stored), d.changes.includes('secret') ? [changeOf('secret', undefined, undefined)] : []);
    return recordWith(this.ctx, [event], () => this.ctx.storage.webhooks.put(tenant, name, d.stored, this.ctx.master.seal(d.secret, webhookSecretSealedFor(name))));
  }

  /** Deletes a webhook with its event, in one transaction. */
  remove(tenant: string, before: WebhookRecord): Promise<boolean> {
    return recordWith(this.ctx, [deleteEvent(tenant, 'webhook', before.name, before.body)], () => this.ctx.storage.webhooks.delete(tenant, before.name));
  }

  async get(tenant: string, name: string): Promise<WebhookView> {
    return webhookView(await this.#webhook(tenant, name));
  }

  async list(tenant: string): Promise<{ items: WebhookView[] }> {
    await this.#tenant(tenant);
    return { items: (await this.ctx.storage.webhooks.list(tenant)).map(webhookView) };
  }

  async delete(tenant: string, name: string, dryRun: boolean): Promise<void> {
    const before = await this.#webhook(tenant, name);
    if (dryRun) return;
    await this.remove(tenant, before);
  }

  async deliveries(tenant: string, name: string, page: PageRequest): Promise<Page<WebhookDeliveryView>> {
    await this.#webhook(tenant, name);
    const p = await this.ctx.storage.webhooks.deliveries(tenant, name, page);
    return { items: p.items.map(deliveryView), nextCursor: p.nextCursor };
  }
}
