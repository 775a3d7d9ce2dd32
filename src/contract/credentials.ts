/**
 * The admin credentials file a server writes to `<data-dir>/admin-credentials.json` (mode 0600) on
 * every start: how to get an admin token and where to use it. `idforge plan|apply --data-dir`, the
 * Pulumi providers and the tests read it; its `adminUrl` is where those credentials may be sent.
 */
import { z } from 'zod';

export const ADMIN_CREDENTIALS_FILE = 'admin-credentials.json';

export const AdminCredentials = z.object({
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  /** Issuer of the system tenant, whose token endpoint issues admin tokens. */
  issuer: z.url(),
  tokenEndpoint: z.url(),
  /** Resource indicator to request (RFC 8707); the token's audience. */
  resource: z.string().min(1),
  scope: z.string().min(1),
  /** e.g. http://localhost:9080/admin/v1 */
  adminUrl: z.url(),
});
export type AdminCredentials = z.infer<typeof AdminCredentials>;
