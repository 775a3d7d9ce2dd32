/**
 * SCIM's error responses (RFC 7644 §3.12): every refusal of /scim/v2 is one of these, with the
 * HTTP status as a string, the `scimType` where the RFC defines one for the case, and a `detail`
 * for the person reading the client's log. Anything else thrown is a bug: a generic 500, logged,
 * never a stack trace.
 */
import type { Response } from 'express';
import { ServerError } from '../errors.ts';
import { URN } from './_schema.ts';

/** RFC 7644 §3.12, Table 9. */
export type ScimType =
  | 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

export class ScimError extends Error {
  override readonly name = 'ScimError';
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    detail: string,
    /** Extra response headers (Retry-After, WWW-Authenticate). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }
}

export const scimErrors = {
  invalidSyntax: (detail: string) => new ScimError(400, 'invalidSyntax', detail),
  invalidValue: (detail: string) => new ScimError(400, 'invalidValue', detail),
  invalidFilter: (detail: string) => new ScimError(400, 'invalidFilter', detail),
  invalidPath: (detail: string) => new ScimError(400, 'invalidPath', detail),
  noTarget: (detail: string) => new ScimError(400, 'noTarget', detail),
  mutability: (detail: string) => new ScimError(400, 'mutability', detail),
  tooMany: (detail: string) => new ScimError(400, 'tooMany', detail),
  uniqueness: (detail: string) => new ScimError(409, 'uniqueness', detail),
  /** Another door owns the resource (RFC 7644 has no scimType for it: a 409 with its reason). */
  ownedElsewhere: (detail: string) => new ScimError(409, undefined, detail),
  notFound: (detail: string) => new ScimError(404, undefined, detail),
  preconditionFailed: (detail: string) => new ScimError(412, undefined, detail),
  unauthorized: (detail: string, error?: 'invalid_token') =>
    new ScimError(401, undefined, detail, { 'www-authenticate': `Bearer realm="scim"${error === undefined ? '' : `, error="${error}"`}` }),
  tooManyRequests: (detail: string, retryAfterSeconds?: number) =>
    new ScimError(429, undefined, detail, retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }),
  methodNotAllowed: (detail: string, allow: string) => new ScimError(405, undefined, detail, { allow }),
  tooLarge: (detail: string) => new ScimError(413, undefined, detail),
  notImplemented: (detail: string) => new ScimError(501, undefined, detail),
} as const;

export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** Sends a SCIM JSON body with SCIM's media type. */
export function sendScim(res: Response, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  res.status(status).set({ ...headers, 'content-type': SCIM_CONTENT_TYPE }).send(JSON.stringify(body));
}

/** Any error as a SCIM error response: ours as they are, body-parser's as what they mean, bugs as a bare 500. */
export function sendScimError(res: Response, err: unknown, log: (line: string) => void): void {
  const e = toScimError(err);
  if (e === undefined) log(`SCIM internal error: ${(err as Error)?.stack ?? String(err)}`);
  const out = e ?? new ScimError(500, undefined, 'internal server error');
  sendScim(res, out.status, {
    schemas: [URN.error],
    status: String(out.status),
    ...(out.scimType === undefined ? {} : { scimType: out.scimType }),
    detail: out.message,
  }, out.headers);
}

function toScimError(err: unknown): ScimError | undefined {
  if (err instanceof ScimError) return err;
  if (err instanceof ServerError && err.expose) {
    // The directory core's refusals, in SCIM's terms: a value taken by another resource is `uniqueness`.
    const unique = err.status === 409 && ['email', 'displayName', 'userName'].includes(err.path ?? '');
    // A database fault keeps its Retry-After (503, or 507 for a full disk).
    return new ScimError(err.status, err.status === 400 ? 'invalidValue' : unique ? 'uniqueness' : undefined, err.message, err.headers);
  }
  const type = (err as { type?: unknown })?.type;
  const status = (err as { status?: unknown })?.status;
  if (type === 'entity.parse.failed') return scimErrors.invalidSyntax('the request body is not valid JSON');
  if (type === 'entity.too.large') return scimErrors.tooLarge('the request body is too large');
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') return scimErrors.invalidSyntax('the request body must be UTF-8 JSON');
  if (typeof status === 'number' && status >= 400 && status < 500) return new ScimError(status, 'invalidSyntax', 'the request could not be read');
  return undefined;
}
