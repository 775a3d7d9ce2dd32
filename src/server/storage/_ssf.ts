/** What both backends share of the SSF transmitter's streams and SETs (types.ts, SsfStore): rows. */
import type { EventView } from '../../contract/index.ts';
import type { Row } from './_common.ts';
import type { SsfSetRecord, SsfStreamRecord } from './types.ts';

export const ssfStreamRow = (r: Row): SsfStreamRecord => ({
  tenant: String(r.tenant), id: String(r.id), body: JSON.parse(String(r.body)) as SsfStreamRecord['body'],
  status: String(r.status) as SsfStreamRecord['status'], ...(r.reason === null || r.reason === undefined ? {} : { reason: String(r.reason) }),
  sealedAuthorization: r.sealed_authorization === null || r.sealed_authorization === undefined ? null : String(r.sealed_authorization),
  tokenHash: String(r.token_hash), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});

export const ssfSetRow = (r: Row): SsfSetRecord => ({
  tenant: String(r.tenant), stream: String(r.stream), jti: String(r.jti), claims: JSON.parse(String(r.claims)) as Record<string, unknown>, attempts: Number(r.attempts),
});

/** The stream columns written by put, in order. */
export const ssfStreamValues = (s: Omit<SsfStreamRecord, 'createdAt' | 'updatedAt'>) =>
  [s.tenant, s.id, JSON.stringify(s.body), s.status, s.reason ?? null, s.sealedAuthorization, s.tokenHash] as const;

export const eventBody = (r: Row): EventView => JSON.parse(String(r.body)) as EventView;
