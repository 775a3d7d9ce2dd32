/**
 * One model file as text → parsed YAML document with positions, or problems. Pure: no I/O.
 * Guards against hostile input live here: binary data, invalid UTF-8, oversize text, alias bombs,
 * pathological nesting, duplicate keys.
 */
import { LineCounter, parseDocument, isMap, isSeq, isPair, isScalar, type Document, type Node } from 'yaml';
import type { PathSegment, Problem } from './problems.ts';

/** Largest model file accepted. A big organisation splits its model into a directory of files. */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;
/** Nesting the model never needs; deeper documents are refused before they can exhaust the stack. */
export const MAX_DEPTH = 64;
/** Aliases a model never needs many of; bombs expand a few aliases into millions of nodes. */
export const MAX_ALIASES = 100;

export interface SourceDoc {
  readonly file: string;
  readonly doc: Document.Parsed;
  readonly lines: LineCounter;
  readonly value: unknown;
}

export type ParseResult = { readonly ok: true; readonly source: SourceDoc } | { readonly ok: false; readonly problems: Problem[] };

const fileProblem = (file: string, code: string, message: string, line?: number, col?: number): Problem => ({
  code,
  path: [],
  message,
  file,
  line,
  col,
});

/** Bracket depth of flow collections and indentation depth, estimated without parsing. */
function nestingTooDeep(text: string): { line: number; col: number } | undefined {
  let depth = 0;
  let line = 1;
  let col = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    col++;
    if (ch === 10) {
      line++;
      col = 0;
      continue;
    }
    if (quote !== undefined) {
      if (text[i] === quote && text[i - 1] !== '\\') quote = undefined;
      continue;
    }
    if (ch === 34 || ch === 39) {
      // Only a quote that opens a scalar starts a string; apostrophes inside words do not.
      const prev = text[i - 1];
      if (prev === undefined || ' \t\n[{,:-'.includes(prev)) quote = text[i];
    } else if (ch === 91 || ch === 123) {
      if (++depth > MAX_DEPTH) return { line, col };
    } else if (ch === 93 || ch === 125) {
      depth = Math.max(0, depth - 1);
    } else if (ch === 35 && (col === 1 || text[i - 1] === ' ')) {
      // A comment: skip to the end of the line so brackets in it do not count.
      const nl = text.indexOf('\n', i);
      if (nl < 0) break;
      col += nl - i - 1;
      i = nl - 1;
    }
  }
  return undefined;
}

/**
 * Block nesting estimated from indentation: each deeper indentation opens a level, and so does
 * each `- ` that starts a line's content. Deterministic, unlike waiting for the stack to run out.
 */
function indentationTooDeep(text: string): { line: number; col: number } | undefined {
  const indents: number[] = [];
  let line = 0;
  for (const raw of text.split('\n')) {
    line++;
    const indent = raw.length - raw.trimStart().length;
    const content = raw.slice(indent);
    if (content === '' || content.startsWith('#')) continue;
    while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
    indents.push(indent);
    const dashes = /^(?:-\s+)*/.exec(content)![0].split('-').length - 1;
    if (indents.length + dashes > MAX_DEPTH) return { line, col: indent + 1 };
  }
  return undefined;
}

/** True when a parsed value nests deeper than MAX_DEPTH (an iterative walk: no stack to exhaust). */
export function blockDepthTooDeep(value: unknown): boolean {
  // Iterative walk of the parsed value: block-style nesting is not visible to the bracket scan.
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (d > MAX_DEPTH) return true;
    if (v !== null && typeof v === 'object') {
      for (const child of Object.values(v as Record<string, unknown>)) stack.push({ v: child, d: d + 1 });
    }
  }
  return false;
}

