/**
 * Another writer holding the database: the server answers a write 503 with Retry-After once its
 * busy timeout passes (nothing written), and `idforge apply` waits as asked and sends the batch
 * again, so a long apply rides out another process's lock instead of stopping half way.
 * A real server on SQLite, its write lock held by a second connection to its file.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { adminClient, tempDir, testServer, type AdminClient } from '../server/_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
const work = tempDir('idforge-busy-');

const idforge = (args: string[]) => runCli([...args, '--data-dir', server.dataDir], { cwd: work.path, env: { IDFORGE_STATE: join(work.path, 'state.json') } });

beforeAll(async () => {
  server = await testServer({ busyTimeoutMs: 100 });
  admin = await adminClient(server);
  writeFileSync(join(work.path, 'model.yaml'), `server: { baseDomain: localhost, port: ${server.port} }
tenants:
  - name: busy
    displayName: Busy
    users:
      - { id: u-ann, email: ann@busy.example }
    applications:
      - { name: dash, kind: spa, origin: "http://dash.localhost:5173" }
    assignments:
      - { application: dash, users: [u-ann] }
`);
});
afterAll(async () => {
  await server?.dispose();
  work.remove();
});

/** Holds the server's write lock from a second connection until `release` is called. */
function holdWriteLock(): { release: () => void } {
  const db = new Database(join(server.dataDir, 'idforge.db'));
  db.pragma('busy_timeout = 0');
  db.prepare('BEGIN IMMEDIATE').run();
  return {
    release: () => {
      db.prepare('COMMIT').run();
      db.close();
    },
  };
}

describe('a write that finds the database busy', () => {
  it('is answered 503 with Retry-After, nothing written', async () => {
    const lock = holdWriteLock();
    try {
      const r = await admin.call('POST', '/admin/v1/tenants/busy/batch', { tenant: { displayName: 'Busy' } });
      expect(r.status).toBe(503);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      lock.release();
    }
    expect((await admin.call('GET', '/admin/v1/tenants/busy')).status).toBe(404);
  });

  it('idforge apply waits as asked and sends the batch again: the model is applied', async () => {
    const lock = holdWriteLock();
    // Released after the first answer's 503 and before its Retry-After has passed.
    const released = new Promise<void>((r) => setTimeout(() => {
      lock.release();
      r();
    }, 1500));
    const applied = await idforge(['apply', 'model.yaml']);
    await released;
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/Applied: 4 created/);
    expect(await admin.typed.find('getAssignment', { tenant: 'busy', application: 'dash', userId: 'u-ann' })).toMatchObject({ manager: 'apply:default' });
  }, 60_000);
});
