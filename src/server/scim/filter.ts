/**
 * Filters (RFC 7644 §3.4.2.2), read in linear time by filter-syntax.ts into a plain AST, then checked against
 * the schema table: attribute names resolved without regard to case, unknown attributes and
 * comparisons that make no sense for a type refused (`invalidFilter`), a complex attribute with a
 * `value` sub-attribute compared through it (`emails co "@example.com"`), values of attributes
 * that ignore case compared lowercased, dateTimes compared as instants. `matchesFilter` then runs on
 * a "filter view" of each resource, prepared the same way.
 *
 * `eq` on id, userName or externalId (alone or in an `and`) is also handed to the storage indexes
 * (`indexedTerm`), so a provisioning client's `userName eq "x"` never scans the tenant.
 */
import { scimErrors } from './errors.ts';
import { FilterSyntaxError, parseFilter, stringifyFilter, type CompValue, type Filter } from './filter-syntax.ts';
import { attributesOf, findAttr, flatten, ignoresCase, resolvePath, type Attr, type ResourceKind } from './_schema.ts';
import { excerpt } from '../../contract/index.ts';

/** Longer filters are refused: no client needs one (reading is linear, evaluating is per resource). */
export const MAX_FILTER_LENGTH = 2048;

export interface CompiledFilter {
  readonly ast: Filter;
  /** Whether a resource (its full representation) matches. */
  matches(resource: Record<string, unknown>): boolean;
}

const COMPARE = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le']);
const SUBSTRING = new Set(['co', 'sw', 'ew']);

export function compileFilter(kind: ResourceKind, text: string): CompiledFilter {
  if (text.length > MAX_FILTER_LENGTH) throw scimErrors.invalidFilter(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  let ast: Filter;
  try {
    ast = parseFilter(text);
  } catch (err) {
    if (err instanceof FilterSyntaxError) throw scimErrors.invalidFilter(`the filter cannot be read: ${err.message}`);
    throw err;
  }
  const canonical = canonicalize(kind, ast, undefined, 0);
  return { ast: canonical, matches: (resource) => matchesFilter(filterView(kind, resource), canonical) };
}

/**
 * Whether a filter view matches: RFC 7644 §3.4.2.2's operators over canonical paths. A comparison
 * on a multi-valued attribute matches when any value does; an absent attribute matches only `ne`
 * and `not`.
 */
export function matchesFilter(view: unknown, f: Filter): boolean {
  switch (f.op) {
    case 'and':
      return f.filters.every((x) => matchesFilter(view, x));
    case 'or':
      return f.filters.some((x) => matchesFilter(view, x));
    case 'not':
      return !matchesFilter(view, f.filter);
    case '[]':
      return anyAt(view, f.attrPath.split('.'), (v) => matchesFilter(v, f.valFilter));
    case 'pr':
      return anyAt(view, f.attrPath.split('.'), (v) => v !== undefined && v !== null && !(typeof v === 'string' && v === '') && !(Array.isArray(v) && v.length === 0));
    default:
      return anyAt(view, f.attrPath.split('.'), (v) => compare(f.op, v, f.compValue));
  }
}

/** Whether `test` holds for some value at `path` (arrays are searched at every step). */
function anyAt(value: unknown, path: readonly string[], test: (v: unknown) => boolean): boolean {
  if (Array.isArray(value)) return value.some((v) => anyAt(v, path, test));
  if (path.length === 0) return test(value);
  if (value === null || typeof value !== 'object') return false;
  const v = (value as Record<string, unknown>)[path[0]!];
  return v === undefined ? false : anyAt(v, path.slice(1), test);
}

function compare(op: string, v: unknown, c: CompValue): boolean {
  switch (op) {
    case 'eq':
      return v === c;
    case 'ne':
      return v !== c;
    case 'co':
      return typeof v === 'string' && typeof c === 'string' && v.includes(c);
    case 'sw':
      return typeof v === 'string' && typeof c === 'string' && v.startsWith(c);
    case 'ew':
      return typeof v === 'string' && typeof c === 'string' && v.endsWith(c);
    default: {
      if (c === null || typeof v !== typeof c || (typeof v !== 'number' && typeof v !== 'string')) return false;
      const a = v as number | string;
      const b = c as number | string;
      return op === 'gt' ? a > b : op === 'ge' ? a >= b : op === 'lt' ? a < b : a <= b;
    }
  }
}

/** The filter with canonical attribute names and comparison values; refuses what cannot be compared. */
function canonicalize(kind: ResourceKind, f: Filter, parent: Attr | undefined, depth: number): Filter {
  if (depth > 32) throw scimErrors.invalidFilter('the filter is nested too deeply');
  switch (f.op) {
    case 'and':
    case 'or':
      return { op: f.op, filters: f.filters.map((x) => canonicalize(kind, x, parent, depth + 1)) };
    case 'not':
      return { op: 'not', filter: canonicalize(kind, f.filter, parent, depth + 1) };
    case '[]': {
      if (parent !== undefined) throw scimErrors.invalidFilter(`'${f.attrPath}[...]' cannot be nested in another value filter`);
      const r = resolvePath(kind, f.attrPath);
      if (r === undefined || r.sub !== undefined || r.attr.type !== 'complex') {
        throw scimErrors.invalidFilter(`'${f.attrPath}[...]': value filters apply to complex attributes; ${kind} has no complex attribute ${excerpt(f.attrPath)}`);
      }
      return { op: '[]', attrPath: r.attr.name, valFilter: canonicalize(kind, f.valFilter, r.attr, depth + 1) };
    }
    default: {
      const { attr, path } = target(kind, f.attrPath, parent);
      if (f.op === 'pr') return { op: 'pr', attrPath: path };
      if (!COMPARE.has(f.op)) throw scimErrors.invalidFilter(`unknown operator '${f.op}'`);
      if (attr.type === 'complex') throw scimErrors.invalidFilter(`${excerpt(f.attrPath)} is complex: compare one of its sub-attributes, e.g. ${attr.name}.${attr.subAttributes?.[0]?.name ?? 'value'}`);
      return { op: f.op, attrPath: path, compValue: comparable(attr, f.op, f.compValue, f.attrPath) };
    }
  }
}

/** The attribute a filter term compares, and its canonical path (complex attributes compare their `value`). */
function target(kind: ResourceKind, attrPath: string, parent: Attr | undefined): { attr: Attr; path: string } {
  if (parent !== undefined) {
    const sub = findAttr(parent.subAttributes, attrPath);
    if (sub === undefined) throw scimErrors.invalidFilter(`'${parent.name}' has no sub-attribute ${excerpt(attrPath)}`);
    return { attr: sub, path: sub.name };
  }
  const r = resolvePath(kind, attrPath);
  if (r === undefined) {
    throw scimErrors.invalidFilter(`${kind} resources have no attribute ${excerpt(attrPath)} to filter on; they have ${attributesOf(kind).map((a) => a.name).join(', ')}`);
  }
  if (r.sub !== undefined) return { attr: r.sub, path: r.canonical };
  const value = r.attr.type === 'complex' ? findAttr(r.attr.subAttributes, 'value') : undefined;
  return value === undefined ? { attr: r.attr, path: r.canonical } : { attr: value, path: `${r.attr.name}.value` };
}

/** A comparison value as an attribute's values are compared (booleans from "True", lowercased strings of case-ignoring attributes, instants); refuses what makes no sense. Also the judge of PATCH paths' value filters. */
export function comparable(attr: Attr, op: string, value: unknown, as: string): boolean | null | number | string {
  if (value === null) {
    if (op === 'eq' || op === 'ne') return null;
    throw scimErrors.invalidFilter(`${excerpt(as)} ${op} null compares nothing`);
  }
  switch (attr.type) {
    case 'boolean': {
      const b = typeof value === 'string' && /^(true|false)$/i.test(value) ? value.toLowerCase() === 'true' : value;
      if (typeof b !== 'boolean' || (op !== 'eq' && op !== 'ne')) throw scimErrors.invalidFilter(`${excerpt(as)} is a boolean: compare it with eq or ne and true or false`);
      return b;
    }
    case 'dateTime': {
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value)) || SUBSTRING.has(op)) {
        throw scimErrors.invalidFilter(`${excerpt(as)} is a date and time: compare it with eq, ne, gt, ge, lt or le and a quoted xsd:dateTime`);
      }
      return Date.parse(value);
    }
    case 'integer':
    case 'decimal':
      if (typeof value !== 'number' || SUBSTRING.has(op)) throw scimErrors.invalidFilter(`${excerpt(as)} is a number: compare it with eq, ne, gt, ge, lt or le and a number`);
      return value;
    default:
      // Strings order lexicographically (gt, lt, ...), as RFC 7644 has it.
      if (typeof value !== 'string') throw scimErrors.invalidFilter(`${excerpt(as)} is a string: compare it with a quoted string`);
      return ignoresCase(attr) ? value.toLowerCase() : value;
  }
}

