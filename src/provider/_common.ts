/**
 * Helpers shared by the provider implementations: input validation in Pulumi's terms, structural
 * comparison for diffs, and the admin connection's schema. Pure, so they are tested directly.
 */
import { z } from 'zod';
import { batchEntryName, formatPath, jsonEqual as contractJsonEqual, normalize, type BatchEntryResult, type TenantBatchBody, type TenantBatchResult } from '../contract/index.ts';
import type { AdminClient } from '../admin-client/index.ts';
import type * as pulumi from '@pulumi/pulumi';

/** What the engine sends for an input that is not known yet during a preview. */
export const UNKNOWN = '04da6b54-80e4-46f7-96ec-b56ff0331ba9';

export function isUnknown(v: unknown): boolean {
  if (v === UNKNOWN) return true;
  if (Array.isArray(v)) return v.some(isUnknown);
  if (v !== null && typeof v === 'object') return Object.values(v).some(isUnknown);
  return false;
}

export const AdminConnectionSchema = z.union([
  z.strictObject({
    adminUrl: z.url(),
    tokenUrl: z.url(),
    clientId: z.string().min(1),
    clientSecret: z.string().min(1),
    resource: z.string().min(1).optional(),
    scope: z.string().min(1).optional(),
  }),
  z.strictObject({ credentialsFile: z.string().refine((f) => f.startsWith('/'), { error: 'must be an absolute path' }) }),
]);

/**
 * Adoption. A provider's create writes with an idempotent PUT, which would silently take over an
 * object that already exists on the server (made by hand, by `idforge apply`, or by another stack).
 * So create first looks: an existing object is refused unless the resource has `adopt: true`
 * (stack config `idforge:adopt`), in which case it is brought under the stack in place: no
 * delete, no re-create, its id, creation time and users' password hashes kept. `adopt` is not
 * part of the object, so diffs ignore it and turning it off again changes nothing.
 *
 * Why not Pulumi's `import`: the engine's import sends the provider an empty Read request
 * (pkg/resource/deploy/step.go, ImportStep), and a dynamic provider's code travels in the
 * resource's properties (`__provider`), so neither `pulumi import` nor the `import` resource
 * option can reach these providers.
 */
export const AdoptSchema = z.boolean().optional();

/**
 * What idforge's provider host (_host.cjs) passes to every provider method last: the resource's URN
 * and a way to say something about it (a diagnostic the engine shows under the resource). Undefined
 * when another host runs the provider: then `say` writes to stderr, which the engine shows too.
 */
export interface ProviderContext {
  readonly urn: string;
  /** The inputs the engine keeps for the resource (diff, update, delete: the old inputs; read: the inputs), when the engine has them. */
  readonly inputs?: Record<string, unknown> | undefined;
  log(severity: 'info' | 'warning', message: string): Promise<void>;
}

export async function say(ctx: ProviderContext | undefined, severity: 'info' | 'warning', message: string): Promise<void> {
  if (ctx !== undefined) await ctx.log(severity, message);
  else process.stderr.write(`idforge: ${message}\n`);
}

/** Whether an error is the admin client's "could not reach the server" (status 0: down, not deployed yet, no credentials file). */
export function unreachable(err: unknown): boolean {
  const e = err as { name?: unknown; status?: unknown };
  return e?.name === 'AdminApiError' && e.status === 0;
}

/**
 * A refresh that cannot reach the server changes nothing: the object's state is unknown, not gone,
 * and the AuthServer resource reports the server itself as down. So `pulumi refresh` with the server
 * stopped succeeds; the next `up` starts the server and compares again. A preview then shows the
 * plain diff (the model against the state) and says why.
 */
export async function readOrKeep<T>(
  id: string,
  old: T,
  read: () => Promise<pulumi.dynamic.ReadResult<T>>,
  ctx?: ProviderContext,
): Promise<pulumi.dynamic.ReadResult<T>> {
  try {
    return await read();
  } catch (err) {
    if (!unreachable(err)) throw err;
    await say(ctx, 'warning', `${String((err as Error).message)}; compared with the state, not the live server (the server is down or not deployed yet)`);
    return { id, props: old, inputs: old };
  }
}

export function notAdopted(what: string): Error {
  return new Error(
    `${what} already exists on the server, outside this stack. To bring it under this stack without re-creating it, ` +
      'run `pulumi config set idforge:adopt true`, `pulumi up`, then `pulumi config rm idforge:adopt`.',
  );
}

/** Sends tenant batches in order; a refused one fails the step, naming every refused entry. Returns every entry's answer, and the last batch's whole answer. */
export async function sendBatches(client: AdminClient, tenant: string, batches: readonly TenantBatchBody[]): Promise<{ results: BatchEntryResult[]; last: TenantBatchResult | undefined }> {
  const out: BatchEntryResult[] = [];
  let last: TenantBatchResult | undefined;
  for (const b of batches) {
    const r = await client.batch(tenant, b);
    if (r.refused) throw refusedBatch(tenant, r.results);
    out.push(...r.results);
    last = r;
  }
  return { results: out, last };
}

