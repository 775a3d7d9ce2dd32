/**
 * A tenant batch's webhooks (src/contract/batch.ts): each entry judged with the single PUT's rule
 * (webhook-rules.ts), the deletions it names, and what its prune takes (a manager's webhooks it no longer
 * lists, and the drift). Webhooks are not in the tenant's store, so they are judged before the
 * batch's transaction, from one read of the tenant's webhooks, and written right after it, each
 * with its event in a transaction of its own: a crash between the two is finished by the next run,
 * since every write is idempotent. (Delivering them is src/server/webhooks/'s.)
 */
import { managerOf, prunedBy, type BatchEntryResult, type ParsedTenantBatch, type UndeclaredObjects } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError } from '../errors.ts';
import { WebhookAdmin } from './webhooks.ts';
import { ownedBy } from './rules.ts';
import { judgeWebhook } from './webhook-rules.ts';
import { newWebhookSecret } from '../webhooks/sign.ts';

export interface WebhookEntries {
  /** One per entry, deletion and pruned webhook, in that order. */
  readonly results: readonly BatchEntryResult[];
  readonly refused: boolean;
  /** The writes, run once the batch's transaction committed (none for a dry run). */
  readonly writes: readonly (() => Promise<unknown>)[];
  /** The tenant's webhooks the batch neither lists nor deletes. */
  readonly undeclared: NonNullable<UndeclaredObjects['webhooks']>;
}

export const NO_WEBHOOK_ENTRIES: WebhookEntries = { results: [], refused: false, writes: [], undeclared: [] };

export async function judgeWebhookEntries(ctx: ServerContext, tenant: string, batch: ParsedTenantBatch, dryRun: boolean): Promise<WebhookEntries> {
  const deletes = batch.delete.webhooks;
  if (batch.webhooks.length === 0 && deletes.length === 0 && batch.prune === undefined && !batch.undeclared) return NO_WEBHOOK_ENTRIES;
  const admin = new WebhookAdmin(ctx);
  const stored = new Map((await ctx.storage.webhooks.list(tenant)).map((w) => [w.name, w]));
  const results: BatchEntryResult[] = [];
  const writes: (() => Promise<unknown>)[] = [];
  let refused = false;
  const entry = (name: string, run: () => Omit<BatchEntryResult, 'kind' | 'webhook'>) => {
    try {
      results.push({ kind: 'webhook', webhook: name, ...run() });
    } catch (err) {
      if (!(err instanceof ServerError)) throw err;
      refused = true;
      results.push({ kind: 'webhook', webhook: name, outcome: 'refused', status: err.status, error: err.error, reason: err.message, path: err.path });
    }
  };
  for (const { name, body } of batch.webhooks) {
    entry(name, () => {
      const before = stored.get(name);
      const d = judgeWebhook(name, body, before, admin.secretOf(before), batch.force, newWebhookSecret);
      if (d.outcome !== 'unchanged' && d.foreign === undefined && !dryRun) writes.push(() => admin.write(tenant, name, before, d));
      return {
        outcome: d.outcome,
        ...(d.outcome === 'updated' ? { changes: [...d.changes], ...ownedBy(before) } : d.foreign === undefined ? {} : { manager: d.foreign }),
        ...(d.made === undefined || dryRun ? {} : { webhookSecret: d.made }),
      };
    });
  }
  const listed = new Set(batch.webhooks.map((w) => w.name));
  const named = new Set(deletes);
  const going = [...deletes, ...[...stored.values()].filter((w) => !listed.has(w.name) && !named.has(w.name) && prunedBy(batch.prune, w.body)).map((w) => w.name)];
  for (const name of going) {
    entry(name, () => {
      const before = stored.get(name);
      if (before === undefined) return { outcome: 'unchanged' };
      if (!dryRun) writes.push(() => admin.remove(tenant, before));
      return { outcome: 'deleted', ...ownedBy(before) };
    });
  }
  const gone = new Set(going);
  const undeclared = [...stored.values()].filter((w) => !listed.has(w.name) && !gone.has(w.name)).map((w) => {
    const manager = managerOf(w.body);
    return { webhook: w.name, ...(manager === undefined ? {} : { manager }) };
  });
  return { results, refused, writes, undeclared };
}
