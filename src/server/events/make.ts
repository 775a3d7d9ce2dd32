/**
 * Events as the server makes them (the contract: src/contract/events.ts): a stable id (UUIDv7: its
 * time first, so ids sort roughly by time), the time, the actor the request's door established
 * (ops/request-context.ts) with the writer's manager, and the request id. The directory core makes
 * one per object it writes and hands them to the storage with the write (`recordWith`), so they
 * commit or fail with it.
 */
import { randomUUID } from 'node:crypto';
import {
  changeOf, fieldChanges, safeDetails, type EventActor, type EventChange, type EventObjectKind, type EventType, type EventView,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { currentActor, currentRequestId } from '../ops/request-context.ts';

/** The largest time a UUIDv7 holds: 48 bits of milliseconds. */
const MAX_UUIDV7_MS = 2 ** 48 - 1;

/**
 * RFC 9562 UUID version 7: 48 bits of Unix milliseconds, then 74 random bits. The random bits are
 * a version 4 UUID's (122 random bits, the variant already RFC 9562's) with its version digit made
 * 7: randomUUID draws from a cached pool of the CSPRNG, where a randomBytes(16) per event was a
 * tenth of an apply's server time (bench/apply, issue 24).
 */
export function uuidv7(nowMs: number = Date.now()): string {
  // xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx: the time replaces the first 48 bits, 7 the version digit.
  return `${timeOf(nowMs).idPrefix}-7${randomUUID().slice(15)}`;
}

/** A millisecond's id prefix and ISO time, kept for the last one: a batch makes hundreds of events in each. */
let lastTime: { readonly ms: number; readonly idPrefix: string; readonly iso: string } | undefined;
function timeOf(nowMs: number): { readonly ms: number; readonly idPrefix: string; readonly iso: string } {
  const ms = Math.trunc(nowMs);
  if (lastTime?.ms === ms) return lastTime;
  if (!(ms >= 0 && ms <= MAX_UUIDV7_MS)) throw new RangeError(`uuidv7: time ${nowMs} is not 48 bits of milliseconds`);
  const t = ms.toString(16).padStart(12, '0');
  lastTime = { ms, idPrefix: `${t.slice(0, 8)}-${t.slice(8)}`, iso: new Date(ms).toISOString() };
  return lastTime;
}

export interface EventInput {
  readonly tenant: string;
  readonly type: EventType;
  readonly object: { readonly kind: EventObjectKind; readonly name: string };
  readonly changes?: readonly EventChange[];
  readonly details?: Readonly<Record<string, unknown>>;
  /** The manager the write is made by (the body's `manager`); default: the one the request's headers named. */
  readonly manager?: string | undefined;
  /** Overrides the request's actor (sign-in outcomes: the person). */
  readonly actor?: EventActor;
}

export function makeEvent(e: EventInput, nowMs: number = Date.now()): EventView {
  const base = e.actor ?? currentActor() ?? {};
  const actor: EventActor = e.manager === undefined ? { ...base } : { ...base, manager: e.manager };
  const details = e.details === undefined ? undefined : safeDetails(e.details);
  const requestId = currentRequestId();
  // Members in this order (the stored body's), the optional ones only when there: set one by one
  // rather than spread from objects made for the purpose, once per object a batch writes.
  const event: { -readonly [K in keyof EventView]: EventView[K] } = {
    id: uuidv7(nowMs),
    time: timeOf(nowMs).iso,
    tenant: e.tenant,
    type: e.type,
    actor,
    object: { kind: e.object.kind, name: e.object.name },
    changes: e.changes === undefined ? [] : [...e.changes],
  };
  if (details !== undefined) event.details = details;
  if (requestId !== undefined) event.requestId = requestId;
  return event;
}

/** The event of a put: created (every field), updated (what differs) or nothing when unchanged. */
export function putEvent(
  tenant: string, kind: EventObjectKind, name: string, before: object | undefined, after: object, manager: string | undefined,
  extra: readonly EventChange[] = [],
): EventView | undefined {
  const changes = fieldChanges(before, after);
  changes.push(...extra);
  if (before !== undefined && changes.length === 0) return undefined;
  return makeEvent({ tenant, type: `${kind}.${before === undefined ? 'created' : 'updated'}` as EventType, object: { kind, name }, changes, manager });
}

/** The event of a delete: what the object was. */
export const deleteEvent = (tenant: string, kind: EventObjectKind, name: string, before: object | undefined, manager?: string): EventView =>
  makeEvent({ tenant, type: `${kind}.deleted` as EventType, object: { kind, name }, changes: fieldChanges(before, undefined), manager });

/** A client secret made or replaced (the hash the server keeps changed): only that it was. */
export const secretChanges = (before: { readonly secretHash: string | null } | undefined, secretHash: string | null): EventChange[] =>
  (before?.secretHash ?? null) !== secretHash ? [changeOf('clientSecret', undefined, undefined)] : [];

/** A password set or changed: only that it was (the one redaction rule). */
export const PASSWORD_CHANGE: EventChange = changeOf('password', undefined, undefined);

/** The name of an assignment in events: `<application>/<user>` (group assignments: `<application>/<group>`). */
export const pairName = (application: string, member: string) => `${application}/${member}`;

/**
 * Runs a write of the directory core with its events: they are stored in the write's transaction
 * (EventStore.within), none when there are none.
 */
export function recordWith<T>(ctx: ServerContext, events: readonly (EventView | undefined)[] | (() => readonly (EventView | undefined)[]), write: () => Promise<T>): Promise<T> {
  const list = () => (typeof events === 'function' ? events() : events).filter((e): e is EventView => e !== undefined);
  return ctx.storage.events.within(list, write);
}
