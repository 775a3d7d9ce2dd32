/**
 * A server killed (SIGKILL, the whole process group) while it delivers webhooks loses nothing: a real
 * `idforge serve` sends five events to a receiver that holds the first attempt open; the server is
 * killed mid-attempt and started again on the same data dir; the next process delivers every event,
 * the interrupted one again under the same `webhook-id`, each verified by the `standardwebhooks`
 * library, and the delivery log shows all five delivered.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { serve, type Served } from '../support/db-faults.ts';
import { holdingReceiver, until, type HoldingReceiver } from '../support/holding-receiver.ts';
import { stopAll } from '../support/processes.ts';
import { tempDir } from '../server/_support.ts';

const data = tempDir('idforge-webhook-kill-');
let receiver: HoldingReceiver;
const deliveries = () => receiver.got.map((g) => ({ id: g.headers['webhook-id']!, body: g.body, headers: g.headers }));

const args = ['--port', '0', '--webhook-private-addresses', '--webhook-timeout', '2'];

beforeAll(async () => {
  receiver = await holdingReceiver('/hook', 204);
});
afterAll(async () => {
  await receiver?.close();
  await stopAll();
  data.remove();
});

it('a kill during delivery loses nothing: the next start redelivers, duplicates carry the same id', { timeout: 180_000 }, async () => {
  let s: Served = await serve('webhook-kill-1', data.path, args);
  await s.admin.typed.call('putTenant', { tenant: 'hooks' }, { body: { displayName: 'Hooks Inc.' } });
  const { secret } = await s.admin.typed.call('putWebhook', { tenant: 'hooks', webhook: 'siem' }, { body: { url: receiver.url, types: ['user.created'] } });
  for (let i = 1; i <= 5; i++) await s.admin.typed.call('putUser', { tenant: 'hooks', userId: `u-${i}` }, { body: { email: `u-${i}@hooks.test` } });
  await until('an attempt in flight', () => deliveries().length > 0);
  const interrupted = deliveries()[0]!.id;

  process.kill(-s.proc.pid, 'SIGKILL');
  await s.proc.exited;
  receiver.release();
  s = await serve('webhook-kill-2', data.path, args);

  // Every event arrives (the attempt the kill cut short only once its lease has lapsed), each verified.
  const events = await s.admin.typed.call('listEvents', { tenant: 'hooks' }, { query: { type: 'user.created' } });
  const ids = events.items.map((e) => e.id).sort();
  expect(ids).toHaveLength(5);
  await until('all five delivered', () => ids.every((id) => deliveries().some((g) => g.id === id)) && deliveries().filter((g) => g.id === interrupted).length >= 2);
  const hook = new Webhook(secret!);
  for (const g of deliveries()) expect((hook.verify(g.body, g.headers) as { data: { id: string } }).data.id).toBe(g.id);
  expect(new Set(deliveries().map((g) => g.id))).toEqual(new Set(ids));
  await until('the delivery log to show five delivered', async () => {
    const { items } = await s.admin.typed.call('listWebhookDeliveries', { tenant: 'hooks', webhook: 'siem' }, {});
    return items.length === 5 && items.every((d) => d.status === 'delivered');
  });
});
