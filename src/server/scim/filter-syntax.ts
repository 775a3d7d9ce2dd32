/**
 * The SCIM filter language (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2), read in linear time.
 *
 * Why our own reader: the registry's scim2-parse-filter 0.2.10 tokenizes with one regular
 * expression whose quoted-string branch, `"(?:[^"\\]|\\.|\n)*"`, matches a line break two ways, so
 * an unterminated string of n line breaks backtracks 2^n times (28 took 2.3 s; 40 would take
 * hours) and one request freezes a process and every tenant on it. Its parser also recurses once
 * per parenthesis. This reader is a hand-written scanner (each character looked at once, no regular
 * expression over the input) and a recursive descent whose depth is bounded before it recurses, so
 * any input of n characters costs O(n) time and O(1) stack per nesting level it allows.
 *
 * Grammar, with the precedence of §3.4.2.2 (`not` > `and` > `or`, parentheses group):
 *
 *     filter    = or
 *     or        = and *("or" and)
 *     and       = unary *("and" unary)
 *     unary     = "not" unary / "(" filter ")" / attrExp / valuePath
 *     valuePath = attrPath "[" filter "]" ["." subAttr SP compareOp SP compValue]
 *     attrExp   = attrPath "pr" / attrPath compareOp compValue
 *     compValue = JSON string / JSON number / true / false / null
 *     attrPath  = [URN ":"] name ["." subAttr]
 *
 * Operators and the literals true/false/null are read without regard to case (clients send `Eq`
 * and `True`). `emails[type eq "work"].value eq "x"` (outside the RFC, sent by some clients) reads
 * as `emails[type eq "work" and value eq "x"]`, which is what it means.
 *
 * Errors carry the character position and a short escaped excerpt, never the whole input.
 */
import { excerpt } from '../../contract/index.ts';

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'lt' | 'ge' | 'le';
export type CompValue = boolean | null | number | string;

export interface Compare { readonly op: CompareOp; readonly attrPath: string; readonly compValue: CompValue }
export interface Present { readonly op: 'pr'; readonly attrPath: string }
export interface Logical { readonly op: 'and' | 'or'; readonly filters: readonly Filter[] }
export interface Not { readonly op: 'not'; readonly filter: Filter }
export interface ValuePath { readonly op: '[]'; readonly attrPath: string; readonly valFilter: Filter }
export type Filter = Compare | Present | Logical | Not | ValuePath;

/** A PATCH path: `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each optionally prefixed by a schema URN. */
export interface PatchPath {
  /** The schema URN prefix as written (without the trailing colon), if any. */
  readonly urn?: string;
  readonly attr: string;
  readonly filter?: Filter;
  readonly sub?: string;
}

export const COMPARE_OPS: ReadonlySet<string> = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le']);

/** Nesting (parentheses, `not`, value filters) allowed before the reader refuses. */
export const MAX_FILTER_DEPTH = 32;

export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';
  constructor(
    readonly reason: string,
    /** Character offset (0-based) in the input. */
    readonly at: number,
    input: string,
  ) {
    // Near the end, the excerpt shows what came before: "the filter ended" after what.
    super(`${reason} at character ${at + 1} (${excerpt(input, Math.max(0, Math.min(at, input.length - 12)), 16)})`);
  }
}

type TokenKind = 'word' | 'string' | 'number' | '(' | ')' | '[' | ']' | '.' | 'end';
interface Token { readonly kind: TokenKind; readonly text: string; readonly at: number; readonly value?: CompValue }

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isAlpha = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** Characters of an attribute path: names, `$ref`, URNs (`urn:ietf:...:2.0:User:userName`), sub-attributes. */
const isWordChar = (c: number) => isAlpha(c) || isDigit(c) || c === 0x5f /* _ */ || c === 0x2d /* - */ || c === 0x24 /* $ */ || c === 0x3a /* : */ || c === 0x2e /* . */;

