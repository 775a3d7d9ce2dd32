/**
 * The storage contract, continued: the event log (storage/types.ts, EventStore), run against every
 * backend (sqlite.test.ts, postgres.test.ts) with the same real injected failure.
 *
 * The guarantees under test: a change's events are written in the change's own transaction, so a
 * write that fails (a database error in its last statement, or the events themselves) leaves
 * neither the change nor its events, and a write that commits always leaves them; a lone write
 * statement carries them too; `seq` grows in commit order between instances; filters, cursors and
 * retention.
 */
import { describe, expect, it } from 'vitest';
import type { EventView } from '../../../src/contract/index.ts';
import type { Storage } from '../../../src/server/storage/index.ts';
import { openPerTest, type Backend } from './contract.ts';

const COMMIT = 'a'.repeat(40);

let n = 0;
function event(tenant: string, type: EventView['type'], object: EventView['object'], actor: EventView['actor'] = {}, timeMs = Date.now()): EventView {
  n++;
  return { id: `ev-${n}-${Math.random()}`, time: new Date(timeMs).toISOString(), tenant, type, actor, object, changes: [] };
}

export function eventsContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`storage contract, the event log: ${name}`, () => {
    let backend: Backend;
    let s: Storage;
    let other: () => Promise<Storage>;
    openPerTest(fresh, (o) => ({ backend, s, other } = o));

    const all = async (tenant: string) => (await s.events.list(tenant, {}, { limit: 500 })).items.map((r) => r.event);

    it('writes the events of a change in its transaction: with it, or not at all', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      const made = event('acme', 'user.created', { kind: 'user', name: 'u1' });
      await s.events.within(() => [made], () => s.users.put('acme', 'u1', { email: 'u1@x', scopes: [], disabled: false }, null));
      expect(await all('acme')).toEqual([made]);

      // A lone statement (an assignment's upsert) gets a transaction of its own, with the events.
      await s.applications.put('acme', 'portal', { kind: 'spa', clientId: 'portal', redirectUris: ['https://a.example/'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [], offline: false }, null);
      const assigned = event('acme', 'assignment.created', { kind: 'assignment', name: 'portal/u1' });
      await s.events.within(() => [assigned], () => s.users.putAssignment('acme', 'portal', 'u1', {}));
      expect((await all('acme')).map((e) => e.id)).toEqual([made.id, assigned.id]);

      // The write fails in its last statement (a database error): neither the change nor its event.
      const restore = await backend.failArtifactDeletes();
      await s.grants.upsert('acme', 'Session', 'sess', { accountId: 'u1' }, 600).catch(() => {});
      const gone = event('acme', 'user.deleted', { kind: 'user', name: 'u1' });
      await expect(s.events.within(() => [gone], () => s.users.delete('acme', 'u1'))).rejects.toThrow();
      await restore();
      expect(await s.users.get('acme', 'u1')).toBeDefined();
      expect((await all('acme')).map((e) => e.id)).not.toContain(gone.id);

      // The events cannot be written (made inside the transaction, and failing there): the change is undone.
      await expect(s.events.within(() => {
        throw new Error('crash while writing the events');
      }, () => s.users.put('acme', 'u1', { email: 'changed@x', scopes: [], disabled: false }, null))).rejects.toThrow(/crash/);
      expect((await s.users.get('acme', 'u1'))!.body.email).toBe('u1@x');

      // A call that writes nothing records nothing.
      await s.events.within(() => [event('acme', 'user.updated', { kind: 'user', name: 'u1' })], async () => s.users.get('acme', 'u1'));
      expect(await all('acme')).toHaveLength(2);
    });

    it('writes a batch\'s events, decided inside its transaction, or none when it is refused', async () => {
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      let decided: EventView[] = [];
      const none = { applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [] };
      await s.events.within(() => decided, () => s.tenants.batch('acme', (c) => {
        decided = [event('acme', 'user.created', { kind: 'user', name: 'u9' }), event('acme', 'tenant.updated', { kind: 'tenant', name: 'acme' })];
        return { changes: { ...none, users: [{ id: 'u9', body: { email: 'u9@x', scopes: [], disabled: false }, initialPasswordHash: null, revokeArtifacts: false }] }, result: c.users.length };
      }));
      expect((await all('acme')).map((e) => e.type)).toEqual(['user.created', 'tenant.updated']);
      await expect(s.events.within(() => [event('acme', 'user.deleted', { kind: 'user', name: 'u9' })], () => s.tenants.batch('acme', () => {
        throw new Error('refused');
      }))).rejects.toThrow('refused');
      expect(await all('acme')).toHaveLength(2);
    });

    it("moves a tenant's directory revision with each directory change's events, in their transaction; sign-ins leave it", async () => {
      expect(await s.events.revisions()).toEqual({});
      await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
      await s.tenants.put('globex', { displayName: 'Globex', scopes: [] });
      const made = event('acme', 'user.created', { kind: 'user', name: 'u1' });
      await s.events.within(() => [made], () => s.users.put('acme', 'u1', { email: 'u1@x', scopes: [], disabled: false }, null));
      expect(await s.events.revisions()).toEqual({ acme: made.id });
      expect((await s.tenants.contents('acme')).revision).toBe(made.id);
      expect((await s.tenants.contents('globex')).revision).toBeUndefined();

      // Sign-in outcomes, factors and passwords are no directory change.
      await s.events.append([event('acme', 'login.success', { kind: 'account', name: 'u1' }), event('acme', 'factor.added', { kind: 'user', name: 'u1' })]);
      expect(await s.events.revisions()).toEqual({ acme: made.id });

      // A batch's events: the last of each tenant is its revision, read back with the contents the next batch judges.
      let decided: EventView[] = [];
      const none = { applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [] };
      await s.events.within(() => decided, () => s.tenants.batch('globex', () => {
        decided = [event('globex', 'user.created', { kind: 'user', name: 'u2' }), event('globex', 'tenant.updated', { kind: 'tenant', name: 'globex' })];
        return { changes: { ...none, users: [{ id: 'u2', body: { email: 'u2@x', scopes: [], disabled: false }, initialPasswordHash: null, revokeArtifacts: false }] }, result: undefined };
      }));
      expect(await s.events.revisions()).toEqual({ acme: made.id, globex: decided[1]!.id });
      expect(await s.events.revisions('globex')).toEqual({ globex: decided[1]!.id });
      expect(await s.tenants.batch('globex', (c) => ({ changes: none, result: c.revision }))).toBe(decided[1]!.id);

      // A change that fails moves nothing: the revision is written with the events or not at all.
      await expect(s.events.within(() => {
        throw new Error('crash while writing the events');
      }, () => s.users.put('acme', 'u1', { email: 'changed@x', scopes: [], disabled: false }, null))).rejects.toThrow(/crash/);
      expect(await s.events.revisions()).toEqual({ acme: made.id, globex: decided[1]!.id });

      // Another instance sees it, and a deleted tenant's revision stays (a recreated tenant never meets an old one again).
      const deleted = event('acme', 'tenant.deleted', { kind: 'tenant', name: 'acme' });
      await s.events.within(() => [deleted], () => s.tenants.delete('acme'));
      expect((await (await other()).events.revisions()).acme).toBe(deleted.id);
    });

    it('filters by type, actor, object and time, and pages by cursor in seq order', async () => {
      const t0 = Date.now();
      await s.events.append([
        event('acme', 'user.created', { kind: 'user', name: 'u1' }, { who: 'alice', manager: 'apply:default', git: { commit: COMMIT } }, t0),
        event('acme', 'application.updated', { kind: 'application', name: 'portal' }, { who: 'scim:k1', manager: 'scim' }, t0 + 1000),
        event('acme', 'login.failure', { kind: 'account', name: 'bob@x' }, { who: 'bob@x' }, t0 + 2000),
        event('other', 'user.created', { kind: 'user', name: 'u1' }, {}, t0 + 3000),
        event('acme', 'user.deleted', { kind: 'user', name: 'u1' }, { who: 'alice' }, t0 + 4000),
      ]);
      const types = async (f: Parameters<Storage['events']['list']>[1]) => (await s.events.list('acme', f, { limit: 100 })).items.map((r) => r.event.type);
      expect(await types({})).toEqual(['user.created', 'application.updated', 'login.failure', 'user.deleted']);
      expect(await types({ types: ['user.*'] })).toEqual(['user.created', 'user.deleted']);
      expect(await types({ types: ['login.failure', 'application.updated'] })).toEqual(['application.updated', 'login.failure']);
      expect(await types({ actor: 'alice' })).toEqual(['user.created', 'user.deleted']);
      expect(await types({ actor: 'scim' })).toEqual(['application.updated']);
      expect(await types({ actor: COMMIT.slice(0, 7) })).toEqual(['user.created']);
      expect(await types({ objectKind: 'user', objectName: 'u1' })).toEqual(['user.created', 'user.deleted']);
      expect(await types({ objectKind: 'application' })).toEqual(['application.updated']);
      expect(await types({ sinceMs: t0 + 1000, untilMs: t0 + 4000 })).toEqual(['application.updated', 'login.failure']);
      expect(await types({ order: 'desc' })).toEqual(['user.deleted', 'login.failure', 'application.updated', 'user.created']);
      // `_` and `%` in a kind are no wildcards.
      expect(await types({ types: ['user_.*'] })).toEqual([]);

      const first = await s.events.list('acme', {}, { limit: 3 });
      expect(first.items).toHaveLength(3);
      const second = await s.events.list('acme', {}, { limit: 3, cursor: first.nextCursor! });
      expect(second.items.map((r) => r.event.type)).toEqual(['user.deleted']);
      expect(second.nextCursor).toBeNull();
      // Following: the last page's `follow` reads what comes after it, and nothing before.
      expect((await s.events.list('acme', {}, { limit: 3, cursor: second.follow })).items).toEqual([]);
      await s.events.append([event('acme', 'login.success', { kind: 'user', name: 'u1' })]);
      expect((await s.events.list('acme', {}, { limit: 3, cursor: second.follow })).items.map((r) => r.event.type)).toEqual(['login.success']);
      await expect(s.events.list('acme', {}, { limit: 3, cursor: 'nonsense' })).rejects.toThrow('invalid cursor');
    });

    it('numbers events in commit order across instances, and outlives the tenant until retention purges it', async () => {
      const b = await other();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? s : b).events.append([event('acme', 'login.success', { kind: 'user', name: `u${i}` })])));
      const seqs = (await s.events.list('acme', {}, { limit: 100 })).items.map((r) => r.seq);
      expect(seqs).toHaveLength(20);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(await s.events.lastSeq()).toBe(seqs[19]);
      expect((await s.events.after(seqs[17]!, 10)).map((r) => r.seq)).toEqual(seqs.slice(18));

      await s.tenants.put('brief', { displayName: 'Brief', scopes: [], events: { retentionDays: 1 } });
      const now = Date.now();
      const day = 86_400_000;
      await s.events.append([
        event('brief', 'user.created', { kind: 'user', name: 'old' }, {}, now - 2 * day),
        event('brief', 'user.created', { kind: 'user', name: 'new' }, {}, now - day / 2),
        event('gone', 'tenant.deleted', { kind: 'tenant', name: 'gone' }, {}, now - 30 * day),
        event('gone', 'tenant.deleted', { kind: 'tenant', name: 'gone' }, {}, now - 100 * day),
      ]);
      expect(await s.events.purge(now, 90)).toBe(2);
      expect((await all('brief')).map((e) => e.object.name)).toEqual(['new']);
      expect(await all('gone')).toHaveLength(1);
      expect(await all('acme')).toHaveLength(20);
    });

    it('reads a window of the log: where it ends, and only the events of the types asked for', async () => {
      const from = await s.events.lastSeq();
      await s.events.append([
        event('acme', 'user.created', { kind: 'user', name: 'u1' }),
        event('beta', 'user.deleted', { kind: 'user', name: 'u2' }),
        event('acme', 'login.success', { kind: 'user', name: 'u3' }),
        event('acme', 'assignment.deleted', { kind: 'assignment', name: 'portal/u4' }),
        event('acme', 'user.created', { kind: 'user', name: 'u5' }),
      ]);
      const seqs = (await s.events.after(from, 10)).map((r) => r.seq);
      const wanted = new Set(['user.deleted', 'assignment.deleted']);
      const w = await s.events.window(from, 4, wanted);
      expect(w.last).toBe(seqs[3]);
      expect(w.records.map((r) => [r.seq, r.event.object.name])).toEqual([[seqs[1], 'u2'], [seqs[3], 'portal/u4']]);
      expect(w.records).toEqual((await s.events.after(from, 10)).filter((r) => wanted.has(r.event.type)));
      // A window with none of the types still ends where it does; past the log's end, it is empty.
      expect(await s.events.window(seqs[3]!, 10, wanted)).toEqual({ last: seqs[4], records: [] });
      expect(await s.events.window(seqs[4]!, 10, wanted)).toEqual({ last: undefined, records: [] });
      expect(await s.events.window(from, 10, new Set())).toEqual({ last: seqs[4], records: [] });
    });
  });
}
