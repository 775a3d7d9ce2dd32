/**
 * Many tenants, fast: written straight into a new data dir's database through the server's own
 * storage and key code (what the admin API would store), before the server starts. This bench is
 * about serving many tenants, not about provisioning them (bench/pulumi measures that).
 *
 * Each tenant: signing keys (active + next), an api `https://api.<t>.test` with scope `admin`, and a
 * machine client `bench` (client_credentials, audience the api, so its tokens are signed JWTs), all
 * with the one secret returned.
 */
import { MasterKey } from '../../src/server/_crypto.ts';
import { newTenantKeys } from '../../src/server/keys.ts';
import { openStorage } from '../../src/server/storage/index.ts';

export const BENCH_CLIENT = 'bench';
export const BENCH_SECRET = 'bench-client-secret-0123456789abcdefghijkl';

export async function provisionTenants(dataDir: string, names: readonly string[], keyAlg: 'RS256' | 'ES256'): Promise<void> {
  const storage = await openStorage({ dataDir });
  const master = MasterKey.load(dataDir, {}, true)!;
  const secretHash = master.hashClientSecret(BENCH_SECRET);
  let next = 0;
  try {
    // Key generation runs on the libuv pool: a few at a time keeps it busy.
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < names.length) {
        const t = names[next++]!;
        const api = `https://api.${t}.test`;
        await storage.tenants.put(t, { displayName: `Tenant ${t}`, scopes: [{ name: 'admin' }] }, await newTenantKeys(master, t, keyAlg));
        await storage.applications.put(t, 'api', { kind: 'api', identifier: api, scopes: ['admin'] }, null);
        await storage.applications.put(t, 'svc', { kind: 'service', clientId: BENCH_CLIENT, scopes: ['admin'], audience: [api] }, secretHash);
      }
    }));
  } finally {
    await storage.close();
  }
}
