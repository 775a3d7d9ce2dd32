/**
 * Which Security Event Tokens (RFC 8417) a tenant's change makes, pure: the event log's event in,
 * the claims of its SETs out (signed when sent, sign.ts). Subjects are named per RFC 9493 and SSF
 * 1.0 §3: a person as `iss_sub` (the tenant's issuer and the `sub` of their tokens, the user id),
 * an application as an `opaque` client id, both in a `complex` subject where CAEP asks for one.
 *
 * | event log                          | SETs                                                      |
 * |------------------------------------|-----------------------------------------------------------|
 * | assignment.deleted                 | CAEP session-revoked (the person, unless a group still lets them in) |
 * | group_assignment.deleted           | CAEP session-revoked for each member it left without access |
 * | group.updated removing members     | CAEP session-revoked for each removed member left without access to one of its applications |
 * | group.deleted                      | CAEP session-revoked for each member it left without access to one of its applications |
 * | user.updated, disabled → true      | CAEP session-revoked, RISC account-disabled               |
 * | user.updated, disabled → false     | RISC account-enabled                                      |
 * | user.updated with a new password, password.set | CAEP credential-change (password, update)     |
 * | user.deleted                       | CAEP session-revoked, RISC account-purged                 |
 * | application.deleted                | CAEP session-revoked (the application's client id)        |
 *
 * A SET's `jti` is `<event id>.<n>`: the same however often it is delivered, so receivers dedupe by it.
 *
 * Who lost access (access.ts) is read from the directory, which a pure function cannot do: the
 * translation asks for it with NeedsLookup, and the dispatcher looks it up and asks again.
 */
import { SSF_EVENTS, type EventView } from '../../contract/index.ts';
import type { SsfSetDraft, SsfStreamRecord } from '../storage/types.ts';
import { LOOKUP_TYPES, pairOf } from './access.ts';

/** Thrown by a translation that needs to know who an event left without access (access.ts). */
export class NeedsLookup extends Error {
  override readonly name = 'NeedsLookup';
  constructor(readonly event: EventView) {
    super(`event ${event.id} (${event.type}) needs a directory lookup`);
  }
}

type Subject = Readonly<Record<string, unknown>>;

/** The event types a stream gets: those it asked for that we send; all of them when it asked for none. */
export function eventsDelivered(requested: readonly string[]): string[] {
  const supported = Object.values(SSF_EVENTS).filter((e) => e !== SSF_EVENTS.verification);
  return requested.length === 0 ? supported : supported.filter((e) => requested.includes(e));
}

const changed = (e: EventView, field: string) => e.changes.find((c) => c.field === field);

/**
 * The event types SETs are made of (signalsOf's cases): the others make none, so the transmitter
 * leaves them unread in the log (SsfStore.enqueue's `types`).
 */
export const SET_SOURCE_TYPES: ReadonlySet<string> = new Set([
  ...LOOKUP_TYPES, 'user.updated', 'password.set', 'user.deleted', 'application.deleted',
]);

