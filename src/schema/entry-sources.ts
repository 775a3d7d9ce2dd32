/**
 * Where each entry a console proposal may change was declared: an application's entry, and a
 * tenant's `assignments` list, with their exact lines, so the proposal is a patch of those lines
 * (src/generators/entry-patch.ts) that `git apply` takes on the file. Pure: texts in, sources out.
 *
 * JSON model files and entries written in a way no line-based patch can reach (several entries on
 * one line, a flow collection spanning lines less indented than its start) get no source; their
 * proposals fall back to a diff of the exported model.
 */
import jsyaml from 'js-yaml';
import { isMap, isPair, isScalar, isSeq, type Node, type Pair, type YAMLMap } from 'yaml';
import type { EntrySource } from '../contract/index.ts';
import { MAX_SOURCE_BYTES } from '../contract/index.ts';
import { ANCHOR_OR_ALIAS } from './_fast-path.ts';
import { parseModelText } from './_yaml-source.ts';

/** The key an application's source is kept under. */
export const applicationSourceKey = (tenant: string, application: string) => `application ${tenant}/${application}`;
/** The key a user's source is kept under. */
export const userSourceKey = (tenant: string, id: string) => `user ${tenant}/${id}`;
/** The key a tenant's `assignments` list's source is kept under. */
export const assignmentsSourceKey = (tenant: string) => `assignments ${tenant}`;

const scalarOf = (map: YAMLMap, key: string): unknown => {
  const v = map.get(key, true);
  return isScalar(v) ? v.value : undefined;
};

