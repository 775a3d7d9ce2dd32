/**
 * A model as YAML a person keeps in Git: keys in the order the model documents them (not sorted:
 * `name` first reads better than alphabetical), notes as comments beside the values they are about,
 * and a unified diff between two such texts for proposing a change. Pure and deterministic.
 */
import { Document, isScalar, type Node } from 'yaml';
import type { Path } from '../contract/index.ts';
import type { ExportNote } from './from-live.ts';

/** `value` as YAML with each note as a comment at its path (several notes at one place joined). */
export function modelYaml(value: unknown, notes: readonly ExportNote[] = [], header = ''): string {
  const doc = new Document(value);
  const byPath = new Map<string, { path: Path; messages: string[] }>();
  for (const n of notes) {
    const key = JSON.stringify(n.path);
    const entry = byPath.get(key) ?? { path: n.path, messages: [] };
    entry.messages.push(n.message);
    byPath.set(key, entry);
  }
  for (const { path, messages } of byPath.values()) {
    const node = doc.getIn(path, true) as Node | undefined;
    if (node === undefined) continue;
    const text = messages.join('; ');
    if (isScalar(node)) node.comment = ` ${text}`;
    else node.commentBefore = messages.map((m) => ` ${m}`).join('\n');
  }
  const body = doc.toString({ lineWidth: 0 });
  return header === '' ? body : `${header.split('\n').map((l) => (l === '' ? '#' : `# ${l}`)).join('\n')}\n${body}`;
}

/**
 * A unified diff (as `diff -u` prints it, 3 lines of context) from `before` to `after`, or '' when
 * they are equal; `firstLine` numbers the lines of a window of a file that starts there.
 * Line-based longest common subsequence: models are small, so O(n·m) is fine.
 */
export function unifiedDiff(before: string, after: string, names: { readonly from: string; readonly to: string; readonly firstLine?: number }): string {
  const offset = (names.firstLine ?? 1) - 1;
  if (before === after) return '';
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.at(-1) === '') a.pop();
  if (b.at(-1) === '') b.pop();
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  type Op = { t: ' ' | '-' | '+'; line: string; ai: number; bi: number };
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ t: ' ', line: a[i]!, ai: i++, bi: j++ });
    // Removals before additions, as diff -u writes a changed line.
    else if (i < n && (j === m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) ops.push({ t: '-', line: a[i]!, ai: i++, bi: j });
    else ops.push({ t: '+', line: b[j]!, ai: i, bi: j++ });
  }
  const CONTEXT = 3;
  const hunks: string[] = [];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k]!.t === ' ') k++;
    if (k >= ops.length) break;
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    // Extend while the next change is within 2 × context of the last one.
    for (let last = k; end < ops.length; end++) {
      if (ops[end]!.t !== ' ') last = end;
      else if (end - last > 2 * CONTEXT) break;
    }
    let stop = end;
    while (stop > k && ops[stop - 1]!.t === ' ') stop--;
    stop = Math.min(ops.length, stop + CONTEXT);
    const slice = ops.slice(start, stop);
    const aCount = slice.filter((o) => o.t !== '+').length;
    const bCount = slice.filter((o) => o.t !== '-').length;
    const aStart = aCount === 0 ? slice[0]!.ai : slice[0]!.ai + 1;
    const bStart = bCount === 0 ? slice[0]!.bi : slice[0]!.bi + 1;
    hunks.push(`@@ -${aStart + offset},${aCount} +${bStart + offset},${bCount} @@\n${slice.map((o) => `${o.t}${o.line}`).join('\n')}`);
    k = stop;
  }
  return `--- ${names.from}\n+++ ${names.to}\n${hunks.join('\n')}\n`;
}
