/**
 * What an object was last applied with: its entry of the model in normal form (src/schema/normal-form.ts),
 * every field as declared, including those the server itself never reads (a proxy's upstream, an
 * SPA's cacheType, an api's routes, the tenant's groups and assignments), and its place in the
 * declared order. The server keeps it with the object, like kubectl's last-applied configuration, so
 * `idforge export` gives the model back as declared, and a console proposal is an exact patch of
 * the entry.
 *
 * A change of the entry is a change of the object (a new upstream is a change to apply, although
 * the server does not use it); the fields are named as the model names them.
 */
import { z } from 'zod';
import { changedFields } from './json.ts';

/** The largest entry kept: a tenant's holds its groups and assignments. */
export const MAX_LAST_APPLIED_BYTES = 4 * 1024 * 1024;

export const LastApplied = z
  .strictObject({
    /** The model's entry for the object, in normal form. */
    entry: z.record(z.string(), z.json()),
    /** Its position among its siblings as declared (applications and users of a tenant; tenants of a model). */
    index: z.int().min(0).max(10_000_000),
  })
  .refine((v) => JSON.stringify(v.entry).length <= MAX_LAST_APPLIED_BYTES, { error: `the last-applied entry is larger than ${MAX_LAST_APPLIED_BYTES} bytes` })
  .describe('the entry of the model this object was last applied from, in normal form (idforge export gives it back)');
export type LastApplied = z.infer<typeof LastApplied>;

/**
 * The fields that differ between a stored body and a new one: the body's own (its `lastApplied`
 * aside), then the model fields whose declared values changed, by the model's names (`upstream`,
 * `cacheType`, `assignments`), each once.
 */
export function bodyChanges(before: object | undefined, after: object): string[] {
  if (before === undefined) return changedFields(undefined, after);
  const { lastApplied: was, ...b } = before as { lastApplied?: LastApplied };
  const { lastApplied: now, ...a } = after as { lastApplied?: LastApplied };
  const own = changedFields(b, a);
  if (JSON.stringify(was) === JSON.stringify(now)) return own;
  if (was === undefined || now === undefined) return [...own, 'lastApplied'];
  const declared = changedFields(was.entry, now.entry).filter((k) => !own.includes(k));
  // Only the declared position moved: recorded (for export's order), not a change of the object.
  const moved = was.index !== now.index && declared.length === 0 ? ['lastApplied'] : [];
  return [...own, ...declared, ...moved];
}
