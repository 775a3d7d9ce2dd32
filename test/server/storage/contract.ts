/**
 * The storage contract: what every backend must do, run against each of them (sqlite.test.ts,
 * postgres.test.ts). Every store method, every guarantee written in storage/types.ts: cascades,
 * all-or-nothing changes (with a real injected failure), bytewise order and cursors, expiry and
 * purges, exact round trips of times and JSON, and the operations that must hold under
 * concurrency, raced from two instances on one database as two replicas would.
 *
 * Time is the server's clock (Date), faked here so expiry is tested without waiting.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AssignmentBody, TenantBody, UserBody } from '../../../src/contract/index.ts';
import type {
  ArtifactPayload, KeyRecord, PasskeyRecord, Storage, StoredApplicationBody, TenantChanges,
} from '../../../src/server/storage/index.ts';
import { NameTakenError } from '../../../src/server/storage/types.ts';

/** One fresh, empty database of one backend. */
export interface Backend {
  /** Opens an instance on this database; every call is another connection (another replica). */
  open(): Promise<Storage>;
  /** Makes every delete of an artifact row fail (as a database error) until the returned function runs. */
  failArtifactDeletes(): Promise<() => Promise<void>>;
  /**
   * Runs SQL on a connection of its own, as another program (or an older idforge) would: with the
   * foreign keys the schema declares enforced, and nothing of the stores' own code.
   */
  sql(text: string): Promise<void>;
  /** Removes the database. Instances are closed before. */
  dispose(): Promise<void>;
}

const T0 = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
const T0S = Math.floor(T0 / 1000);

const tenantBody = (displayName: string): TenantBody => ({ displayName, scopes: [{ name: 'admin', description: 'administer' }] });
const webApp = (clientId: string): StoredApplicationBody => ({
  kind: 'web', clientId, displayName: 'Portal', redirectUris: ['https://app.example/cb'], postLogoutRedirectUris: [], scopes: ['openid', 'admin'], audience: ['https://api.example'],
});
const apiApp = (identifier: string): StoredApplicationBody => ({ kind: 'api', identifier, scopes: ['admin'] });
const userBody = (email: string, scopes: string[] = []): Omit<UserBody, 'initialPassword'> => ({ email, scopes, disabled: false });
const key = (tenant: string, kid: string, createdAt: number, state: KeyRecord['state'] = 'next'): KeyRecord => ({
  tenant, kid, alg: 'ES256', state, sealedJwk: `sealed:${kid}`, createdAt, retiredAt: state === 'retired' ? createdAt + 60 : null,
});
const passkey = (credentialId: string, userId: string, createdAt: number): PasskeyRecord => ({
  credentialId, userId, publicKey: `pk-${credentialId}`, counter: 0, transports: ['internal', 'hybrid'], createdAt,
});
/** Names whose bytewise order differs from a locale's (case, punctuation, non-ASCII). */
const AWKWARD_NAMES = ['b', 'B', 'a-b', 'a_b', 'ab', 'a', '0', 'Z', 'é', 'a.b', 'A'];
const bytewise = (names: readonly string[]) => [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every page of a paged list, with the page size `limit`. */
async function allPages<T>(list: (cursor: string | undefined) => Promise<{ items: readonly T[]; nextCursor: string | null }>) {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await list(cursor);
    pages.push([...p.items]);
    if (p.nextCursor === null) return pages;
    cursor = p.nextCursor;
  }
}

/**
 * For each test of a contract suite: a fresh database at the fixed time T0, and storage instances
 * on it (`s`, and more through `other`: other replicas), all closed and the database disposed after.
 */
export function openPerTest(
  fresh: () => Promise<Backend>, set: (o: { backend: Backend; s: Storage; other: () => Promise<Storage> }) => void,
): void {
  let backend: Backend;
  let opened: Storage[] = [];
  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    backend = await fresh();
    opened = [];
    const other = async () => {
      const o = await backend.open();
      opened.push(o);
      return o;
    };
    set({ backend, s: await other(), other });
  });
  afterEach(async () => {
    vi.useRealTimers();
    for (const o of opened) await o.close();
    await backend.dispose();
  });
}

