/**
 * What a request may write, checked against the schema table (_schema.ts): attribute names resolved
 * without regard to case to their canonical spelling, values checked by type, read-only values
 * ignored (RFC 7643 §2.2), nulls taken as unassigned (§2.5), unknown attributes and schemas
 * refused with the path of the offending value. The result holds canonical names only, so nothing
 * a client writes can reach an object key this server does not know (`__proto__` included).
 */
import { scimErrors } from './errors.ts';
import { RESOURCE_TYPES, attributesOf, attributesUnder, extensionNamed, findAttr, nest, type Attr, type ExtensionSpec, type ResourceKind } from './_schema.ts';
import { excerpt } from '../../contract/index.ts';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Attrs = Record<string, unknown>;

/** Items a multi-valued attribute may hold in one request (members: see the group rules). */
const MAX_ITEMS = 100;
const DEFAULT_MAX_LENGTH = 1024;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A value of one attribute (multi-valued: the whole list), in canonical form; undefined = unassigned. */
export function attributeValue(attr: Attr, value: unknown, at: string, opts: { readonly maxItems?: number } = {}): unknown {
  if (value === null || value === undefined) return undefined;
  if (attr.multiValued === true) {
    if (!Array.isArray(value)) throw scimErrors.invalidValue(`'${at}' must be a list (it is multi-valued)`);
    const max = opts.maxItems ?? MAX_ITEMS;
    if (value.length > max) throw scimErrors.invalidValue(`'${at}' may hold at most ${max} values`);
    const items = value.map((v, i) => singleValue(attr, v, `${at}[${i}]`)).filter((v) => v !== undefined);
    if (attr.type === 'complex' && items.filter((v) => (v as Attrs).primary === true).length > 1) {
      throw scimErrors.invalidValue(`'${at}' has more than one value marked primary`);
    }
    return items.length === 0 ? undefined : items;
  }
  if (Array.isArray(value)) {
    // A list of exactly one value for a single-valued complex attribute is that value: Entra ID
    // sends the enterprise `manager` so ([{"value": "<id>", "$ref": null}], its SCIM tutorial).
    if (attr.type !== 'complex' || value.length !== 1) throw scimErrors.invalidValue(`'${at}' must be a single value, not a list`);
    return singleValue(attr, value[0], at);
  }
  return singleValue(attr, value, at);
}

/** Standard base64 (RFC 4648 §4) with its padding, checked by a scan rather than a pattern. */
function isBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  let pad = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3d /* = */) {
      pad++;
      continue;
    }
    if (pad > 0) return false;
    const ok = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
    if (!ok) return false;
  }
  return pad <= 2;
}

