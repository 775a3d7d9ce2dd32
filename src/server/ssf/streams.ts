/**
 * Stream management (SSF 1.0 §8.1): a tenant's streams made, read, changed and deleted, their
 * status, and verification. Made only by the admin API's token; read, changed, deleted, paused and
 * verified by it or by the stream's own receiver token (auth.ts). The stream's configuration is
 * answered as SSF names it; a new stream's receiver token is answered once (`receiver_token`).
 */
import { randomUUID } from 'node:crypto';
import {
  SSF_DELIVERY, SSF_EVENTS, SSF_EVENTS_SUPPORTED, SSF_PATHS, SsfStatusBody, SsfStreamBody, SsfStreamPatch, SsfVerifyBody, issuerUrl,
} from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError, errors } from '../errors.ts';
import type { SsfStreamRecord } from '../storage/types.ts';
import type { SsfCaller } from './auth.ts';
import { newStreamToken } from './auth.ts';
import { ssfAuthorizationSealedFor, type SsfDispatcher } from './dispatcher.ts';
import { eventsDelivered, setClaims } from './events.ts';

/** Seconds between verification requests of a stream (SSF 1.0 §8.1.4.2's min_verification_interval). */
const MIN_VERIFICATION_INTERVAL_SECONDS = 10;

/** The tenant's origin (`http://acme.localhost:3000`): where its SSF endpoints are. */
export const tenantOrigin = (ctx: ServerContext, tenant: string) => new URL(issuerUrl(ctx.address(), tenant)).origin;

export function discoveryDocument(ctx: ServerContext, tenant: string): Record<string, unknown> {
  const origin = tenantOrigin(ctx, tenant);
  const issuer = issuerUrl(ctx.address(), tenant);
  return {
    spec_version: '1_0',
    issuer,
    jwks_uri: `${issuer}.well-known/jwks.json`,
    delivery_methods_supported: [SSF_DELIVERY.push, SSF_DELIVERY.poll],
    configuration_endpoint: `${origin}${SSF_PATHS.configuration}`,
    status_endpoint: `${origin}${SSF_PATHS.status}`,
    verification_endpoint: `${origin}${SSF_PATHS.verification}`,
    // Bearer tokens: the admin API's OAuth access token (RFC 6749), or a stream's receiver token.
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }, { spec_urn: 'urn:ietf:rfc:6750' }],
    // Every subject of the tenant is in every stream: no add_subject or remove_subject.
    default_subjects: 'ALL',
  };
}

export function streamView(ctx: ServerContext, s: SsfStreamRecord): Record<string, unknown> {
  const origin = tenantOrigin(ctx, s.tenant);
  return {
    stream_id: s.id,
    iss: issuerUrl(ctx.address(), s.tenant),
    aud: s.body.aud,
    delivery: s.body.method === 'push'
      ? { method: SSF_DELIVERY.push, endpoint_url: s.body.endpointUrl }
      : { method: SSF_DELIVERY.poll, endpoint_url: `${origin}${SSF_PATHS.poll}/${s.id}` },
    events_supported: [...SSF_EVENTS_SUPPORTED],
    events_requested: [...s.body.eventsRequested],
    events_delivered: [...eventsDelivered(s.body.eventsRequested), SSF_EVENTS.verification],
    ...(s.body.description === undefined ? {} : { description: s.body.description }),
    min_verification_interval: MIN_VERIFICATION_INTERVAL_SECONDS,
  };
}

export class SsfStreams {
  constructor(private readonly ctx: ServerContext, private readonly dispatcher: SsfDispatcher) {}

  /** The stream `id` names, if the caller may reach it: 404 when none (or another tenant's), 403 when another stream's token asks. */
  async reach(tenant: string, caller: SsfCaller, id: unknown): Promise<SsfStreamRecord> {
    if (typeof id !== 'string' || id === '') throw errors.invalidRequest('stream_id is required', 'stream_id');
    if (caller.kind === 'stream' && caller.stream !== id) throw new ServerError(403, 'access_denied', `this receiver token is stream '${caller.stream}''s; it cannot reach stream '${id}'`, true, 'stream_id');
    const s = await this.ctx.storage.ssf.get(tenant, id);
    if (s === undefined) throw errors.notFound(`tenant '${tenant}' has no stream '${id}'`, 'stream_id');
    return s;
  }

  async create(tenant: string, caller: SsfCaller, body: SsfStreamBody): Promise<Record<string, unknown>> {
    if (caller.kind !== 'admin') throw errors.forbidden('a receiver token cannot make streams: the admin API\'s access token makes them');
    const id = randomUUID();
    const { token, hash } = newStreamToken(id);
    const origin = tenantOrigin(this.ctx, tenant);
    const rec = await this.ctx.storage.ssf.put({
      tenant, id, status: 'enabled', tokenHash: hash, ...this.#stored(id, body, `${origin}${SSF_PATHS.configuration}/${id}`),
    });
    return { ...streamView(this.ctx, rec), receiver_token: token };
  }

