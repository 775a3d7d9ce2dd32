/**
 * The storage contract against SQLite: a fresh database file in a temp dir per test. The injected
 * failure is a real trigger on the server's own file, from a second connection.
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { foldWriteAheadLog, openStorage } from '../../../src/server/storage/index.ts';
import { DATABASE_FILE } from '../../../src/server/storage/sqlite.ts';
import { tempDir } from '../_support.ts';
import { storageContract } from './contract.ts';
import { groupsAndScimContract } from './contract-groups.ts';
import { eventsContract } from './contract-events.ts';
import { ssfContract } from './contract-ssf.ts';
import { backchannelContract } from './contract-backchannel.ts';

const REPO = resolve(import.meta.dirname, '../../..');

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

describe('the write-ahead log after the processes sharing the file are gone', () => {
  it('is folded into the database and removed, the data kept; a missing log is left alone', async () => {
    const dir = tempDir('idforge-wal-');
    try {
      // A process that writes and ends without closing leaves the log behind, as two workers closing at once can.
      const file = join(dir.path, DATABASE_FILE);
      execFileSync(process.execPath, ['-e', `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(file)}); db.pragma('journal_mode = WAL'); db.exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept')"); process.exit(0);`], { cwd: REPO });
      expect(existsSync(`${file}-wal`)).toBe(true);
      foldWriteAheadLog(dir.path);
      expect(existsSync(`${file}-wal`)).toBe(false);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare('SELECT v FROM t').all()).toEqual([{ v: 'kept' }]);
      } finally {
        db.close();
      }
      foldWriteAheadLog(dir.path);
      expect(existsSync(`${file}-wal`)).toBe(false);
    } finally {
      dir.remove();
    }
  });
});
