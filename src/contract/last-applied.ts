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

/**
 * Declared fields whose effects are other objects, each shown as its own change: a tenant's
 * assignments (the assignment objects), groups (their members' assignments and scopes) and webhooks
 * (the webhook objects, whose secret references only the entry keeps). A change of these lists alone
 * is bookkeeping of the tenant's entry, not a change of the tenant.
 */
const DERIVED: ReadonlySet<string> = new Set(['assignments', 'groups', 'webhooks']);

/** The largest entry kept: a tenant's holds its groups and assignments. */
export const MAX_LAST_APPLIED_BYTES = 4 * 1024 * 1024;

/** The largest source text kept with an entry (the lines it was declared on). */
export const MAX_SOURCE_BYTES = 256 * 1024;

/**
 * Where an entry was declared, recorded by `idforge apply`: the file (relative to its Git work tree,
 * or to the directory apply ran in), the entry's path inside that file, and its exact lines, so a
 * console proposal is a patch that `git apply` takes on that file. For an application the lines are
 * its entry; for a tenant, its `assignments` list (what the console proposes to change there).
 */
export const EntrySource = z
  .strictObject({
    file: z.string().min(1).max(1024),
    /** The path inside the file, e.g. `tenants[0].applications[2]`. */
    path: z.string().min(1).max(256),
    /** 1-based line the entry starts on. */
    line: z.int().min(1).max(100_000_000),
    /** 0-based column the entry's node starts at on its first line (after a `- `). */
    column: z.int().min(0).max(10_000),
    /** The whole lines the entry spans, without the last line's newline. */
    text: z.string().max(MAX_SOURCE_BYTES),
    /** The line after them (a patch's trailing context); null at the end of the file. */
    after: z.string().max(MAX_SOURCE_BYTES).nullable(),
  })
  .describe('where the entry was declared: file, path, and its exact lines');
export type EntrySource = z.infer<typeof EntrySource>;

export const LastApplied = z
  .strictObject({
    /** The model's entry for the object, in normal form. */
    entry: z.record(z.string(), z.json()),
    /** Its position among its siblings as declared (applications and users of a tenant; tenants of a model). */
    index: z.int().min(0).max(10_000_000),
    source: EntrySource.optional(),
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
  const changed = changedFields(was.entry, now.entry).filter((k) => !own.includes(k));
  const declared = changed.filter((k) => !DERIVED.has(k));
  // Nothing else changed but the declared position, or lists whose effects are objects of their own:
  // recorded (for export), not a change of this object. Where the entry was declared (its source)
  // is no change at all: it is recorded whenever the object is written, so a model applied from
  // another directory, or reformatted, plans no changes (a proposal against lines that changed
  // since is refused by git apply, and shows the changed entry on its own).
  const recorded = declared.length === 0 && (was.index !== now.index || changed.length > 0) ? ['lastApplied'] : [];
  return [...own, ...declared, ...recorded];
}