  #stored(id: string, body: Pick<SsfStreamBody, 'delivery' | 'events_requested' | 'description' | 'aud'>, defaultAud: string | readonly string[]) {
    const d = body.delivery;
    const push = d.method === SSF_DELIVERY.push;
    return {
      body: {
        method: push ? 'push' as const : 'poll' as const,
        ...(push ? { endpointUrl: d.endpoint_url } : {}),
        eventsRequested: [...body.events_requested],
        ...(body.description === undefined ? {} : { description: body.description }),
        aud: body.aud ?? defaultAud,
      },
      sealedAuthorization: push && d.authorization_header !== undefined ? this.ctx.master.seal(d.authorization_header, ssfAuthorizationSealedFor(id)) : null,
    };
  }

  async list(tenant: string, caller: SsfCaller): Promise<Record<string, unknown>[]> {
    const all = await this.ctx.storage.ssf.list(tenant);
    return all.filter((s) => caller.kind === 'admin' || s.id === caller.stream).map((s) => streamView(this.ctx, s));
  }

  async replace(tenant: string, caller: SsfCaller, body: SsfStreamBody): Promise<Record<string, unknown>> {
    const before = await this.reach(tenant, caller, body.stream_id);
    const rec = await this.ctx.storage.ssf.put({ ...before, ...this.#stored(before.id, body, before.body.aud) });
    return streamView(this.ctx, rec);
  }

  async update(tenant: string, caller: SsfCaller, patch: SsfStreamPatch): Promise<Record<string, unknown>> {
    const before = await this.reach(tenant, caller, patch.stream_id);
    const delivery = patch.delivery ?? (before.body.method === 'push'
      ? { method: SSF_DELIVERY.push, endpoint_url: before.body.endpointUrl! }
      : { method: SSF_DELIVERY.poll });
    const stored = this.#stored(before.id, {
      delivery: delivery as SsfStreamBody['delivery'],
      events_requested: patch.events_requested ?? before.body.eventsRequested as string[],
      description: patch.description ?? before.body.description,
      aud: patch.aud ?? (before.body.aud as string | string[]),
    }, before.body.aud);
    // A PATCH that names no new Authorization header keeps the one the stream has, for the same
    // endpoint only: a receiver's credential never goes to a URL it was not given for.
    const keepAuth = patch.delivery === undefined || (patch.delivery.method === SSF_DELIVERY.push && patch.delivery.authorization_header === undefined
      && before.body.method === 'push' && patch.delivery.endpoint_url === before.body.endpointUrl);
    const rec = await this.ctx.storage.ssf.put({ ...before, ...stored, sealedAuthorization: keepAuth ? before.sealedAuthorization : stored.sealedAuthorization });
    return streamView(this.ctx, rec);
  }

  async delete(tenant: string, caller: SsfCaller, id: unknown): Promise<void> {
    const s = await this.reach(tenant, caller, id);
    await this.ctx.storage.ssf.delete(tenant, s.id);
  }

  async status(tenant: string, caller: SsfCaller, id: unknown): Promise<Record<string, unknown>> {
    const s = await this.reach(tenant, caller, id);
    return { stream_id: s.id, status: s.status, ...(s.reason === undefined ? {} : { reason: s.reason }) };
  }

  async setStatus(tenant: string, caller: SsfCaller, body: SsfStatusBody): Promise<Record<string, unknown>> {
    const s = await this.reach(tenant, caller, body.stream_id);
    const { reason: _r, ...rest } = s;
    await this.ctx.storage.ssf.put({ ...rest, status: body.status, ...(body.reason === undefined ? {} : { reason: body.reason }) });
    return this.status(tenant, caller, s.id);
  }

  /**
   * SSF 1.0 §8.1.4: a verification SET, `state` echoed, delivered like every other. At most one
   * every `min_verification_interval` seconds (after a burst of 3), shared by every replica: each
   * one is a row until acknowledged, and a receiver token must not fill the database.
   */
  async verify(tenant: string, caller: SsfCaller, body: SsfVerifyBody): Promise<void> {
    const s = await this.reach(tenant, caller, body.stream_id);
    const waitMs = await this.ctx.storage.throttle.takeRate(tenant, `rate:ssf-verify:${s.id}`, Date.now(), MIN_VERIFICATION_INTERVAL_SECONDS * 1000, 3);
    if (waitMs > 0) {
      const wait = Math.ceil(waitMs / 1000);
      throw new ServerError(429, 'too_many_requests', `stream '${s.id}' was verified a moment ago; try again in ${wait} s`, true, '', [], { 'retry-after': String(wait) });
    }
    if (s.status !== 'enabled') throw new ServerError(409, 'conflict', `stream '${s.id}' is ${s.status}: it delivers nothing, a verification neither`, true, 'stream_id');
    const jti = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const set = setClaims(issuerUrl(this.ctx.address(), tenant), s, jti, now, { format: 'opaque', id: s.id }, SSF_EVENTS.verification,
      body.state === undefined ? {} : { state: body.state });
    await this.ctx.storage.ssf.add(tenant, s.id, [set], Date.now());
    this.dispatcher.kick();
  }
}
