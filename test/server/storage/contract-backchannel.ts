/**
 * The storage contract, continued: the back-channel logout outbox (storage/types.ts,
 * BackchannelStore), run against every backend (sqlite.test.ts, postgres.test.ts). The guarantees
 * under test: the place in the log starts once (the first value wins) and moves only from where a
 * caller read it, with its logouts, so two replicas queueing the same events queue them once; a
 * claimed logout is held for its lease, counted, and taken again once the lease lapses (a process
 * that died mid-attempt); settled logouts are purged.
 */
import { describe, expect, it } from 'vitest';
import type { LogoutDraft, Storage } from '../../../src/server/storage/types.ts';
import { openPerTest } from './contract.ts';
import type { Backend } from './contract.ts';

const draft = (jti: string, sub = 'u-alice', sid?: string): LogoutDraft => ({ tenant: 'acme', jti, clientId: 'portal', uri: 'https://portal.example/backchannel-logout', sub, ...(sid === undefined ? {} : { sid }) });

export function backchannelContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`storage contract, back-channel logouts: ${name}`, () => {
    let s: Storage;
    let other: () => Promise<Storage>;
    openPerTest(fresh, (o) => ({ s, other } = o));

    it('starts its place once, and moves it only from where it was read, with its logouts', async () => {
      expect(await s.backchannel.place()).toBeUndefined();
      expect(await s.backchannel.start(7)).toBe(7);
      const t = await other();
      expect(await t.backchannel.start(9)).toBe(7);
      // Two replicas read place 7 and queue the same events: one wins, the other queues nothing.
      const results = await Promise.all([s.backchannel.queue(7, 12, [draft('a')], 1000), t.backchannel.queue(7, 12, [draft('a2')], 1000)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await s.backchannel.place()).toBe(12);
      const claimed = await s.backchannel.claim(2000, 10_000, 10);
      expect(claimed).toHaveLength(1);
      expect(await s.backchannel.queue(7, 20, [draft('late')], 1000)).toBe(false);
    });

    it('holds a claimed logout for its lease, counts attempts, and settles it', async () => {
      await s.backchannel.add([draft('j1', 'u-alice', 'sid-1'), draft('j2', 'u-bob')], 1000);
      const first = await s.backchannel.claim(1000, 5000, 10);
      expect(first.map((l) => [l.jti, l.attempts, l.sid])).toEqual([['j1', 1, 'sid-1'], ['j2', 1, undefined]]);
      expect(first[0]).toMatchObject({ tenant: 'acme', clientId: 'portal', uri: 'https://portal.example/backchannel-logout', sub: 'u-alice' });
      const t = await other();
      expect(await t.backchannel.claim(3000, 5000, 10)).toEqual([]);
      await s.backchannel.settle('j1', { delivered: true, status: 200, error: null, nextAttemptMs: null, nowMs: 3000 });
      // The lease of j2 lapses (its process died): another takes it, the second attempt.
      const again = await t.backchannel.claim(6001, 5000, 10);
      expect(again.map((l) => [l.jti, l.attempts])).toEqual([['j2', 2]]);
      await t.backchannel.settle('j2', { delivered: false, status: 503, error: 'HTTP 503', nextAttemptMs: 8000, nowMs: 6500 });
      expect(await s.backchannel.claim(7000, 5000, 10)).toEqual([]);
      expect((await s.backchannel.claim(8000, 5000, 10)).map((l) => l.attempts)).toEqual([3]);
      await s.backchannel.settle('j2', { delivered: false, status: 503, error: 'HTTP 503', nextAttemptMs: null, nowMs: 9000 });
      // The same jti again is the same logout: not queued twice.
      await s.backchannel.add([draft('j1')], 9000);
      expect(await s.backchannel.claim(20_000, 5000, 10)).toEqual([]);
      expect(await s.backchannel.purge(9001)).toBe(2);
    });
  });
}
