/**
 * Bench models sized by the number of Pulumi resources the IdentityStack makes of them: per
 * tenant a Tenant (its web app, spa, api, users and assignments) and a TenantSecrets (the web
 * app's client and session secrets) = 2; plus the delete guard, the server and the client configs.
 */
import { stringify } from 'yaml';

export const RESOURCES_PER_TENANT = 2;

export function benchModel(tenants: number, usersPerTenant: number, port: number): string {
  const model = {
    server: { baseDomain: 'localhost', port },
    tenants: Array.from({ length: tenants }, (_, i) => {
      const users = Array.from({ length: usersPerTenant }, (_, u) => ({ id: `u${u}`, email: `u${u}@t${i}.example` }));
      return {
        name: `t${i}`,
        displayName: `Tenant ${i}`,
        users,
        applications: [
          { name: 'portal', kind: 'web', origin: `http://portal-t${i}.localhost:3000` },
          { name: 'dash', kind: 'spa', origin: `http://dash-t${i}.localhost:5173`, audience: ['api'] },
          { name: 'api', kind: 'api', audience: `http://api-t${i}.localhost:4000` },
        ],
        assignments: [
          { application: 'portal', users: users.map((u) => u.id) },
          { application: 'dash', users: users.slice(0, Math.ceil(users.length / 2)).map((u) => u.id) },
        ],
      };
    }),
  };
  return stringify(model);
}
