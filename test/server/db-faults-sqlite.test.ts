/**
 * SQLite's disk failing under a running `idforge serve` (a real process): its data dir on a small
 * tmpfs this test mounts. Filled up, every door answers a write with 507 and Retry-After (the admin
 * API and SCIM as JSON, the sign-in pages as a page in words), never a 500 or the database's words;
 * readiness reports the writes failing; reads go on. Space freed, the same process takes writes and
 * is ready again by itself.
 *
 * Mounting needs root (as the test environment here runs); elsewhere the test is skipped and says so.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll } from '../support/processes.ts';
import { doors, readyz, recovery, ruleBroken, serve, type Door, type Served } from '../support/db-faults.ts';
import { type Fixture, localhostFetch, pkceParams, tempDir } from './_support.ts';

const root = process.getuid?.() === 0;
const mountPoint = tempDir('idforge-tmpfs-');
const dataDir = join(mountPoint.path, 'data');
const filler = join(mountPoint.path, 'filler');
let mounted = false;
let server: Served;
let list: readonly Door[];
let fixture: Fixture;

beforeAll(async () => {
  if (!root) return;
  // 24 MiB: room for the database and its WAL, and quick to fill.
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', mountPoint.path]);
  mounted = true;
  mkdirSync(dataDir, { recursive: true });
  server = await serve('db-faults-sqlite', dataDir, ['--port', '0', '--db-busy-timeout', '1000', '--request-timeout', '20']);
  ({ doors: list, fixture } = await doors(server));
});
afterAll(async () => {
  await stopAll();
  if (mounted) execFileSync('umount', ['-l', mountPoint.path]);
  mountPoint.remove();
});

/** Writes zeros until the file system is full. */
function fillDisk(): void {
  const fd = openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

async function metric(kind: string): Promise<number> {
  const text = await (await localhostFetch(`${server.url}/metrics`)).text();
  return Number(new RegExp(`^idforge_db_errors_total\\{kind="${kind}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** Admin writes that need new pages, until one is refused (a small one may fit in space the file already holds). */
async function writeUntilRefused(): Promise<{ status: number; headers: Headers; body: any }> {
  for (let i = 0; i < 400; i++) {
    const r = await server.admin.call('PUT', `/admin/v1/tenants/acme/users/u-full-${i}`, { email: `full-${i}@acme.test`, displayName: 'x'.repeat(128), scopes: [] });
    if (r.status !== 200 && r.status !== 201) return r;
  }
  throw new Error('400 writes on a full disk all succeeded');
}

describe.runIf(root)('SQLite on a full disk', () => {
  it('a full disk: writes are 507 with Retry-After at every door, readiness 503, reads go on; freed, it recovers by itself', async () => {
    const token = await server.admin.call('POST', '/admin/v1/tenants/acme/scim/tokens', { description: 'full' });
    expect(token.status).toBe(201);
    fillDisk();
    try {
      const refused = await writeUntilRefused();
      expect(refused.status).toBe(507);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(refused.body).toEqual({ error: 'insufficient_storage', message: "the server's storage is full: nothing was saved; try again once space has been freed", path: '' });

      // SCIM: its own error body.
      {
        const scimToken = String(token.body.token);
        let scim: Response | undefined;
        for (let i = 0; i < 400 && (scim === undefined || scim.status === 201); i++) {
          scim = await localhostFetch(`http://acme.localhost:${server.port}/scim/v2/Users`, {
            method: 'POST', headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
            body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `full-${i}`, displayName: 'y'.repeat(128), emails: [{ value: `scim-full-${i}@acme.test`, primary: true }] }),
          });
        }
        const body = await scim!.text();
        expect(scim!.status).toBe(507);
        expect(ruleBroken(scim!, body)).toBeUndefined();
        expect(JSON.parse(body)).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '507' });
      }

      // The sign-in: oidc-provider stores the interaction; the person gets a page in words.
      let page: Response | undefined;
      for (let i = 0; i < 400 && (page === undefined || page.status === 303); i++) {
        page = await localhostFetch(`http://acme.localhost:${server.port}/oauth2/auth?${new URLSearchParams({
          client_id: fixture.spa.clientId, redirect_uri: fixture.spa.redirectUri, response_type: 'code', scope: 'openid', state: `s${i}`, ...(await pkceParams()),
        }).toString()}`, { redirect: 'manual', headers: { accept: 'text/html' } });
      }
      const html = await page!.text();
      expect(page!.status).toBe(507);
      expect(ruleBroken(page!, html)).toBeUndefined();
      expect(html).toContain('the service has no room left to store it');

      // Readiness says writes fail; reads still answer.
      const ready = await readyz(server.url);
      expect(ready.status).toBe(503);
      expect(ready.body.checks.writes).toMatch(/disk full|KiB free/);
      expect((await server.admin.call('GET', '/admin/v1/tenants/acme/users/u-alice')).status).toBe(200);
      expect(await metric('disk_full')).toBeGreaterThan(0);
    } finally {
      rmSync(filler, { force: true });
    }
    await recovery(server, list);
    const after = await server.admin.call('PUT', '/admin/v1/tenants/acme/users/u-after-full', { email: 'after-full@acme.test', scopes: [] });
    expect(after.status).toBe(201);
    expect(server.proc.hasExited()).toBe(false);
  });
});

// Not root: nothing here can mount the tmpfs, and vitest lists the suite above as skipped (CI runs as root).
