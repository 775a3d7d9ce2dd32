/**
 * The request a line of work belongs to: an id per request (the caller's X-Request-Id when it is
 * a sane token, else a new UUID), echoed in the response and carried into every log line written
 * while the request is handled (AsyncLocalStorage follows it through awaits and callbacks).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

export interface RequestContext {
  readonly requestId: string;
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
