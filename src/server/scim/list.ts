/**
 * What every SCIM answer shares: resource versions (ETags), `meta`, partial representations
 * (`attributes`, `excludedAttributes`, RFC 7644 §3.4.2.5), sorting (§3.4.2.3), pagination
 * (§3.4.2.4) and the ListResponse.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, excerpt } from '../../contract/index.ts';
import { scimErrors } from './errors.ts';
import { compileFilter, type CompiledFilter } from './filter.ts';
import { URN, attributesOf, extensionNamed, flatten, ignoresCase, nest, resolvePath, schemasOf, type ResourceKind } from './_schema.ts';

/** Resources one page holds at most (ServiceProviderConfig filter.maxResults); more asked for, this many given. */
export const MAX_RESULTS = 500;
/** Page size when the client names none. */
export const DEFAULT_COUNT = 100;

export type Resource = Record<string, unknown> & { readonly id: string };

/** A weak entity tag of a representation (RFC 7232): any change of what a client can read changes it. */
export function versionOf(resource: Record<string, unknown>): string {
  return `W/"${createHash('sha256').update(canonicalJson(resource)).digest('base64url').slice(0, 27)}"`;
}

/** Adds `meta` (with the version of everything else) to a full representation, and `schemas` as its content has them (extensions it carries). */
export function withMeta(resource: Resource, kind: ResourceKind, created: number, lastModified: number, location: string): Resource {
  const meta = {
    resourceType: kind,
    created: new Date(created * 1000).toISOString(),
    lastModified: new Date(lastModified * 1000).toISOString(),
    location,
  };
  const { schemas: _, ...rest } = resource;
  const whole = { schemas: schemasOf(kind, rest), ...rest } as Resource;
  const version = versionOf({ ...whole, meta });
  return { ...whole, meta: { ...meta, version } };
}

/** `If-Match` (RFC 7232 §3.1, weak comparison as SCIM clients send W/ tags): whether the resource's version is one of them. */
export function matchesIfMatch(header: string | undefined, version: string): boolean {
  if (header === undefined) return true;
  const tags = header.split(',').map((t) => t.trim());
  const weak = (t: string) => t.replace(/^W\//, '');
  return tags.some((t) => t === '*' || weak(t) === weak(version));
}

export interface ListParams {
  readonly filter?: CompiledFilter;
  readonly sortBy?: string;
  readonly descending: boolean;
  /** 1-based. */
  readonly startIndex: number;
  readonly count: number;
  readonly attributes?: readonly string[];
  readonly excludedAttributes?: readonly string[];
}

const csv = (v: unknown): string[] | undefined => {
  if (v === undefined) return undefined;
  const list = (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(',')).map((x) => x.trim()).filter((x) => x !== '');
  return list;
};

/**
 * Largest startIndex (and count) read as given; beyond it a value is taken as this. No tenant holds
 * 2^31 resources, so the page past it is empty either way, and storage (SQLite's and PostgreSQL's
 * integers) never sees a number it cannot hold (1e20 was a 500 "datatype mismatch").
 */
export const MAX_LIST_INTEGER = 2 ** 31 - 1;

function integer(v: unknown, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  // Digits only, however many: a number too large for a double is simply large.
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*[-+]?\d{1,4096}\s*$/.test(v) ? Number(v) : Number.NaN;
  if (Number.isNaN(n) || (Number.isFinite(n) && !Number.isInteger(n))) throw scimErrors.invalidValue(`'${name}' must be an integer`);
  return Math.max(-MAX_LIST_INTEGER, Math.min(MAX_LIST_INTEGER, n));
}

/** List parameters from a query string (GET) or a SearchRequest (POST .search); `kind` undefined: across types. */
export function listParams(kind: ResourceKind | undefined, p: Record<string, unknown>): ListParams {
  const filter = p.filter;
  if (filter !== undefined && typeof filter !== 'string') throw scimErrors.invalidFilter("'filter' must be a string");
  const sortOrder = p.sortOrder;
  if (sortOrder !== undefined && (typeof sortOrder !== 'string' || !/^(ascending|descending)$/i.test(sortOrder))) {
    throw scimErrors.invalidValue("'sortOrder' must be ascending or descending");
  }
  if (p.sortBy !== undefined && typeof p.sortBy !== 'string') throw scimErrors.invalidValue("'sortBy' must be an attribute name");
  if (kind !== undefined && typeof p.sortBy === 'string' && resolvePath(kind, p.sortBy) === undefined) {
    throw scimErrors.invalidValue(`${kind} resources have no attribute ${excerpt(p.sortBy)} to sort by`);
  }
  const attributes = csv(p.attributes);
  const excludedAttributes = csv(p.excludedAttributes);
  if (attributes !== undefined && excludedAttributes !== undefined && attributes.length > 0 && excludedAttributes.length > 0) {
    throw scimErrors.invalidSyntax("'attributes' and 'excludedAttributes' exclude each other");
  }
  // RFC 7644 §3.4.2.4: a startIndex below 1 is taken as 1, a negative count as 0.
  const startIndex = Math.max(1, integer(p.startIndex, 'startIndex') ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, integer(p.count, 'count') ?? DEFAULT_COUNT));
  return {
    ...(typeof filter === 'string' && kind !== undefined ? { filter: compileFilter(kind, filter) } : {}),
    ...(typeof p.sortBy === 'string' ? { sortBy: p.sortBy } : {}),
    descending: typeof sortOrder === 'string' && sortOrder.toLowerCase() === 'descending',
    startIndex,
    count,
    ...(attributes === undefined ? {} : { attributes }),
    ...(excludedAttributes === undefined ? {} : { excludedAttributes }),
  };
}