export function storageContract(name: string, fresh: () => Promise<Backend>): void {
  describe(`storage contract: ${name}`, () => {
    let backend: Backend;
    let s: Storage;
    /** A second instance on the same database (another replica). */
    let other: () => Promise<Storage>;

    openPerTest(fresh, (o) => ({ backend, s, other } = o));

    describe('tenants and keys', () => {
      it('put creates, get reads back exactly, a second put updates the body and keeps createdAt', async () => {
        expect(await s.tenants.get('acme')).toBeUndefined();
        expect(await s.tenants.count()).toBe(0);
        const body: TenantBody = { displayName: 'Acme ✓ “quoted” \\ \u0000 \u{1F511}', scopes: [{ name: 'admin' }], login: { methods: ['password', 'totp'], requireSecondFactor: true } };
        const created = await s.tenants.put('acme', body);
        expect(created).toEqual({ name: 'acme', body, createdAt: T0S, updatedAt: T0S });
        const read = await s.tenants.get('acme');
        expect(JSON.stringify(read)).toBe(JSON.stringify(created));

        vi.setSystemTime(T0 + 5_000);
        const updated = await s.tenants.put('acme', tenantBody('Acme 2'));
        expect(updated).toEqual({ name: 'acme', body: tenantBody('Acme 2'), createdAt: T0S, updatedAt: T0S + 5 });
        expect(await s.tenants.count()).toBe(1);
      });

      it('initial keys are stored with a new tenant, ignored for an existing one; keys come back exactly, ordered by createdAt then kid', async () => {
        const keys = [key('acme', 'k-b', 200, 'active'), key('acme', 'k-a', 200, 'next'), key('acme', 'k-0', 100, 'retired')];
        await s.tenants.put('acme', tenantBody('Acme'), keys);
        expect(await s.tenants.listKeys('acme')).toEqual([keys[2], keys[1], keys[0]]);
        await s.tenants.put('acme', tenantBody('Acme'), [key('acme', 'k-ignored', 300)]);
        expect((await s.tenants.listKeys('acme')).map((k) => k.kid)).toEqual(['k-0', 'k-a', 'k-b']);
        expect(await s.tenants.listKeys('nobody')).toEqual([]);
      });

      it('concurrent creations of one tenant (two instances) store exactly one key set', async () => {
        const s2 = await other();
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
          (i % 2 === 0 ? s : s2).tenants.put('race', tenantBody(`Race ${i}`), [key('race', `active-${i}`, 1, 'active'), key('race', `next-${i}`, 2)])));
        expect(results.every((r) => r.name === 'race')).toBe(true);
        const kids = (await s.tenants.listKeys('race')).map((k) => k.kid);
        expect(kids).toHaveLength(2);
        const winner = kids[0]!.slice('active-'.length);
        expect(kids).toEqual([`active-${winner}`, `next-${winner}`]);
      });

      it('list pages in bytewise name order with opaque cursors; a bad cursor is a RangeError', async () => {
        for (const n of AWKWARD_NAMES) await s.tenants.put(n, tenantBody(n));
        for (const limit of [1, 2, 3, AWKWARD_NAMES.length, 100]) {
          const pages = await allPages((cursor) => s.tenants.list({ cursor, limit }));
          expect(pages.flat().map((t) => t.name)).toEqual(bytewise(AWKWARD_NAMES));
          expect(pages.every((p) => p.length <= limit)).toBe(true);
          // No empty trailing page when the count is a multiple of the limit.
          expect(pages.length).toBe(Math.max(1, Math.ceil(AWKWARD_NAMES.length / limit)));
        }
        expect(await s.tenants.list({ limit: 100, cursor: '' })).toMatchObject({ nextCursor: null });
        await expect(s.tenants.list({ limit: 2, cursor: 'not-a-cursor' })).rejects.toThrow(new RangeError('invalid cursor'));
        await expect(s.tenants.list({ limit: 2, cursor: Buffer.from('["a","b"]').toString('base64url') })).rejects.toThrow('invalid cursor');
        expect(await s.tenants.count()).toBe(AWKWARD_NAMES.length);
      });

      it('delete removes the tenant and everything in it, and nothing of another tenant', async () => {
        for (const t of ['gone', 'kept']) await populateTenant(s, t);
        expect(await s.tenants.delete('gone')).toBe(true);
        expect(await s.tenants.delete('gone')).toBe(false);
        expect(await tenantContents(s, 'gone')).toEqual(EMPTY_TENANT);
        expect(await tenantContents(s, 'kept')).toEqual(FULL_TENANT);
      });

      it('rename moves the tenant and everything in it, reseals keys and TOTP secrets, and drops what was bound to the old issuer or host', async () => {
        for (const t of ['before', 'kept']) await populateTenant(s, t);
        const sealed: string[] = [];
        const reseal = {
          key: (from: string, to: string, kid: string, v: string) => { sealed.push(`key ${from}>${to} ${kid} ${v}`); return `${v}@${to}`; },
          totp: (from: string, to: string, userId: string, v: string) => { sealed.push(`totp ${from}>${to} ${userId} ${v}`); return `${v}@${to}`; },
        };
        const keys = await s.tenants.listKeys('before');
        expect(await s.tenants.rename('before', 'after', reseal)).toBe(true);
        expect(sealed).toEqual([`key before>after before-k1 ${keys[0]!.sealedJwk}`, 'totp before>after u1 sealed']);
        expect(await tenantContents(s, 'before')).toEqual(EMPTY_TENANT);
        expect(await tenantContents(s, 'after')).toEqual({ ...FULL_TENANT, session: false, grant: false, otp: false, passkeys: 0 });
        expect(await tenantContents(s, 'kept')).toEqual(FULL_TENANT);
        expect((await s.tenants.get('after'))?.createdAt).toBe((await s.tenants.get('kept'))?.createdAt);
        expect((await s.tenants.listKeys('after')).map((k) => k.sealedJwk)).toEqual([`${keys[0]!.sealedJwk}@after`]);
        expect((await s.users.getTotp('after', 'u1'))?.sealedSecret).toBe('sealed@after');
        // A taken name moves nothing; an unknown tenant is false.
        await expect(s.tenants.rename('after', 'kept', reseal)).rejects.toThrow(NameTakenError);
        expect(await tenantContents(s, 'after')).toEqual({ ...FULL_TENANT, session: false, grant: false, otp: false, passkeys: 0 });
        expect(await s.tenants.rename('nobody', 'new', reseal)).toBe(false);
      });

      it('delete is all or nothing: a failure half-way leaves the tenant whole', async () => {
        await populateTenant(s, 'acme');
        const restore = await backend.failArtifactDeletes();
        await expect(s.tenants.delete('acme')).rejects.toThrow(/injected failure/);
        await restore();
        expect(await tenantContents(s, 'acme')).toEqual(FULL_TENANT);
        expect(await s.tenants.delete('acme')).toBe(true);
      });

      it('updateKeys replaces the key set with what `update` returns, given the stored set', async () => {
        const first = [key('acme', 'k1', 10, 'active'), key('acme', 'k2', 20)];
        await s.tenants.put('acme', tenantBody('Acme'), first);
        const seen: (readonly KeyRecord[])[] = [];
        const next = [{ ...first[1]!, state: 'active' as const }, { ...first[0]!, state: 'retired' as const, retiredAt: 30 }, key('acme', 'k3', 30)];
        const result = await s.tenants.updateKeys('acme', (current) => {
          seen.push(current);
          return next;
        });
        expect(seen).toEqual([first]);
        expect(result).toEqual(next);
        expect(await s.tenants.listKeys('acme')).toEqual([next[1], next[0], next[2]]);
      });

      it('updateKeys whose update throws changes nothing', async () => {
        const first = [key('acme', 'k1', 10, 'active')];
        await s.tenants.put('acme', tenantBody('Acme'), first);
        await expect(s.tenants.updateKeys('acme', () => {
          throw new Error('no');
        })).rejects.toThrow('no');
        expect(await s.tenants.listKeys('acme')).toEqual(first);
      });

      it('overlapping updateKeys (two instances) each build on the previous result: no key is lost', async () => {
        await s.tenants.put('acme', tenantBody('Acme'), [key('acme', 'k-start', 1, 'active')]);
        const s2 = await other();
        const n = 12;
        await Promise.all(Array.from({ length: n }, (_, i) =>
          (i % 2 === 0 ? s : s2).tenants.updateKeys('acme', (current) => [...current, key('acme', `k-${String(i).padStart(2, '0')}`, 100 + i)])));
        const kids = (await s.tenants.listKeys('acme')).map((k) => k.kid);
        expect(kids).toEqual(['k-start', ...Array.from({ length: n }, (_, i) => `k-${String(i).padStart(2, '0')}`)]);
      });
    });

    describe('applications', () => {
      it('put, get, by client id and by identifier; update keeps createdAt; secret hashes round-trip', async () => {
        await parents(s, { acme: {} });
        const created = await s.applications.put('acme', 'portal', webApp('portal-id'), 'hash-1');
        expect(created).toEqual({ tenant: 'acme', name: 'portal', body: webApp('portal-id'), secretHash: 'hash-1', createdAt: T0S, updatedAt: T0S });
        await s.applications.put('acme', 'orders', apiApp('https://orders.example'), null);
        expect(await s.applications.get('acme', 'portal')).toEqual(created);
        expect((await s.applications.getByClientId('acme', 'portal-id'))?.name).toBe('portal');
        expect((await s.applications.getByIdentifier('acme', 'https://orders.example'))?.name).toBe('orders');
        expect(await s.applications.getByClientId('other', 'portal-id')).toBeUndefined();
        expect(await s.applications.getByIdentifier('acme', 'portal-id')).toBeUndefined();
        expect(await s.applications.get('acme', 'nope')).toBeUndefined();

        vi.setSystemTime(T0 + 7_000);
        const renamed = await s.applications.put('acme', 'portal', webApp('portal-id-2'), null);
        expect(renamed).toMatchObject({ secretHash: null, createdAt: T0S, updatedAt: T0S + 7 });
        expect(await s.applications.getByClientId('acme', 'portal-id')).toBeUndefined();
        expect((await s.applications.getByClientId('acme', 'portal-id-2'))?.name).toBe('portal');
        // A kind change moves the application from client ids to identifiers.
        await s.applications.put('acme', 'portal', apiApp('https://portal.example'), null);
        expect(await s.applications.getByClientId('acme', 'portal-id-2')).toBeUndefined();
        expect((await s.applications.getByIdentifier('acme', 'https://portal.example'))?.name).toBe('portal');
      });

      it('rename moves an application with its client id, secret and assignments, all or nothing', async () => {
        await s.tenants.put('acme', { displayName: 'Acme', scopes: [] });
        await s.applications.put('acme', 'wiki', webApp('wiki-id'), 'hash-w');
        await s.applications.put('acme', 'docs', webApp('docs-id'), null);
        await s.users.put('acme', 'u1', { email: 'u1@acme.example', scopes: [], disabled: false }, null);
        await s.users.putAssignment('acme', 'wiki', 'u1', {});
        vi.setSystemTime(T0 + 5_000);
        expect(await s.applications.rename('acme', 'wiki', 'wiki2')).toBe(true);
        expect(await s.applications.get('acme', 'wiki')).toBeUndefined();
        expect(await s.applications.get('acme', 'wiki2')).toMatchObject({ name: 'wiki2', secretHash: 'hash-w', createdAt: T0S, updatedAt: T0S + 5 });
        expect((await s.applications.getByClientId('acme', 'wiki-id'))?.name).toBe('wiki2');
        expect(await s.users.getAssignment('acme', 'wiki2', 'u1')).toBeDefined();
        expect(await s.users.getAssignment('acme', 'wiki', 'u1')).toBeUndefined();
        // Onto a name that exists: refused, nothing moves.
        await expect(s.applications.rename('acme', 'wiki2', 'docs')).rejects.toThrow(NameTakenError);
        expect(await s.users.getAssignment('acme', 'wiki2', 'u1')).toBeDefined();
        expect(await s.applications.rename('acme', 'gone', 'other')).toBe(false);
      });

      it('client ids and identifiers are unique within a tenant, not across tenants', async () => {
        await parents(s, { acme: {}, globex: {} });
        await s.applications.put('acme', 'a', webApp('shared'), null);
        await expect(s.applications.put('acme', 'b', webApp('shared'), null)).rejects.toThrow();
        await s.applications.put('globex', 'b', webApp('shared'), null);
        await s.applications.put('acme', 'api-1', apiApp('https://api'), null);
        await expect(s.applications.put('acme', 'api-2', apiApp('https://api'), null)).rejects.toThrow();
        expect(await s.applications.get('acme', 'b')).toBeUndefined();
        expect((await s.applications.getByClientId('globex', 'shared'))?.tenant).toBe('globex');
      });

      it('list pages in bytewise name order within the tenant and never lists the internal service client', async () => {
        await parents(s, { acme: {}, globex: {} });
        for (const n of AWKWARD_NAMES) await s.applications.put('acme', n, apiApp(`urn:${n}`), null);
        await s.applications.put('acme', 'idforge-admin', { kind: 'service', clientId: 'idforge-admin', scopes: ['admin'], audience: [] }, 'h');
        await s.applications.put('globex', 'elsewhere', apiApp('urn:x'), null);
        const pages = await allPages((cursor) => s.applications.list('acme', { cursor, limit: 4 }));
        expect(pages.flat().map((a) => a.name)).toEqual(bytewise(AWKWARD_NAMES));
        expect((await s.applications.get('acme', 'idforge-admin'))?.body.kind).toBe('service');
        await expect(s.applications.list('acme', { limit: 2, cursor: '!!' })).rejects.toThrow('invalid cursor');
      });

      it('delete removes its assignments and every artifact issued to its client id, nothing else', async () => {
        await parents(s, { acme: {}, globex: { users: ['u1'] } });
        await s.applications.put('acme', 'portal', webApp('portal-id'), null);
        await s.applications.put('acme', 'other', webApp('other-id'), null);
        await s.users.put('acme', 'u1', userBody('u1@acme.test'), null);
        await s.users.putAssignment('acme', 'portal', 'u1', {});
        await s.users.putAssignment('acme', 'other', 'u1', {});
        for (const model of ['Grant', 'AccessToken', 'RefreshToken', 'AuthorizationCode']) {
          await s.grants.upsert('acme', model, `p-${model}`, { accountId: 'u1', clientId: 'portal-id' }, 600);
          await s.grants.upsert('acme', model, `o-${model}`, { accountId: 'u1', clientId: 'other-id' }, 600);
          await s.grants.upsert('globex', model, `p-${model}`, { accountId: 'u1', clientId: 'portal-id' }, 600);
        }
        expect(await s.applications.delete('acme', 'portal')).toBe(true);
        expect(await s.applications.delete('acme', 'portal')).toBe(false);
        expect(await s.applications.get('acme', 'portal')).toBeUndefined();
        expect(await s.users.getAssignment('acme', 'portal', 'u1')).toBeUndefined();
        expect(await s.users.getAssignment('acme', 'other', 'u1')).toBeDefined();
        for (const model of ['Grant', 'AccessToken', 'RefreshToken', 'AuthorizationCode']) {
          expect(await s.grants.find('acme', model, `p-${model}`)).toBeUndefined();
          expect(await s.grants.find('acme', model, `o-${model}`)).toBeDefined();
          expect(await s.grants.find('globex', model, `p-${model}`)).toBeDefined();
        }
        expect(await s.users.get('acme', 'u1')).toBeDefined();
      });

      it('delete is all or nothing', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        await s.applications.put('acme', 'portal', webApp('portal-id'), null);
        await s.users.putAssignment('acme', 'portal', 'u1', {});
        await s.grants.upsert('acme', 'Grant', 'g1', { accountId: 'u1', clientId: 'portal-id' }, 600);
        const restore = await backend.failArtifactDeletes();
        await expect(s.applications.delete('acme', 'portal')).rejects.toThrow(/injected failure/);
        await restore();
        expect(await s.applications.get('acme', 'portal')).toBeDefined();
        expect(await s.users.getAssignment('acme', 'portal', 'u1')).toBeDefined();
        expect(await s.grants.find('acme', 'Grant', 'g1')).toBeDefined();
      });
    });

    describe('users and assignments', () => {
      it('put, get, update keeps createdAt; email lookups are case-insensitive and pick the lowest id', async () => {
        await parents(s, { acme: {}, globex: {} });
        const body: Omit<UserBody, 'initialPassword'> = { email: 'Alice@Acme.TEST', displayName: 'Älice ✓', scopes: ['admin'], disabled: false, managedBy: 'idforge' };
        const created = await s.users.put('acme', 'u-b', body, '$argon2id$hash');
        expect(created).toEqual({ tenant: 'acme', id: 'u-b', body, passwordHash: '$argon2id$hash', createdAt: T0S, updatedAt: T0S });
        expect(JSON.stringify(await s.users.get('acme', 'u-b'))).toBe(JSON.stringify(created));
        expect((await s.users.getByEmail('acme', 'alice@acme.test'))?.id).toBe('u-b');
        expect((await s.users.getByEmail('acme', 'ALICE@ACME.TEST'))?.id).toBe('u-b');
        expect(await s.users.getByEmail('globex', 'alice@acme.test')).toBeUndefined();
        await s.users.put('acme', 'u-a', userBody('alice@acme.test'), null);
        expect((await s.users.getByEmail('acme', 'alice@acme.test'))?.id).toBe('u-a');

        vi.setSystemTime(T0 + 3_000);
        const updated = await s.users.put('acme', 'u-b', userBody('bob@acme.test'), null);
        expect(updated).toMatchObject({ passwordHash: null, createdAt: T0S, updatedAt: T0S + 3 });
        expect((await s.users.getByEmail('acme', 'bob@acme.test'))?.id).toBe('u-b');
        expect((await s.users.getByEmail('acme', 'alice@acme.test'))?.id).toBe('u-a');
      });

      it('list pages in bytewise id order within the tenant', async () => {
        await parents(s, { acme: {}, globex: {} });
        for (const id of AWKWARD_NAMES) await s.users.put('acme', id, userBody(`${id}@acme.test`), null);
        await s.users.put('globex', 'zz', userBody('zz@globex.test'), null);
        const pages = await allPages((cursor) => s.users.list('acme', { cursor, limit: 3 }));
        expect(pages.flat().map((u) => u.id)).toEqual(bytewise(AWKWARD_NAMES));
        await expect(s.users.list('acme', { limit: 3, cursor: 'x' })).rejects.toThrow('invalid cursor');
      });

      it('list with a search keeps those whose id, email or display name holds it, ignoring case, paged in id order', async () => {
        await parents(s, { acme: {}, globex: {} });
        const people: [string, string, string | undefined][] = [
          ['u-ada', 'ada.lovelace@acme.test', 'Ada Lovelace'], ['u-alan', 'alan@acme.test', 'Alan Turing'], ['U-GRACE', 'grace@acme.test', undefined],
          ['u-pct', '100%_off@acme.test', 'Per_cent'], ['u-love', 'love@acme.test', 'Lovelace Fan'], ['u-x', 'x@acme.test', 'Nobody'],
        ];
        for (const [id, email, displayName] of people) await s.users.put('acme', id, { ...userBody(email), ...(displayName === undefined ? {} : { displayName }) }, null);
        await s.users.put('globex', 'u-ada2', userBody('ada@globex.test'), null);
        const ids = async (search: string, limit = 50) => (await allPages((cursor) => s.users.list('acme', { cursor, limit }, search))).flat().map((u) => u.id);
        expect(await ids('lovelace')).toEqual(['u-ada', 'u-love']); // email of one, display name of both
        expect(await ids('lovelace', 1)).toEqual(['u-ada', 'u-love']); // one a page, the cursor keeps the search
        expect(await ids('u-grace')).toEqual(['U-GRACE']); // the id, ignoring case
        expect(await ids('turing')).toEqual(['u-alan']);
        expect(await ids('%_')).toEqual(['u-pct']); // literal text, no pattern
        expect(await ids('_')).toEqual(['u-pct']);
        expect(await ids('nobody here')).toEqual([]);
        expect(await ids('ada')).toEqual(['u-ada']); // another tenant's people never
      });

      it('put with revokeArtifacts deletes the user\'s sessions, grants and tokens in that tenant; without it they stay', async () => {
        await parents(s, { acme: { users: ['u2'] }, globex: { users: ['u1'] } });
        await s.users.put('acme', 'u1', userBody('u1@acme.test', ['admin']), null);
        const artifacts = [['Session', 's1'], ['Grant', 'g1'], ['RefreshToken', 'r1'], ['AccessToken', 'a1']] as const;
        for (const [model, id] of artifacts) {
          await s.grants.upsert('acme', model, id, { accountId: 'u1', ...(model === 'Session' ? {} : { clientId: 'c' }) }, 600);
          await s.grants.upsert('acme', model, `${id}-u2`, { accountId: 'u2', clientId: 'c' }, 600);
          await s.grants.upsert('globex', model, id, { accountId: 'u1', clientId: 'c' }, 600);
        }
        await s.users.put('acme', 'u1', userBody('u1@acme.test', []), null);
        for (const [model, id] of artifacts) expect(await s.grants.find('acme', model, id)).toBeDefined();
        await s.users.put('acme', 'u1', userBody('u1@acme.test', []), null, { revokeArtifacts: true });
        for (const [model, id] of artifacts) {
          expect(await s.grants.find('acme', model, id)).toBeUndefined();
          expect(await s.grants.find('acme', model, `${id}-u2`)).toBeDefined();
          expect(await s.grants.find('globex', model, id)).toBeDefined();
        }
      });

      it('put with revokeArtifacts is all or nothing: a failed revocation leaves the user as before', async () => {
        await parents(s, { acme: {} });
        await s.users.put('acme', 'u1', userBody('u1@acme.test', ['admin']), null);
        await s.grants.upsert('acme', 'RefreshToken', 'rt-1', { accountId: 'u1', clientId: 'spa' }, 3600);
        const restore = await backend.failArtifactDeletes();
        await expect(s.users.put('acme', 'u1', userBody('u1@acme.test', []), null, { revokeArtifacts: true })).rejects.toThrow(/injected failure/);
        await restore();
        expect((await s.users.get('acme', 'u1'))?.body.scopes).toEqual(['admin']);
        expect(await s.grants.find('acme', 'RefreshToken', 'rt-1')).toBeDefined();
        await s.users.put('acme', 'u1', userBody('u1@acme.test', []), null, { revokeArtifacts: true });
        expect((await s.users.get('acme', 'u1'))?.body.scopes).toEqual([]);
        expect(await s.grants.find('acme', 'RefreshToken', 'rt-1')).toBeUndefined();
      });

      it('delete removes the user\'s assignments, artifacts and login factors, nobody else\'s', async () => {
        await parents(s, { acme: { apps: ['portal'] }, globex: { apps: ['portal'] } });
        for (const u of ['gone', 'kept']) await populateUser(s, 'acme', u);
        await populateUser(s, 'globex', 'gone');
        expect(await s.users.delete('acme', 'gone')).toBe(true);
        expect(await s.users.delete('acme', 'gone')).toBe(false);
        expect(await userContents(s, 'acme', 'gone')).toEqual(EMPTY_USER);
        expect(await userContents(s, 'acme', 'kept')).toEqual(FULL_USER);
        expect(await userContents(s, 'globex', 'gone')).toEqual(FULL_USER);
      });

      it('delete is all or nothing', async () => {
        await parents(s, { acme: { apps: ['portal'] } });
        await populateUser(s, 'acme', 'u1');
        const restore = await backend.failArtifactDeletes();
        await expect(s.users.delete('acme', 'u1')).rejects.toThrow(/injected failure/);
        await restore();
        expect(await userContents(s, 'acme', 'u1')).toEqual(FULL_USER);
      });

      it('assignments: put, get, update keeps createdAt, list pages by user id, delete', async () => {
        await parents(s, { acme: { users: [...AWKWARD_NAMES, 'u1', 'zz'], apps: ['portal', 'wiki', 'other'] }, globex: { users: ['zz'], apps: ['wiki'] } });
        const body: AssignmentBody = { managedBy: 'idforge' };
        expect(await s.users.putAssignment('acme', 'portal', 'u1', body)).toEqual({ tenant: 'acme', application: 'portal', userId: 'u1', body, createdAt: T0S });
        vi.setSystemTime(T0 + 9_000);
        expect(await s.users.putAssignment('acme', 'portal', 'u1', {})).toEqual({ tenant: 'acme', application: 'portal', userId: 'u1', body: {}, createdAt: T0S });
        for (const id of AWKWARD_NAMES) await s.users.putAssignment('acme', 'wiki', id, {});
        await s.users.putAssignment('acme', 'other', 'zz', {});
        await s.users.putAssignment('globex', 'wiki', 'zz', {});
        const pages = await allPages((cursor) => s.users.listAssignments('acme', 'wiki', { cursor, limit: 5 }));
        expect(pages.flat().map((a) => a.userId)).toEqual(bytewise(AWKWARD_NAMES));
        expect(pages.flat().every((a) => a.application === 'wiki' && a.tenant === 'acme')).toBe(true);
        expect(await s.users.deleteAssignment('acme', 'portal', 'u1')).toBe(true);
        expect(await s.users.deleteAssignment('acme', 'portal', 'u1')).toBe(false);
        expect(await s.users.getAssignment('acme', 'portal', 'u1')).toBeUndefined();
        await expect(s.users.listAssignments('acme', 'wiki', { limit: 5, cursor: '%' })).rejects.toThrow('invalid cursor');
      });

      it("a user's assignments, one per application, ordered by application bytewise, never another tenant's", async () => {
        await parents(s, { acme: { users: ['zz', 'u1'], apps: ['wiki', 'Portal', 'other', 'a-b'] }, globex: { users: ['zz'], apps: ['wiki'] } });
        for (const app of ['wiki', 'Portal', 'a-b']) await s.users.putAssignment('acme', app, 'zz', { managedBy: 'idforge' });
        await s.users.putAssignment('acme', 'other', 'u1', {});
        await s.users.putAssignment('globex', 'wiki', 'zz', {});
        const mine = await s.users.listUserAssignments('acme', 'zz');
        expect(mine.map((a) => a.application)).toEqual(bytewise(['wiki', 'Portal', 'a-b']));
        expect(mine.every((a) => a.tenant === 'acme' && a.userId === 'zz' && a.body.managedBy === 'idforge')).toBe(true);
        expect(await s.users.listUserAssignments('acme', 'nobody')).toEqual([]);
      });

      it('changeAssignments adds and removes in one transaction: existing ones kept as they are, a removed user\'s artifacts at the client revoked, a missing user changes nothing', async () => {
        await parents(s, { acme: { apps: ['portal'] } });
        for (const id of ['u1', 'u2', 'u3']) await s.users.put('acme', id, userBody(`${id}@acme.example`), null);
        await s.users.putAssignment('acme', 'portal', 'u1', { managedBy: 'idforge' });
        await s.users.putAssignment('acme', 'portal', 'u2', {});
        await s.grants.upsert('acme', 'Grant', 'g2', { accountId: 'u2', clientId: 'web' }, 600);
        await s.grants.upsert('acme', 'RefreshToken', 'rt2', { accountId: 'u2', clientId: 'web', grantId: 'g2' }, 600);
        await s.grants.upsert('acme', 'Session', 's2', { accountId: 'u2' }, 600);
        vi.setSystemTime(T0 + 5_000);
        const r = await s.users.changeAssignments('acme', 'portal', 'web', { add: ['u1', 'u3'], remove: ['u2', 'u9'], body: { managedBy: 'console' } });
        expect(r).toEqual({ added: ['u3'], removed: ['u2'] });
        expect(await s.users.getAssignment('acme', 'portal', 'u1')).toEqual({ tenant: 'acme', application: 'portal', userId: 'u1', body: { managedBy: 'idforge' }, createdAt: T0S });
        expect(await s.users.getAssignment('acme', 'portal', 'u3')).toEqual({ tenant: 'acme', application: 'portal', userId: 'u3', body: { managedBy: 'console' }, createdAt: T0S + 5 });
        expect(await s.users.getAssignment('acme', 'portal', 'u2')).toBeUndefined();
        expect(await s.grants.find('acme', 'Grant', 'g2')).toBeUndefined();
        expect(await s.grants.find('acme', 'RefreshToken', 'rt2')).toBeUndefined();
        expect(await s.grants.find('acme', 'Session', 's2')).toBeDefined();

        const err = await s.users.changeAssignments('acme', 'portal', 'web', { add: ['u2', 'ghost', 'u1', 'ghost2'], remove: ['u3'], body: {} }).catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'MissingUsersError', userIds: ['ghost', 'ghost2'] });
        expect((await s.users.listAssignments('acme', 'portal', { limit: 10 })).items.map((a) => a.userId)).toEqual(['u1', 'u3']);
      });

      it('changeAssignments is all or nothing: a failed revocation leaves every assignment as before', async () => {
        await parents(s, { acme: { apps: ['portal'] } });
        for (const id of ['u1', 'u2']) await s.users.put('acme', id, userBody(`${id}@acme.example`), null);
        await s.users.putAssignment('acme', 'portal', 'u1', {});
        await s.grants.upsert('acme', 'Grant', 'g1', { accountId: 'u1', clientId: 'web' }, 600);
        const restore = await backend.failArtifactDeletes();
        await expect(s.users.changeAssignments('acme', 'portal', 'web', { add: ['u2'], remove: ['u1'], body: {} })).rejects.toThrow(/injected failure/);
        await restore();
        expect((await s.users.listAssignments('acme', 'portal', { limit: 10 })).items.map((a) => a.userId)).toEqual(['u1']);
        expect(await s.grants.find('acme', 'Grant', 'g1')).toBeDefined();
      });
    });

    describe('login factors', () => {
      it('TOTP: enrol, claim only later steps, re-enrol resets; no enrolment claims nothing', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        expect(await s.users.getTotp('acme', 'u1')).toBeUndefined();
        expect(await s.users.claimTotpStep('acme', 'u1', 5)).toBe(false);
        const step = 63_000_000;
        await s.users.putTotp('acme', 'u1', 'sealed-secret', step);
        expect(await s.users.getTotp('acme', 'u1')).toEqual({ sealedSecret: 'sealed-secret', lastStep: step, createdAt: T0S });
        expect(await s.users.claimTotpStep('acme', 'u1', step)).toBe(false);
        expect(await s.users.claimTotpStep('acme', 'u1', step - 1)).toBe(false);
        expect(await s.users.claimTotpStep('acme', 'u1', step + 1)).toBe(true);
        expect(await s.users.claimTotpStep('acme', 'u1', step + 1)).toBe(false);
        expect((await s.users.getTotp('acme', 'u1'))?.lastStep).toBe(step + 1);
        expect(await s.users.claimTotpStep('globex', 'u1', step + 2)).toBe(false);
        vi.setSystemTime(T0 + 1_000);
        await s.users.putTotp('acme', 'u1', 'sealed-2', 10);
        expect(await s.users.getTotp('acme', 'u1')).toEqual({ sealedSecret: 'sealed-2', lastStep: 10, createdAt: T0S + 1 });
      });

      it('TOTP: of many concurrent claims of one step (two instances), exactly one wins', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        await s.users.putTotp('acme', 'u1', 'sealed', 100);
        const s2 = await other();
        const wins = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? s : s2).users.claimTotpStep('acme', 'u1', 101)));
        expect(wins.filter(Boolean)).toHaveLength(1);
      });

      it('emailed codes: one per user, attempts counted, replaced with attempts reset, deleted once', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        const expires = T0 + 600_123;
        expect(await s.users.getOtp('acme', 'u1')).toBeUndefined();
        expect(await s.users.countOtpAttempt('acme', 'u1')).toBe(Number.MAX_SAFE_INTEGER);
        await s.users.putOtp('acme', 'u1', 'hash-1', expires);
        expect(await s.users.getOtp('acme', 'u1')).toEqual({ codeHash: 'hash-1', expiresAtMs: expires, attempts: 0 });
        expect(await s.users.countOtpAttempt('acme', 'u1')).toBe(1);
        expect(await s.users.countOtpAttempt('acme', 'u1')).toBe(2);
        await s.users.putOtp('acme', 'u1', 'hash-2', expires + 1);
        expect(await s.users.getOtp('acme', 'u1')).toEqual({ codeHash: 'hash-2', expiresAtMs: expires + 1, attempts: 0 });
        expect(await s.users.deleteOtp('acme', 'u1', 'hash-1')).toBe(false);
        expect(await s.users.getOtp('acme', 'u1')).toBeDefined();
        expect(await s.users.deleteOtp('acme', 'u1', 'hash-2')).toBe(true);
        expect(await s.users.deleteOtp('acme', 'u1', 'hash-2')).toBe(false);
        await s.users.putOtp('acme', 'u1', 'hash-3', expires);
        expect(await s.users.deleteOtp('acme', 'u1')).toBe(true);
        expect(await s.users.deleteOtp('acme', 'u1')).toBe(false);
        expect(await s.users.getOtp('acme', 'u1')).toBeUndefined();
      });

      it('emailed codes under races (two instances): attempts count exactly, and only one deleter wins', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        await s.users.putOtp('acme', 'u1', 'hash', T0 + 60_000);
        const s2 = await other();
        const counts = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? s : s2).users.countOtpAttempt('acme', 'u1')));
        expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
        const deleted = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? s : s2).users.deleteOtp('acme', 'u1', 'hash')));
        expect(deleted.filter(Boolean)).toHaveLength(1);
      });

      it('emailed codes: the purge removes expired codes only', async () => {
        await parents(s, { acme: { users: ['old', 'now', 'new'] } });
        await s.users.putOtp('acme', 'old', 'h', T0 - 1);
        await s.users.putOtp('acme', 'now', 'h', T0);
        await s.users.putOtp('acme', 'new', 'h', T0 + 1);
        await s.users.purgeExpiredOtps();
        expect(await s.users.getOtp('acme', 'old')).toBeUndefined();
        expect(await s.users.getOtp('acme', 'now')).toBeUndefined();
        expect(await s.users.getOtp('acme', 'new')).toBeDefined();
      });

      it('passkeys: stored exactly, listed per user by createdAt then id, found by credential id per tenant, counters updated', async () => {
        await parents(s, { acme: { users: ['u1', 'u2'] }, globex: { users: ['u9'] } });
        const p1 = passkey('cred-b', 'u1', 200);
        const p2 = { ...passkey('cred-a', 'u1', 200), counter: 4_294_967_295, transports: [] };
        const p3 = passkey('cred-c', 'u1', 100);
        for (const p of [p1, p2, p3, passkey('cred-z', 'u2', 1)]) await s.users.putPasskey('acme', p);
        expect(await s.users.listPasskeys('acme', 'u1')).toEqual([p3, p2, p1]);
        expect(await s.users.getPasskey('acme', 'cred-a')).toEqual(p2);
        expect(await s.users.getPasskey('globex', 'cred-a')).toBeUndefined();
        expect(await s.users.listPasskeys('acme', 'nobody')).toEqual([]);
        await s.users.updatePasskeyCounter('acme', 'cred-b', 17);
        expect((await s.users.getPasskey('acme', 'cred-b'))?.counter).toBe(17);
        await expect(s.users.putPasskey('acme', passkey('cred-b', 'u2', 5))).rejects.toThrow();
        expect((await s.users.getPasskey('acme', 'cred-b'))?.userId).toBe('u1');
        await s.users.putPasskey('globex', passkey('cred-b', 'u9', 5));
      });

      it('deletePasskey removes one passkey of that user only; deleteTotp removes the enrolment; each says whether it did', async () => {
        await parents(s, { acme: { users: ['u1', 'u2'] }, globex: { users: ['u1'] } });
        for (const p of [passkey('cred-a', 'u1', 1), passkey('cred-b', 'u1', 2)]) await s.users.putPasskey('acme', p);
        await s.users.putPasskey('globex', passkey('cred-a', 'u1', 1));
        expect(await s.users.deletePasskey('acme', 'u2', 'cred-a')).toBe(false);
        expect(await s.users.deletePasskey('acme', 'u1', 'cred-a')).toBe(true);
        expect(await s.users.deletePasskey('acme', 'u1', 'cred-a')).toBe(false);
        expect((await s.users.listPasskeys('acme', 'u1')).map((p) => p.credentialId)).toEqual(['cred-b']);
        expect(await s.users.getPasskey('globex', 'cred-a')).toBeDefined();
        await s.users.putTotp('acme', 'u1', 'sealed', 10);
        await s.users.putTotp('globex', 'u1', 'sealed', 10);
        expect(await s.users.deleteTotp('acme', 'u1')).toBe(true);
        expect(await s.users.deleteTotp('acme', 'u1')).toBe(false);
        expect(await s.users.getTotp('acme', 'u1')).toBeUndefined();
        expect(await s.users.claimTotpStep('acme', 'u1', 11)).toBe(false);
        expect(await s.users.getTotp('globex', 'u1')).toBeDefined();
      });
    });

    describe('grants (artifacts)', () => {
      const payload: ArtifactPayload = {
        kind: 'RefreshToken', jti: 'r1', accountId: 'u1', clientId: 'spa', grantId: 'g1', uid: 'uid-1',
        scope: 'openid offline', iat: 1_900_000_000, exp: 1_901_209_600, rotations: 0, rate: 1.5, big: 9_007_199_254_740_991,
        nested: { z: [1, 'two', null, true, { y: {} }], a: '' }, unicode: 'ü ✓ \u{1F511} \u2028 "q" \\ \u0000', nothing: null, empty: [],
      };

      it('upsert then find returns the payload as stored: same keys, order and values', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        await s.grants.upsert('acme', 'RefreshToken', 'r1', payload, 3600);
        const found = await s.grants.find('acme', 'RefreshToken', 'r1');
        expect(JSON.stringify(found)).toBe(JSON.stringify(payload));
        expect(await s.grants.find('acme', 'AccessToken', 'r1')).toBeUndefined();
        expect(await s.grants.find('globex', 'RefreshToken', 'r1')).toBeUndefined();
        expect(await s.grants.find('acme', 'RefreshToken', 'r2')).toBeUndefined();
      });

      it('upsert replaces the payload and the columns it is found by', async () => {
        await parents(s, { acme: {} });
        await s.grants.upsert('acme', 'Interaction', 'i1', { uid: 'old', userCode: 'OLD-CODE' }, 60);
        expect(await s.grants.findByUid('acme', 'Interaction', 'old')).toEqual({ uid: 'old', userCode: 'OLD-CODE' });
        expect(await s.grants.findByUserCode('acme', 'Interaction', 'OLD-CODE')).toEqual({ uid: 'old', userCode: 'OLD-CODE' });
        await s.grants.upsert('acme', 'Interaction', 'i1', { uid: 'new', userCode: 'NEW-CODE', n: 2 }, 60);
        expect(await s.grants.findByUid('acme', 'Interaction', 'old')).toBeUndefined();
        expect(await s.grants.findByUserCode('acme', 'Interaction', 'OLD-CODE')).toBeUndefined();
        expect(await s.grants.findByUid('acme', 'Interaction', 'new')).toEqual({ uid: 'new', userCode: 'NEW-CODE', n: 2 });
        expect(await s.grants.findByUserCode('acme', 'Interaction', 'NEW-CODE')).toEqual({ uid: 'new', userCode: 'NEW-CODE', n: 2 });
        expect(await s.grants.findByUid('acme', 'Session', 'new')).toBeUndefined();
        expect(await s.grants.findByUid('globex', 'Interaction', 'new')).toBeUndefined();
      });

      it('an artifact is not found from its expiry on, even before the purge; without expiresIn it never expires', async () => {
        await parents(s, { acme: {} });
        await s.grants.upsert('acme', 'AuthorizationCode', 'c1', { uid: 'u-c1', userCode: 'UC1' }, 60);
        await s.grants.upsert('acme', 'Session', 's1', { uid: 'u-s1' }, undefined);
        // Expiry is in whole seconds: the last millisecond of the 59th second still finds it.
        vi.setSystemTime((T0S + 59) * 1000 + 999);
        expect(await s.grants.find('acme', 'AuthorizationCode', 'c1')).toBeDefined();
        vi.setSystemTime((T0S + 60) * 1000);
        expect(await s.grants.find('acme', 'AuthorizationCode', 'c1')).toBeUndefined();
        expect(await s.grants.findByUid('acme', 'AuthorizationCode', 'u-c1')).toBeUndefined();
        expect(await s.grants.findByUserCode('acme', 'AuthorizationCode', 'UC1')).toBeUndefined();
        vi.setSystemTime(T0 + 100 * 365 * 86_400_000);
        expect(await s.grants.find('acme', 'Session', 's1')).toEqual({ uid: 'u-s1' });
      });

      it('purgeExpired deletes expired artifacts only and says how many', async () => {
        await parents(s, { acme: {}, globex: {} });
        await s.grants.upsert('acme', 'AccessToken', 'a1', {}, 10);
        await s.grants.upsert('globex', 'AccessToken', 'a1', {}, 10);
        await s.grants.upsert('acme', 'AccessToken', 'a2', {}, 20);
        await s.grants.upsert('acme', 'Session', 's1', {}, undefined);
        expect(await s.grants.purgeExpired()).toBe(0);
        vi.setSystemTime(T0 + 10_000);
        expect(await s.grants.purgeExpired()).toBe(2);
        expect(await s.grants.purgeExpired()).toBe(0);
        // Gone for real: a clock turned back does not bring it back.
        vi.setSystemTime(T0);
        expect(await s.grants.find('acme', 'AccessToken', 'a1')).toBeUndefined();
        expect(await s.grants.find('acme', 'AccessToken', 'a2')).toBeDefined();
        expect(await s.grants.find('acme', 'Session', 's1')).toBeDefined();
      });

      it('consume marks the payload consumed (epoch seconds) and keeps everything else as it was', async () => {
        await parents(s, { acme: { users: ['u1'] } });
        await s.grants.upsert('acme', 'AuthorizationCode', 'c1', payload, 60);
        vi.setSystemTime((T0S + 2) * 1000 + 500);
        await s.grants.consume('acme', 'AuthorizationCode', 'c1');
        expect(JSON.stringify(await s.grants.find('acme', 'AuthorizationCode', 'c1'))).toBe(JSON.stringify({ ...payload, consumed: T0S + 2 }));
        vi.setSystemTime(T0 + 4_000);
        await s.grants.consume('acme', 'AuthorizationCode', 'c1');
        expect(JSON.stringify(await s.grants.find('acme', 'AuthorizationCode', 'c1'))).toBe(JSON.stringify({ ...payload, consumed: T0S + 4 }));
        await s.grants.consume('acme', 'AuthorizationCode', 'missing');
        expect(await s.grants.find('acme', 'AuthorizationCode', 'missing')).toBeUndefined();
      });

      it('destroy and revokeByGrantId delete what they name, in that tenant', async () => {
        await parents(s, { acme: {}, globex: {} });
        await s.grants.upsert('acme', 'Session', 's1', {}, 60);
        await s.grants.upsert('acme', 'Grant', 's1', {}, 60);
        await s.grants.destroy('acme', 'Session', 's1');
        expect(await s.grants.find('acme', 'Session', 's1')).toBeUndefined();
        expect(await s.grants.find('acme', 'Grant', 's1')).toBeDefined();

        for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode']) {
          await s.grants.upsert('acme', model, 'x', { grantId: 'g1' }, 60);
          await s.grants.upsert('acme', model, 'y', { grantId: 'g2' }, 60);
          await s.grants.upsert('globex', model, 'x', { grantId: 'g1' }, 60);
        }
        await s.grants.revokeByGrantId('acme', 'g1');
        for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode']) {
          expect(await s.grants.find('acme', model, 'x')).toBeUndefined();
          expect(await s.grants.find('acme', model, 'y')).toBeDefined();
          expect(await s.grants.find('globex', model, 'x')).toBeDefined();
        }
      });

      it('revokeUserClient revokes one user\'s grants and everything issued under them at one client; sessions stay', async () => {
        await parents(s, { acme: { users: ['u1', 'u2'] }, globex: { users: ['u1'] } });
        const put = (tenant: string, model: string, id: string, p: ArtifactPayload) => s.grants.upsert(tenant, model, id, p, 600);
        await put('acme', 'Session', 'sess', { accountId: 'u1' });
        await put('acme', 'Grant', 'g1', { accountId: 'u1', clientId: 'web' });
        // Issued under the grant without naming the account (as a device code might).
        await put('acme', 'AccessToken', 'under-grant', { grantId: 'g1' });
        await put('acme', 'RefreshToken', 'rt', { accountId: 'u1', clientId: 'web', grantId: 'g1' });
        await put('acme', 'AuthorizationCode', 'code', { accountId: 'u1', clientId: 'web', grantId: 'g1' });
        await put('acme', 'Grant', 'g-spa', { accountId: 'u1', clientId: 'spa' });
        await put('acme', 'RefreshToken', 'rt-spa', { accountId: 'u1', clientId: 'spa', grantId: 'g-spa' });
        await put('acme', 'Grant', 'g-u2', { accountId: 'u2', clientId: 'web' });
        await put('globex', 'Grant', 'g1', { accountId: 'u1', clientId: 'web' });
        await s.grants.revokeUserClient('acme', 'u1', 'web');
        for (const [model, id] of [['Grant', 'g1'], ['AccessToken', 'under-grant'], ['RefreshToken', 'rt'], ['AuthorizationCode', 'code']] as const) {
          expect(await s.grants.find('acme', model, id), `${model} ${id}`).toBeUndefined();
        }
        for (const [model, id] of [['Session', 'sess'], ['Grant', 'g-spa'], ['RefreshToken', 'rt-spa'], ['Grant', 'g-u2']] as const) {
          expect(await s.grants.find('acme', model, id), `${model} ${id}`).toBeDefined();
        }
        expect(await s.grants.find('globex', 'Grant', 'g1')).toBeDefined();
      });

      it('revokeUser revokes everything carrying the account, sessions included', async () => {
        await parents(s, { acme: { users: ['u1', 'u2'] }, globex: { users: ['u1'] } });
        await s.grants.upsert('acme', 'Session', 's1', { accountId: 'u1' }, 600);
        await s.grants.upsert('acme', 'Grant', 'g1', { accountId: 'u1', clientId: 'web' }, 600);
        await s.grants.upsert('acme', 'Grant', 'g2', { accountId: 'u2', clientId: 'web' }, 600);
        await s.grants.upsert('globex', 'Session', 's1', { accountId: 'u1' }, 600);
        await s.grants.revokeUser('acme', 'u1');
        expect(await s.grants.find('acme', 'Session', 's1')).toBeUndefined();
        expect(await s.grants.find('acme', 'Grant', 'g1')).toBeUndefined();
        expect(await s.grants.find('acme', 'Grant', 'g2')).toBeDefined();
        expect(await s.grants.find('globex', 'Session', 's1')).toBeDefined();
      });

      it('listByAccount lists the account\'s unexpired artifacts of the models asked for, as stored, ordered by model then id', async () => {
        await parents(s, { acme: { users: ['u1', 'u2'] }, globex: { users: ['u1'] } });
        const session = { accountId: 'u1', loginTs: 1_700_000_000, authorizations: { web: { grantId: 'g1' } } };
        await s.grants.upsert('acme', 'Session', 's2', session, 600);
        await s.grants.upsert('acme', 'Session', 's1', { accountId: 'u1' }, undefined);
        await s.grants.upsert('acme', 'Grant', 'g1', { accountId: 'u1', clientId: 'web' }, 600);
        await s.grants.upsert('acme', 'RefreshToken', 'rt', { accountId: 'u1', clientId: 'web', grantId: 'g1' }, 600);
        await s.grants.upsert('acme', 'Session', 'other', { accountId: 'u2' }, 600);
        await s.grants.upsert('globex', 'Session', 's9', { accountId: 'u1' }, 600);
        await s.grants.upsert('acme', 'Grant', 'gone', { accountId: 'u1', clientId: 'spa' }, 1);
        vi.setSystemTime(Date.now() + 2000);
        const listed = await s.grants.listByAccount('acme', 'u1', ['Session', 'Grant']);
        expect(listed.map((a) => `${a.model}/${a.id}`)).toEqual(['Grant/g1', 'Session/s1', 'Session/s2']);
        expect(listed[2]!.payload).toEqual(session);
        expect(listed[1]!.expiresAt).toBeNull();
        expect(typeof listed[0]!.expiresAt).toBe('number');
        expect(await s.grants.listByAccount('acme', 'u1', [])).toEqual([]);
        expect(await s.grants.listByAccount('acme', 'nobody', ['Session'])).toEqual([]);
      });
    });

    describe('throttle', () => {
      const W = 900_000;
      const LOCK = 60_000;

      it('counts failures, restarts after a quiet window, locks at the threshold and restarts the count', async () => {
        await parents(s, { acme: {} });
        expect(await s.throttle.get('acme', 'account:a')).toBeUndefined();
        expect(await s.throttle.recordFailure('acme', 'account:a', T0, W, 3, LOCK)).toEqual({ failures: 1, lastFailureMs: T0, lockedUntilMs: 0, locked: false });
        expect(await s.throttle.recordFailure('acme', 'account:a', T0 + 1, W, 3, LOCK)).toEqual({ failures: 2, lastFailureMs: T0 + 1, lockedUntilMs: 0, locked: false });
        expect(await s.throttle.recordFailure('acme', 'account:a', T0 + 2, W, 3, LOCK)).toEqual({ failures: 0, lastFailureMs: T0 + 2, lockedUntilMs: T0 + 2 + LOCK, locked: true });
        expect(await s.throttle.get('acme', 'account:a')).toEqual({ failures: 0, lastFailureMs: T0 + 2, lockedUntilMs: T0 + 2 + LOCK });
        // The lock's end is kept through later failures until the next lock replaces it.
        expect(await s.throttle.recordFailure('acme', 'account:a', T0 + 3, W, 3, LOCK)).toEqual({ failures: 1, lastFailureMs: T0 + 3, lockedUntilMs: T0 + 2 + LOCK, locked: false });
        // After a quiet spell longer than the window the count starts afresh.
        expect(await s.throttle.recordFailure('acme', 'account:a', T0 + 3 + W + 1, W, 3, LOCK)).toMatchObject({ failures: 1, locked: false });
        expect(await s.throttle.recordFailure('acme', 'account:a', T0 + 3 + W + 2, W, 3, LOCK)).toMatchObject({ failures: 2, locked: false });
        expect(await s.throttle.get('globex', 'account:a')).toBeUndefined();
        await s.throttle.clear('acme', 'account:a');
        expect(await s.throttle.get('acme', 'account:a')).toBeUndefined();
      });

      it('concurrent failures (two instances) are each counted: exactly every lockAt-th one locks', async () => {
        await parents(s, { acme: {} });
        const s2 = await other();
        const n = 20;
        const lockAt = 5;
        const results = await Promise.all(Array.from({ length: n }, (_, i) =>
          (i % 2 === 0 ? s : s2).throttle.recordFailure('acme', 'address:10.0.0.1', T0, W, lockAt, LOCK)));
        expect(results.filter((r) => r.locked)).toHaveLength(n / lockAt);
        expect(results.map((r) => r.failures).sort()).toEqual(Array.from({ length: n }, (_, i) => (i + 1) % lockAt).sort());
        expect(await s.throttle.get('acme', 'address:10.0.0.1')).toEqual({ failures: 0, lastFailureMs: T0, lockedUntilMs: T0 + LOCK });
      });

      it('serialize runs one attempt per key at a time across instances, in parallel for other keys', async () => {
        const s2 = await other();
        let inside = 0;
        let most = 0;
        let counter = 0;
        const attempt = async () => {
          inside += 1;
          most = Math.max(most, inside);
          const seen = counter;
          await sleep(5);
          counter = seen + 1;
          inside -= 1;
          return seen;
        };
        const order = await Promise.all(Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? s : s2).throttle.serialize('acme', i % 3 === 0 ? ['account:a', 'address:x'] : ['address:x', 'account:a'], attempt)));
        expect(most).toBe(1);
        expect(counter).toBe(10);
        expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i));

        // Another key is not held up by a held one; the same key in another tenant neither.
        let release!: () => void;
        let entered!: () => void;
        const holding = new Promise<void>((r) => { entered = r; });
        const held = s.throttle.serialize('acme', ['account:b'], () => {
          entered();
          return new Promise<string>((r) => { release = () => r('held'); });
        });
        await holding;
        expect(await s2.throttle.serialize('acme', ['account:c'], async () => 'free')).toBe('free');
        expect(await s2.throttle.serialize('globex', ['account:b'], async () => 'other tenant')).toBe('other tenant');
        let waited = false;
        const queued = s2.throttle.serialize('acme', ['account:b'], async () => {
          waited = true;
          return 'after';
        });
        await sleep(50);
        expect(waited).toBe(false);
        release();
        expect(await Promise.all([held, queued])).toEqual(['held', 'after']);
      });

      it('serialize releases the keys when an attempt fails, and passes the failure on', async () => {
        await expect(s.throttle.serialize('acme', ['account:a'], async () => {
          throw new Error('attempt failed');
        })).rejects.toThrow('attempt failed');
        const s2 = await other();
        expect(await Promise.race([s2.throttle.serialize('acme', ['account:a'], async () => 'next'), sleep(5_000).then(() => 'stuck')])).toBe('next');
      });

      it('the purge removes counters idle for a day, but not running lockouts', async () => {
        await parents(s, { acme: {} });
        const day = 86_400_000;
        await s.throttle.recordFailure('acme', 'idle', T0 - day - 1, W, 100, LOCK);
        await s.throttle.recordFailure('acme', 'recent', T0 - day + 1, W, 100, LOCK);
        await s.throttle.recordFailure('acme', 'locked-long', T0 - day - 1, W, 1, 2 * day);
        await s.throttle.purgeIdle();
        expect(await s.throttle.get('acme', 'idle')).toBeUndefined();
        expect(await s.throttle.get('acme', 'recent')).toBeDefined();
        expect(await s.throttle.get('acme', 'locked-long')).toBeDefined();
      });
    });

    describe('rates', () => {
      it('takeRate lets a burst through at once, then one request per interval, and says how long to wait', async () => {
        await parents(s, { acme: {}, globex: {} });
        const take = (t: number) => s.throttle.takeRate('acme', 'rate:scim-token:a', t, 100, 3);
        expect([await take(T0), await take(T0), await take(T0)]).toEqual([0, 0, 0]);
        expect(await take(T0)).toBe(100);
        expect(await take(T0 + 40)).toBe(60);
        // Refusals spend nothing: the next interval's request goes through.
        expect(await take(T0 + 100)).toBe(0);
        expect(await take(T0 + 100)).toBe(100);
        // A quiet spell refills the bucket, never beyond the burst.
        expect([await take(T0 + 10_000), await take(T0 + 10_000), await take(T0 + 10_000)]).toEqual([0, 0, 0]);
        expect(await take(T0 + 10_000)).toBeGreaterThan(0);
        // Another key, and the same key in another tenant, have their own buckets.
        expect(await s.throttle.takeRate('acme', 'rate:scim-token:b', T0, 100, 3)).toBe(0);
        expect(await s.throttle.takeRate('globex', 'rate:scim-token:a', T0, 100, 3)).toBe(0);
      });

      it('takeRate is one budget across instances: of 20 concurrent requests, exactly the burst goes through', async () => {
        await parents(s, { acme: {} });
        const s2 = await other();
        const waits = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? s : s2).throttle.takeRate('acme', 'rate:shared', T0, 1000, 5)));
        expect(waits.filter((w) => w === 0)).toHaveLength(5);
      });

      it('takeRate keeps sub-millisecond intervals (rates above 1,000 a second)', async () => {
        await parents(s, { acme: {} });
        const waits = [];
        for (let i = 0; i < 12; i++) waits.push(await s.throttle.takeRate('acme', 'rate:fast', T0, 0.1, 10));
        expect(waits.filter((w) => w === 0)).toHaveLength(10);
        // 1 ms later, ten more intervals of 0.1 ms have passed.
        expect(await s.throttle.takeRate('acme', 'rate:fast', T0 + 1, 0.1, 10)).toBe(0);
      });

      it('the purge removes rate rows idle for a day, and keeps the others', async () => {
        await parents(s, { acme: {} });
        const day = 86_400_000;
        await s.throttle.takeRate('acme', 'rate:idle', Date.now() - day - 60_000, 100, 3);
        await s.throttle.takeRate('acme', 'rate:recent', Date.now(), 100, 1);
        await s.throttle.purgeIdle();
        expect(await s.throttle.get('acme', 'rate:idle')).toBeUndefined();
        // Still there: the recent row refuses the next request at once.
        expect(await s.throttle.takeRate('acme', 'rate:recent', Date.now(), 100_000, 1)).toBeGreaterThan(0);
      });
    });

    describe('tenant batches', () => {
      const NONE: TenantChanges = { applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [] };
      const write = (t: string, changes: Partial<TenantChanges>) => s.tenants.batch(t, () => ({ changes: { ...NONE, ...changes }, result: undefined }));

      it('contents reads the tenant with every application (service client included), user and assignment, ordered, and nothing of another tenant', async () => {
        expect(await s.tenants.contents('acme')).toEqual({ tenant: undefined, applications: [], users: [], assignments: [] });
        await s.tenants.put('acme', tenantBody('Acme'));
        await s.applications.put('acme', 'web', webApp('web-id'), 'hmac');
        await s.applications.put('acme', 'api', apiApp('https://api.example'), null);
        await s.applications.put('acme', 'svc', { kind: 'service', clientId: 'svc-id', scopes: ['admin'], audience: [] }, 'hmac');
        for (const id of ['u-b', 'u-a', 'U']) await s.users.put('acme', id, userBody(`${id}@acme.test`), id === 'u-a' ? 'h' : null);
        await s.users.putAssignment('acme', 'web', 'u-b', { managedBy: 'idforge' });
        await s.users.putAssignment('acme', 'web', 'u-a', {});
        await s.users.putAssignment('acme', 'api', 'u-a', {});
        await populateTenant(s, 'globex');
        const c = await s.tenants.contents('acme');
        expect(c.tenant).toEqual(await s.tenants.get('acme'));
        expect(c.applications.map((a) => a.name)).toEqual(['api', 'svc', 'web']);
        expect(c.applications[2]).toEqual(await s.applications.get('acme', 'web'));
        expect(c.users.map((u) => u.id)).toEqual(['U', 'u-a', 'u-b']);
        expect(c.users[1]).toEqual(await s.users.get('acme', 'u-a'));
        expect(c.assignments.map((a) => `${a.application}/${a.userId}`)).toEqual(['api/u-a', 'web/u-a', 'web/u-b']);
        expect(c.assignments[2]).toEqual(await s.users.getAssignment('acme', 'web', 'u-b'));
      });

      it('batch writes what decide returns, given the contents, and returns its result; upserts keep createdAt', async () => {
        vi.setSystemTime(T0 + 5_000);
        const keys = [key('acme', 'k1', 1, 'active'), key('acme', 'k2', 2)];
        const result = await s.tenants.batch('acme', (c) => {
          expect(c.tenant).toBeUndefined();
          expect(c.users).toEqual([]);
          return {
            changes: {
              ...NONE,
              tenant: { body: tenantBody('Acme'), initialKeys: keys },
              applications: [{ name: 'web', body: webApp('web-id'), secretHash: 'hmac' }, { name: 'api', body: apiApp('https://api.example'), secretHash: null }],
              users: [
                { id: 'new', body: userBody('New@Acme.test', ['admin']), initialPasswordHash: 'new-hash', revokeArtifacts: false },
                { id: 'old', body: userBody('old@acme.test'), initialPasswordHash: 'old-hash', revokeArtifacts: false },
              ],
              assignments: [{ application: 'web', userId: 'new', body: { managedBy: 'idforge' } }],
            },
            result: 'decided',
          };
        });
        expect(result).toBe('decided');
        expect(await s.tenants.get('acme')).toEqual({ name: 'acme', body: tenantBody('Acme'), createdAt: T0S + 5, updatedAt: T0S + 5 });
        expect(await s.tenants.listKeys('acme')).toEqual(keys);
        expect(await s.applications.getByClientId('acme', 'web-id')).toEqual({ tenant: 'acme', name: 'web', body: webApp('web-id'), secretHash: 'hmac', createdAt: T0S + 5, updatedAt: T0S + 5 });
        expect(await s.applications.getByIdentifier('acme', 'https://api.example')).toMatchObject({ name: 'api', secretHash: null });
        expect(await s.users.getByEmail('acme', 'new@acme.test')).toEqual({ tenant: 'acme', id: 'new', body: userBody('New@Acme.test', ['admin']), passwordHash: 'new-hash', createdAt: T0S + 5, updatedAt: T0S + 5 });
        expect(await s.users.get('acme', 'old')).toEqual({ tenant: 'acme', id: 'old', body: userBody('old@acme.test'), passwordHash: 'old-hash', createdAt: T0S + 5, updatedAt: T0S + 5 });
        expect(await s.users.getAssignment('acme', 'web', 'new')).toEqual({ tenant: 'acme', application: 'web', userId: 'new', body: { managedBy: 'idforge' }, createdAt: T0S + 5 });

        vi.setSystemTime(T0 + 9_000);
        await write('acme', {
          tenant: { body: tenantBody('Acme 2'), initialKeys: [key('acme', 'ignored', 3)] },
          applications: [{ name: 'web', body: webApp('web-id-2'), secretHash: 'hmac-2' }],
          // An initial password never replaces one that is there (set meanwhile by someone else).
          users: [
            { id: 'new', body: userBody('new@acme.test'), initialPasswordHash: 'other-hash', revokeArtifacts: false },
            { id: 'old', body: userBody('renamed@acme.test'), initialPasswordHash: null, revokeArtifacts: false },
          ],
          assignments: [{ application: 'web', userId: 'new', body: {} }],
        });
        // A stored password is kept when the batch sets none.
        expect(await s.users.get('acme', 'old')).toEqual({ tenant: 'acme', id: 'old', body: userBody('renamed@acme.test'), passwordHash: 'old-hash', createdAt: T0S + 5, updatedAt: T0S + 9 });
        expect(await s.tenants.get('acme')).toMatchObject({ body: tenantBody('Acme 2'), createdAt: T0S + 5, updatedAt: T0S + 9 });
        expect((await s.tenants.listKeys('acme')).map((k) => k.kid)).toEqual(['k1', 'k2']);
        expect(await s.applications.get('acme', 'web')).toMatchObject({ body: webApp('web-id-2'), secretHash: 'hmac-2', createdAt: T0S + 5, updatedAt: T0S + 9 });
        expect(await s.applications.getByClientId('acme', 'web-id')).toBeUndefined();
        expect(await s.users.get('acme', 'new')).toMatchObject({ passwordHash: 'new-hash', createdAt: T0S + 5, updatedAt: T0S + 9 });
        expect(await s.users.getAssignment('acme', 'web', 'new')).toEqual({ tenant: 'acme', application: 'web', userId: 'new', body: {}, createdAt: T0S + 5 });
        // Nothing written for a tenant that decide leaves alone.
        await write('acme', {});
        expect(await s.tenants.get('acme')).toMatchObject({ updatedAt: T0S + 9 });
      });

      it('batch deletes as the single-object deletes do: an assignment with its grants at that client, a user and an application with everything of theirs', async () => {
        await populateTenant(s, 'acme');
        await populateUser(s, 'acme', 'kept');
        await s.grants.upsert('acme', 'Grant', 'g-other-client', { accountId: 'u1', clientId: 'other-id' }, 600);
        // Unassigning u1 from portal ends its grant at portal's client, not its session or its grant at another client.
        await write('acme', { deleteAssignments: [{ application: 'portal', userId: 'u1', clientId: 'portal-id' }] });
        expect(await userContents(s, 'acme', 'u1')).toEqual({ ...FULL_USER, assignment: false, grant: false });
        expect(await s.grants.find('acme', 'Grant', 'g-other-client')).toBeDefined();
        await write('acme', { deleteUsers: ['u1', 'nobody'] });
        expect(await userContents(s, 'acme', 'u1')).toEqual(EMPTY_USER);
        expect(await s.grants.find('acme', 'Grant', 'g-other-client')).toBeUndefined();
        expect(await userContents(s, 'acme', 'kept')).toEqual(FULL_USER);
        await write('acme', { deleteApplications: ['portal', 'nothing'] });
        expect(await s.applications.get('acme', 'portal')).toBeUndefined();
        expect(await userContents(s, 'acme', 'kept')).toEqual({ ...FULL_USER, assignment: false, grant: false });
      });

      it('batch revokes the grants and tokens of a user written with revokeArtifacts, and only those', async () => {
        await parents(s, { acme: {} });
        await s.users.put('acme', 'u1', userBody('u1@acme.test', ['admin']), null);
        await s.users.put('acme', 'u2', userBody('u2@acme.test', ['admin']), null);
        for (const u of ['u1', 'u2']) await s.grants.upsert('acme', 'RefreshToken', `rt-${u}`, { accountId: u, clientId: 'spa' }, 600);
        await write('acme', {
          users: [
            { id: 'u1', body: userBody('u1@acme.test'), initialPasswordHash: null, revokeArtifacts: true },
            { id: 'u2', body: userBody('u2@acme.test', ['admin']), initialPasswordHash: null, revokeArtifacts: false },
          ],
        });
        expect(await s.grants.find('acme', 'RefreshToken', 'rt-u1')).toBeUndefined();
        expect(await s.grants.find('acme', 'RefreshToken', 'rt-u2')).toBeDefined();
      });

      it('batch is all or nothing: a failure half-way, or a decide that throws, leaves the tenant as it was', async () => {
        await populateTenant(s, 'acme');
        const before = await s.tenants.contents('acme');
        const restore = await backend.failArtifactDeletes();
        await expect(write('acme', {
          tenant: { body: tenantBody('Changed') },
          users: [{ id: 'u-new', body: userBody('new@acme.test'), initialPasswordHash: 'h', revokeArtifacts: false }],
          deleteUsers: ['u1'],
        })).rejects.toThrow(/injected failure/);
        await restore();
        expect(await s.tenants.contents('acme')).toEqual(before);
        await expect(s.tenants.batch('acme', () => {
          throw new Error('refused');
        })).rejects.toThrow('refused');
        expect(await tenantContents(s, 'acme')).toEqual(FULL_TENANT);
      });

      it('concurrent batches of one tenant (two instances) take turns, each deciding on what the previous one wrote', async () => {
        const s2 = await other();
        const seen = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? s : s2).tenants.batch('race', (c) => {
          // The next id is the count of users seen: two batches deciding on the same contents would write one id twice.
          const id = `u${c.users.length}`;
          return { changes: { ...NONE, tenant: { body: tenantBody('Race') }, users: [{ id, body: userBody(`${id}@race.test`), initialPasswordHash: null, revokeArtifacts: false }] }, result: id };
        })));
        expect([...seen].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `u${i}`));
        expect((await s.tenants.contents('race')).users).toHaveLength(8);
      });
    });

    describe('meta', () => {
      it('get, set, overwrite', async () => {
        expect(await s.meta.get('master-key-check')).toBeUndefined();
        await s.meta.set('master-key-check', 'v1');
        await s.meta.set('other', 'x');
        await s.meta.set('master-key-check', 'v2');
        expect(await s.meta.get('master-key-check')).toBe('v2');
        expect(await (await other()).meta.get('other')).toBe('x');
      });

      it('setIfAbsent: replicas racing on one key all get the first value stored, and a set value stays', async () => {
        const replicas = [s, await other(), await other()];
        const got = await Promise.all(replicas.flatMap((r, i) => [r.meta.setIfAbsent('check', `v${i}a`), r.meta.setIfAbsent('check', `v${i}b`)]));
        expect(new Set(got).size).toBe(1);
        expect(await s.meta.get('check')).toBe(got[0]);
        await s.meta.set('kept', 'one');
        expect(await replicas[1]!.meta.setIfAbsent('kept', 'two')).toBe('one');
        expect(await s.meta.get('kept')).toBe('one');
      });
    });

    describe('changes and readiness', () => {
      it('a change published by one replica is heard by every subscribed replica, itself included', async () => {
        const b = await other();
        const heardA: string[] = [];
        const heardB: string[] = [];
        const offA = s.changes.subscribe((t) => heardA.push(t));
        const offB = b.changes.subscribe((t) => heardB.push(t));
        await vi.waitFor(() => expect(s.changes.listening && b.changes.listening).toBe(true), { timeout: 10_000 });
        await s.changes.publish('acme');
        await b.changes.publish('globex');
        // Within a second by the contract; the wait is longer only so a loaded machine does not fail it.
        await vi.waitFor(() => {
          expect(heardB.filter((t) => t !== '*')).toEqual(['acme', 'globex']);
          expect(heardA.filter((t) => t !== '*')).toEqual(['acme', 'globex']);
        }, { timeout: 10_000, interval: 50 });
        offB();
        await s.changes.publish('initech');
        await vi.waitFor(() => expect(heardA.filter((t) => t !== '*')).toEqual(['acme', 'globex', 'initech']), { timeout: 10_000, interval: 50 });
        expect(heardB.filter((t) => t !== '*')).toEqual(['acme', 'globex']);
        offA();
      });

      it('ping answers while the database is reachable', async () => {
        await expect(s.ping()).resolves.toBeUndefined();
      });
    });

    describe('hostile values', () => {
      it('lookups by values no store holds (NUL, control and non-ASCII characters, long strings) find nothing and fail nothing', async () => {
        await populateTenant(s, 'acme');
        for (const v of ['\u0000', 'a\u0000b', '\u0001\u001f', '\uFFFF', 'x'.repeat(10_000), "' OR 1=1 --"]) {
          expect(await s.tenants.get(v)).toBeUndefined();
          expect(await s.applications.getByClientId('acme', v)).toBeUndefined();
          expect(await s.applications.getByIdentifier('acme', v)).toBeUndefined();
          expect(await s.users.getByEmail('acme', v)).toBeUndefined();
          expect(await s.users.get('acme', v)).toBeUndefined();
          expect(await s.grants.find('acme', 'Interaction', v)).toBeUndefined();
          expect(await s.grants.findByUid('acme', 'Session', v)).toBeUndefined();
          expect(await s.users.getPasskey('acme', v)).toBeUndefined();
          await s.grants.destroy('acme', 'Interaction', v);
          expect(await s.users.deleteOtp('acme', 'u1', v)).toBe(false);
        }
        expect(await tenantContents(s, 'acme')).toEqual(FULL_TENANT);
      });

      it('throttle keys are whatever was typed: NUL and all are counted, found and cleared', async () => {
        await parents(s, { acme: {} });
        const k = 'account:a\u0000b@acme.test';
        expect(await s.throttle.recordFailure('acme', k, T0, 1000, 5, 1000)).toMatchObject({ failures: 1 });
        expect(await s.throttle.get('acme', 'account:a')).toBeUndefined();
        expect(await s.throttle.get('acme', k)).toMatchObject({ failures: 1 });
        expect(await s.throttle.serialize('acme', [k], async () => 'ok')).toBe('ok');
        await s.throttle.clear('acme', k);
        expect(await s.throttle.get('acme', k)).toBeUndefined();
      });
    });
  });
}