export function decodeModelBytes(file: string, bytes: Uint8Array): { ok: true; text: string } | { ok: false; problems: Problem[] } {
  if (bytes.byteLength > MAX_FILE_BYTES) {
    const mib = (bytes.byteLength / 1024 / 1024).toFixed(1);
    return {
      ok: false,
      problems: [fileProblem(file, 'file-too-large', `file is ${mib} MiB; a model file may hold at most ${MAX_FILE_BYTES / 1024 / 1024} MiB (split the model into a directory of files)`)],
    };
  }
  if (bytes.includes(0)) {
    return { ok: false, problems: [fileProblem(file, 'binary-file', 'file holds binary data (a NUL byte), not YAML or JSON text')] };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { ok: false, problems: [fileProblem(file, 'not-utf8', 'file is not valid UTF-8 text')] };
  }
  return { ok: true, text };
}

export function parseModelText(file: string, text: string): ParseResult {
  const deep = nestingTooDeep(text) ?? indentationTooDeep(text);
  if (deep !== undefined) {
    return { ok: false, problems: [fileProblem(file, 'too-deep', `nesting deeper than ${MAX_DEPTH} levels`, deep.line, deep.col)] };
  }
  const lines = new LineCounter();
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false, strict: true, stringKeys: false });
  } catch (err) {
    // The parser should report, not throw; if it throws (e.g. stack exhaustion) the file is hostile.
    const deepErr = err instanceof RangeError;
    return {
      ok: false,
      problems: [fileProblem(file, deepErr ? 'too-deep' : 'unparseable', deepErr ? `nesting too deep to read (a model needs at most ${MAX_DEPTH} levels)` : `cannot parse file: ${firstLine((err as Error).message)}`)],
    };
  }
  // An unknown tag (e.g. !!js/function) would silently become a plain string: refuse it instead.
  const errors = [...doc.errors, ...doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED')];
  if (errors.length > 0) {
    return {
      ok: false,
      problems: errors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        // The parser reports stack exhaustion as an ordinary error or warning: check it first.
        const [code, message] = /call stack/i.test(e.message)
          ? ['too-deep', `nesting too deep to read (a model needs at most ${MAX_DEPTH} levels)`]
          : e.code === 'DUPLICATE_KEY'
            ? ['duplicate-key', 'duplicate key: each key may appear once in a mapping']
            : e.code === 'TAG_RESOLVE_FAILED'
              ? ['yaml-tag', `unsupported tag: ${firstLine(e.message)}`]
              : ['yaml-syntax', firstLine(e.message)];
        return fileProblem(file, code, message, pos.line, pos.col);
      }),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    const msg = (err as Error).message;
    const alias = /alias/i.test(msg);
    return {
      ok: false,
      problems: [
        fileProblem(
          file,
          alias ? 'alias-bomb' : 'unparseable',
          alias ? `too many alias expansions (more than ${MAX_ALIASES}): refusing a document that may be an alias bomb` : `cannot read file: ${firstLine(msg)}`,
        ),
      ],
    };
  }
  if (blockDepthTooDeep(value)) {
    return { ok: false, problems: [fileProblem(file, 'too-deep', `nesting deeper than ${MAX_DEPTH} levels`)] };
  }
  return { ok: true, source: { file, doc, lines, value } };
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

export interface Position {
  readonly line: number;
  readonly col: number;
}

/**
 * Position of `path` in the document. `prefer: 'key'` points at a mapping key (unknown fields);
 * otherwise at the value. When the path does not exist (a missing field), the deepest existing
 * node along it is used.
 */
export function locate(source: SourceDoc, path: readonly PathSegment[], prefer: 'key' | 'value' = 'value'): Position | undefined {
  let node: unknown = source.doc.contents;
  let best: Node | undefined = (node as Node | null) ?? undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (pair === undefined) break;
      const last = i === path.length - 1;
      if (last && prefer === 'key' && isScalar(pair.key)) {
        best = pair.key;
        break;
      }
      node = pair.value;
      best = (pair.value as Node | null) ?? (pair.key as Node);
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg];
      if (item === undefined) break;
      node = item;
      best = item as Node;
    } else {
      break;
    }
  }
  const offset = best?.range?.[0];
  if (offset === undefined) return undefined;
  const pos = source.lines.linePos(offset);
  return { line: pos.line, col: pos.col };
}
