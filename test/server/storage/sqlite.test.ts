/**
 * The storage contract against SQLite: a fresh database file in a temp dir per test. The injected
 * failure is a real trigger on the server's own file, from a second connection.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStorage } from '../../../src/server/storage/index.ts';
import { DATABASE_FILE } from '../../../src/server/storage/sqlite.ts';
import { tempDir } from '../_support.ts';
import { storageContract } from './contract.ts';
import { groupsAndScimContract } from './contract-groups.ts';
import { eventsContract } from './contract-events.ts';
import { ssfContract } from './contract-ssf.ts';
import { backchannelContract } from './contract-backchannel.ts';

const sqliteBackend = async () => {
  const dir = tempDir('idforge-storage-');
  return {
    open: () => openStorage({ dataDir: dir.path }),
    async failArtifactDeletes() {
      const db = new Database(join(dir.path, DATABASE_FILE));
      db.exec(`CREATE TRIGGER fail_artifact_delete BEFORE DELETE ON artifacts BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
      return async () => {
        db.exec('DROP TRIGGER fail_artifact_delete');
        db.close();
      };
    },
    async sql(text: string) {
      const db = new Database(join(dir.path, DATABASE_FILE));
      try {
        db.pragma('busy_timeout = 5000');
        db.pragma('foreign_keys = ON');
        db.exec(text);
      } finally {
        db.close();
      }
    },
    async dispose() {
      dir.remove();
    },
  };
};
storageContract('sqlite', sqliteBackend);
groupsAndScimContract('sqlite', sqliteBackend);
eventsContract('sqlite', sqliteBackend);
ssfContract('sqlite', sqliteBackend);
backchannelContract('sqlite', sqliteBackend);

describe('sqlite: a batch of a tenant that does not exist yet is judged before the write lock', () => {
  const NONE = { applications: [], users: [], assignments: [], deleteAssignments: [], deleteUsers: [], deleteApplications: [] };
  const user = (id: string) => ({ id, body: { email: `${id}@late.test`, scopes: [], disabled: false }, initialPasswordHash: null, revokeArtifacts: false });

  it('and judged again under the lock when another writer made the tenant in between: what it writes is decided on what is there', async () => {
    const backend = await sqliteBackend();
    const s = await backend.open();
    try {
      const seen: number[] = [];
      const result = await s.tenants.batch('late', (c) => {
        seen.push(c.users.length);
        // Another process, between this judgement and the write lock: the tenant and a user of its own.
        if (seen.length === 1) {
          void backend.sql(`INSERT INTO tenants (name, body, created_at, updated_at) VALUES ('late', '{"displayName":"Other"}', 1, 1);
            INSERT INTO users (tenant, id, email, body, created_at, updated_at) VALUES ('late', 'u0', 'u0@late.test', '{"email":"u0@late.test","scopes":[],"disabled":false}', 1, 1);`);
        }
        const id = `u${c.users.length}`;
        return { changes: { ...NONE, users: [user(id)] }, result: id };
      });
      // Judged on nothing first, then again on the tenant the other writer made: u0 is not written over.
      expect(seen).toEqual([0, 1]);
      expect(result).toBe('u1');
      expect((await s.tenants.contents('late')).users.map((u) => u.id)).toEqual(['u0', 'u1']);
      expect((await s.tenants.get('late'))?.body).toEqual({ displayName: 'Other' });
    } finally {
      await s.close();
      await backend.dispose();
    }
  });

  it('and written as judged when nothing came in between: decided once', async () => {
    const backend = await sqliteBackend();
    const s = await backend.open();
    try {
      let calls = 0;
      await s.tenants.batch('fresh', (c) => {
        calls++;
        expect(c).toEqual({ tenant: undefined, applications: [], users: [], assignments: [] });
        return { changes: { ...NONE, tenant: { body: { displayName: 'Fresh' } as never }, users: [user('u0')] }, result: undefined };
      });
      expect(calls).toBe(1);
      expect((await s.tenants.contents('fresh')).users.map((u) => u.id)).toEqual(['u0']);
    } finally {
      await s.close();
      await backend.dispose();
    }
  });
});
