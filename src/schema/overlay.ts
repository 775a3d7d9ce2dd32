/**
 * Environment overlays: one model in Git, and per environment (a Pulumi stack, `idforge validate
 * --overlay`) a small file of what differs there: the base domain and port, an application's origin,
 * the users of that environment. An overlay has the model's shape; what it says wins:
 *
 *   server:            merged key by key
 *   tenants[]          matched by name; a name the model lacks is a problem (with a did-you-mean),
 *                      unless the tenant says `add: true`: then it is added whole, a tenant only
 *                      this environment has
 *     <field>          replaced (displayName, login, unmanaged, ...)
 *     scopes, users, groups, applications, assignments
 *                      matched entry by entry on their key (name, id, application): fields of a
 *                      matching entry are replaced, a new entry is added, `remove: true` removes it
 *
 * The merged model goes through the same validation as any model: shapes, then every semantic rule.
 */
import { didYouMean } from '../contract/index.ts';
import { checkModel } from './checks.ts';
import { ServerSpec, TenantSpec, type Model } from './model.ts';
import { problemsFromZodIssue, sortProblems, type PathSegment, type Problem } from './problems.ts';
import { decodeModelBytes, locate, parseModelText, type SourceDoc } from './_yaml-source.ts';
import type { LoadResult } from './load.ts';
import type { ParseCache } from './parse-cache.ts';

/** The lists a tenant's overlay merges entry by entry, and the key of each. */
export const OVERLAY_LISTS = { scopes: 'name', users: 'id', groups: 'name', applications: 'name', assignments: 'application', webhooks: 'name' } as const;
type ListName = keyof typeof OVERLAY_LISTS;

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Reads an overlay file (the same hostile-input limits as a model file). */
export function parseOverlay(file: string, bytes: Uint8Array): { ok: true; source: SourceDoc } | { ok: false; problems: Problem[] } {
  const text = decodeModelBytes(file, bytes);
  if (!text.ok) return text;
  return parseModelText(file, text.text);
}

