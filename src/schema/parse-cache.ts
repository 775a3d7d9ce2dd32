/**
 * A model's YAML files as js-yaml read them last time, kept in one JSON file beside the stack's other
 * local state (the Pulumi program's `.idforge/<stack>/model-cache.json`) and keyed by each text's
 * SHA-256: a file that did not change since is not parsed again. Why: the Pulumi program reads the
 * whole model on every preview and up before it can register its first resource, and js-yaml took
 * ~0.65 s of the 14 MB of the 100k-user model (500 files), while the engine and the provider host had
 * nothing to do yet (README, "Scale"); JSON.parse of what it found then takes a tenth of that.
 *
 * What a hit gives is exactly what js-yaml gave for those bytes (the same js-yaml: its version keys
 * the file), and the model's own validation still runs on it. Texts whose values JSON cannot hold
 * (YAML's .inf and .nan) are never kept. The file holds only the entries this run used, so it never
 * grows beyond the model; a file that is missing, unreadable, of another version or not JSON is an
 * empty cache, and a failed write leaves the model read as it was (best effort, never an error).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/** What the fast path asks the cache: js-yaml's value for a text, if known, and what it found. */
export interface ParseCache {
  get(text: string): unknown;
  set(text: string, value: unknown): void;
}

/** What a cached file must say it was made by: read when a cache is opened, not at every import of the schema (the CLI's start-up). */
const versionOf = (): string => `js-yaml@${(createRequire(import.meta.url)('js-yaml/package.json') as { version: string }).version}/core-schema/1`;

/** YAML's special floats: JSON writes them as null, so a text that may hold one is never kept. */
const NOT_JSON = /\.(?:inf|nan)\b/i;

const hashOf = (text: string): string => createHash('sha256').update(text).digest('base64url');
/** The key of the text looked up last: a miss is looked up, then set, and its text hashed once. */
let last: { text: string; key: string } | undefined;
const keyOf = (text: string): string => {
  if (last?.text !== text) last = { text, key: hashOf(text) };
  return last.key;
};

/** A cache read from `file` (empty if there is none), that `save` writes back when this run changed it. */
export function openParseCache(file: string): ParseCache & { save(): Promise<void> } {
  const VERSION = versionOf();
  let known: Record<string, unknown> = {};
  try {
    const read = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; entries?: unknown };
    if (read.version === VERSION && read.entries !== null && typeof read.entries === 'object' && !Array.isArray(read.entries)) known = read.entries as Record<string, unknown>;
  } catch {
    // None yet, or not ours: start empty.
  }
  const used: Record<string, unknown> = {};
  let changed = false;
  return {
    get(text) {
      const key = keyOf(text);
      if (!Object.hasOwn(known, key)) return undefined;
      used[key] = known[key];
      return known[key];
    },
    set(text, value) {
      if (NOT_JSON.test(text)) return;
      used[keyOf(text)] = value;
      changed = true;
    },
    async save() {
      // Also when entries went unused (files removed or changed): the cache holds this model only.
      if (!changed && Object.keys(used).length === Object.keys(known).length) return;
      const tmp = `${file}.${process.pid}.tmp`;
      try {
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(tmp, JSON.stringify({ version: VERSION, entries: used }), { mode: 0o600 });
        await rename(tmp, file);
      } catch {
        // A read-only checkout, a full disk: the next run parses again.
      }
    },
  };
}
