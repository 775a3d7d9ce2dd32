/**
 * The storage contract, continued: groups, their members and assignments, and what SCIM keeps of
 * its own (users' SCIM attributes, tokens). Run against every backend (sqlite.test.ts,
 * postgres.test.ts) like the rest of the contract, with the same real injected failure.
 *
 * The guarantees under test are written in storage/types.ts: a removed member, a deleted group or a
 * deleted group assignment revokes, in the same transaction, the grants and tokens of exactly the
 * users left without access to the application; membership changes are differences, so two
 * concurrent ones both land; everything goes with its tenant, user or application.
 */
import { describe, expect, it, vi } from 'vitest';
import type { UserBody } from '../../../src/contract/index.ts';
import type { Storage, StoredApplicationBody } from '../../../src/server/storage/index.ts';
import { openPerTest, type Backend } from './contract.ts';

const T0 = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
const T0S = Math.floor(T0 / 1000);

const webApp = (clientId: string): StoredApplicationBody => ({
  kind: 'web', clientId, redirectUris: ['https://app.example/cb'], postLogoutRedirectUris: [], scopes: ['openid'], audience: [],
});
const userBody = (email: string): Omit<UserBody, 'initialPassword'> => ({ email, scopes: [], disabled: false });
const group = (displayName: string, managedBy?: string) => ({ displayName, ...(managedBy === undefined ? {} : { managedBy }) });
const bytewise = (names: readonly string[]) => [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
const AWKWARD = ['b', 'B', 'a-b', 'a_b', 'ab', 'a', '0', 'Z', 'a.b', 'A'];

/** What one user holds at one client (a grant, a refresh token under it, an access token) and their session. */
async function signedIn(s: Storage, t: string, user: string, clientId: string): Promise<void> {
  await s.grants.upsert(t, 'Session', `sess-${user}`, { accountId: user }, 600);
  await s.grants.upsert(t, 'Grant', `grant-${user}-${clientId}`, { accountId: user, clientId }, 600);
  await s.grants.upsert(t, 'RefreshToken', `rt-${user}-${clientId}`, { accountId: user, clientId, grantId: `grant-${user}-${clientId}` }, 600);
  await s.grants.upsert(t, 'AccessToken', `at-${user}-${clientId}`, { accountId: user, clientId, grantId: `grant-${user}-${clientId}` }, 600);
}
async function holds(s: Storage, t: string, user: string, clientId: string) {
  return {
    session: (await s.grants.find(t, 'Session', `sess-${user}`)) !== undefined,
    grant: (await s.grants.find(t, 'Grant', `grant-${user}-${clientId}`)) !== undefined,
    refresh: (await s.grants.find(t, 'RefreshToken', `rt-${user}-${clientId}`)) !== undefined,
    access: (await s.grants.find(t, 'AccessToken', `at-${user}-${clientId}`)) !== undefined,
  };
}
const HOLDS_ALL = { session: true, grant: true, refresh: true, access: true };
const SESSION_ONLY = { session: true, grant: false, refresh: false, access: false };

export function groupsAndScimContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`storage contract, groups and SCIM: ${name}`, () => {
    let backend: Backend;
    let s: Storage;
    let other: () => Promise<Storage>;
    openPerTest(fresh, (o) => ({ backend, s, other } = o));

    /** These tenants exist (schema 3: every row names its tenant, which must exist). */
    async function tenants(...names: string[]): Promise<void> {
      for (const t of names) if ((await s.tenants.get(t)) === undefined) await s.tenants.put(t, { displayName: t, scopes: [] });
    }

    /** Tenant acme: apps portal and wiki, users u1..u4, group g1 (u1, u2) assigned to portal. */
    async function scene(): Promise<void> {
      await tenants('acme', 'globex');
      await s.applications.put('acme', 'portal', webApp('portal-id'), null);
      await s.applications.put('acme', 'wiki', webApp('wiki-id'), null);
      for (const u of ['u1', 'u2', 'u3', 'u4']) await s.users.put('acme', u, userBody(`${u}@acme.test`), null);
      await s.groups.put('acme', 'g1', group('Staff'), { add: ['u1', 'u2'] });
      await s.groups.putAssignment('acme', 'portal', 'g1', {});
    }

    describe('groups', () => {
      it('put, get, by display name without regard to case; update keeps createdAt; list pages by id bytewise', async () => {
        await tenants('acme', 'globex');
        const created = await s.groups.put('acme', 'g1', { displayName: 'Staff ✓', externalId: 'ext-1', managedBy: 'scim' });
        expect(created).toEqual({ tenant: 'acme', id: 'g1', body: { displayName: 'Staff ✓', externalId: 'ext-1', managedBy: 'scim' }, createdAt: T0S, updatedAt: T0S });
        expect(JSON.stringify(await s.groups.get('acme', 'g1'))).toBe(JSON.stringify(created));
        expect((await s.groups.getByDisplayName('acme', 'STAFF ✓'))?.id).toBe('g1');
        expect(await s.groups.getByDisplayName('globex', 'Staff ✓')).toBeUndefined();
        vi.setSystemTime(T0 + 4_000);
        expect(await s.groups.put('acme', 'g1', group('Team'))).toMatchObject({ body: { displayName: 'Team' }, createdAt: T0S, updatedAt: T0S + 4 });
        expect(await s.groups.getByDisplayName('acme', 'staff ✓')).toBeUndefined();

        for (const [i, id] of AWKWARD.entries()) await s.groups.put('acme', `x${id}`, group(`Group ${i}`));
        await s.groups.put('globex', 'elsewhere', group('Elsewhere'));
        const ids: string[] = [];
        for (let cursor: string | undefined, more = true; more;) {
          const page = await s.groups.list('acme', { cursor, limit: 3 });
          ids.push(...page.items.map((g) => g.id));
          cursor = page.nextCursor ?? undefined;
          more = page.nextCursor !== null;
        }
        expect(ids).toEqual(bytewise(['g1', ...AWKWARD.map((id) => `x${id}`)]));
        await expect(s.groups.list('acme', { limit: 2, cursor: '%' })).rejects.toThrow('invalid cursor');
      });

      it('display names are unique in a tenant without regard to case', async () => {
        await tenants('acme', 'globex');
        await s.groups.put('acme', 'g1', group('Staff'));
        await expect(s.groups.put('acme', 'g2', group('STAFF'))).rejects.toThrow();
        expect(await s.groups.get('acme', 'g2')).toBeUndefined();
        await s.groups.put('globex', 'g2', group('STAFF'));
      });

      it('members: only users of the tenant are added; listed bytewise, counted, and per user', async () => {
        await tenants('acme', 'globex');
        for (const u of AWKWARD) await s.users.put('acme', u, userBody(`${u}@acme.test`), null);
        await s.users.put('globex', 'stranger', userBody('s@globex.test'), null);
        await s.groups.put('acme', 'g1', group('One'), { add: [...AWKWARD, 'stranger', 'nobody'] });
        await s.groups.put('acme', 'g2', group('Two'), { add: ['a', 'b'] });
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(bytewise(AWKWARD));
        expect(Object.fromEntries(await s.groups.countMembers('acme', ['g1', 'g2', 'g3']))).toEqual({ g1: AWKWARD.length, g2: 2 });
        expect(Object.fromEntries(await s.groups.groupsOf('acme', ['a', 'b', 'Z', 'nobody']))).toEqual({ a: ['g1', 'g2'], b: ['g1', 'g2'], Z: ['g1'] });
        await s.groups.put('acme', 'g1', group('One'), { add: ['a'], remove: ['b', 'B', 'nobody'] });
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(bytewise(AWKWARD.filter((u) => u !== 'b' && u !== 'B')));
        expect(await s.groups.listMembers('acme', 'none')).toEqual([]);
      });

      it('concurrent membership changes of one group (two instances) all take effect', async () => {
        await tenants('acme');
        const ids = Array.from({ length: 12 }, (_, i) => `u${String(i).padStart(2, '0')}`);
        for (const u of ids) await s.users.put('acme', u, userBody(`${u}@acme.test`), null);
        await s.groups.put('acme', 'g1', group('Race'));
        const s2 = await other();
        await Promise.all(ids.map((u, i) => (i % 2 === 0 ? s : s2).groups.put('acme', 'g1', group('Race'), { add: [u] })));
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(ids);
        await Promise.all(ids.slice(0, 6).map((u, i) => (i % 2 === 0 ? s : s2).groups.put('acme', 'g1', group('Race'), { remove: [u] })));
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(ids.slice(6));
      });
    });

    describe('group assignments and access', () => {
      it('put, get, update keeps createdAt, list pages by group id, delete; access through membership only', async () => {
        await scene();
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toEqual({ tenant: 'acme', application: 'portal', group: 'g1', body: {}, createdAt: T0S });
        vi.setSystemTime(T0 + 9_000);
        expect(await s.groups.putAssignment('acme', 'portal', 'g1', { managedBy: 'console' })).toMatchObject({ body: { managedBy: 'console' }, createdAt: T0S });
        for (const [i, g] of AWKWARD.entries()) {
          await s.groups.put('acme', g, group(`Wiki ${i}`));
          await s.groups.putAssignment('acme', 'wiki', g, {});
        }
        const page1 = await s.groups.listAssignments('acme', 'wiki', { limit: 4 });
        const page2 = await s.groups.listAssignments('acme', 'wiki', { limit: 100, cursor: page1.nextCursor! });
        expect([...page1.items, ...page2.items].map((a) => a.group)).toEqual(bytewise(AWKWARD));

        expect(await s.groups.grantsAccess('acme', 'portal', 'u1')).toBe(true);
        expect(await s.groups.grantsAccess('acme', 'portal', 'u3')).toBe(false);
        expect(await s.groups.grantsAccess('acme', 'wiki', 'u1')).toBe(false);
        expect(await s.groups.grantsAccess('globex', 'portal', 'u1')).toBe(false);
        expect(await s.groups.deleteAssignment('acme', 'portal', 'g1')).toBe(true);
        expect(await s.groups.deleteAssignment('acme', 'portal', 'g1')).toBe(false);
        expect(await s.groups.grantsAccess('acme', 'portal', 'u1')).toBe(false);
      });

      it('a removed member loses grants and tokens at the group\'s applications, unless still let in; sessions and other clients stay', async () => {
        await scene();
        // u2 is also assigned to portal directly; u3 is in g2, also assigned to portal.
        await s.users.putAssignment('acme', 'portal', 'u2', {});
        await s.groups.put('acme', 'g1', group('Staff'), { add: ['u3'] });
        await s.groups.put('acme', 'g2', group('Others'), { add: ['u3'] });
        await s.groups.putAssignment('acme', 'portal', 'g2', {});
        for (const u of ['u1', 'u2', 'u3']) await s.users.put('globex', u, userBody(`${u}@globex.test`), null);
        for (const u of ['u1', 'u2', 'u3']) {
          await signedIn(s, 'acme', u, 'portal-id');
          await signedIn(s, 'acme', u, 'wiki-id');
          await signedIn(s, 'globex', u, 'portal-id');
        }
        await s.groups.put('acme', 'g1', group('Staff'), { remove: ['u1', 'u2', 'u3'] });
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual(SESSION_ONLY);
        expect(await holds(s, 'acme', 'u2', 'portal-id')).toEqual(HOLDS_ALL);
        expect(await holds(s, 'acme', 'u3', 'portal-id')).toEqual(HOLDS_ALL);
        for (const u of ['u1', 'u2', 'u3']) {
          expect(await holds(s, 'acme', u, 'wiki-id')).toEqual(HOLDS_ALL);
          expect(await holds(s, 'globex', u, 'portal-id')).toEqual(HOLDS_ALL);
        }
      });

      it('deleting a group assignment revokes its members left without access there, nobody else', async () => {
        await scene();
        await s.users.putAssignment('acme', 'portal', 'u2', {});
        for (const u of ['u1', 'u2', 'u3']) await signedIn(s, 'acme', u, 'portal-id');
        await s.groups.deleteAssignment('acme', 'portal', 'g1');
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual(SESSION_ONLY);
        expect(await holds(s, 'acme', 'u2', 'portal-id')).toEqual(HOLDS_ALL);
        expect(await holds(s, 'acme', 'u3', 'portal-id')).toEqual(HOLDS_ALL);
      });

      it('deleting a group removes its members and assignments and revokes those left without access', async () => {
        await scene();
        await s.groups.putAssignment('acme', 'wiki', 'g1', {});
        for (const u of ['u1', 'u2']) {
          await signedIn(s, 'acme', u, 'portal-id');
          await signedIn(s, 'acme', u, 'wiki-id');
        }
        await s.users.putAssignment('acme', 'wiki', 'u2', {});
        expect(await s.groups.delete('acme', 'g1')).toBe(true);
        expect(await s.groups.delete('acme', 'g1')).toBe(false);
        expect(await s.groups.get('acme', 'g1')).toBeUndefined();
        expect(await s.groups.listMembers('acme', 'g1')).toEqual([]);
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toBeUndefined();
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual(SESSION_ONLY);
        expect(await holds(s, 'acme', 'u1', 'wiki-id')).toEqual(SESSION_ONLY);
        expect(await holds(s, 'acme', 'u2', 'portal-id')).toEqual(SESSION_ONLY);
        expect(await holds(s, 'acme', 'u2', 'wiki-id')).toEqual(HOLDS_ALL);
      });

      it('a removal, a group assignment\'s deletion and a group\'s deletion are all or nothing with their revocation', async () => {
        await scene();
        await signedIn(s, 'acme', 'u1', 'portal-id');
        const restore = await backend.failArtifactDeletes();
        await expect(s.groups.put('acme', 'g1', group('Renamed'), { remove: ['u1'] })).rejects.toThrow(/injected failure/);
        await expect(s.groups.deleteAssignment('acme', 'portal', 'g1')).rejects.toThrow(/injected failure/);
        await expect(s.groups.delete('acme', 'g1')).rejects.toThrow(/injected failure/);
        await restore();
        expect((await s.groups.get('acme', 'g1'))?.body.displayName).toBe('Staff');
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(['u1', 'u2']);
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toBeDefined();
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual(HOLDS_ALL);
        await s.groups.put('acme', 'g1', group('Renamed'), { remove: ['u1'] });
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual(SESSION_ONLY);
      });

      it('a user, an application and a tenant take their memberships, group assignments and SCIM rows with them', async () => {
        await scene();
        await s.scim.putUser('acme', 'u1', userBody('u1@acme.test'), null, { userName: 'one', externalId: 'e1', resource: { userName: 'one' } });
        await s.scim.putToken({ tenant: 'acme', id: 't1', hash: 'h', description: null, createdAt: 1 });
        expect(await s.users.delete('acme', 'u1')).toBe(true);
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(['u2']);
        expect(await s.scim.getUserByUserName('acme', 'one')).toBeUndefined();
        expect(await s.applications.delete('acme', 'portal')).toBe(true);
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toBeUndefined();
        await s.groups.putAssignment('acme', 'wiki', 'g1', {});
        await s.groups.put('globex', 'g1', group('Kept'), {});
        await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
        expect(await s.tenants.delete('acme')).toBe(true);
        expect(await s.groups.get('acme', 'g1')).toBeUndefined();
        expect(await s.groups.listMembers('acme', 'g1')).toEqual([]);
        expect(await s.groups.getAssignment('acme', 'wiki', 'g1')).toBeUndefined();
        expect(await s.scim.listTokens('acme')).toEqual([]);
        expect((await s.groups.get('globex', 'g1'))?.body.displayName).toBe('Kept');
      });

      it('a tenant batch that deletes a user or an application takes their memberships, group assignments and SCIM rows too', async () => {
        await scene();
        await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
        await s.scim.putUser('acme', 'u1', userBody('u1@acme.test'), null, { userName: 'one', externalId: 'e1', resource: { userName: 'one' } });
        const none = { applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [] };
        await s.tenants.batch('acme', () => ({ changes: { ...none, deleteUsers: ['u1'], deleteApplications: ['portal'] }, result: undefined }));
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(['u2']);
        expect(await s.scim.getUserByUserName('acme', 'one')).toBeUndefined();
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toBeUndefined();
        // A new application of the old name starts with nobody let in through a group.
        await s.applications.put('acme', 'portal', webApp('portal-2'), null);
        expect(await s.groups.grantsAccess('acme', 'portal', 'u2')).toBe(false);
      });

      it('renaming an application moves its group assignments with it', async () => {
        await scene();
        expect(await s.applications.rename('acme', 'portal', 'intranet')).toBe(true);
        expect(await s.groups.getAssignment('acme', 'portal', 'g1')).toBeUndefined();
        expect(await s.groups.getAssignment('acme', 'intranet', 'g1')).toMatchObject({ application: 'intranet', group: 'g1' });
        expect(await s.groups.grantsAccess('acme', 'intranet', 'u1')).toBe(true);
      });
    });

    describe('parents and children, in the database itself', () => {
      /** What user u1 of acme has: its rows in every table that names a user. */
      async function rowsOf(u: string) {
        return {
          user: (await s.users.get('acme', u)) !== undefined,
          groups: Object.fromEntries(await s.groups.groupsOf('acme', [u]))[u] ?? [],
          assignment: (await s.users.getAssignment('acme', 'wiki', u)) !== undefined,
          scim: (await s.scim.getUser('acme', u))?.scim !== undefined,
          totp: (await s.users.getTotp('acme', u)) !== undefined,
          otp: (await s.users.getOtp('acme', u)) !== undefined,
          passkeys: (await s.users.listPasskeys('acme', u)).length,
          ...(await holds(s, 'acme', u, 'portal-id')),
        };
      }
      async function everything(u: string): Promise<void> {
        await s.scim.putUser('acme', u, userBody(`${u}@acme.test`), null, { userName: u, externalId: null, resource: {} });
        await s.users.putAssignment('acme', 'wiki', u, {});
        await s.users.putTotp('acme', u, 'sealed', 1);
        await s.users.putOtp('acme', u, 'hash', T0 + 60_000);
        await s.users.putPasskey('acme', { credentialId: `cred-${u}`, userId: u, publicKey: 'pk', counter: 0, transports: [], createdAt: 1 });
        await signedIn(s, 'acme', u, 'portal-id');
      }
      const NOTHING = { user: false, groups: [], assignment: false, scim: false, totp: false, otp: false, passkeys: 0, session: false, grant: false, refresh: false, access: false };

      it('a user deleted by another program takes its memberships and everything else with it; one made again with its id starts with nothing', async () => {
        await scene();
        await everything('u1');
        await s.users.put('acme', 'u9', userBody('u9@acme.test'), null);
        await everything('u9');
        // As an older idforge did: the user's row only.
        await backend.sql(`DELETE FROM users WHERE tenant = 'acme' AND id = 'u1'`);
        expect(await rowsOf('u1')).toEqual(NOTHING);
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(['u2']);
        await s.users.put('acme', 'u1', userBody('u1@acme.test'), null);
        expect(await s.groups.grantsAccess('acme', 'portal', 'u1')).toBe(false);
        expect(await rowsOf('u1')).toEqual({ ...NOTHING, user: true });
        expect(await rowsOf('u9')).toMatchObject({ user: true, assignment: true, scim: true, totp: true, otp: true, passkeys: 1, grant: true });
      });

      it('a group, an application and a tenant deleted by another program take their rows with them', async () => {
        await scene();
        await s.groups.putAssignment('acme', 'wiki', 'g1', {});
        await backend.sql(`DELETE FROM tenant_groups WHERE tenant = 'acme' AND id = 'g1'`);
        expect(await s.groups.listMembers('acme', 'g1')).toEqual([]);
        expect(await s.groups.getAssignment('acme', 'wiki', 'g1')).toBeUndefined();
        await s.users.putAssignment('acme', 'portal', 'u3', {});
        await s.groups.put('acme', 'g2', group('Two'), { add: ['u3'] });
        await s.groups.putAssignment('acme', 'portal', 'g2', {});
        await backend.sql(`DELETE FROM applications WHERE tenant = 'acme' AND name = 'portal'`);
        expect(await s.users.getAssignment('acme', 'portal', 'u3')).toBeUndefined();
        expect(await s.groups.getAssignment('acme', 'portal', 'g2')).toBeUndefined();
        await everything('u4');
        await s.scim.putToken({ tenant: 'acme', id: 't1', hash: 'h', description: null, createdAt: 1 });
        await s.throttle.recordFailure('acme', 'account:x', T0, 1000, 5, 1000);
        await backend.sql(`DELETE FROM tenants WHERE name = 'acme'`);
        expect(await s.tenants.contents('acme')).toEqual({ tenant: undefined, applications: [], users: [], assignments: [] });
        expect(await s.tenants.listKeys('acme')).toEqual([]);
        expect(await s.groups.list('acme', { limit: 10 })).toEqual({ items: [], nextCursor: null });
        expect(await s.scim.listTokens('acme')).toEqual([]);
        expect(await s.throttle.get('acme', 'account:x')).toBeUndefined();
        expect(await s.grants.find('acme', 'Session', 'sess-u4')).toBeUndefined();
        expect(await s.users.getPasskey('acme', 'cred-u4')).toBeUndefined();
      });

      it('a tenant renamed by another program carries every row to its new name', async () => {
        await scene();
        await everything('u1');
        await backend.sql(`UPDATE tenants SET name = 'acme2' WHERE name = 'acme'`);
        expect((await s.tenants.contents('acme2')).users.map((u) => u.id)).toEqual(['u1', 'u2', 'u3', 'u4']);
        expect(await s.groups.listMembers('acme2', 'g1')).toEqual(['u1', 'u2']);
        expect(await s.groups.grantsAccess('acme2', 'portal', 'u1')).toBe(true);
        expect(await s.users.getAssignment('acme2', 'wiki', 'u1')).toBeDefined();
        expect(await s.scim.getUserByUserName('acme2', 'u1')).toBeDefined();
        expect(await s.tenants.contents('acme')).toEqual({ tenant: undefined, applications: [], users: [], assignments: [] });
      });

      it('a row whose parent does not exist is refused, by the stores and by the database', async () => {
        await scene();
        await expect(s.users.putAssignment('acme', 'portal', 'ghost', {})).rejects.toThrow();
        await expect(s.users.putAssignment('acme', 'ghost-app', 'u1', {})).rejects.toThrow();
        await expect(s.groups.putAssignment('acme', 'portal', 'ghost-group', {})).rejects.toThrow();
        await expect(s.users.putTotp('acme', 'ghost', 'sealed', 1)).rejects.toThrow();
        await expect(s.users.put('nowhere', 'u1', userBody('u1@nowhere.test'), null)).rejects.toThrow();
        await expect(backend.sql(`INSERT INTO group_members (tenant, group_id, user_id) VALUES ('acme', 'g1', 'ghost')`)).rejects.toThrow();
        // An artifact of an account deleted meanwhile is not stored: it could only outlive its user.
        await s.grants.upsert('acme', 'Session', 'late', { accountId: 'ghost' }, 600);
        expect(await s.grants.find('acme', 'Session', 'late')).toBeUndefined();
        expect(await s.users.getAssignment('acme', 'portal', 'ghost')).toBeUndefined();
      });
    });

    describe('SCIM users and tokens', () => {
      it('putUser writes the user and its SCIM attributes together; found by id, by userName without regard to case, by externalId', async () => {
        await tenants('acme', 'globex');
        const resource = { userName: 'Bjensen', name: { givenName: 'Barbara', familyName: 'Jensen' }, emails: [{ value: 'bjensen@acme.test', primary: true }] };
        const got = await s.scim.putUser('acme', 'u1', { ...userBody('BJensen@acme.test'), managedBy: 'scim' }, 'hash', { userName: 'Bjensen', externalId: 'E-1', resource });
        expect(got).toEqual({
          user: { tenant: 'acme', id: 'u1', body: { ...userBody('BJensen@acme.test'), managedBy: 'scim' }, passwordHash: 'hash', createdAt: T0S, updatedAt: T0S },
          scim: { tenant: 'acme', userId: 'u1', userName: 'Bjensen', externalId: 'E-1', resource },
        });
        expect(JSON.stringify(await s.scim.getUser('acme', 'u1'))).toBe(JSON.stringify(got));
        expect((await s.users.getByEmail('acme', 'bjensen@acme.test'))?.id).toBe('u1');
        expect((await s.scim.getUserByUserName('acme', 'BJENSEN'))?.user.id).toBe('u1');
        expect(await s.scim.getUserByUserName('globex', 'bjensen')).toBeUndefined();
        expect((await s.scim.getUsersByExternalId('acme', 'E-1')).map((u) => u.user.id)).toEqual(['u1']);
        expect(await s.scim.getUsersByExternalId('acme', 'e-1')).toEqual([]);
        // A user SCIM never wrote has no SCIM attributes.
        await s.users.put('acme', 'u0', userBody('git@acme.test'), null);
        expect(await s.scim.getUser('acme', 'u0')).toMatchObject({ user: { id: 'u0' }, scim: undefined });

        vi.setSystemTime(T0 + 2_000);
        const renamed = await s.scim.putUser('acme', 'u1', userBody('b@acme.test'), null, { userName: 'barbara', externalId: null, resource: { userName: 'barbara' } });
        expect(renamed.user).toMatchObject({ createdAt: T0S, updatedAt: T0S + 2, passwordHash: null });
        expect(renamed.scim).toMatchObject({ userName: 'barbara', externalId: null });
        expect(await s.scim.getUserByUserName('acme', 'bjensen')).toBeUndefined();
      });

      it('userNames are unique in a tenant without regard to case; a clash writes neither the user nor its attributes', async () => {
        await tenants('acme', 'globex');
        await s.scim.putUser('acme', 'u1', userBody('a@acme.test'), null, { userName: 'alice', externalId: null, resource: {} });
        await expect(s.scim.putUser('acme', 'u2', userBody('b@acme.test'), null, { userName: 'ALICE', externalId: null, resource: {} })).rejects.toThrow();
        expect(await s.users.get('acme', 'u2')).toBeUndefined();
        await s.scim.putUser('globex', 'u2', userBody('b@acme.test'), null, { userName: 'ALICE', externalId: null, resource: {} });
      });

      it('putUser with revokeArtifacts revokes the user\'s artifacts, all or nothing', async () => {
        await tenants('acme');
        await s.scim.putUser('acme', 'u1', userBody('a@acme.test'), null, { userName: 'alice', externalId: null, resource: { active: true } });
        await signedIn(s, 'acme', 'u1', 'portal-id');
        const restore = await backend.failArtifactDeletes();
        await expect(s.scim.putUser('acme', 'u1', { ...userBody('a@acme.test'), disabled: true }, null,
          { userName: 'alice', externalId: null, resource: { active: false } }, { revokeArtifacts: true })).rejects.toThrow(/injected failure/);
        await restore();
        expect(await s.scim.getUser('acme', 'u1')).toMatchObject({ user: { body: { disabled: false } }, scim: { resource: { active: true } } });
        await s.scim.putUser('acme', 'u1', { ...userBody('a@acme.test'), disabled: true }, null,
          { userName: 'alice', externalId: null, resource: { active: false } }, { revokeArtifacts: true });
        expect(await holds(s, 'acme', 'u1', 'portal-id')).toEqual({ session: false, grant: false, refresh: false, access: false });
      });

      it('listUsers pages every user of the tenant by id (bytewise) with an offset; countUsers counts them', async () => {
        await tenants('acme', 'globex');
        for (const id of AWKWARD) await s.users.put('acme', id, userBody(`${id}@acme.test`), null);
        await s.scim.putUser('acme', 'scim-1', userBody('s1@acme.test'), null, { userName: 's1', externalId: null, resource: {} });
        await s.users.put('globex', 'zz', userBody('zz@globex.test'), null);
        const all = bytewise([...AWKWARD, 'scim-1']);
        const seen: string[] = [];
        for (let offset = 0; offset < all.length; offset += 4) seen.push(...(await s.scim.listUsers('acme', offset, 4)).map((u) => u.user.id));
        expect(seen).toEqual(all);
        expect((await s.scim.listUsers('acme', 0, 100)).filter((u) => u.scim !== undefined).map((u) => u.user.id)).toEqual(['scim-1']);
        expect(await s.scim.countUsers('acme')).toBe(all.length);
        expect(await s.scim.countUsers('nobody')).toBe(0);
      });

      it('tokens: stored, found per tenant, listed by creation, deleted', async () => {
        await tenants('acme', 'globex');
        const t = (tenant: string, id: string, createdAt: number) => ({ tenant, id, hash: `hmac:${id}`, description: id === 'b' ? 'Okta' : null, createdAt });
        await s.scim.putToken(t('acme', 'b', 2));
        await s.scim.putToken(t('acme', 'a', 2));
        await s.scim.putToken(t('acme', 'c', 1));
        await s.scim.putToken(t('globex', 'a', 1));
        expect(await s.scim.getToken('acme', 'b')).toEqual(t('acme', 'b', 2));
        expect(await s.scim.getToken('globex', 'b')).toBeUndefined();
        expect((await s.scim.listTokens('acme')).map((x) => x.id)).toEqual(['c', 'a', 'b']);
        expect(await s.scim.deleteToken('acme', 'a')).toBe(true);
        expect(await s.scim.deleteToken('acme', 'a')).toBe(false);
        expect(await s.scim.getToken('acme', 'a')).toBeUndefined();
        expect(await s.scim.getToken('globex', 'a')).toBeDefined();
      });

      it('lookups by values no store holds (NUL, control and non-ASCII characters) find nothing and fail nothing', async () => {
        await scene();
        for (const v of ['\u0000', 'a\u0000b', '\u0007', '€', 'x'.repeat(5000)]) {
          expect(await s.groups.get('acme', v)).toBeUndefined();
          expect(await s.groups.getByDisplayName('acme', v)).toBeUndefined();
          expect(await s.groups.grantsAccess('acme', 'portal', v)).toBe(false);
          expect(await s.scim.getUserByUserName('acme', v)).toBeUndefined();
          expect(await s.scim.getUsersByExternalId('acme', v)).toEqual([]);
          expect(await s.scim.getToken('acme', v)).toBeUndefined();
          expect(Object.fromEntries(await s.groups.groupsOf('acme', [v, 'u1']))).toEqual({ u1: ['g1'] });
        }
        await s.groups.put('acme', 'g1', group('Staff'), { add: ['\u0000'], remove: ['a\u0000b'] });
        expect(await s.groups.listMembers('acme', 'g1')).toEqual(['u1', 'u2']);
      });
    });
  });
}
