/**
 * SCIM bearer tokens: one static token per provisioning client, as identity providers (Okta, Entra
 * ID, Google Workspace) expect. Made through the admin API (`POST /admin/v1/tenants/{t}/scim/tokens`),
 * shown once, stored as an HMAC under a master-derived key bound to the tenant, listed without
 * its value, revoked by deleting it.
 *
 *   scim.<id>.<secret>    id: 16 characters [a-z0-9], names the token in lists and audit lines;
 *                         secret: 32 random bytes, base64url (256 bits: guessing is hopeless, so a
 *                         fast keyed hash is enough, as for client secrets)
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { excerpt, RESERVED_TENANTS, type ScimTokenCreated, type ScimTokenView } from '../../contract/index.ts';
import type { MasterKey } from '../_crypto.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import type { ScimTokenRecord } from '../storage/types.ts';
import { makeEvent, recordWith } from '../events/make.ts';

const TOKEN = /^scim\.([a-z0-9]{16})\.([A-Za-z0-9_-]{43})$/;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** The token's id when it has the shape of one (whatever its secret): what failures are counted under. */
export function tokenId(presented: string): string | undefined {
  return TOKEN.exec(presented)?.[1];
}

function hashToken(master: MasterKey, tenant: string, token: string): string {
  // Bound to the tenant: the same bytes presented at another tenant hash differently.
  return `hmac-sha256:${createHmac('sha256', master.derive('scim-token')).update(`${tenant}\u0000${token}`, 'utf8').digest('base64url')}`;
}

const view = (r: ScimTokenRecord): ScimTokenView => ({
  id: r.id, ...(r.description === null ? {} : { description: r.description }), createdAt: new Date(r.createdAt * 1000).toISOString(),
});

export async function createScimToken(ctx: ServerContext, tenant: string, description: string | undefined): Promise<ScimTokenCreated> {
  await requireTenant(ctx, tenant);
  const bytes = randomBytes(16);
  const id = [...bytes].map((b) => ID_ALPHABET[b % ID_ALPHABET.length]).join('');
  const token = `scim.${id}.${randomBytes(32).toString('base64url')}`;
  const record: ScimTokenRecord = { tenant, id, hash: hashToken(ctx.master, tenant, token), description: description ?? null, createdAt: Math.floor(Date.now() / 1000) };
  const made = makeEvent({ tenant, type: 'scim_token.created', object: { kind: 'scim_token', name: id }, details: description === undefined ? {} : { description } });
  await recordWith(ctx, [made], () => ctx.storage.scim.putToken(record));
  return { ...view(record), token };
}

export async function listScimTokens(ctx: ServerContext, tenant: string): Promise<{ items: ScimTokenView[] }> {
  await requireTenant(ctx, tenant);
  return { items: (await ctx.storage.scim.listTokens(tenant)).map(view) };
}

export async function deleteScimToken(ctx: ServerContext, tenant: string, id: string): Promise<void> {
  await requireTenant(ctx, tenant);
  const revoked = makeEvent({ tenant, type: 'scim_token.revoked', object: { kind: 'scim_token', name: id } });
  if (!(await recordWith(ctx, [revoked], () => ctx.storage.scim.deleteToken(tenant, id)))) throw errors.notFound(`SCIM token ${excerpt(id)} does not exist in tenant '${tenant}'`);
}

/** The stored token a presented one is, at this tenant; undefined for anything else (malformed, revoked, another tenant's). */
export async function verifyScimToken(ctx: ServerContext, tenant: string, presented: string): Promise<ScimTokenRecord | undefined> {
  const id = tokenId(presented);
  if (id === undefined) return undefined;
  const record = await ctx.storage.scim.getToken(tenant, id);
  if (record === undefined) return undefined;
  const a = Buffer.from(record.hash);
  const b = Buffer.from(hashToken(ctx.master, tenant, presented));
  return a.length === b.length && timingSafeEqual(a, b) ? record : undefined;
}

async function requireTenant(ctx: ServerContext, tenant: string): Promise<void> {
  if (RESERVED_TENANTS.includes(tenant)) throw errors.forbidden(`tenant '${tenant}' is reserved for the server itself`);
  if ((await ctx.storage.tenants.get(tenant)) === undefined) throw errors.notFound(`tenant '${tenant}' does not exist`);
}
