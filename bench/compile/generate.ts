/**
 * A large model as a directory of YAML files, one per tenant, the way a big organisation keeps it.
 * Each tenant: 20 applications (5 of each kind), `users` users, 15 assignments via groups.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';

export async function generateModel(dir: string, tenants: number, appsPerTenant = 20, usersPerTenant = 200): Promise<{ files: number; bytes: number }> {
  await mkdir(dir, { recursive: true });
  let bytes = 0;
  await writeFile(join(dir, '000-server.yaml'), 'server:\n  baseDomain: localhost\n  port: 9080\n');
  for (let t = 0; t < tenants; t++) {
    const name = `t${String(t).padStart(5, '0')}`;
    const users = Array.from({ length: usersPerTenant }, (_, u) => ({
      id: `u${u}`,
      email: `user${u}@${name}.example`,
      displayName: `User ${u}`,
      ...(u % 50 === 0 ? { scopes: ['admin'] } : {}),
      password: { env: `PW_${name.toUpperCase()}_${u}` },
    }));
    const groups = Array.from({ length: 10 }, (_, g) => ({ name: `g${g}`, members: users.filter((_, u) => u % 10 === g).map((u) => u.id) }));
    const per = Math.max(1, Math.floor(appsPerTenant / 4));
    const apps: unknown[] = [];
    for (let i = 0; i < per; i++) {
      apps.push({ name: `api${i}`, kind: 'api', audience: `https://api${i}.${name}.example`, routes: [{ path: '/whoami' }, { path: '/admin', scopes: ['admin'] }] });
    }
    for (let i = 0; i < per; i++) {
      apps.push({ name: `web${i}`, kind: 'web', origin: `https://web${i}.${name}.example`, provider: name, callback: '/hello' });
      apps.push({ name: `proxy${i}`, kind: 'proxy', origin: `https://proxy${i}.${name}.example`, upstream: `http://10.0.0.${i + 1}:8080` });
      apps.push({ name: `spa${i}`, kind: 'spa', origin: `https://spa${i}.${name}.example`, audience: [`api${i}`], offline: true, scopes: ['openid', 'profile', 'email', 'admin'] });
    }
    const assignments = apps
      .filter((a) => (a as { kind: string }).kind !== 'api')
      .map((a, i) => ({ application: (a as { name: string }).name, groups: [`g${i % 10}`] }));
    const doc = { tenants: [{ name, displayName: `Tenant ${t}`, scopes: [{ name: 'admin' }], users, groups, applications: apps, assignments }] };
    const text = stringify(doc);
    bytes += Buffer.byteLength(text);
    await writeFile(join(dir, `${name}.yaml`), text);
  }
  return { files: tenants + 1, bytes };
}