/**
 * Attributes and sub-attributes returned only on request (RFC 7643 §7 `returned: "request"`) taken
 * out, unless `asked` names them (`attr` or `attr.sub`, canonical).
 */
function withoutUnasked(kind: ResourceKind, flat: Record<string, unknown>, asked: ReadonlySet<string>): Record<string, unknown> {
  const out = { ...flat };
  for (const a of attributesOf(kind)) {
    if (out[a.name] === undefined) continue;
    if (a.returned === 'request' && !asked.has(a.name)) {
      delete out[a.name];
      continue;
    }
    const hidden = (a.subAttributes ?? []).filter((s) => s.returned === 'request' && !asked.has(`${a.name}.${s.name}`)).map((s) => s.name);
    if (hidden.length === 0) continue;
    const strip = (x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).filter(([k]) => !hidden.includes(k))) : x);
    const v = out[a.name];
    out[a.name] = Array.isArray(v) ? v.map(strip) : strip(v);
  }
  return out;
}

/**
 * The part of a representation `attributes`/`excludedAttributes` ask for; id and schemas always stay;
 * what is returned only on request only when `attributes` names it. Names may be qualified by a
 * schema URN; an extension's URN alone means all of its attributes.
 */
export function project(kind: ResourceKind, resource: Resource, p: Pick<ListParams, 'attributes' | 'excludedAttributes'>): Record<string, unknown> {
  const asked = new Set((p.attributes ?? []).map((name) => resolvePath(kind, name)).filter((r) => r !== undefined).map((r) => r.canonical));
  const flat = withoutUnasked(kind, flatten(kind, resource), asked);
  /** The attribute names (flattened) a requested name stands for, with the sub-attributes named, if any. */
  const named = (name: string): { names: string[]; sub?: string; always?: boolean } | undefined => {
    const ext = extensionNamed(kind, name);
    if (ext !== undefined) return { names: ext.attributes.map((a) => a.name) };
    const r = resolvePath(kind, name);
    if (r === undefined) return undefined;
    return { names: [r.attr.name], ...(r.sub === undefined ? {} : { sub: r.sub.name }), always: r.attr.returned === 'always' || r.attr.name === 'id' };
  };
  const finish = (out: Record<string, unknown>) => {
    const nested = nest(kind, out);
    return { schemas: schemasOf(kind, nested), ...nested };
  };
  if (p.attributes !== undefined && p.attributes.length > 0) {
    // Per attribute: the whole of it, or the sub-attributes named.
    const wanted = new Map<string, Set<string> | 'all'>();
    for (const name of p.attributes) {
      const n = named(name);
      if (n === undefined) continue;
      for (const attr of n.names) {
        const had = wanted.get(attr);
        if (n.sub === undefined || had === 'all') wanted.set(attr, 'all');
        else wanted.set(attr, new Set([...(had ?? []), n.sub]));
      }
    }
    const out: Record<string, unknown> = { id: resource.id };
    const pick = (x: unknown, subs: Set<string>) =>
      x !== null && typeof x === 'object' ? Object.fromEntries(Object.entries(x).filter(([k]) => subs.has(k))) : undefined;
    for (const [name, subs] of wanted) {
      const v = flat[name];
      if (v === undefined || name === 'id') continue;
      out[name] = subs === 'all' ? v : Array.isArray(v) ? v.map((x) => pick(x, subs)) : pick(v, subs);
    }
    return finish(out);
  }
  if (p.excludedAttributes !== undefined && p.excludedAttributes.length > 0) {
    const { schemas: _, ...out } = flat;
    for (const name of p.excludedAttributes) {
      const n = named(name);
      if (n === undefined || n.always === true) continue;
      for (const attr of n.names) {
        if (n.sub === undefined) delete out[attr];
        else {
          const v = out[attr];
          const drop = (x: unknown) => {
            if (x === null || typeof x !== 'object') return x;
            const { [n.sub!]: _s, ...rest } = x as Record<string, unknown>;
            return rest;
          };
          if (v !== undefined) out[attr] = Array.isArray(v) ? v.map(drop) : drop(v);
        }
      }
    }
    return finish(out);
  }
  const { schemas: _, ...all } = flat;
  return finish(all);
}

