/**
 * The rule for writing one webhook, as a pure function: what a PUT (the admin API's, or a tenant
 * batch's entry) would do to the stored webhook, or why it is refused. The named-manager rule is the
 * one every object follows (judgeManaged), with the signing secret as one more field: the secret is
 * compared, never stored in the body, never answered but when the server made it.
 */
import { managerConflict, managerOf, type Outcome, type WebhookBody } from '../../contract/index.ts';
import { errors } from '../errors.ts';
import { judgeManaged } from './rules.ts';
import type { WebhookRecord } from '../storage/types.ts';

export interface WebhookDecision {
  readonly outcome: Outcome;
  /** Changed fields (`secret` among them when it changes; `manager` for an adoption or takeover). */
  readonly changes: readonly string[];
  /** The body to store (no secret). */
  readonly stored: WebhookRecord['body'];
  /** The secret to seal: the one given, else the one kept, else the one made. */
  readonly secret: string;
  /** The secret the server made for a new webhook that came without one: answered once. */
  readonly made?: string;
  /** Left as it is because another manager keeps it (an entry that agrees with it). */
  readonly foreign?: string;
}

/**
 * `oldSecret` is the stored webhook's secret, unsealed (undefined for a new one); `newSecret` makes
 * one when a new webhook comes without.
 */
export function judgeWebhook(
  name: string, body: WebhookBody, before: WebhookRecord | undefined, oldSecret: string | undefined, force: boolean, newSecret: () => string,
): WebhookDecision {
  const { secret: given, ...rest } = body;
  const content = { ...rest, types: [...rest.types] };
  const { stored, changes, foreign } = judgeManaged('webhook', name, content, before?.body, force);
  const made = given === undefined && before === undefined ? newSecret() : undefined;
  const secret = given ?? oldSecret ?? made!;
  const secretChanges = before === undefined || secret !== oldSecret;
  if (!secretChanges) {
    const outcome: Outcome = before === undefined ? 'created' : changes.length === 0 ? 'unchanged' : 'updated';
    return { outcome, changes, stored, secret, ...(foreign === undefined ? {} : { foreign }) };
  }
  if (before !== undefined) {
    // A new secret is a change like any other: another manager's webhook keeps its own unless forced
    // (which is also why a foreign verdict, an unforced write by another manager, cannot reach past this).
    const conflict = managerConflict('webhook', name, managerOf(before.body), managerOf(body), ['secret'], force);
    if (conflict !== undefined) throw errors.conflict(conflict, 'manager');
  }
  return { outcome: before === undefined ? 'created' : 'updated', changes: [...changes, 'secret'], stored, secret, ...(made === undefined ? {} : { made }) };
}
