/**
 * The model's normal form: an entry as declared, written the one way. A field equal to its default
 * is left out, keys come in the order the schema lists them (name and kind first, as people write
 * them), lists keep the order they were declared in. Two models that mean the same have the same
 * normal form, so the server can keep each object's normal form as it was last applied, and
 * `idforge export` gives it back: what was declared (a proxy's upstream, an SPA's cacheType, an
 * api's routes, groups and assignments as written) is never lost, and planning the export finds
 * nothing to change.
 *
 * Read from the zod schemas themselves (defaults, field order, the application kinds), so a new
 * field is in the normal form the moment it is in the schema.
 */
import type { z } from 'zod';
import { ApplicationSpec, TenantSpec, UserSpec, type ApplicationSpec as App, type TenantSpec as Tenant, type UserSpec as User } from './model.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly element?: z.ZodType;
  readonly shape?: Record<string, z.ZodType>;
  readonly options?: readonly z.ZodType[];
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;
const shapeOf = (s: z.ZodType): Record<string, z.ZodType> | undefined => (s as unknown as { shape?: Record<string, z.ZodType> }).shape;

/** A schema under its optional/default wrappers, and its default value's JSON if it has one. */
interface Unwrapped {
  readonly inner: z.ZodType;
  readonly defaultJson: string | undefined;
}

/**
 * Per schema, computed once: the schemas are fixed, and the normal form of the 100k-user model walks
 * the same few hundred of them for 100,000 users (making each default again, by parsing undefined,
 * was most of that: README, "Scale").
 */
const unwrapped = new WeakMap<z.ZodType, Unwrapped>();
const fieldsOf = new WeakMap<z.ZodType, ReadonlyArray<readonly [string, z.ZodType, Unwrapped]>>();
const optionsByKind = new WeakMap<z.ZodType, Map<string, z.ZodType | undefined>>();

/** The schema under optional/default wrappers, and the default value's JSON if there is one. */
function unwrap(s: z.ZodType): Unwrapped {
  let u = unwrapped.get(s);
  if (u !== undefined) return u;
  let inner = s;
  let defaultJson: string | undefined;
  for (;;) {
    const d = defOf(inner);
    if (d.type === 'default') {
      defaultJson = JSON.stringify(inner.parse(undefined));
      inner = d.innerType!;
    } else if (d.type === 'optional' || d.type === 'nullable') inner = d.innerType!;
    else break;
  }
  u = { inner, defaultJson };
  unwrapped.set(s, u);
  return u;
}

/** An object schema's fields, in its order, each unwrapped. */
function fields(inner: z.ZodType, shape: Record<string, z.ZodType>): ReadonlyArray<readonly [string, z.ZodType, Unwrapped]> {
  let f = fieldsOf.get(inner);
  if (f === undefined) {
    f = Object.entries(shape).map(([key, field]) => [key, field, unwrap(field)] as const);
    fieldsOf.set(inner, f);
  }
  return f;
}

/** The option of a discriminated union that a value's `kind` selects. */
function optionFor(s: z.ZodType, value: unknown): z.ZodType | undefined {
  const kind = (value as { kind?: unknown } | null)?.kind;
  let byKind = optionsByKind.get(s);
  if (byKind === undefined) optionsByKind.set(s, (byKind = new Map()));
  const key = typeof kind === 'string' ? kind : undefined;
  if (key !== undefined && byKind.has(key)) return byKind.get(key);
  const options = defOf(s).options ?? [];
  const found = options.find((o) => {
    const k = shapeOf(o)?.kind;
    return k !== undefined && k.safeParse(kind).success;
  });
  if (key !== undefined) byKind.set(key, found);
  return found;
}

/** A value in normal form, as the schema `s` describes it. */
export function normalForm(s: z.ZodType, value: unknown): Json {
  const { inner } = unwrap(s);
  const d = defOf(inner);
  if (d.type === 'union') {
    const option = optionFor(inner, value);
    return option === undefined ? (value as Json) : normalForm(option, value);
  }
  if (d.type === 'array' && Array.isArray(value)) return value.map((v) => normalForm(d.element!, v));
  const shape = shapeOf(inner);
  if (d.type === 'object' && shape !== undefined && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const out: Record<string, Json> = {};
    const v = value as Record<string, unknown>;
    for (const [key, field, f] of fields(inner, shape)) {
      if (v[key] === undefined) continue;
      if (f.defaultJson !== undefined && JSON.stringify(v[key]) === f.defaultJson) continue;
      out[key] = normalForm(field, v[key]);
    }
    return out;
  }
  return value as Json;
}

/*
 * An object's entry leaves out what names it (the tenant's and application's name, the user's id:
 * the server's key for the object, which a rename moves) and a declared rename (previousName: an
 * instruction for one apply, not a property of the object). Export puts the name back.
 */

/** The tenant's own entry in normal form, without its applications and users (each object keeps its own). */
export function tenantEntry(t: Tenant): Record<string, Json> {
  const { applications: _a, users: _u, name: _n, previousName: _p, ...rest } = t;
  return normalForm(TenantSpec, { ...rest, applications: [], users: [] }) as Record<string, Json>;
}

/**
 * An application's entry in normal form, its kind first. A client's id is written out whenever it
 * is not the name (declared, or kept through a declared rename), so the entry keeps naming the
 * client it was applied to after the previousName is gone.
 */
export function applicationEntry(app: App): Record<string, Json> {
  const { name: _n, previousName: _p, clientId: _c, ...rest } = app;
  const { kind, ...fields } = normalForm(ApplicationSpec, rest) as Record<string, Json>;
  const clientId = app.kind === 'api' ? undefined : (app.clientId ?? app.previousName);
  return { kind: kind!, ...(clientId === undefined || clientId === app.name ? {} : { clientId }), ...fields };
}

export const userEntry = (u: User): Record<string, Json> => {
  const { id: _i, ...rest } = u;
  return normalForm(UserSpec, rest) as Record<string, Json>;
};

/** An application's entry with its name again, first: as people write it. */
export const namedApplication = (name: string, entry: Record<string, Json>): Record<string, Json> => ({ name, ...entry });
/** A user's entry with its id again, first. */
export const identifiedUser = (id: string, entry: Record<string, Json>): Record<string, Json> => ({ id, ...entry });

/**
 * A tenant assembled from entries in normal form, keys in the schema's order: what `idforge export`
 * writes for a tenant whose objects were last applied from a model.
 */
export function assembleTenantEntry(name: string, tenant: Record<string, Json>, applications: readonly Record<string, Json>[], users: readonly Record<string, Json>[]): Record<string, Json> {
  const out: Record<string, Json> = { name };
  for (const key of Object.keys(TenantSpec.shape)) {
    if (key === 'applications') {
      if (applications.length > 0) out[key] = [...applications];
    } else if (key === 'users') {
      if (users.length > 0) out[key] = [...users];
    } else if (key !== 'name' && tenant[key] !== undefined) out[key] = tenant[key]!;
  }
  return out;
}
