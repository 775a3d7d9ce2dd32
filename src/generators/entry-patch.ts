/**
 * A console proposal as a patch of the lines an entry was declared on (its source, recorded by
 * `idforge apply`): the entry is cut out of those lines, only the fields the change touches are
 * rewritten (comments, quoting, flow or block style and every other field stay as written), and
 * the result is put back at the same indentation. The patch is a unified diff of that window of
 * the file, numbered as the file is, so `git apply` takes it on the file the entry came from.
 * Pure and deterministic; undefined when the lines cannot be edited that way (the caller falls
 * back to a diff of the exported model).
 */
import { isDeepStrictEqual } from 'node:util';
import { isMap, isScalar, isSeq, parseDocument, type Document, type YAMLMap } from 'yaml';
import type { EntrySource } from '../contract/index.ts';
import { unifiedDiff } from './model-yaml.ts';

type Entry = Readonly<Record<string, unknown>>;

/** Edits the entry in `source` with `edit` (false: cannot), and returns the patch ('' when nothing changed). */
function patchSource(source: EntrySource, edit: (doc: Document.Parsed) => boolean): string | undefined {
  const lines = source.text.split('\n');
  const col = source.column;
  const prefix = lines[0]!.slice(0, col);
  const nodeText = [lines[0]!.slice(col), ...lines.slice(1).map((l) => l.slice(col))].join('\n');
  const doc = parseDocument(nodeText, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0 || !edit(doc)) return undefined;
  const out = doc.toString({ lineWidth: 0 }).replace(/\n$/, '').split('\n');
  const next = out.map((l, i) => (i === 0 ? prefix + l : l === '' ? '' : ' '.repeat(col) + l));
  const window = (ls: readonly string[]) => `${[...ls, ...(source.after === null ? [] : [source.after])].join('\n')}\n`;
  return unifiedDiff(window(lines), window(next), { from: `a/${source.file}`, to: `b/${source.file}`, firstLine: source.line });
}

/** Sets `key` of `map` to `value`, keeping a scalar's node (its quoting and comment) when both are scalars. */
function setField(doc: Document, map: YAMLMap, key: string, value: unknown): void {
  const node = map.get(key, true);
  if (value === undefined) map.delete(key);
  else if (isScalar(node) && (value === null || typeof value !== 'object')) node.value = value;
  else {
    const created = doc.createNode(value);
    // A new collection takes the style of the one it replaces.
    if ((isMap(node) || isSeq(node)) && (isMap(created) || isSeq(created))) created.flow = node.flow ?? false;
    map.set(key, created);
  }
}

/** The patch turning a declared entry (an application's, a user's) `before` into `after`: only the fields that differ are written. */
export function entryPatch(source: EntrySource, before: Entry, after: Entry): string | undefined {
  return patchSource(source, (doc) => {
    const map = doc.contents;
    if (!isMap(map)) return false;
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (!isDeepStrictEqual(before[key], after[key])) setField(doc, map, key, after[key]);
    }
    return true;
  });
}

/**
 * The patch giving `application` the users `users` in a tenant's declared `assignments` list: its
 * entry's `users` rewritten (its `groups` kept), a new entry (in the style of the others) when it
 * had none, the entry gone when nothing is left in it.
 */
export function assignmentsPatch(source: EntrySource, application: string, users: readonly string[]): string | undefined {
  return patchSource(source, (doc) => {
    const seq = isMap(doc.contents) ? doc.contents.get('assignments', true) : undefined;
    if (!isSeq(seq)) return false;
    const matching = seq.items.flatMap((item, i) => (isMap(item) && item.get('application') === application ? [i] : []));
    // Two entries for one application: which to change is not ours to guess.
    if (matching.length > 1) return false;
    const index = matching[0];
    if (index === undefined) {
      if (users.length === 0) return true;
      const created = doc.createNode({ application, users: [...users] }) as YAMLMap;
      created.flow = isMap(seq.items[0]) ? (seq.items[0].flow ?? false) : false;
      seq.items.push(created);
      return true;
    }
    const item = seq.items[index] as YAMLMap;
    const groups = item.get('groups', true);
    if (users.length === 0 && (groups === undefined || (isSeq(groups) && groups.items.length === 0))) seq.items.splice(index, 1);
    else setField(doc, item, 'users', users.length === 0 ? undefined : [...users]);
    return true;
  });
}
