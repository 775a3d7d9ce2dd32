/**
 * PATCH (RFC 7644 §3.5.2): the request is checked and brought to canonical form against the schema
 * table, applied here to a copy of the resource's attributes, and the result is checked again as a
 * whole (types, required attributes, one primary value). Paths are read by filter-syntax.ts in
 * linear time, and only canonical names from the table ever become object keys. (scim-patch, used
 * before, re-read every path with scim2-parse-filter's exponential tokenizer and splits paths with
 * patterns that backtrack polynomially: a PATCH path was a way to freeze a process.)
 *
 * What clients send in the wild and this accepts: operation names in any case ("Replace", Entra
 * ID), booleans as strings ("False", Entra ID), `remove` with a value list on a multi-valued
 * attribute (`{"op":"remove","path":"members","value":[{"value":"<id>"}]}`, Entra ID), a path-less
 * `replace` carrying the resource's own `id` (Okta), null values as "unassign", path-less values
 * keyed by attribute paths (`"name.givenName"`, `"urn:...:enterprise:2.0:User:employeeNumber"`,
 * Entra ID) or by an extension's URN with an object of its attributes (RFC 7644 §3.5.2), an
 * extension's URN as the path (each of its attributes an operation).
 *
 * Extension attributes are worked on flattened (by their plain names, _schema.ts `flatten`); the
 * result is nested again under the extension's URN, as it is stored and answered.
 */
import { excerpt } from '../../contract/index.ts';
import { scimErrors } from './errors.ts';
import { FilterSyntaxError, parsePatchPath, type Filter } from './filter-syntax.ts';
import { comparable, matchesFilter, viewOf } from './filter.ts';
import { URN, attributesOf, attributesUnder, extensionNamed, findAttr, flatten, nest, type Attr, type ExtensionSpec, type ResourceKind } from './_schema.ts';
import { attributeValue, extensionEntries, requireAttributes, type Attrs } from './_values.ts';

/** Operations one PATCH may carry. */
export const MAX_OPERATIONS = 1000;

