/**
 * Standard Webhooks signatures (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
 * the signed content is `<webhook-id>.<webhook-timestamp>.<body>`, signed with HMAC-SHA256 under the
 * secret's bytes (the base64 after `whsec_`), sent as `v1,<base64 signature>` in `webhook-signature`.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { WEBHOOK_HEADERS } from '../../contract/index.ts';

/** A new secret: 32 random bytes (the spec asks 24 to 64). */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export function webhookSignature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64')}`;
}

/** The three headers of one attempt. */
export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    [WEBHOOK_HEADERS.id]: id,
    [WEBHOOK_HEADERS.timestamp]: String(timestampSeconds),
    [WEBHOOK_HEADERS.signature]: webhookSignature(secret, id, timestampSeconds, body),
  };
}