/** A resource as filters see it: extensions flattened, strings of case-ignoring attributes lowercased, dateTimes as instants. */
export function filterView(kind: ResourceKind, resource: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flatten(kind, resource))) {
    const attr = findAttr(attributesOf(kind), k);
    if (attr !== undefined) out[attr.name] = viewOf(attr, v);
  }
  return out;
}

/** One value as filters see it (an item of a multi-valued attribute: pass the attribute with `multiValued: false`). */
export function viewOf(attr: Attr, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => viewOf({ ...attr, multiValued: false }, v));
  if (attr.type === 'complex' && value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const sub = findAttr(attr.subAttributes, k);
      if (sub !== undefined) out[sub.name] = viewOf(sub, v);
    }
    return out;
  }
  if (attr.type === 'dateTime' && typeof value === 'string') return Date.parse(value);
  if (typeof value === 'string' && ignoresCase(attr)) return value.toLowerCase();
  return value;
}

/** An `eq` on an indexed attribute that every match must satisfy: what storage can look up directly. */
export function indexedTerm(ast: Filter): { readonly attr: 'id' | 'userName' | 'externalId'; readonly value: string } | undefined {
  if (ast.op === 'eq' && typeof ast.compValue === 'string' && (ast.attrPath === 'id' || ast.attrPath === 'userName' || ast.attrPath === 'externalId')) {
    return { attr: ast.attrPath, value: ast.compValue };
  }
  if (ast.op === 'and') for (const f of ast.filters) {
    const t = indexedTerm(f);
    if (t !== undefined) return t;
  }
  return undefined;
}

/** For log lines and messages. */
export const filterText = (f: Filter): string => stringifyFilter(f);
