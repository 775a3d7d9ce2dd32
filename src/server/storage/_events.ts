/**
 * What both backends share of the event log (types.ts, EventStore): the outbox that lets a change's
 * events ride on the change's own transaction, the rows, and the filter as SQL.
 *
 * The outbox is an AsyncLocalStorage: `withOutbox(events, write)` marks everything `write` does.
 * A backend's transaction, opened inside it, claims the outbox (so no other transaction takes it),
 * inserts its events after its own statements and before COMMIT, and marks it written once
 * committed; a transaction that fails gives the claim back. A single write statement outside a
 * transaction is run in one when an outbox is pending, so it carries the events too.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { revisesDirectory, type EventFilter, type EventView } from '../../contract/index.ts';
import { decodeCursor, encodeCursor, type Row } from './_common.ts';
import type { EventRecord, EventWindow, Page, PageRequest } from './types.ts';

export interface Outbox {
  readonly events: () => readonly EventView[];
  claimed: boolean;
}

const outboxes = new AsyncLocalStorage<Outbox>();

export function withOutbox<T>(events: () => readonly EventView[], write: () => Promise<T>): Promise<T> {
  return outboxes.run({ events, claimed: false }, write);
}

/** The outbox a transaction opened now must write, if any; the caller claims it. */
export function pendingOutbox(): Outbox | undefined {
  const o = outboxes.getStore();
  return o === undefined || o.claimed ? undefined : o;
}

/** A statement that changes rows (and so must carry a pending outbox's events). */
export const isWriteSql = (sql: string): boolean => /^\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql);

/** The columns of the events table, in insert order. */
export const EVENT_COLUMNS = ['id', 'tenant', 'at_ms', 'type', 'who', 'manager', 'git_commit', 'object_kind', 'object_name', 'body'] as const;

/** PostgreSQL text cannot hold NUL (what someone typed at a sign-in may): the columns never do; the body escapes it. */
const column = (v: string | undefined): string | null => (v === undefined ? null : v.includes('\u0000') ? v.replace(/\u0000/g, '\uFFFD') : v);

export function eventValues(e: EventView): (string | number | null)[] {
  return [e.id, column(e.tenant), Date.parse(e.time), e.type, column(e.actor.who), column(e.actor.manager), e.actor.git?.commit ?? null, e.object.kind, column(e.object.name), JSON.stringify(e)];
}

/** Per tenant, the id of the last of `events` that changes its directory (revisesDirectory): what its revision becomes. */
export function revisionsOf(events: readonly EventView[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) if (e.tenant !== undefined && revisesDirectory(e.type)) out.set(e.tenant, e.id);
  return out;
}

export const eventRow = (r: Row): EventRecord => ({ seq: Number(r.seq), event: JSON.parse(String(r.body)) as EventView });

/**
 * The rows of EventStore.window's SELECT (`seq`, and `body` only for the types asked for, else
 * null) as the window: where it ends, and the events of those types.
 */
export function eventWindow(rows: readonly Row[]): EventWindow {
  const records: EventRecord[] = [];
  for (const r of rows) if (r.body !== null && r.body !== undefined) records.push(eventRow(r));
  return { last: rows.length === 0 ? undefined : Number(rows[rows.length - 1]!.seq), records };
}

/** Where a list starts: after this seq (ascending) or before it (descending); undefined: the start. */
export const eventCursorSeq = (cursor: string | undefined): number | undefined => {
  const c = decodeCursor(cursor, 1);
  if (c === undefined) return undefined;
  const n = Number(c[0]);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('invalid cursor');
  return n;
};

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * SELECT of one tenant's events under `filter` (the same SQL on both backends; `ph(n)` writes the
 * n-th placeholder, 1-based), one row more than the page for toPage-style paging.
 */
export function eventListSql(tenant: string, filter: EventFilter, page: PageRequest, ph: (n: number) => string): { sql: string; params: (string | number)[] } {
  const params: (string | number)[] = [];
  const p = (v: string | number) => {
    params.push(v);
    return ph(params.length);
  };
  const where = [`tenant = ${p(tenant)}`];
  const desc = filter.order === 'desc';
  const from = eventCursorSeq(page.cursor);
  if (from !== undefined) where.push(`seq ${desc ? '<' : '>'} ${p(from)}`);
  if (filter.types !== undefined && filter.types.length > 0) {
    where.push(`(${filter.types.map((t) => (t.endsWith('.*') ? `type LIKE ${p(`${escapeLike(t.slice(0, -1))}%`)} ESCAPE '\\'` : `type = ${p(t)}`)).join(' OR ')})`);
  }
  if (filter.actor !== undefined) {
    const a = filter.actor;
    const who = `who = ${p(a)} OR manager = ${p(a)}`;
    where.push(`(${who}${/^[0-9a-f]{7,64}$/.test(a) ? ` OR git_commit LIKE ${p(`${a}%`)}` : ''})`);
  }
  if (filter.objectKind !== undefined) where.push(`object_kind = ${p(filter.objectKind)}`);
  if (filter.objectName !== undefined) where.push(`object_name = ${p(filter.objectName)}`);
  if (filter.sinceMs !== undefined) where.push(`at_ms >= ${p(filter.sinceMs)}`);
  if (filter.untilMs !== undefined) where.push(`at_ms < ${p(filter.untilMs)}`);
  return { sql: `SELECT seq, body FROM events WHERE ${where.join(' AND ')} ORDER BY seq ${desc ? 'DESC' : 'ASC'} LIMIT ${p(page.limit + 1)}`, params };
}

/** A page of events; `follow` is where it ends (the cursor given, on an empty page). */
export function eventPage(rows: readonly Row[], page: PageRequest): Page<EventRecord> & { follow: string } {
  const more = rows.length > page.limit;
  const items = (more ? rows.slice(0, page.limit) : rows).map(eventRow);
  const last = items[items.length - 1];
  const follow = last === undefined ? (page.cursor ?? encodeCursor(['0'])) : encodeCursor([String(last.seq)]);
  return { items, nextCursor: more ? follow : null, follow };
}

/**
 * Retention: rows older than their tenant's `events.retentionDays` (from the tenant body, JSON text)
 * or the default. `json(col, path)` reads a number from JSON text in the backend's dialect.
 */
export const purgeEventsSql = (ph: (n: number) => string, retentionDays: string) =>
  `DELETE FROM events WHERE at_ms < ${ph(1)} - 86400000 AND at_ms < ${ph(1)} - 86400000 * coalesce((SELECT ${retentionDays} FROM tenants t WHERE t.name = events.tenant), ${ph(2)})`;
