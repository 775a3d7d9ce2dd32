/**
 * The storage contract, continued: the SSF transmitter's streams and SETs (storage/types.ts,
 * SsfStore), run against every backend (sqlite.test.ts, postgres.test.ts).
 *
 * The guarantees under test: a stream starts after the log's end; SETs are queued from the event
 * log once each (also when two instances queue together), a disabled stream skips, a paused one
 * keeps; poll answers pending SETs in order until acknowledged; push claims are leased, so two
 * instances never attempt one SET at once, and settle as delivered, pending again or failed;
 * settled and long-pending SETs are purged; streams and SETs go with their tenant.
 */
import { describe, expect, it } from 'vitest';
import type { EventView } from '../../../src/contract/index.ts';
import type { SsfStreamRecord, Storage } from '../../../src/server/storage/index.ts';
import { openPerTest, type Backend } from './contract.ts';

let n = 0;
const event = (tenant: string, name: string): EventView => {
  n++;
  return { id: `ev-${n}-${Math.random()}`, time: new Date().toISOString(), tenant, type: 'user.deleted', actor: {}, object: { kind: 'user', name }, changes: [] };
};

/** One SET per event, its jti the event's id: what the translation does, without its rules. */
const oneEach = (stream: SsfStreamRecord, e: EventView) => (stream.tenant === e.tenant ? [{ jti: e.id, claims: { sub: e.object.name, stream: stream.id } }] : []);

const stream = (tenant: string, id: string, method: 'push' | 'poll', status: SsfStreamRecord['status'] = 'enabled') => ({
  tenant, id, status, tokenHash: 'ab'.repeat(32), sealedAuthorization: null,
  body: { method, ...(method === 'push' ? { endpointUrl: 'https://rx.example/events' } : {}), eventsRequested: [], aud: 'urn:rx' },
});

