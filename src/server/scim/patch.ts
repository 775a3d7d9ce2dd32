/**
 * PATCH (RFC 7644 §3.5.2): the request is checked and brought to canonical form against the schema
 * table, then applied by scim-patch, and the result is checked again as a whole (types, required
 * attributes, one primary value). Canonical form first, because scim-patch compares attribute names
 * as written and walks any path it is given: only names from the table ever reach it.
 *
 * What clients send in the wild and this accepts: operation names in any case ("Replace", Entra
 * ID), booleans as strings ("False", Entra ID), `remove` with a value list on a multi-valued
 * attribute (`{"op":"remove","path":"members","value":[{"value":"<id>"}]}`, Entra ID), a path-less
 * `replace` carrying the resource's own `id` (Okta), null values as "unassign".
 */
import { parse, stringify, type Filter } from 'scim2-parse-filter';
import { ScimError as PatchLibraryError, scimPatch, type ScimPatchOperation } from 'scim-patch';
import { scimErrors } from './errors.ts';
import { RESOURCE_TYPES, URN, attributesOf, findAttr, type Attr, type ResourceKind } from './_schema.ts';
import { attributeValue, requireAttributes, type Attrs } from './_values.ts';

/** Operations one PATCH may carry. */
export const MAX_OPERATIONS = 1000;

type Op = 'add' | 'replace' | 'remove';
interface CanonicalOp {
  readonly op: Op;
  readonly path?: string;
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

/** Applies a PatchOp message to a resource's writable attributes; returns the new attributes. */
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
  let result = structuredClone(current);
  for (const op of ops) {
    // Removing values from a list that is not there removes nothing (scim-patch would refuse it).
    if (op.op === 'remove' && op.path?.includes('[') === true && !Array.isArray(result[op.path.slice(0, op.path.indexOf('['))])) continue;
    try {
      result = scimPatch(result as never, [op as ScimPatchOperation], { mutateDocument: true, treatMissingAsAdd: true }) as Attrs;
    } catch (err) {
      if (err instanceof PatchLibraryError) {
        const type = err.scimCode === 'noTarget' || err.scimCode === 'invalidPath' ? err.scimCode : 'invalidValue';
        throw scimErrors[type](err.message);
      }
      throw err;
    }
  }
  return revalidate(kind, result, opts);
}

/** The attributes after the operations, checked as a whole (each one already was on its way in). */
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
  const target = parsePath(kind, path, at);
  if (op === 'remove') {
    if (value !== undefined && value !== null && target.attr.multiValued === true && target.filter === undefined && target.sub === undefined) {
      return removeValues(target.attr, value, at, opts);
    }
    return [{ op, path: target.path }];
  }
  if (value === undefined) throw scimErrors.invalidValue(`'${at}': ${op} needs a value`);
  const checked = targetValue(target, value, `${at}.value`, opts);
  // Null (unassigned) as the value of add or replace: the attribute is removed (RFC 7643 §2.5).
  return checked === undefined ? [{ op: 'remove', path: target.path }] : [{ op, path: target.path, value: checked }];
}

interface Target {
  readonly attr: Attr;
  readonly filter?: string;
  readonly sub?: Attr;
  readonly path: string;
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, optionally prefixed by the resource's schema URN. */
function parsePath(kind: ResourceKind, raw: string, at: string): Target {
  let rest = raw.trim();
  const urn = RESOURCE_TYPES[kind].schema;
  if (rest.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) rest = rest.slice(urn.length + 1);
  else if (/^urn:/i.test(rest)) throw scimErrors.invalidPath(`'${at}.path' names an unknown schema: '${raw}'`);
  const m = /^([A-Za-z][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s.exec(rest);
  if (m === null) throw scimErrors.invalidPath(`'${at}.path' is not an attribute path: '${raw}'`);
  const attr = findAttr(attributesOf(kind), m[1]!);
  if (attr === undefined) throw scimErrors.invalidPath(`'${at}.path': ${kind} resources have no attribute '${m[1]}'`);
  if (attr.mutability === 'readOnly') throw scimErrors.mutability(`'${at}.path': '${attr.name}' is read-only`);
  let filter: string | undefined;
  if (m[2] !== undefined) {
    if (attr.multiValued !== true || attr.type !== 'complex') throw scimErrors.invalidPath(`'${at}.path': value filters apply to multi-valued complex attributes, not '${attr.name}'`);
    let ast: Filter;
    try {
      ast = parse(m[2]);
    } catch (err) {
      throw scimErrors.invalidPath(`'${at}.path' has an invalid value filter: ${(err as Error).message}`);
    }
    filter = stringify(subFilter(attr, ast, at));
  }
  let sub: Attr | undefined;
  if (m[3] !== undefined) {
    sub = findAttr(attr.subAttributes, m[3]);
    if (sub === undefined) throw scimErrors.invalidPath(`'${at}.path': '${attr.name}' has no sub-attribute '${m[3]}'`);
    if (sub.mutability === 'readOnly') throw scimErrors.mutability(`'${at}.path': '${attr.name}.${sub.name}' is read-only`);
  }
  return { attr, ...(filter === undefined ? {} : { filter }), ...(sub === undefined ? {} : { sub }), path: `${attr.name}${filter === undefined ? '' : `[${filter}]`}${sub === undefined ? '' : `.${sub.name}`}` };
}

/** A value filter inside a path, with the sub-attribute names it uses made canonical. */
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
      if (sub === undefined) throw scimErrors.invalidPath(`'${at}.path': '${attr.name}' has no sub-attribute '${f.attrPath}'`);
      return { ...f, attrPath: sub.name };
    }
  }
}

/** The value of add or replace at a target, checked for the attribute (or sub-attribute) it lands on. */
function targetValue(t: Target, value: unknown, at: string, opts: PatchOptions): unknown {
  if (t.sub !== undefined) return attributeValue(t.sub, value, at);
  if (t.filter !== undefined) {
    // The matched values are replaced (or added to) by this one value.
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

/** A path-less add or replace: each attribute of the value object is its own operation. */
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
    const target = parsePath(kind, key, `${at}.value`);
    const checked = targetValue(target, v, `${at}.value.${target.path}`, opts);
    out.push(checked === undefined ? { op: 'remove', path: target.path } : { op, path: target.path, value: checked });
  }
  return out;
}

/** `remove` with a list of values on a multi-valued attribute: each value that is there goes, matched by its `value`. */
function removeValues(attr: Attr, value: unknown, at: string, opts: PatchOptions): CanonicalOp[] {
  const list = Array.isArray(value) ? value : [value];
  const checked = (attributeValue(attr, list, `${at}.value`, { maxItems: opts.maxItems?.[attr.name] }) ?? []) as Record<string, unknown>[];
  return checked.map((item, i) => {
    const v = typeof item === 'object' ? item.value : undefined;
    if (typeof v !== 'string') throw scimErrors.invalidValue(`'${at}.value[${i}]' must name the value to remove: {"value": "..."}`);
    return { op: 'remove' as const, path: `${attr.name}[value eq ${JSON.stringify(v)}]` };
  });
}