/** The model with the overlay applied and validated again, or every problem, located in the overlay where it can be. */
export function applyOverlay(model: Model, source: SourceDoc): LoadResult {
  const problems: Problem[] = [];
  const at = (path: readonly PathSegment[], code: string, message: string): void => {
    const pos = locate(source, path, code === 'unknown-field' ? 'key' : 'value');
    problems.push({ code, path, message, file: source.file, line: pos?.line, col: pos?.col });
  };
  const overlay = source.value ?? {};
  if (!isRecord(overlay)) {
    at([], 'invalid-type', 'an overlay must be a mapping with server and/or tenants');
    return { ok: false, problems };
  }
  for (const key of Object.keys(overlay)) {
    if (!['server', 'tenants', '$schema'].includes(key)) at([key], 'unknown-field', `unknown field '${key}': an overlay holds server and tenants`);
  }
  let server = { ...model.server };
  if (overlay.server !== undefined) {
    if (!isRecord(overlay.server)) at(['server'], 'invalid-type', "'server' must be a mapping");
    else {
      // Checked as the model's own server section is: a base domain that is no string reached the semantic checks as one.
      const merged = ServerSpec.safeParse({ ...server, ...overlay.server }, { reportInput: true });
      if (merged.success) server = { ...server, ...merged.data };
      else for (const issue of merged.error.issues) for (const p of problemsFromZodIssue({ ...issue, path: ['server', ...issue.path] } as typeof issue, () => [])) at(p.path, p.code, p.message);
    }
  }
  const tenants: unknown[] = model.tenants.map((t) => structuredClone(t));
  const overlayTenants = overlay.tenants ?? [];
  if (!Array.isArray(overlayTenants)) at(['tenants'], 'invalid-type', "'tenants' must be a list");
  else {
    overlayTenants.forEach((ot: unknown, i) => {
      const tp: PathSegment[] = ['tenants', i];
      if (!isRecord(ot) || typeof ot.name !== 'string') {
        at(tp, 'missing-field', 'each tenant of an overlay names the tenant it changes (name)');
        return;
      }
      const index = tenants.findIndex((t) => (t as { name: string }).name === ot.name);
      const { add, ...spec } = ot;
      if (add !== undefined && add !== true) {
        at([...tp, 'add'], 'invalid-type', "'add' must be true when given");
        return;
      }
      if (index < 0) {
        // A misspelt name must never become a tenant: one only this environment has says so.
        if (add === true) tenants.push(spec); // validated whole below
        else {
          at([...tp, 'name'], 'unknown-reference', `tenant ${JSON.stringify(ot.name)} is not in the model${didYouMean(ot.name, model.tenants.map((t) => t.name))}: ` +
            'an overlay changes the tenants of the model; a tenant only this environment has says add: true');
        }
        return;
      }
      if (add === true) {
        at([...tp, 'add'], 'duplicate-name', `tenant ${JSON.stringify(ot.name)} is in the model already: add: true is only for a tenant the model lacks`);
        return;
      }
      const merged = tenants[index] as Record<string, unknown>;
      for (const [key, value] of Object.entries(ot)) {
        // Own keys only: `toString` or `__proto__` is in every object, and is no list to merge.
        if (!Object.hasOwn(OVERLAY_LISTS, key)) {
          // Defined, not assigned: `__proto__` stays a field (refused below as unknown), never the object's prototype.
          Object.defineProperty(merged, key, { value, enumerable: true, writable: true, configurable: true });
          continue;
        }
        const idKey = OVERLAY_LISTS[key as ListName];
        if (!Array.isArray(value)) {
          at([...tp, key], 'invalid-type', `'${key}' must be a list`);
          continue;
        }
        const list = [...((merged[key] as Record<string, unknown>[] | undefined) ?? [])];
        value.forEach((entry: unknown, j) => {
          const ep = [...tp, key, j];
          if (!isRecord(entry) || typeof entry[idKey] !== 'string') {
            at(ep, 'missing-field', `each entry of '${key}' in an overlay names the entry it changes (${idKey})`);
            return;
          }
          const { remove, ...fields } = entry;
          const k = list.findIndex((x) => x[idKey] === entry[idKey]);
          if (remove === true) {
            if (k < 0) at(ep, 'unknown-reference', `${key.replace(/s$/, '')} ${JSON.stringify(entry[idKey])} is not in the model: there is nothing to remove`);
            else list.splice(k, 1);
          } else if (remove !== undefined) {
            at([...ep, 'remove'], 'invalid-type', "'remove' must be true when given");
          } else if (k < 0) list.push(fields);
          else list[k] = { ...list[k], ...fields };
        });
        merged[key] = list;
      }
    });
  }
  if (problems.length > 0) return { ok: false, problems: sortProblems(problems) };

  // The merged tenants are validated again (defaults, kinds, shapes), then every semantic rule.
  const valid: Model['tenants'][number][] = [];
  tenants.forEach((t, i) => {
    const r = TenantSpec.safeParse(t, { reportInput: true });
    if (r.success) valid.push(r.data);
    else {
      for (const issue of r.error.issues) {
        const located = { ...issue, path: ['tenants', i, ...issue.path] } as typeof issue;
        problems.push(...problemsFromZodIssue(located, () => []).map((p) => ({ ...p, file: source.file, message: `${p.message} (after the overlay)` })));
      }
    }
  });
  if (problems.length > 0) return { ok: false, problems };
  const mergedModel: Model = { server, tenants: valid };
  const semantic = checkModel(mergedModel).map((p) => ({ ...p, file: source.file, message: `${p.message} (after the overlay)` }));
  if (semantic.length > 0) return { ok: false, problems: semantic };
  return { ok: true, model: mergedModel, files: [source.file] };
}

/** Loads a model (files or directories) and, when given, applies an overlay file to it. */
export async function loadModelWithOverlay(paths: readonly string[], overlayFile?: string, cache?: ParseCache): Promise<LoadResult> {
  const { loadModel } = await import('./load.ts');
  const base = await loadModel(paths, [], cache);
  if (!base.ok || overlayFile === undefined) return base;
  const { readFile, stat } = await import('node:fs/promises');
  const { MAX_FILE_BYTES } = await import('./_yaml-source.ts');
  let bytes: Uint8Array;
  try {
    if ((await stat(overlayFile)).size > MAX_FILE_BYTES) {
      return { ok: false, problems: [{ code: 'file-too-large', path: [], message: `an overlay may hold at most ${MAX_FILE_BYTES / 1024 / 1024} MiB`, file: overlayFile }] };
    }
    bytes = await readFile(overlayFile);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, problems: [{ code: 'file-not-found', path: [], message: code === 'ENOENT' ? 'no such file or directory' : `cannot read (${code ?? 'error'})`, file: overlayFile }] };
  }
  const parsed = parseOverlay(overlayFile, bytes);
  if (!parsed.ok) return parsed;
  const applied = applyOverlay(base.model, parsed.source);
  return applied.ok ? { ...applied, files: [...base.files, overlayFile] } : applied;
}
