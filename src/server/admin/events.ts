/**
 * GET /admin/v1/tenants/{tenant}/events: the tenant's event log (src/contract/events.ts), filtered,
 * paged by cursor. The events of a tenant deleted since stay readable until retention purges them.
 */
import { RESERVED_TENANTS, parseEventQuery, type EventQuery, type EventView } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { errors } from '../errors.ts';
import { reserved } from '../directory/rules.ts';

export async function listEvents(
  ctx: ServerContext, tenant: string, query: EventQuery, page: { readonly cursor: string | undefined; readonly limit: number },
): Promise<{ items: EventView[]; nextCursor: string | null; follow: string }> {
  if (RESERVED_TENANTS.includes(tenant)) throw reserved(tenant);
  const { filter, problems } = parseEventQuery(query);
  if (problems.length > 0) throw errors.invalidRequest(`${problems[0]!.path}: ${problems[0]!.message}`, problems[0]!.path, problems);
  const p = await ctx.storage.events.list(tenant, filter, page);
  // A name that is no tenant and never was one: said, rather than answered with an empty log.
  if (p.items.length === 0 && page.cursor === undefined && (await ctx.storage.tenants.get(tenant)) === undefined) {
    const any = await ctx.storage.events.list(tenant, {}, { limit: 1 });
    if (any.items.length === 0) throw errors.notFound(`tenant '${tenant}' does not exist and has no events`);
  }
  return { items: p.items.map((r) => r.event), nextCursor: p.nextCursor, follow: p.follow };
}
