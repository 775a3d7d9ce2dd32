/**
 * Test support for SCIM: a tenant with a SCIM token, and a plain HTTP client of its /scim/v2 (the
 * requests a provisioning client sends, statuses and bodies as answered).
 */
import { scimBaseUrl } from '../../src/contract/index.ts';
import { localhostFetch } from '../../src/admin-client/index.ts';
import type { RunningServer } from '../../src/server/index.ts';
import type { AdminClient } from '../server/_support.ts';

export const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface ScimAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

export interface ScimClient {
  readonly base: string;
  /** `signal` bounds the exchange (e.g. AbortSignal.timeout): a request left unanswered fails instead of hanging the test. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal): Promise<ScimAnswer>;
}

/** A client of a tenant's /scim/v2 sending `token` (none when undefined). */
export function scimClient(server: Pick<RunningServer, 'address'>, tenant: string, token: string | undefined): ScimClient {
  const base = scimBaseUrl(server.address, tenant);
  return {
    base,
    async call(method, path, body, headers = {}, signal) {
      const res = await localhostFetch(`${base}${path}`, {
        method,
        ...(signal === undefined ? {} : { signal }),
        headers: {
          accept: 'application/scim+json',
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? body as string : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
  };
}

/** A tenant with a SCIM token, and a client that uses it. */
export async function scimTenant(admin: AdminClient, server: Pick<RunningServer, 'address'>, tenant: string) {
  await admin.put(`/admin/v1/tenants/${tenant}`, { displayName: `${tenant} Inc.` });
  const created = await admin.typed.call('createScimToken', { tenant }, { body: { description: 'tests' } });
  return { token: created.token, tokenId: created.id, scim: scimClient(server, tenant, created.token) };
}

/** A SCIM user body with its sign-in email. */
export const scimUser = (userName: string, email = `${userName}@example.test`, extra: Record<string, unknown> = {}) => ({
  schemas: [USER], userName, emails: [{ value: email, primary: true, type: 'work' }], ...extra,
});