/** Splits the input into tokens; every character is looked at once. */
export function tokenize(input: string): Token[] {
  const out: Token[] = [];
  const n = input.length;
  let i = 0;
  while (i < n) {
    const c = input.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    const start = i;
    if (c === 0x28 || c === 0x29 || c === 0x5b || c === 0x5d) {
      out.push({ kind: input[i] as '(' | ')' | '[' | ']', text: input[i]!, at: i });
      i++;
      // `].sub` after a value filter: the dot is its own token.
      if (c === 0x5d && input.charCodeAt(i) === 0x2e) {
        out.push({ kind: '.', text: '.', at: i });
        i++;
      }
      continue;
    }
    if (c === 0x22 /* " */) {
      i++;
      let closed = false;
      while (i < n) {
        const d = input.charCodeAt(i);
        if (d === 0x5c /* \ */) {
          i += 2;
          continue;
        }
        i++;
        if (d === 0x22) {
          closed = true;
          break;
        }
      }
      if (!closed) throw new FilterSyntaxError('unterminated string', start, input);
      const text = input.slice(start, i);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw new FilterSyntaxError('invalid string (JSON string syntax: escapes \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX, no raw control characters)', start, input);
      }
      out.push({ kind: 'string', text, at: start, value: value as string });
      continue;
    }
    if (isDigit(c) || c === 0x2d /* - */) {
      // A JSON number, which must end where a token may end.
      while (i < n && !isSpace(input.charCodeAt(i)) && input[i] !== ')' && input[i] !== ']' && input[i] !== '(' && input[i] !== '[') i++;
      const text = input.slice(start, i);
      const value = numberValue(text);
      if (value === undefined) throw new FilterSyntaxError('invalid number', start, input);
      out.push({ kind: 'number', text, at: start, value });
      continue;
    }
    if (isAlpha(c) || c === 0x24 || c === 0x5f) {
      while (i < n && isWordChar(input.charCodeAt(i))) i++;
      out.push({ kind: 'word', text: input.slice(start, i), at: start });
      continue;
    }
    throw new FilterSyntaxError('unexpected character', start, input);
  }
  out.push({ kind: 'end', text: '', at: n });
  return out;
}

/** A JSON number (RFC 8259 §6), checked by a scan rather than a pattern. */
function numberValue(text: string): number | undefined {
  let i = 0;
  const n = text.length;
  const digits = () => {
    const s = i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    return i - s;
  };
  if (text[i] === '-') i++;
  if (text[i] === '0') i++;
  else if (digits() === 0) return undefined;
  if (text[i] === '.') {
    i++;
    if (digits() === 0) return undefined;
  }
  if (text[i] === 'e' || text[i] === 'E') {
    i++;
    if (text[i] === '+' || text[i] === '-') i++;
    if (digits() === 0) return undefined;
  }
  if (i !== n) return undefined;
  const v = Number(text);
  return Number.isFinite(v) ? v : undefined;
}