/**
 * Since schema 3 every row names its parents in the database (foreign keys): the tenants, and the
 * users and applications of each, that a test's rows belong to (made unless they exist).
 */
async function parents(s: Storage, tenants: Readonly<Record<string, { readonly users?: readonly string[]; readonly apps?: readonly string[] }>>): Promise<void> {
  for (const [t, { users = [], apps = [] }] of Object.entries(tenants)) {
    if ((await s.tenants.get(t)) === undefined) await s.tenants.put(t, tenantBody(t));
    for (const u of users) if ((await s.users.get(t, u)) === undefined) await s.users.put(t, u, userBody(`${u}@${t}.parent`), null);
    for (const a of apps) if ((await s.applications.get(t, a)) === undefined) await s.applications.put(t, a, webApp(`${a}-id`), null);
  }
}

/** A tenant with one of everything: a key, an application, a user with an assignment, artifacts, factors, a throttle counter. */
async function populateTenant(s: Storage, t: string): Promise<void> {
  await s.tenants.put(t, tenantBody(t), [key(t, `${t}-k1`, 1, 'active')]);
  await s.applications.put(t, 'portal', webApp('portal-id'), 'h');
  await populateUser(s, t, 'u1');
}
const FULL_TENANT = { tenant: true, keys: 1, application: true, user: true, assignment: true, session: true, grant: true, totp: true, otp: true, passkeys: 1, throttle: true };
const EMPTY_TENANT = { tenant: false, keys: 0, application: false, user: false, assignment: false, session: false, grant: false, totp: false, otp: false, passkeys: 0, throttle: false };
async function tenantContents(s: Storage, t: string) {
  return {
    tenant: (await s.tenants.get(t)) !== undefined,
    keys: (await s.tenants.listKeys(t)).length,
    application: (await s.applications.getByClientId(t, 'portal-id')) !== undefined,
    ...(await userContents(s, t, 'u1')),
    throttle: (await s.throttle.get(t, 'account:u1@example.test')) !== undefined,
  };
}

