/**
 * Which Security Event Tokens (RFC 8417) a tenant's change makes, pure: the event log's event in,
 * the claims of its SETs out (signed when sent, sign.ts). Subjects are named per RFC 9493 and SSF
 * 1.0 §3: a person as `iss_sub` (the tenant's issuer and the `sub` of their tokens, the user id),
 * an application as an `opaque` client id, both in a `complex` subject where CAEP asks for one.
 *
 * | event log                          | SETs                                                      |
 * |------------------------------------|-----------------------------------------------------------|
 * | assignment.deleted                 | CAEP session-revoked (the person: their access to the app ended) |
 * | user.updated, disabled → true      | CAEP session-revoked, RISC account-disabled               |
 * | user.updated, disabled → false     | RISC account-enabled                                      |
 * | user.updated with a new password, password.set | CAEP credential-change (password, update)     |
 * | user.deleted                       | CAEP session-revoked, RISC account-purged                 |
 * | application.deleted                | CAEP session-revoked (the application's client id)        |
 *
 * A SET's `jti` is `<event id>.<n>`: the same however often it is delivered, so receivers dedupe by it.
 */
import { SSF_EVENTS, type EventView } from '../../contract/index.ts';
import type { SsfSetDraft, SsfStreamRecord } from '../storage/types.ts';

type Subject = Readonly<Record<string, unknown>>;

/** The event types a stream gets: those it asked for that we send; all of them when it asked for none. */
export function eventsDelivered(requested: readonly string[]): string[] {
  const supported = Object.values(SSF_EVENTS).filter((e) => e !== SSF_EVENTS.verification);
  return requested.length === 0 ? supported : supported.filter((e) => requested.includes(e));
}

const changed = (e: EventView, field: string) => e.changes.find((c) => c.field === field);

/** The SET claims for one event, before filtering by what the stream asked for. */
function signalsOf(e: EventView, iss: string): { type: string; subject: Subject; body: Record<string, unknown> }[] {
  const person = (sub: string): Subject => ({ format: 'iss_sub', iss, sub });
  const admin = { initiating_entity: 'admin' };
  switch (e.type) {
    case 'assignment.deleted': {
      const slash = e.object.name.indexOf('/');
      const [application, user] = [e.object.name.slice(0, slash), e.object.name.slice(slash + 1)];
      return [{
        type: SSF_EVENTS.sessionRevoked, subject: { format: 'complex', user: person(user) },
        body: { ...admin, reason_admin: { en: `access to application '${application}' was removed` } },
      }];
    }
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

/** What the stream gets of the event. `issuer(tenant)` is the tenant's issuer. */
export function translate(issuer: (tenant: string) => string) {
  return (stream: SsfStreamRecord, e: EventView): SsfSetDraft[] => {
    if (stream.tenant !== e.tenant) return [];
    const wanted = new Set(eventsDelivered(stream.body.eventsRequested));
    const iss = issuer(e.tenant);
    const at = Math.floor(Date.parse(e.time) / 1000);
    return signalsOf(e, iss)
      .map((s, n) => ({ s, n }))
      .filter(({ s }) => wanted.has(s.type))
      .map(({ s, n }) => {
        const draft = setClaims(iss, stream, `${e.id}.${n}`, at, s.subject, s.type, { event_timestamp: at, ...s.body });
        return { jti: draft.jti, claims: { ...draft.claims, txn: e.id } };
      });
  };
}