function singleValue(attr: Attr, value: unknown, at: string): unknown {
  if (value === null || value === undefined) return undefined;
  switch (attr.type) {
    case 'string':
    case 'reference': {
      if (typeof value !== 'string') throw scimErrors.invalidValue(`'${at}' must be a string`);
      // NUL is no character of any name or address, and PostgreSQL text cannot hold it.
      if (value.includes('\u0000')) throw scimErrors.invalidValue(`'${at}' must not contain NUL characters`);
      const max = attr.maxLength ?? DEFAULT_MAX_LENGTH;
      if (value.length > max) throw scimErrors.invalidValue(`'${at}' must be at most ${max} characters`);
      return value;
    }
    case 'binary': {
      if (typeof value !== 'string' || !isBase64(value)) throw scimErrors.invalidValue(`'${at}' must be base64-encoded (RFC 4648 §4)`);
      const max = attr.maxLength ?? DEFAULT_MAX_LENGTH;
      if (value.length > max) throw scimErrors.invalidValue(`'${at}' must be at most ${max} characters`);
      return value;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      // Microsoft Entra ID sends booleans as the strings "True" and "False".
      if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
      throw scimErrors.invalidValue(`'${at}' must be true or false`);
    case 'integer':
      if (Number.isInteger(value)) return value;
      throw scimErrors.invalidValue(`'${at}' must be an integer`);
    case 'decimal':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw scimErrors.invalidValue(`'${at}' must be a number`);
    case 'dateTime':
      if (typeof value === 'string' && !Number.isNaN(Date.parse(value))) return value;
      throw scimErrors.invalidValue(`'${at}' must be a date and time (xsd:dateTime)`);
    case 'complex': {
      // A reference given by its value alone (`"manager": "<id>"`, Entra's enterprise-schema example): `{value}`.
      if (typeof value === 'string' && attr.multiValued !== true && findAttr(attr.subAttributes, 'value') !== undefined) return singleValue(attr, { value }, at);
      if (!isObject(value)) throw scimErrors.invalidValue(`'${at}' must be an object of ${(attr.subAttributes ?? []).map((s) => s.name).join(', ')}`);
      const out: Attrs = {};
      for (const [k, v] of Object.entries(value)) {
        const sub = findAttr(attr.subAttributes, k);
        if (sub === undefined) throw scimErrors.invalidSyntax(`'${at}' has no sub-attribute ${excerpt(k)}; it has ${(attr.subAttributes ?? []).map((s) => s.name).join(', ')}`);
        if (sub.mutability === 'readOnly') continue;
        const x = singleValue(sub, v, `${at}.${sub.name}`);
        if (x !== undefined) out[sub.name] = x;
      }
      if (Object.keys(out).length === 0) return undefined;
      const missing = (attr.subAttributes ?? []).find((s) => s.required === true && out[s.name] === undefined);
      if (missing !== undefined) throw scimErrors.invalidValue(`'${at}.${missing.name}' is required`);
      return out;
    }
  }
}

/**
 * A whole resource as a client sends it (POST, PUT): `schemas` must name the resource type's schema,
 * and may name its extensions and the URIs the table tolerates (Entra's ADSCIM group schema), nothing
 * else; an extension's attributes come in an object under its URN, which `schemas` must then list
 * (RFC 7643 §3.3); every attribute is checked; read-only ones (id, meta, groups) are ignored;
 * required ones must be there. Returns the writable attributes, extensions nested under their URN.
 */
export function resourceValue(kind: ResourceKind, body: unknown, opts: { readonly maxItems?: Readonly<Record<string, number>> } = {}): Attrs {
  if (!isObject(body)) throw scimErrors.invalidSyntax(`the request body must be a ${kind} resource (a JSON object)`);
  const type = RESOURCE_TYPES[kind];
  const known = [type.schema, ...type.extensions.map((e) => e.schema), ...type.tolerated.map((t) => t.uri)];
  const schemas = Object.entries(body).find(([k]) => k.toLowerCase() === 'schemas')?.[1];
  if (!Array.isArray(schemas) || !schemas.every((s) => typeof s === 'string')) {
    throw scimErrors.invalidSyntax(`'schemas' must list the schemas of the resource: ["${type.schema}"]`);
  }
  for (const s of schemas) {
    if (!known.some((k) => k.toLowerCase() === s.toLowerCase())) throw scimErrors.invalidSyntax(`unknown schema ${excerpt(s)}: ${kind} resources here have the schemas ${known.join(', ')}`);
  }
  if (!schemas.some((s) => s.toLowerCase() === type.schema.toLowerCase())) throw scimErrors.invalidSyntax(`'schemas' must include ${type.schema}`);
  const out: Attrs = {};
  const take = (attr: Attr, value: unknown, at: string) => {
    if (attr.mutability === 'readOnly') return;
    const v = attributeValue(attr, value, at, { maxItems: opts.maxItems?.[attr.name] });
    if (v !== undefined) out[attr.name] = v;
  };
  for (const [key, value] of Object.entries(body)) {
    if (key.toLowerCase() === 'schemas') continue;
    const ext = extensionNamed(kind, key);
    if (ext !== undefined) {
      if (!schemas.some((s) => s.toLowerCase() === ext.schema.toLowerCase())) {
        throw scimErrors.invalidSyntax(`the body has attributes of ${ext.schema}, which 'schemas' does not list: add it to 'schemas' (RFC 7643 §3)`);
      }
      if (value === null) continue;
      for (const [k, v] of extensionEntries(ext, value, ext.schema)) {
        const attr = findAttr(ext.attributes, k);
        if (attr === undefined) throw scimErrors.invalidSyntax(`${ext.schema} has no attribute ${excerpt(k)}; it has ${ext.attributes.map((a) => a.name).join(', ')}`);
        take(attr, v, `${ext.schema}:${attr.name}`);
      }
      continue;
    }
    if (/^urn:/i.test(key)) throw scimErrors.invalidSyntax(`unknown schema extension ${excerpt(key)}: ${kind} resources here have the schemas ${known.join(', ')}`);
    const attr = findAttr(attributesUnder(kind, type.schema), key);
    if (attr === undefined) {
      const elsewhere = findAttr(attributesOf(kind), key);
      if (elsewhere?.schema !== undefined) throw scimErrors.invalidSyntax(`'${elsewhere.name}' belongs to the schema extension ${elsewhere.schema}: send it inside "${elsewhere.schema}": {...}`);
      throw scimErrors.invalidSyntax(`${kind} resources have no attribute ${excerpt(key)}; see /Schemas`);
    }
    take(attr, value, attr.name);
  }
  requireAttributes(kind, out);
  return nest(kind, out);
}

/**
 * The attributes of an extension's object, as `[name, value]` entries. The object may repeat its
 * own URN as `schemas` (scim2-models, the library behind scim2-tester, writes it so): that is
 * dropped; any other `schemas` inside it is refused.
 */
export function extensionEntries(ext: ExtensionSpec, value: unknown, at: string): [string, unknown][] {
  if (!isObject(value)) throw scimErrors.invalidValue(`'${at}' must be an object of ${ext.schema}'s attributes`);
  return Object.entries(value).filter(([k, v]) => {
    if (k.toLowerCase() !== 'schemas') return true;
    if (Array.isArray(v) && v.length === 1 && typeof v[0] === 'string' && v[0].toLowerCase() === ext.schema.toLowerCase()) return false;
    throw scimErrors.invalidSyntax(`'${at}.schemas' may only repeat ${ext.schema}`);
  });
}

/** RFC 7643: a required attribute must have a value (after a PATCH too). `attrs` flattened. */
export function requireAttributes(kind: ResourceKind, attrs: Attrs): void {
  for (const a of attributesOf(kind)) {
    if (a.required === true && attrs[a.name] === undefined) throw scimErrors.invalidValue(`'${a.name}' is required`);
  }
}