async function populateUser(s: Storage, t: string, id: string): Promise<void> {
  await s.users.put(t, id, userBody(`${id}@example.test`), 'h');
  await s.users.putAssignment(t, 'portal', id, {});
  await s.grants.upsert(t, 'Session', `sess-${id}`, { accountId: id }, 600);
  await s.grants.upsert(t, 'Grant', `grant-${id}`, { accountId: id, clientId: 'portal-id' }, 600);
  await s.users.putTotp(t, id, 'sealed', 1);
  await s.users.putOtp(t, id, 'hash', T0 + 60_000);
  await s.users.putPasskey(t, passkey(`cred-${id}`, id, 1));
  await s.throttle.recordFailure(t, `account:${id}@example.test`, T0, 1000, 5, 1000);
}
const FULL_USER = { user: true, assignment: true, session: true, grant: true, totp: true, otp: true, passkeys: 1 };
const EMPTY_USER = { user: false, assignment: false, session: false, grant: false, totp: false, otp: false, passkeys: 0 };
async function userContents(s: Storage, t: string, id: string) {
  return {
    user: (await s.users.get(t, id)) !== undefined,
    assignment: (await s.users.getAssignment(t, 'portal', id)) !== undefined,
    session: (await s.grants.find(t, 'Session', `sess-${id}`)) !== undefined,
    grant: (await s.grants.find(t, 'Grant', `grant-${id}`)) !== undefined,
    totp: (await s.users.getTotp(t, id)) !== undefined,
    otp: (await s.users.getOtp(t, id)) !== undefined,
    passkeys: (await s.users.listPasskeys(t, id)).length,
  };
}
