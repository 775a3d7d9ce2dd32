/**
 * The request a line of work belongs to: an id per request (the caller's X-Request-Id when it is
 * a sane token, else a new UUID), echoed in the response and carried into every log line written
 * while the request is handled (AsyncLocalStorage follows it through awaits and callbacks).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { EventActor } from '../../contract/index.ts';

export interface RequestContext {
  readonly requestId: string;
  /** The database fault the request met, if any (noteFault): doors that answer after the fact ask for it. */
  fault?: unknown;
  /** Who the request acts for, as its door established it (admin token and actor headers, SCIM token): kept in the events it makes. */
  actor?: EventActor;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** A caller's id is kept only when it cannot forge a log line or bloat one: 1-128 URL-safe characters. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && SANE_ID.test(given) ? given : randomUUID();
}

export function runInRequest<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** The current request's id, if this code runs on behalf of one. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/**
 * Records that this request met a database fault (storage/faults.ts). oidc-provider answers an
 * error from its own handler as a 500; the tenant's provider middleware asks for the fault afterwards
 * and answers it as what it is (a 503 or 507).
 */
export function noteFault(fault: unknown): void {
  const ctx = storage.getStore();
  if (ctx !== undefined) ctx.fault = fault;
}

/** The database fault this request met, if any. */
export function requestFault(): unknown {
  return storage.getStore()?.fault;
}

/**
 * `fn`, bound to run outside any request whoever calls it: for callbacks that events fire later
 * in whatever context created their emitter (a pooled database connection is made while some
 * request waits for it, and its 'error' event, minutes later, would carry that request's id).
 */
export function outsideRequests<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args: A) => storage.exit(() => fn(...args));
}

/** Sets who the current request acts for (the door's authentication, once it passed). */
export function setActor(actor: EventActor): void {
  const ctx = storage.getStore();
  if (ctx !== undefined) ctx.actor = actor;
}

/** Who the current request acts for, if a door said so. */
export function currentActor(): EventActor | undefined {
  return storage.getStore()?.actor;
}
