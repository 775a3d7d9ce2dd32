/**
 * Log lines as JSON, one object per line, for `idforge serve` (and any host that wants them): the
 * server's notices become `{"time","level","msg"}`, its audit lines (already JSON objects) keep
 * their fields; both get the id of the request they were written for, when there is one.
 */
import { currentRequestId } from './request-context.ts';

/** Notices that report a failure; everything else is `info`. */
const ERROR_WORDS = /\b(error|failed|cannot|lost|refus)/i;

export function jsonLogLine(line: string, now: Date = new Date()): string {
  const requestId = currentRequestId();
  if (line.startsWith('{')) {
    try {
      const event = JSON.parse(line) as Record<string, unknown>;
      if (event !== null && typeof event === 'object' && !Array.isArray(event)) {
        return JSON.stringify({
          time: event.time ?? now.toISOString(),
          level: event.level ?? (typeof event.audit === 'string' ? 'audit' : 'info'),
          ...event,
          ...(requestId === undefined || event.requestId !== undefined ? {} : { requestId }),
        });
      }
    } catch {
      /* not JSON after all: a notice */
    }
  }
  return JSON.stringify({ time: now.toISOString(), level: ERROR_WORDS.test(line) ? 'error' : 'info', msg: line, ...(requestId === undefined ? {} : { requestId }) });
}