export function ssfContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`storage contract, SSF streams: ${name}`, () => {
    let s: Storage;
    let other: () => Promise<Storage>;
    openPerTest(fresh, (o) => ({ s, other } = o));

    const log = (tenant: string, ...names: string[]) => s.events.append(names.map((u) => event(tenant, u)));

    it('keeps streams, starting each after the log\'s end, and queues each event once, in order, until acknowledged', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await log('acme', 'before');
      const made = await s.ssf.put(stream('acme', 'st-1', 'poll'));
      expect(made).toMatchObject({ tenant: 'acme', id: 'st-1', status: 'enabled', body: { method: 'poll', aud: 'urn:rx' } });
      expect(await s.ssf.list('acme')).toHaveLength(1);
      await log('acme', 'u1', 'u2', 'u3');
      await log('globex', 'elsewhere');
      // Two instances queue together: each SET once.
      const second = await other();
      const queued = await Promise.all([s.ssf.enqueue(Date.now(), 500, oneEach), second.ssf.enqueue(Date.now(), 500, oneEach)]);
      expect(queued[0] + queued[1]).toBe(3);
      expect(await s.ssf.enqueue(Date.now(), 500, oneEach)).toBe(0);

      const first = await s.ssf.pending('acme', 'st-1', 2);
      expect(first.sets.map((x) => x.claims.sub)).toEqual(['u1', 'u2']);
      expect(first.more).toBe(true);
      // Unacknowledged SETs are answered again; acknowledged and refused ones are not.
      expect((await s.ssf.pending('acme', 'st-1', 2)).sets.map((x) => x.jti)).toEqual(first.sets.map((x) => x.jti));
      await s.ssf.acknowledge('acme', 'st-1', first.sets.map((x) => x.jti), Date.now(), (jti) => (jti === first.sets[1]!.jti ? 'invalid_key: unknown kid' : undefined));
      expect((await s.ssf.pending('acme', 'st-1', 10))).toEqual({ sets: [expect.objectContaining({ claims: { sub: 'u3', stream: 'st-1' } })], more: false });
    });

    it('a disabled stream moves on without queueing; a paused one queues and delivers nothing by push', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await s.ssf.put(stream('acme', 'off', 'poll', 'disabled'));
      await s.ssf.put(stream('acme', 'held', 'push', 'paused'));
      await log('acme', 'u1');
      await s.ssf.enqueue(Date.now(), 500, oneEach);
      expect((await s.ssf.pending('acme', 'off', 10)).sets).toEqual([]);
      expect((await s.ssf.pending('acme', 'held', 10)).sets).toHaveLength(1);
      expect(await s.ssf.claim(Date.now(), 60_000, 10)).toEqual([]);
      // Enabled again: the held SET goes, not the skipped one.
      await s.ssf.put({ ...stream('acme', 'held', 'push'), status: 'enabled' });
      await s.ssf.put({ ...stream('acme', 'off', 'poll'), status: 'enabled' });
      await s.ssf.enqueue(Date.now(), 500, oneEach);
      expect((await s.ssf.pending('acme', 'off', 10)).sets).toEqual([]);
      expect(await s.ssf.claim(Date.now(), 60_000, 10)).toHaveLength(1);
    });

    it('leases push SETs to one instance at a time and settles them delivered, pending again or failed', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await s.ssf.put(stream('acme', 'rx', 'push'));
      await s.ssf.put(stream('acme', 'poller', 'poll'));
      await log('acme', 'u1', 'u2', 'u3');
      await s.ssf.enqueue(Date.now(), 500, oneEach);
      const now = Date.now();
      const second = await other();
      const [a, b] = await Promise.all([s.ssf.claim(now, 60_000, 10), second.ssf.claim(now, 60_000, 10)]);
      // Poll streams' SETs are never claimed for push; each push SET by one instance only, its attempt counted.
      expect([...a, ...b].map((x) => x.claims.sub).sort()).toEqual(['u1', 'u2', 'u3']);
      expect([...a, ...b].every((x) => x.stream === 'rx' && x.attempts === 1 && x.streamRecord.body.endpointUrl === 'https://rx.example/events')).toBe(true);
      expect(await s.ssf.claim(now + 1000, 60_000, 10)).toEqual([]);
      const [d1, d2, d3] = [...a, ...b].sort((x, y) => String(x.claims.sub).localeCompare(String(y.claims.sub)));
      await s.ssf.settle('acme', 'rx', d1!.jti, { delivered: true, error: null, nextAttemptMs: null, nowMs: now });
      await s.ssf.settle('acme', 'rx', d2!.jti, { delivered: false, error: 'HTTP 503', nextAttemptMs: now + 500, nowMs: now });
      await s.ssf.settle('acme', 'rx', d3!.jti, { delivered: false, error: 'HTTP 400', nextAttemptMs: null, nowMs: now });
      expect(await s.ssf.claim(now + 100, 60_000, 10)).toEqual([]);
      const again = await s.ssf.claim(now + 600, 60_000, 10);
      expect(again.map((x) => [x.jti, x.attempts])).toEqual([[d2!.jti, 2]]);
      // A lease that lapsed (its process died) is claimed again.
      expect((await s.ssf.claim(now + 600 + 60_001, 60_000, 10)).map((x) => [x.jti, x.attempts])).toEqual([[d2!.jti, 3]]);
      expect(await s.ssf.purge(now + 1, now - 1)).toBe(2);
      // Pending SETs nobody came for go once older than the second bound: rx's one, the poll stream's three.
      expect(await s.ssf.purge(now + 1, now + 1)).toBe(4);
      expect((await s.ssf.pending('acme', 'poller', 10)).sets).toEqual([]);
      expect(await s.ssf.claim(now + 600 + 120_001, 60_000, 10)).toEqual([]);
    });

    it('queues only events of the types asked for, reading past the others', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      // No stream: nothing to queue.
      expect(await s.ssf.enqueue(Date.now(), 500, oneEach, new Set(['user.deleted']))).toBe(0);
      await s.ssf.put(stream('acme', 'st-1', 'poll'));
      await s.events.append([
        event('acme', 'u1'), { ...event('acme', 'u2'), type: 'user.created' }, event('acme', 'u3'), { ...event('acme', 'u4'), type: 'login.success' },
      ]);
      // Two events a turn: the types left out still move the place (u4 is never queued, nor read again).
      expect(await s.ssf.enqueue(Date.now(), 2, oneEach, new Set(['user.deleted']))).toBe(1);
      expect(await s.ssf.enqueue(Date.now(), 2, oneEach, new Set(['user.deleted']))).toBe(1);
      expect(await s.ssf.enqueue(Date.now(), 2, oneEach)).toBe(0);
      expect((await s.ssf.pending('acme', 'st-1', 10)).sets.map((x) => x.claims.sub)).toEqual(['u1', 'u3']);
    });

    it('streams and their SETs go with their tenant, and with their own deletion', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await s.tenants.put('globex', { displayName: 'Globex', scopes: [] });
      await s.ssf.put(stream('acme', 'a1', 'poll'));
      await s.ssf.put(stream('globex', 'g1', 'poll'));
      await log('acme', 'u1');
      await log('globex', 'u1');
      await s.ssf.enqueue(Date.now(), 500, oneEach);
      expect(await s.ssf.delete('acme', 'a1')).toBe(true);
      expect(await s.ssf.get('acme', 'a1')).toBeUndefined();
      expect((await s.ssf.pending('acme', 'a1', 10)).sets).toEqual([]);
      await s.tenants.delete('globex');
      expect(await s.ssf.list('globex')).toEqual([]);
      expect((await s.ssf.pending('globex', 'g1', 10)).sets).toEqual([]);
    });
  });
}
