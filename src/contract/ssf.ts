/**
 * The OpenID Shared Signals Framework (SSF 1.0) transmitter of each tenant: its names, paths and
 * request bodies. Events are Security Event Tokens (RFC 8417) signed with the tenant's key, sent by
 * push (RFC 8935) or collected by poll (RFC 8936), about subjects named per RFC 9493.
 *
 * A tenant's transmitter answers on the tenant's host: discovery at `/.well-known/ssf-configuration`
 * (and, as SSF 1.0 §7.1 derives it from the issuer `<origin>/oauth2/`, at
 * `/.well-known/ssf-configuration/oauth2`), stream management below `/ssf/`. The transmitter's
 * `issuer` is the tenant's OpenID issuer, so a SET's `iss` and keys are the ones its tokens have.
 *
 * Who may manage streams: the admin API's access token (an operator: any stream of any tenant), or
 * a stream's own receiver token, made when the stream is and answered once (`ssf_<stream>.<secret>`:
 * that stream only; it cannot make streams). A receiver so holds a credential that never expires
 * and opens nothing else, which is what a resource server behind NAT needs to poll.
 */
import { z } from 'zod';
import { MAX_URL_LENGTH } from './redirect-uri.ts';
import { issuerUrl, type ServerAddress } from './urls.ts';
import { webhookUrlProblem } from './webhooks.ts';

export const SSF_PATHS = {
  discovery: '/.well-known/ssf-configuration',
  configuration: '/ssf/streams',
  status: '/ssf/status',
  verification: '/ssf/verify',
  /** Followed by `/<stream_id>`. */
  poll: '/ssf/poll',
} as const;

/** The tenant's SSF discovery document (at its host's root, as the brief of issue 24 and SSF 1.0 §7.1 for an issuer without a path have it). */
export function ssfConfigurationUrl(addr: ServerAddress, tenant: string): string {
  return `${new URL(issuerUrl(addr, tenant)).origin}${SSF_PATHS.discovery}`;
}

export const SSF_DELIVERY = {
  push: 'urn:ietf:rfc:8935',
  poll: 'urn:ietf:rfc:8936',
} as const;

export const SSF_EVENTS = {
  sessionRevoked: 'https://schemas.openid.net/secevent/caep/event-type/session-revoked',
  credentialChange: 'https://schemas.openid.net/secevent/caep/event-type/credential-change',
  accountDisabled: 'https://schemas.openid.net/secevent/risc/event-type/account-disabled',
  accountEnabled: 'https://schemas.openid.net/secevent/risc/event-type/account-enabled',
  accountPurged: 'https://schemas.openid.net/secevent/risc/event-type/account-purged',
  verification: 'https://schemas.openid.net/secevent/ssf/event-type/verification',
} as const;

/** What a stream may ask for (verification is always delivered, asked or not: SSF 1.0 §8.1.4). */
export const SSF_EVENTS_SUPPORTED: readonly string[] = Object.values(SSF_EVENTS);

export const SSF_STREAM_STATUSES = ['enabled', 'paused', 'disabled'] as const;

/** A stream's receiver token: `ssf_<stream id>.<43 base64url characters>`. */
export const SSF_STREAM_TOKEN = /^ssf_([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/;

/** A stream request's body is JSON of at most this many bytes (a stream config is a few hundred). */
export const SSF_MAX_BODY_BYTES = 16 * 1024;

/** Poll: at most this many SETs per answer, and a long poll waits at most this long (RFC 8936 §2.1 leaves both to the transmitter). */
export const SSF_MAX_EVENTS = 100;
export const SSF_LONG_POLL_SECONDS = 20;

const Audience = z.union([z.string().min(1).max(MAX_URL_LENGTH), z.array(z.string().min(1).max(MAX_URL_LENGTH)).min(1).max(10)]);

const Delivery = z.discriminatedUnion('method', [
  z.strictObject({
    method: z.literal(SSF_DELIVERY.push),
    /** Where SETs are POSTed: https, or http on loopback, and never a private address unless the operator allows it (the webhooks' rules). */
    endpoint_url: z.string().max(MAX_URL_LENGTH).superRefine((u, ctx) => {
      const p = webhookUrlProblem(u);
      if (p !== undefined) ctx.addIssue({ code: 'custom', message: p });
    }),
    /** Sent as the Authorization header of each push (RFC 8935 §2); kept sealed, never answered. */
    authorization_header: z.string().min(1).max(4096).regex(/^[\x21-\x7e][\x20-\x7e]*$/, { error: 'must be printable ASCII' }).optional(),
  }),
  z.strictObject({
    method: z.literal(SSF_DELIVERY.poll),
    /** Transmitter-supplied: ignored when sent. */
    endpoint_url: z.string().max(MAX_URL_LENGTH).optional(),
  }),
]);

/** POST /ssf/streams (create), and PUT (replace, with `stream_id`). Fields the transmitter supplies are refused unless noted. */
export const SsfStreamBody = z.object({
  delivery: Delivery,
  events_requested: z.array(z.string().max(256)).max(20).default([]),
  description: z.string().max(256).optional(),
  /**
   * The SETs' `aud`: who the receiver is (a resource server names its API identifier, so it checks
   * SETs as it checks tokens). Default: the stream's own URL. SSF 1.0 lets the transmitter choose it.
   */
  aud: Audience.optional(),
  // Transmitter-supplied fields a receiver echoes back from a read are accepted and ignored.
  stream_id: z.string().max(64).optional(),
  iss: z.unknown().optional(),
  events_supported: z.unknown().optional(),
  events_delivered: z.unknown().optional(),
  min_verification_interval: z.unknown().optional(),
}).strict();
export type SsfStreamBody = z.infer<typeof SsfStreamBody>;

/** PATCH /ssf/streams: the fields to change. */
export const SsfStreamPatch = z.object({
  stream_id: z.string().max(64),
  delivery: Delivery.optional(),
  events_requested: z.array(z.string().max(256)).max(20).optional(),
  description: z.string().max(256).optional(),
  aud: Audience.optional(),
  iss: z.unknown().optional(),
  events_supported: z.unknown().optional(),
  events_delivered: z.unknown().optional(),
  min_verification_interval: z.unknown().optional(),
}).strict();
export type SsfStreamPatch = z.infer<typeof SsfStreamPatch>;

/**
 * Text the transmitter stores as it is (a status reason, a receiver's error for a SET): PostgreSQL
 * text cannot hold NUL, so it is refused at the field on every backend (a 500 there before).
 */
const storedText = (max: number) => z.string().max(max).regex(/^[^\u0000]*$/, { error: 'must not contain NUL characters' });

export const SsfStatusBody = z.strictObject({
  stream_id: z.string().max(64),
  status: z.enum(SSF_STREAM_STATUSES),
  reason: storedText(256).optional(),
});
export type SsfStatusBody = z.infer<typeof SsfStatusBody>;

export const SsfVerifyBody = z.strictObject({
  stream_id: z.string().max(64),
  state: z.string().max(256).optional(),
});
export type SsfVerifyBody = z.infer<typeof SsfVerifyBody>;

/** RFC 8936 §2.1 poll request. */
export const SsfPollBody = z.strictObject({
  maxEvents: z.number().int().min(0).max(10_000).optional(),
  returnImmediately: z.boolean().optional(),
  ack: z.array(z.string().max(256)).max(SSF_MAX_EVENTS * 10).optional(),
  setErrs: z.record(z.string().max(256), z.strictObject({ err: storedText(64), description: storedText(1024).optional() })).optional(),
});
export type SsfPollBody = z.infer<typeof SsfPollBody>;