/** The offset each line of `text` starts at: line n (1-based) starts at starts[n - 1]. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The 1-based line of the line start `offset` (a binary search of `starts`). */
function lineAt(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/**
 * The whole lines from `start` to `end` (offsets), with the column `start` is at and the next line.
 * Linear in the entry, not in the file (`starts` is the file's lineStarts): a file of thousands of
 * entries was quadratic here, 1.5 s of a 100k-user apply's CPU.
 */
function linesOf(text: string, starts: readonly number[], start: number, end: number, file: string, path: string): EntrySource | undefined {
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const last = contentEnd(text, start, end);
  const nl = text.indexOf('\n', last);
  const lineEnd = nl < 0 ? text.length : nl;
  const lines = text.slice(lineStart, lineEnd);
  if (lines.includes('\r') || lines.length > MAX_SOURCE_BYTES) return undefined;
  const column = start - lineStart;
  const body = lines.split('\n');
  // The first line holds only this entry from its column on (a `- ` or spaces before it), and
  // every later line is at least as indented: the entry can be cut out and put back.
  if (!/^[ -]*$/.test(body[0]!.slice(0, column))) return undefined;
  if (body.slice(1).some((l) => l.trim() !== '' && !l.startsWith(' '.repeat(column)))) return undefined;
  // A file without a final newline after the entry is left to the fallback (a patch would need to say so).
  if (nl < 0) return undefined;
  const next = text.indexOf('\n', lineEnd + 1);
  const after = lineEnd + 1 >= text.length ? null : text.slice(lineEnd + 1, next < 0 ? text.length : next);
  const line = lineAt(starts, lineStart);
  return { file, path, line, column, text: lines, after };
}

/** The sources of one model file's entries, keyed by applicationSourceKey / userSourceKey / assignmentsSourceKey. */
export function entrySourcesOf(file: string, text: string): Map<string, EntrySource> {
  if (!/\.ya?ml$/i.test(file)) return new Map();
  return fastEntrySources(file, text) ?? carefulEntrySources(file, text);
}

/**
 * Where an entry's text ends: at its last line of content. The end a parser gives a block collection
 * runs over the blank lines and whole-line comments after it (js-yaml's up to the next token, yaml's
 * by rules of its own); those stay outside the entry, whichever parser read it, so a proposal never
 * takes a comment about the next entry with it.
 */
function contentEnd(text: string, start: number, end: number): number {
  let last = end;
  for (;;) {
    while (last > start && (text[last - 1] === '\n' || text[last - 1] === ' ' || text[last - 1] === '\r' || text[last - 1] === '\t')) last--;
    const lineStart = text.lastIndexOf('\n', last - 1) + 1;
    if (lineStart <= start || !text.slice(lineStart, last).trimStart().startsWith('#')) return last;
    last = lineStart;
  }
}

/**
 * The sources read with js-yaml, an order of magnitude faster than the position-tracking parse
 * (100,000 entries: under 1 s against 7 to 8 s, most of what an apply of the 100k-user model spent
 * in the CLI): its listener reports where each node opens and closes, kept for each collection with
 * the start of the key it is the value of. Anything unusual (anchors, aliases, a parse error) is
 * left to the careful path, which test/schema/entry-sources.test.ts holds this one to.
 */
export function fastEntrySources(file: string, text: string): Map<string, EntrySource> | undefined {
  if (ANCHOR_OR_ALIAS.test(text)) return undefined;
  /** Each collection's start, end and its key's start. */
  const ranges = new Map<object, readonly [number, number, number | undefined]>();
  const open: { start: number; key: number | undefined }[] = [];
  /** By depth: where the last node closed at that depth started (a mapping value's key, when the value opens). */
  const lastClosed: (number | undefined)[] = [];
  // js-yaml reads the text less a byte order mark and with a final newline added: its offsets, in `text`.
  const shift = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const at = (position: number) => Math.min(position + shift, text.length);
  let value: unknown;
  try {
    value = jsyaml.load(text, {
      schema: jsyaml.CORE_SCHEMA,
      listener(event, state) {
        const depth = (state as unknown as { depth: number }).depth;
        if (event === 'open') {
          open.push({ start: at(state.position), key: lastClosed[depth] });
          lastClosed[depth + 1] = undefined;
          return;
        }
        const node = open.pop()!;
        lastClosed[depth] = node.start;
        const result = (state as unknown as { result: unknown }).result;
        if (result !== null && typeof result === 'object') ranges.set(result, [node.start, at(state.position), node.key]);
      },
    });
  } catch {
    return undefined;
  }
  const out = new Map<string, EntrySource>();
  const tenants = value !== null && typeof value === 'object' ? (value as { tenants?: unknown }).tenants : undefined;
  if (!Array.isArray(tenants)) return out;
  const starts = lineStarts(text);
  const add = (key: string, start: number, end: number, path: string) => {
    const s = linesOf(text, starts, start, end, file, path);
    if (s !== undefined) out.set(key, s);
  };
  tenants.forEach((t: unknown, ti) => {
    if (t === null || typeof t !== 'object' || Array.isArray(t)) return;
    const tenant = (t as { name?: unknown }).name;
    if (typeof tenant !== 'string') return;
    const entries = (list: 'applications' | 'users', nameKey: string, keyOf: (tenant: string, name: string) => string) => {
      const seq = (t as Record<string, unknown>)[list];
      if (!Array.isArray(seq)) return;
      seq.forEach((e: unknown, i) => {
        const name = e !== null && typeof e === 'object' && !Array.isArray(e) ? (e as Record<string, unknown>)[nameKey] : undefined;
        const range = typeof name === 'string' ? ranges.get(e as object) : undefined;
        if (range !== undefined) add(keyOf(tenant, name as string), range[0], range[1], `tenants[${ti}].${list}[${i}]`);
      });
    };
    entries('applications', 'name', applicationSourceKey);
    entries('users', 'id', userSourceKey);
    const assignments = (t as { assignments?: unknown }).assignments;
    const range = Array.isArray(assignments) ? ranges.get(assignments) : undefined;
    if (range !== undefined && range[2] !== undefined) add(assignmentsSourceKey(tenant), range[2], range[1], `tenants[${ti}].assignments`);
  });
  return out;
}

/** The sources read with the position-tracking parse (yaml's): the reference the fast path is held to. */
export function carefulEntrySources(file: string, text: string): Map<string, EntrySource> {
  const out = new Map<string, EntrySource>();
  const parsed = parseModelText(file, text);
  if (!parsed.ok) return out;
  const tenants = isMap(parsed.source.doc.contents) ? parsed.source.doc.contents.get('tenants', true) : undefined;
  if (!isSeq(tenants)) return out;
  const starts = lineStarts(text);
  tenants.items.forEach((t, ti) => {
    if (!isMap(t)) return;
    const tenant = scalarOf(t, 'name');
    if (typeof tenant !== 'string') return;
    // Each entry of a list, by the field that names it: applications by name, users by id.
    const entries = (list: 'applications' | 'users', nameKey: string, keyOf: (tenant: string, name: string) => string) => {
      const seq = t.get(list, true);
      if (!isSeq(seq)) return;
      seq.items.forEach((e, i) => {
        const name = isMap(e) ? scalarOf(e, nameKey) : undefined;
        const range = (e as Node | null)?.range;
        if (typeof name !== 'string' || range == null) return;
        const s = linesOf(text, starts, range[0], range[1], file, `tenants[${ti}].${list}[${i}]`);
        if (s !== undefined) out.set(keyOf(tenant, name), s);
      });
    };
    entries('applications', 'name', applicationSourceKey);
    entries('users', 'id', userSourceKey);
    const pair = t.items.find((p): p is Pair<Node, Node> => isPair(p) && isScalar(p.key) && p.key.value === 'assignments');
    const keyRange = pair?.key?.range;
    const valueRange = pair?.value?.range;
    if (keyRange != null && valueRange != null && isSeq(pair!.value)) {
      const s = linesOf(text, starts, keyRange[0], valueRange[1], file, `tenants[${ti}].assignments`);
      if (s !== undefined) out.set(assignmentsSourceKey(tenant), s);
    }
  });
  return out;
}
