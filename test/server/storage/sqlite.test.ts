/**
 * The storage contract against SQLite: a fresh database file in a temp dir per test. The injected
 * failure is a real trigger on the server's own file, from a second connection.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
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