export function refusedBatch(tenant: string, results: readonly BatchEntryResult[]): Error {
  const lines = results.filter((r) => r.outcome === 'refused')
    .map((r) => `${batchEntryName(tenant, r)}: ${r.reason}${r.path ? ` (at ${r.path})` : ''}`);
  return new Error(`the server refused ${lines.length === 1 ? 'this change' : 'these changes'}, and applied none of the batch:\n${lines.join('\n')}`);
}

/** One difference between two JSON values: where (a property path as segments) and how. */
export interface Difference {
  readonly path: readonly (string | number)[];
  readonly kind: 'add' | 'delete' | 'update';
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Where two JSON values differ, as deep as they are both objects or both arrays (object keys
 * sorted, array elements by index), or as deep as `whole` allows: a path it says yes to is one
 * difference however much differs below it. Pure: the detailed diff a preview shows.
 */
export function differences(olds: unknown, news: unknown, whole: (path: readonly (string | number)[]) => boolean = () => false, path: readonly (string | number)[] = []): Difference[] {
  if (jsonEqual(olds, news)) return [];
  if (olds === undefined) return [{ path, kind: 'add' }];
  if (news === undefined) return [{ path, kind: 'delete' }];
  if (path.length > 0 && whole(path)) return [{ path, kind: 'update' }];
  if (isRecord(olds) && isRecord(news)) {
    const keys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].sort();
    return keys.flatMap((k) => differences(olds[k], news[k], whole, [...path, k]));
  }
  if (Array.isArray(olds) && Array.isArray(news)) {
    return Array.from({ length: Math.max(olds.length, news.length) }, (_, i) => differences(olds[i], news[i], whole, [...path, i])).flat();
  }
  return [{ path, kind: 'update' }];
}

/** zod path → Pulumi property path (`body.redirectUris[0]`): the contract's one path formatter. */
export const propertyPath = (path: readonly PropertyKey[]): string => formatPath(path.map((p) => (typeof p === 'symbol' ? String(p) : p)));

/**
 * Validates inputs with a zod schema. Inputs that are still unknown (preview) are not judged: they
 * are checked again when known. On success the parsed value (defaults filled in) becomes the
 * inputs, so diffs compare normalized values.
 */
export function checkWith<T extends Record<string, unknown>>(
  schema: z.ZodType<T>,
  news: Record<string, unknown>,
): pulumi.dynamic.CheckResult<T> {
  const { __provider: _, ...inputs } = news;
  const result = schema.safeParse(inputs);
  if (result.success) return { inputs: result.data };
  const failures = result.error.issues
    .filter((i) => !underUnknown(inputs, i.path))
    .map((i) => ({ property: propertyPath(i.path), reason: i.message }));
  return failures.length > 0 ? { inputs: inputs as T, failures } : { inputs: inputs as T };
}

/** True when some prefix of `path` holds a value the engine does not know yet. */
function underUnknown(root: unknown, path: readonly PropertyKey[]): boolean {
  let v: unknown = root;
  for (const seg of path) {
    if (v === UNKNOWN) return true;
    if (v === null || typeof v !== 'object') return false;
    v = (v as Record<PropertyKey, unknown>)[seg];
  }
  return v === UNKNOWN;
}

/** Deep structural equality of JSON values (object key order ignored, array order kept): the contract's normal form. */
export const jsonEqual = contractJsonEqual;

/** Keys of a zod object schema, to keep only the fields a PUT body declares from a GET answer. */
export function pickKeys<T>(shape: Record<string, unknown>, live: Record<string, unknown>, declared?: Record<string, unknown>): T {
  // The server says who manages an object (`manager`) even when the body named it only by
  // managedBy and stack: read it back only when the resource's own body names it.
  const keys = Object.keys(shape).filter((k) => live[k] !== undefined && !(k === 'manager' && declared !== undefined && declared.manager === undefined));
  return Object.fromEntries(keys.map((k) => [k, live[k]])) as T;
}

/**
 * A resource of a tenant is replaced when its tenant changes, unless the tenant was renamed as the
 * model declares (`previousTenant`): then the server moved it with the tenant, and it is updated.
 */
export function tenantReplaces(olds: { readonly tenant: string }, news: { readonly tenant: string; readonly previousTenant?: string | undefined }): string[] {
  if (isUnknown(news.tenant) || olds.tenant === news.tenant || (news.previousTenant !== undefined && olds.tenant === news.previousTenant)) return [];
  return ['tenant'];
}

/** The top-level inputs among `keys` whose values differ: what `diff` reports as replacements. */
export function changedKeys(keys: readonly string[], olds: Record<string, unknown>, news: Record<string, unknown>): string[] {
  return keys.filter((k) => !isUnknown(news[k]) && !jsonEqual(olds[k], news[k]));
}

/**
 * Drops keys whose value is undefined, recursively (the contract's JSON normal form): the engine's
 * protobuf Struct cannot carry `undefined` ("Unexpected struct type"), so every result handed back
 * to it goes through this.
 */
export const defined = <T>(v: T): T => normalize(v) as T;
