/**
 * Sign-in outcomes, factor changes, lockouts and token revocations as events. The sign-in pages and
 * the guessing defence already say each one as an audit line (login/throttle.ts, login/routes.ts,
 * the factors); this turns each line into an event of the log as well, so the log line and the
 * event are one fact said twice, never two rules.
 *
 * They are no change of the directory: each is appended in a transaction of its own, after the
 * outcome, without holding up the sign-in (a database too slow to take it delays nobody; one that
 * fails loses that event and says so in the log).
 */
import type { EventObjectKind, EventType, EventView } from '../../contract/index.ts';
import type { Storage } from '../storage/types.ts';
import { makeEvent } from './make.ts';

/** Audit line → event type; lines not listed (mail failures) are the log's only. */
const TYPES: Readonly<Record<string, EventType>> = {
  'login.success': 'login.success',
  'login.failure': 'login.failure',
  'login.refused': 'login.refused',
  'login.lockout': 'login.lockout',
  'login.error': 'login.error',
  'passkey.registered': 'factor.added',
  'passkey.rejected': 'factor.rejected',
  'totp.enrolled': 'factor.added',
  'factor.removed': 'factor.removed',
  'password.set': 'password.set',
  'recovery.requested': 'recovery.requested',
};

/** The fields of an audit line that name its subject rather than tell about it. */
const SUBJECT_FIELDS = new Set(['audit', 'tenant', 'user', 'account', 'time']);

/** The event an audit line is, or undefined for lines that are no event (or name no tenant). */
export function auditEvent(line: Readonly<Record<string, unknown>>): EventView | undefined {
  const type = typeof line.audit === 'string' ? TYPES[line.audit] : undefined;
  const tenant = line.tenant;
  if (type === undefined || typeof tenant !== 'string') return undefined;
  const user = typeof line.user === 'string' ? line.user : undefined;
  const account = typeof line.account === 'string' ? line.account : typeof line.key === 'string' ? line.key : undefined;
  const object: { kind: EventObjectKind; name: string } = user !== undefined ? { kind: 'user', name: user } : { kind: 'account', name: account ?? '' };
  const details: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(line)) if (!SUBJECT_FIELDS.has(k)) details[k] = v;
  if (line.audit === 'passkey.registered' || line.audit === 'passkey.rejected') details.factor = 'passkey';
  return makeEvent({ tenant, type, object, details, actor: { who: user ?? account ?? 'unknown' } });
}

/** Appends the event of each audit line that is one; failures are logged, never thrown. */
export function auditToEvents(storage: Pick<Storage, 'events'>, log: (line: string) => void): (line: Readonly<Record<string, unknown>>) => void {
  return (line) => {
    const e = auditEvent(line);
    if (e === undefined) return;
    storage.events.append([e]).catch((err: unknown) => log(`cannot record the event of ${e.type} at tenant ${e.tenant}: ${(err as Error).message}`));
  };
}

/** oidc-provider revoked a grant (token revocation endpoint, refresh token reuse, sign-out): the event of it. */
export function revocationEvent(tenant: string, oidc: { readonly client?: { readonly clientId?: string }; readonly entities?: Readonly<Record<string, unknown>> } | undefined, grantId: string): EventView {
  let account: string | undefined;
  for (const e of Object.values(oidc?.entities ?? {})) {
    const id = (e as { accountId?: unknown } | undefined)?.accountId;
    if (typeof id === 'string') account = id;
  }
  return makeEvent({
    tenant, type: 'token.revoked', object: account === undefined ? { kind: 'account', name: '' } : { kind: 'user', name: account },
    details: { client: oidc?.client?.clientId, grant: grantId }, ...(account === undefined ? {} : { actor: { who: account } }),
  });
}