/** The value a resource sorts by: a multi-valued attribute sorts by its primary (or first) value. */
function sortKey(kind: ResourceKind, resource: Resource, sortBy: string): string | number | boolean | undefined {
  const r = resolvePath(kind, sortBy);
  if (r === undefined) return undefined;
  let v: unknown = flatten(kind, resource)[r.attr.name];
  if (Array.isArray(v)) v = (v.find((x) => (x as Record<string, unknown>)?.primary === true) ?? v[0]) as unknown;
  const attr = r.sub ?? (r.attr.type === 'complex' ? r.attr.subAttributes?.find((s) => s.name === 'value') : r.attr);
  if (r.sub !== undefined || (r.attr.type === 'complex' && attr !== undefined)) v = (v as Record<string, unknown> | undefined)?.[attr!.name];
  if (v === undefined || v === null || typeof v === 'object') return undefined;
  if (attr?.type === 'dateTime' && typeof v === 'string') return Date.parse(v);
  return typeof v === 'string' && attr !== undefined && ignoresCase(attr) ? v.toLowerCase() : (v as string | number | boolean);
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * Sorted as asked (resources without a value last), ties by id; by id when no sortBy. `kind` may
 * be a function of the resource, for a search across types.
 */
export function sortResources(
  kind: ResourceKind | ((r: Resource) => ResourceKind), resources: readonly Resource[], p: Pick<ListParams, 'sortBy' | 'descending'>,
): Resource[] {
  const sorted = [...resources];
  if (p.sortBy === undefined) return sorted.sort((a, b) => byteOrder(a.id, b.id));
  const kindOf = typeof kind === 'function' ? kind : () => kind;
  const keys = new Map(sorted.map((r) => [r, sortKey(kindOf(r), r, p.sortBy!)]));
  return sorted.sort((a, b) => {
    const x = keys.get(a);
    const y = keys.get(b);
    if (x === undefined || y === undefined) return x === y ? byteOrder(a.id, b.id) : x === undefined ? 1 : -1;
    const c = x < y ? -1 : x > y ? 1 : 0;
    return (p.descending ? -c : c) || byteOrder(a.id, b.id);
  });
}

/** The ListResponse of one page; `total` counts every match. */
export function listResponse(page: readonly Record<string, unknown>[], total: number, startIndex: number): Record<string, unknown> {
  return { schemas: [URN.listResponse], totalResults: total, startIndex, itemsPerPage: page.length, Resources: page };
}
