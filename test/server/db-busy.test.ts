/**
 * SQLite's busy timeout (`--db-busy-timeout`): while another process holds the file's write lock
 * longer than that, a request that writes is answered 503 with Retry-After (a timeout, counted),
 * reads go on, and once the lock is gone the same server writes again.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src/server/storage/sqlite.ts';
import { adminClient, localhostFetch, testServer, type AdminClient } from './_support.ts';

let server: Awaited<ReturnType<typeof testServer>>;
let admin: AdminClient;
beforeAll(async () => {
  server = await testServer({ busyTimeoutMs: 200 });
  admin = await adminClient(server);
  await admin.put('/admin/v1/tenants/acme', { displayName: 'Acme', scopes: [] });
});
afterAll(async () => {
  await server?.dispose();
});

it('a write lock held past the busy timeout: writes are 503 with Retry-After, reads go on, then writes work again', async () => {
  const other = new Database(join(server.dataDir, DATABASE_FILE));
  other.exec('BEGIN IMMEDIATE');
  try {
    const write = await admin.call('PUT', '/admin/v1/tenants/acme/users/u-busy', { email: 'busy@acme.test', scopes: [] });
    expect(write.status).toBe(503);
    expect(write.headers.get('retry-after')).toBe('5');
    expect(write.body).toEqual({ error: 'temporarily_unavailable', message: 'the database did not answer in time; try again in a few seconds', path: '' });
    expect((await admin.call('GET', '/admin/v1/tenants/acme')).status).toBe(200);
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  expect((await admin.call('PUT', '/admin/v1/tenants/acme/users/u-busy', { email: 'busy@acme.test', scopes: [] })).status).toBe(201);
  const metrics = await (await localhostFetch(`${server.url}/metrics`)).text();
  expect(metrics).toMatch(/^idforge_db_errors_total\{kind="timeout"\} [1-9]/m);
});