type Op = 'add' | 'replace' | 'remove';
interface CanonicalOp {
  readonly op: Op;
  readonly target: Target;
  readonly value?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface PatchOptions {
  /** Items a multi-valued attribute may hold (members of large groups). */
  readonly maxItems?: Readonly<Record<string, number>>;
  /** Brings each item of a multi-valued attribute to the form it is kept in (group members: `{value}`). */
  readonly item?: (attr: string, item: Record<string, unknown>, at: string) => Record<string, unknown>;
  /** The resource's id: a path-less value may repeat it (Okta does), never change it. */
  readonly id: string;
}

/** Applies a PatchOp message to a resource's writable attributes (extensions nested, as stored); returns the new attributes, nested. */
export function applyPatch(kind: ResourceKind, current: Attrs, message: unknown, opts: PatchOptions): Attrs {
  if (!isObject(message)) throw scimErrors.invalidSyntax('the request body must be a PatchOp message (a JSON object)');
  const schemas = Object.entries(message).find(([k]) => k.toLowerCase() === 'schemas')?.[1];
  if (!Array.isArray(schemas) || schemas.length !== 1 || typeof schemas[0] !== 'string' || schemas[0].toLowerCase() !== URN.patchOp.toLowerCase()) {
    throw scimErrors.invalidSyntax(`'schemas' of a PATCH must be ["${URN.patchOp}"]`);
  }
  const operations = Object.entries(message).find(([k]) => k.toLowerCase() === 'operations')?.[1];
  if (!Array.isArray(operations) || operations.length === 0) throw scimErrors.invalidSyntax("'Operations' must list at least one operation");
  if (operations.length > MAX_OPERATIONS) throw scimErrors.tooMany(`a PATCH may carry at most ${MAX_OPERATIONS} operations`);
  const ops = operations.flatMap((o, i) => canonicalOps(kind, o, `Operations[${i}]`, opts));
  const result = flatten(kind, structuredClone(current));
  for (const op of ops) applyOne(result, op);
  return nest(kind, revalidate(kind, result, opts));
}

/** One canonical operation on the attributes (in place). */
function applyOne(attrs: Attrs, { op, target: t, value }: CanonicalOp): void {
  const name = t.attr.name;
  if (t.filter === undefined) {
    if (t.sub === undefined) {
      if (op === 'remove') delete attrs[name];
      else if (op === 'add' && t.attr.multiValued === true && Array.isArray(attrs[name])) attrs[name] = [...(attrs[name] as unknown[]), ...(value as unknown[])];
      else if (op === 'add' && t.attr.type === 'complex' && t.attr.multiValued !== true && isObject(attrs[name]) && !namesAnother(attrs[name] as Attrs, value as Attrs)) {
        attrs[name] = { ...(attrs[name] as Attrs), ...(value as Attrs) };
      }
      else attrs[name] = value;
      return;
    }
    // attr.sub: on a complex attribute, or on every value of a multi-valued one (RFC 7644 §3.5.2.3).
    const sub = t.sub.name;
    if (t.attr.multiValued === true) {
      const items = Array.isArray(attrs[name]) ? (attrs[name] as Attrs[]) : [];
      if (op !== 'remove' && items.length === 0) {
        attrs[name] = [{ [sub]: value }];
        return;
      }
      attrs[name] = items.map((item) => withSub(item, sub, op, value));
      return;
    }
    attrs[name] = withSub(isObject(attrs[name]) ? (attrs[name] as Attrs) : {}, sub, op, value);
    return;
  }
  // attr[filter] or attr[filter].sub: the values that match.
  const items = Array.isArray(attrs[name]) ? (attrs[name] as Attrs[]) : [];
  const one = { ...t.attr, multiValued: false };
  const hit = items.map((item) => matchesFilter(viewOf(one, item), t.filter!));
  if (op === 'remove') {
    // Removing values that are not there removes nothing.
    attrs[name] = t.sub === undefined ? items.filter((_, i) => !hit[i]) : items.map((item, i) => (hit[i] ? withSub(item, t.sub!.name, 'remove', undefined) : item));
    return;
  }
  if (!hit.includes(true)) {
    // No value matches: a filter of `eq` terms names the value to add (Entra ID and Okta replace
    // `emails[type eq "work"].value` on a user who has no work email yet); anything else has no target.
    const seed = eqTerms(t.seed!);
    if (seed === undefined) throw scimErrors.noTarget(`'${t.path}' matches no value`);
    const added = t.sub === undefined ? { ...seed, ...(value as Attrs) } : { ...seed, [t.sub.name]: value };
    attrs[name] = [...items, added];
    return;
  }
  attrs[name] = items.map((item, i) => {
    if (!hit[i]) return item;
    if (t.sub !== undefined) return withSub(item, t.sub.name, op, value);
    return op === 'add' ? { ...item, ...(value as Attrs) } : (value as Attrs);
  });
}

/**
 * Whether an `add` to a reference (a complex attribute with a `value`) names another one: then the
 * old one's other sub-attributes ($ref, displayName) described the old referent and go with it,
 * instead of being merged onto the new one (Entra ID changes a `manager` with `add`).
 */
function namesAnother(current: Attrs, value: Attrs): boolean {
  return value.value !== undefined && current.value !== undefined && value.value !== current.value;
}

function withSub(item: Attrs, sub: string, op: Op, value: unknown): Attrs {
  const out = { ...item };
  if (op === 'remove') delete out[sub];
  else out[sub] = value;
  return out;
}

/** `type eq "work"` (or an `and` of such terms) as the object it describes, values as written; undefined for any other filter. */
function eqTerms(f: Filter): Attrs | undefined {
  if (f.op === 'eq' && !f.attrPath.includes('.')) return { [f.attrPath]: f.compValue };
  if (f.op !== 'and') return undefined;
  const out: Attrs = {};
  for (const x of f.filters) {
    const part = eqTerms(x);
    if (part === undefined) return undefined;
    Object.assign(out, part);
  }
  return out;
}

/** The attributes (flattened) after the operations, checked as a whole (each one already was on its way in). */
function revalidate(kind: ResourceKind, attrs: Attrs, opts: PatchOptions): Attrs {
  const out: Attrs = {};
  for (const [k, v] of Object.entries(attrs)) {
    const attr = findAttr(attributesOf(kind), k)!;
    const x = attributeValue(attr, v, attr.name, { maxItems: opts.maxItems?.[attr.name] });
    if (x !== undefined) out[attr.name] = attr.multiValued === true ? dedupe(x as unknown[]) : x;
  }
  requireAttributes(kind, out);
  return out;
}

const dedupe = (items: unknown[]): unknown[] => {
  const seen = new Set<string>();
  return items.filter((i) => {
    const k = JSON.stringify(i);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
};

function canonicalOps(kind: ResourceKind, raw: unknown, at: string, opts: PatchOptions): CanonicalOp[] {
  if (!isObject(raw)) throw scimErrors.invalidSyntax(`'${at}' must be an operation object {op, path, value}`);
  const field = (name: string) => Object.entries(raw).find(([k]) => k.toLowerCase() === name)?.[1];
  const opName = field('op');
  if (typeof opName !== 'string' || !/^(add|replace|remove)$/i.test(opName)) throw scimErrors.invalidSyntax(`'${at}.op' must be add, replace or remove`);
  const op = opName.toLowerCase() as Op;
  const path = field('path');
  const value = field('value');
  if (path !== undefined && typeof path !== 'string') throw scimErrors.invalidPath(`'${at}.path' must be a string`);
  if (path === undefined || path === '') {
    if (op === 'remove') throw scimErrors.noTarget(`'${at}': a remove needs a path`);
    return pathless(kind, op, value, at, opts);
  }
  const ext = extensionNamed(kind, path.trim());
  if (ext !== undefined) {
    // The extension itself: remove all of its attributes, or add/replace those of the value object.
    if (op === 'remove') return ext.attributes.filter((a) => a.mutability !== 'readOnly').map((attr) => ({ op, target: { attr, path: attr.name } }));
    return extensionOps(ext, op, value, `${at}.value`, opts);
  }
  const target = parsePath(kind, path, at);
  if (op === 'remove') {
    if (value !== undefined && value !== null && target.attr.multiValued === true && target.filter === undefined && target.sub === undefined) {
      return removeValues(target, value, at, opts);
    }
    return [{ op, target }];
  }
  if (value === undefined) throw scimErrors.invalidValue(`'${at}': ${op} needs a value`);
  const checked = targetValue(target, value, `${at}.value`, opts);
  // Null (unassigned) as the value of add or replace: the attribute is removed (RFC 7643 §2.5).
  return checked === undefined ? [{ op: 'remove', target }] : [{ op, target, value: checked }];
}

interface Target {
  readonly attr: Attr;
  /** Canonical names and values: what is matched. */
  readonly filter?: Filter;
  /** Canonical names, values as written: what a replace seeds a missing value with. */
  readonly seed?: Filter;
  readonly sub?: Attr;
  /** Canonical, for messages. */
  readonly path: string;
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, optionally prefixed by the resource's schema URN. */
function parsePath(kind: ResourceKind, raw: string, at: string): Target {
  let p;
  try {
    p = parsePatchPath(raw);
  } catch (err) {
    if (err instanceof FilterSyntaxError) throw scimErrors.invalidPath(`'${at}.path' is not an attribute path: ${err.message}`);
    throw err;
  }
  const under = attributesUnder(kind, p.urn);
  if (under === undefined) throw scimErrors.invalidPath(`'${at}.path' names an unknown schema: ${excerpt(p.urn!)}`);
  const attr = findAttr(under, p.attr);
  if (attr === undefined) throw scimErrors.invalidPath(`'${at}.path': ${p.urn === undefined ? `${kind} resources have` : `${excerpt(p.urn)} has`} no attribute ${excerpt(p.attr)}`);
  if (attr.mutability === 'readOnly') throw scimErrors.mutability(`'${at}.path': '${attr.name}' is read-only`);
  let filter: Filter | undefined;
  let seed: Filter | undefined;
  if (p.filter !== undefined) {
    if (attr.multiValued !== true || attr.type !== 'complex') throw scimErrors.invalidPath(`'${at}.path': value filters apply to multi-valued complex attributes, not '${attr.name}'`);
    seed = subFilter(attr, p.filter, at);
    filter = comparedAs(attr, seed);
  }
  let sub: Attr | undefined;
  if (p.sub !== undefined) {
    sub = findAttr(attr.subAttributes, p.sub);
    if (sub === undefined) throw scimErrors.invalidPath(`'${at}.path': '${attr.name}' has no sub-attribute ${excerpt(p.sub)}`);
    if (sub.mutability === 'readOnly') throw scimErrors.mutability(`'${at}.path': '${attr.name}.${sub.name}' is read-only`);
  }
  const text = `${attr.name}${filter === undefined ? '' : '[…]'}${sub === undefined ? '' : `.${sub.name}`}`;
  return { attr, ...(filter === undefined ? {} : { filter, seed }), ...(sub === undefined ? {} : { sub }), path: text };
}

/** A value filter inside a path, with the sub-attribute names it uses made canonical (values as written). */
function subFilter(attr: Attr, f: Filter, at: string): Filter {
  switch (f.op) {
    case 'and':
    case 'or':
      return { op: f.op, filters: f.filters.map((x) => subFilter(attr, x, at)) };
    case 'not':
      return { op: 'not', filter: subFilter(attr, f.filter, at) };
    case '[]':
      throw scimErrors.invalidPath(`'${at}.path': value filters cannot be nested`);
    default: {
      const sub = findAttr(attr.subAttributes, f.attrPath);
      if (sub === undefined) throw scimErrors.invalidPath(`'${at}.path': '${attr.name}' has no sub-attribute ${excerpt(f.attrPath)}`);
      if (f.op === 'pr') return { op: 'pr', attrPath: sub.name };
      return { op: f.op, attrPath: sub.name, compValue: f.compValue };
    }
  }
}

/**
 * A value filter (canonical names) with its values compared as filters compare them: the same
 * judge as `?filter=` (filter.ts `comparable`), so `emails[primary eq "True"]` (Entra's string
 * booleans) matches the primary email instead of matching nothing and seeding a second one.
 */
function comparedAs(attr: Attr, f: Filter): Filter {
  switch (f.op) {
    case 'and':
    case 'or':
      return { op: f.op, filters: f.filters.map((x) => comparedAs(attr, x)) };
    case 'not':
      return { op: 'not', filter: comparedAs(attr, f.filter) };
    case 'pr':
    case '[]':
      return f;
    default: {
      const sub = findAttr(attr.subAttributes, f.attrPath)!;
      return { op: f.op, attrPath: f.attrPath, compValue: comparable(sub, f.op, f.compValue, `${attr.name}.${sub.name}`) };
    }
  }
}

/** The value of add or replace at a target, checked for the attribute (or sub-attribute) it lands on. */
function targetValue(t: Target, value: unknown, at: string, opts: PatchOptions): unknown {
  if (t.sub !== undefined) return attributeValue(t.sub, value, at);
  if (t.filter !== undefined) {
    // The matched values are replaced (or added to) by this one value: an object of sub-attributes.
    if (!isObject(value)) throw scimErrors.invalidValue(`'${at}' must be an object of ${(t.attr.subAttributes ?? []).map((s) => s.name).join(', ')} (the path names whole values of '${t.attr.name}')`);
    return attributeValue({ ...t.attr, multiValued: false }, value, at);
  }
  if (t.attr.multiValued === true) {
    // A single value for a multi-valued attribute is taken as a list of one (clients do send it so).
    const list = Array.isArray(value) ? value : [value];
    const checked = attributeValue(t.attr, list, at, { maxItems: opts.maxItems?.[t.attr.name] }) as Record<string, unknown>[] | undefined;
    return checked?.map((item, i) => (opts.item === undefined || typeof item !== 'object' ? item : opts.item(t.attr.name, item, `${at}[${i}]`)));
  }
  return attributeValue(t.attr, value, at);
}

/**
 * A path-less add or replace: each attribute of the value object is its own operation. A key may be
 * an attribute path (`name.givenName`, `urn:...:enterprise:2.0:User:employeeNumber`: Entra ID) or an
 * extension's URN with an object of that extension's attributes (RFC 7643 §3.3's JSON form).
 */
function pathless(kind: ResourceKind, op: Op, value: unknown, at: string, opts: PatchOptions): CanonicalOp[] {
  if (!isObject(value)) throw scimErrors.invalidValue(`'${at}.value' must be an object of attributes when there is no path`);
  const out: CanonicalOp[] = [];
  for (const [key, v] of Object.entries(value)) {
    const lower = key.toLowerCase();
    if (lower === 'schemas' || lower === 'meta') continue;
    if (lower === 'id') {
      if (v !== opts.id) throw scimErrors.mutability(`'${at}.value.id': the id of a resource cannot change`);
      continue;
    }
    const ext = extensionNamed(kind, key);
    if (ext !== undefined) {
      out.push(...extensionOps(ext, op, v, `${at}.value.${ext.schema}`, opts));
      continue;
    }
    const target = parsePath(kind, key, `${at}.value`);
    const checked = targetValue(target, v, `${at}.value.${target.path}`, opts);
    out.push(checked === undefined ? { op: 'remove', target } : { op, target, value: checked });
  }
  return out;
}

/** add or replace of an extension's attributes, given as an object keyed by their names: one operation each. */
function extensionOps(ext: ExtensionSpec, op: Op, value: unknown, at: string, opts: PatchOptions): CanonicalOp[] {
  const out: CanonicalOp[] = [];
  for (const [k, v] of extensionEntries(ext, value, at)) {
    const attr = findAttr(ext.attributes, k);
    if (attr === undefined) throw scimErrors.invalidPath(`'${at}': ${ext.schema} has no attribute ${excerpt(k)}; it has ${ext.attributes.map((a) => a.name).join(', ')}`);
    if (attr.mutability === 'readOnly') throw scimErrors.mutability(`'${at}.${attr.name}' is read-only`);
    const target: Target = { attr, path: attr.name };
    const checked = targetValue(target, v, `${at}.${attr.name}`, opts);
    out.push(checked === undefined ? { op: 'remove', target } : { op, target, value: checked });
  }
  return out;
}

/** `remove` with a list of values on a multi-valued attribute: each value that is there goes, matched by its `value`. */
function removeValues(t: Target, value: unknown, at: string, opts: PatchOptions): CanonicalOp[] {
  const list = Array.isArray(value) ? value : [value];
  const checked = (attributeValue(t.attr, list, `${at}.value`, { maxItems: opts.maxItems?.[t.attr.name] }) ?? []) as Record<string, unknown>[];
  return checked.map((item, i) => {
    const v = typeof item === 'object' ? item.value : undefined;
    if (typeof v !== 'string') throw scimErrors.invalidValue(`'${at}.value[${i}]' must name the value to remove: {"value": "..."}`);
    return { op: 'remove' as const, target: { attr: t.attr, filter: { op: 'eq', attrPath: 'value', compValue: v }, path: `${t.attr.name}[value eq …]` } };
  });
}