/** The SET claims for one event, before filtering by what the stream asked for. `lost`: who it left without access. */
function signalsOf(e: EventView, iss: string, lost: readonly string[]): { type: string; subject: Subject; body: Record<string, unknown> }[] {
  const person = (sub: string): Subject => ({ format: 'iss_sub', iss, sub });
  const admin = { initiating_entity: 'admin' };
  switch (e.type) {
    case 'assignment.deleted':
    case 'group_assignment.deleted': {
      const [application, member] = pairOf(e.object.name);
      const how = e.type === 'assignment.deleted' ? '' : ` through group '${member}'`;
      return lost.map((user) => ({
        type: SSF_EVENTS.sessionRevoked, subject: { format: 'complex', user: person(user) },
        body: { ...admin, reason_admin: { en: `access to application '${application}'${how} was removed` } },
      }));
    }
    case 'group.deleted':
      return lost.map((user) => ({
        type: SSF_EVENTS.sessionRevoked, subject: { format: 'complex', user: person(user), group: { format: 'opaque', id: e.object.name } },
        body: { ...admin, reason_admin: { en: `group '${e.object.name}' was deleted` } },
      }));
    case 'group.updated':
      return lost.map((user) => ({
        type: SSF_EVENTS.sessionRevoked, subject: { format: 'complex', user: person(user), group: { format: 'opaque', id: e.object.name } },
        body: { ...admin, reason_admin: { en: `removed from group '${e.object.name}'` } },
      }));
    case 'user.updated': {
      const out: { type: string; subject: Subject; body: Record<string, unknown> }[] = [];
      const disabled = changed(e, 'disabled');
      if (disabled?.after === true) {
        out.push({ type: SSF_EVENTS.sessionRevoked, subject: person(e.object.name), body: { ...admin, reason_admin: { en: 'the account was disabled' } } });
        out.push({ type: SSF_EVENTS.accountDisabled, subject: person(e.object.name), body: {} });
      } else if (disabled !== undefined && disabled.after !== true) {
        out.push({ type: SSF_EVENTS.accountEnabled, subject: person(e.object.name), body: {} });
      }
      if (changed(e, 'password') !== undefined) {
        out.push({ type: SSF_EVENTS.credentialChange, subject: person(e.object.name), body: { ...admin, credential_type: 'password', change_type: 'update' } });
      }
      return out;
    }
    case 'password.set':
      return [{ type: SSF_EVENTS.credentialChange, subject: person(e.object.name), body: { initiating_entity: 'user', credential_type: 'password', change_type: 'update' } }];
    case 'user.deleted':
      return [
        { type: SSF_EVENTS.sessionRevoked, subject: person(e.object.name), body: { ...admin, reason_admin: { en: 'the account was deleted' } } },
        { type: SSF_EVENTS.accountPurged, subject: person(e.object.name), body: {} },
      ];
    case 'application.deleted': {
      const clientId = changed(e, 'clientId')?.before;
      if (typeof clientId !== 'string') return [];
      return [{
        type: SSF_EVENTS.sessionRevoked, subject: { format: 'complex', application: { format: 'opaque', id: clientId } },
        body: { ...admin, reason_admin: { en: `application '${e.object.name}' was deleted` } },
      }];
    }
    default:
      return [];
  }
}

/** SET claims of one stream: `iss`, `jti`, `iat`, `aud`, `txn` (the event id), `sub_id`, and one event. */
export function setClaims(iss: string, stream: Pick<SsfStreamRecord, 'body'>, jti: string, iatSeconds: number, subject: Subject, type: string, body: Record<string, unknown>): SsfSetDraft {
  return { jti, claims: { iss, jti, iat: iatSeconds, aud: stream.body.aud, sub_id: subject, events: { [type]: body } } };
}

/**
 * What the stream gets of the event. `issuer(tenant)` is the tenant's issuer; `lost` is what
 * access.ts found for events that need it, by event id (NeedsLookup when missing).
 */
export function translate(issuer: (tenant: string) => string, lost: ReadonlyMap<string, readonly string[]>) {
  return (stream: SsfStreamRecord, e: EventView): SsfSetDraft[] => {
    if (stream.tenant !== e.tenant || !SET_SOURCE_TYPES.has(e.type)) return [];
    const wanted = new Set(eventsDelivered(stream.body.eventsRequested));
    if (!wanted.has(SSF_EVENTS.sessionRevoked) && LOOKUP_TYPES.has(e.type)) return [];
    const found = LOOKUP_TYPES.has(e.type) ? lost.get(e.id) : [];
    if (found === undefined) throw new NeedsLookup(e);
    const iss = issuer(e.tenant);
    const at = Math.floor(Date.parse(e.time) / 1000);
    return signalsOf(e, iss, found)
      .map((s, n) => ({ s, n }))
      .filter(({ s }) => wanted.has(s.type))
      .map(({ s, n }) => {
        const draft = setClaims(iss, stream, `${e.id}.${n}`, at, s.subject, s.type, { event_timestamp: at, ...s.body });
        return { jti: draft.jti, claims: { ...draft.claims, txn: e.id } };
      });
  };
}
