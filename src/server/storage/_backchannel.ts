/** What both backends share of the back-channel logout outbox (types.ts, BackchannelStore). */
import type { Row } from './_common.ts';
import type { LogoutDraft, LogoutRecord } from './types.ts';

/** The meta key holding the outbox's place in the event log. */
export const BACKCHANNEL_PLACE_KEY = 'backchannel.seq';

/** Columns of backchannel_logouts, in insert order. */
export const LOGOUT_COLUMNS = ['tenant', 'jti', 'client_id', 'uri', 'sub', 'sid', 'status', 'attempts', 'next_attempt_ms', 'lease_until_ms', 'created_at_ms'] as const;

export const logoutValues = (l: LogoutDraft, nowMs: number): (string | number | null)[] =>
  [l.tenant, l.jti, l.clientId, l.uri, l.sub, l.sid ?? null, 'pending', 0, nowMs, 0, nowMs];

export const logoutRow = (r: Row): LogoutRecord => ({
  tenant: String(r.tenant), jti: String(r.jti), clientId: String(r.client_id), uri: String(r.uri), sub: String(r.sub),
  ...(r.sid === null || r.sid === undefined ? {} : { sid: String(r.sid) }), attempts: Number(r.attempts),
});

export const settledStatus = (o: { readonly delivered: boolean; readonly nextAttemptMs: number | null }): string =>
  (o.delivered ? 'delivered' : o.nextAttemptMs === null ? 'failed' : 'pending');