class Reader {
  #i = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly input: string,
  ) {}

  peek(): Token {
    return this.tokens[this.#i]!;
  }
  next(): Token {
    const t = this.tokens[this.#i]!;
    if (t.kind !== 'end') this.#i++;
    return t;
  }
  fail(reason: string, t: Token = this.peek()): never {
    throw new FilterSyntaxError(reason, t.at, this.input);
  }
  keyword(word: string): boolean {
    const t = this.peek();
    return t.kind === 'word' && t.text.toLowerCase() === word;
  }
  expect(kind: TokenKind, what: string): Token {
    const t = this.peek();
    if (t.kind !== kind) this.fail(t.kind === 'end' ? `${what} expected, the filter ended` : `${what} expected`);
    return this.next();
  }

  filter(depth: number): Filter {
    if (depth > MAX_FILTER_DEPTH) this.fail(`nested more than ${MAX_FILTER_DEPTH} deep`);
    return this.logical('or', depth, () => this.logical('and', depth, () => this.unary(depth)));
  }

  logical(op: 'and' | 'or', depth: number, operand: () => Filter): Filter {
    const first = operand();
    if (!this.keyword(op)) return first;
    const filters = [first];
    while (this.keyword(op)) {
      this.next();
      filters.push(operand());
    }
    return { op, filters };
  }

  unary(depth: number): Filter {
    const t = this.peek();
    if (t.kind === '(') {
      this.next();
      const inner = this.filter(depth + 1);
      this.expect(')', "')'");
      return inner;
    }
    if (this.keyword('not')) {
      this.next();
      if (depth + 1 > MAX_FILTER_DEPTH) this.fail(`nested more than ${MAX_FILTER_DEPTH} deep`);
      return { op: 'not', filter: this.unary(depth + 1) };
    }
    if (t.kind !== 'word') this.fail(t.kind === 'end' ? 'an attribute expected, the filter ended' : 'an attribute, "not" or "(" expected');
    const attrPath = this.next().text;
    if (this.peek().kind === '[') {
      this.next();
      if (depth + 1 > MAX_FILTER_DEPTH) this.fail(`nested more than ${MAX_FILTER_DEPTH} deep`);
      const inner = this.filter(depth + 1);
      this.expect(']', "']'");
      if (this.peek().kind !== '.') return { op: '[]', attrPath, valFilter: inner };
      // attr[filter].sub op value: a further condition on the same values.
      this.next();
      const sub = this.expect('word', 'a sub-attribute name').text;
      const term = this.comparison(sub);
      return { op: '[]', attrPath, valFilter: { op: 'and', filters: [inner, term] } };
    }
    return this.comparison(attrPath);
  }

  comparison(attrPath: string): Compare | Present {
    const opTok = this.peek();
    if (opTok.kind !== 'word') this.fail(opTok.kind === 'end' ? `an operator expected after the attribute, the filter ended` : 'an operator (eq, ne, co, sw, ew, gt, lt, ge, le, pr) expected');
    const op = opTok.text.toLowerCase();
    if (op === 'pr') {
      this.next();
      return { op: 'pr', attrPath };
    }
    if (!COMPARE_OPS.has(op)) this.fail('an operator (eq, ne, co, sw, ew, gt, lt, ge, le, pr) expected');
    this.next();
    return { op: op as CompareOp, attrPath, compValue: this.value() };
  }

  value(): CompValue {
    const t = this.next();
    if (t.kind === 'string' || t.kind === 'number') return t.value!;
    if (t.kind === 'word') {
      const w = t.text.toLowerCase();
      if (w === 'true') return true;
      if (w === 'false') return false;
      if (w === 'null') return null;
    }
    return this.fail(t.kind === 'end' ? 'a value expected, the filter ended' : 'a value (a quoted string, a number, true, false or null) expected', t);
  }
}

/** Reads a filter; throws FilterSyntaxError. */
export function parseFilter(input: string): Filter {
  const r = new Reader(tokenize(input), input);
  const f = r.filter(0);
  if (r.peek().kind !== 'end') r.fail('unexpected text after the filter');
  return f;
}

/**
 * Reads a PATCH path. The URN prefix is split off at the last colon before the attribute name (a
 * schema URN has colons and dots of its own: `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User`).
 */
export function parsePatchPath(input: string): PatchPath {
  const r = new Reader(tokenize(input), input);
  const head = r.expect('word', 'an attribute path');
  const { urn, name } = splitUrn(head.text);
  const dot = name.indexOf('.');
  const attr = dot < 0 ? name : name.slice(0, dot);
  let sub = dot < 0 ? undefined : name.slice(dot + 1);
  if (attr === '' || (sub !== undefined && (sub === '' || sub.includes('.')))) r.fail('not an attribute path (attr, attr.sub, attr[filter] or attr[filter].sub)', head);
  let filter: Filter | undefined;
  if (r.peek().kind === '[') {
    if (sub !== undefined) r.fail('a value filter belongs to the attribute, before any sub-attribute');
    r.next();
    filter = r.filter(1);
    r.expect(']', "']'");
    if (r.peek().kind === '.') {
      r.next();
      const subTok = r.expect('word', 'a sub-attribute name');
      if (subTok.text.includes('.') || subTok.text.includes(':')) r.fail('a sub-attribute name expected', subTok);
      sub = subTok.text;
    }
  }
  if (r.peek().kind !== 'end') r.fail('unexpected text after the path');
  return { ...(urn === undefined ? {} : { urn }), attr, ...(filter === undefined ? {} : { filter }), ...(sub === undefined ? {} : { sub }) };
}

/** `urn:...:User:name.sub` → the URN and `name.sub`; a plain path has no URN. */
export function splitUrn(path: string): { urn?: string; name: string } {
  if (!/^urn:/i.test(path)) return { name: path };
  const colon = path.lastIndexOf(':');
  return { urn: path.slice(0, colon), name: path.slice(colon + 1) };
}

/** A filter written back as text (for log lines and for storage that keeps a filter). */
export function stringifyFilter(f: Filter, parenthesizeOr = false): string {
  switch (f.op) {
    case 'pr':
      return `${f.attrPath} pr`;
    case 'and':
      return f.filters.map((x) => stringifyFilter(x, true)).join(' and ');
    case 'or': {
      const s = f.filters.map((x) => stringifyFilter(x)).join(' or ');
      return parenthesizeOr ? `(${s})` : s;
    }
    case 'not':
      return `not (${stringifyFilter(f.filter)})`;
    case '[]':
      return `${f.attrPath}[${stringifyFilter(f.valFilter)}]`;
    default:
      return `${f.attrPath} ${f.op} ${JSON.stringify(f.compValue)}`;
  }
}
