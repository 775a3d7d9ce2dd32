/**
 * Model files → validated, merged Model, or every problem with its file and line:col.
 *
 * `validateSources` is pure (text in, result out) so tests and fuzzing need no files;
 * `loadModel` adds the reading of files and directories.
 */
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { checkModel } from './checks.ts';
import { ModelFileSpec, assembleModel, type Model, type ModelFile, type TenantSpec } from './model.ts';
import { problemsFromZodIssue, sortProblems, type PathSegment, type Problem } from './problems.ts';
import { MAX_FILE_BYTES, decodeModelBytes, locate, parseModelText, type SourceDoc } from './_yaml-source.ts';
import { fastValidate } from './_fast-path.ts';
import type { ParseCache } from './parse-cache.ts';
import { identityMaps, salvageFile, type ListName, type SalvagedTenant } from './_salvage.ts';

export interface ModelSource {
  readonly file: string;
  /** Text, or raw bytes straight from disk (checked for binary data and UTF-8). */
  readonly content: string | Uint8Array;
}

export type LoadResult =
  | { readonly ok: true; readonly model: Model; readonly files: readonly string[] }
  | { readonly ok: false; readonly problems: readonly Problem[] };

const MODEL_EXTENSIONS = /\.(ya?ml|json)$/i;

/** The zod schema under a model path, following the input to pick an application's kind. */
function schemaAt(root: z.ZodType, path: readonly PathSegment[], input: unknown): z.ZodType | undefined {
  let schema: z.ZodType | undefined = root;
  let value: unknown = input;
  const unwrap = (s: z.ZodType): z.ZodType => {
    let cur = s;
    for (;;) {
      const def = cur._zod.def as { type: string; innerType?: z.ZodType };
      if ((def.type === 'default' || def.type === 'optional' || def.type === 'prefault') && def.innerType) cur = def.innerType;
      else return cur;
    }
  };
  for (const seg of [...path, undefined]) {
    if (schema === undefined) return undefined;
    schema = unwrap(schema);
    const def = schema._zod.def as { type: string; shape?: Record<string, z.ZodType>; element?: z.ZodType; options?: z.ZodType[] };
    if (def.type === 'union' && def.options) {
      const kind = (value as { kind?: unknown } | null)?.kind;
      schema = def.options.find((o) => {
        const shape = (unwrap(o)._zod.def as { shape?: Record<string, z.ZodType> }).shape;
        const lit = shape?.kind?._zod.def as { values?: unknown[] } | undefined;
        return lit?.values?.includes(kind);
      });
      if (schema === undefined) return undefined;
      schema = unwrap(schema);
    }
    if (seg === undefined) return schema;
    const d = schema._zod.def as { type: string; shape?: Record<string, z.ZodType>; element?: z.ZodType };
    if (d.type === 'object' && typeof seg === 'string') schema = d.shape?.[seg];
    else if (d.type === 'array' && typeof seg === 'number') schema = d.element;
    else return undefined;
    value = (value as Record<string | number, unknown> | null | undefined)?.[seg];
  }
  return schema;
}

function knownKeysFor(input: unknown) {
  return (path: readonly PathSegment[]): readonly string[] => {
    const s = schemaAt(ModelFileSpec, path, input);
    const shape = (s?._zod.def as { shape?: Record<string, unknown> } | undefined)?.shape;
    return shape === undefined ? [] : Object.keys(shape);
  };
}

/** Where each merged tenant came from, so merged paths map back to a file and its local path. */
interface Origin {
  readonly source: SourceDoc;
  readonly localIndex: number;
  readonly indexMaps: Readonly<Record<ListName, readonly number[]>>;
  readonly broken: ReadonlySet<string>;
}

function where(source: SourceDoc, localPath: readonly PathSegment[], prefer: 'key' | 'value' = 'value') {
  const pos = locate(source, localPath, prefer);
  return { file: source.file, line: pos?.line, col: pos?.col };
}

function positioned(p: Problem, source: SourceDoc, localPath: readonly PathSegment[]): Problem {
  return { ...p, ...where(source, localPath, p.code === 'unknown-field' ? 'key' : 'value') };
}

/** A merged-model path → the file it is in and the path inside that file. */
function toLocal(
  path: readonly PathSegment[],
  origins: readonly Origin[],
): { origin: Origin; local: PathSegment[]; merged: PathSegment[] } | undefined {
  const [head, index, list, item, ...rest] = path;
  if (head !== 'tenants' || typeof index !== 'number' || origins[index] === undefined) return undefined;
  const origin = origins[index];
  // Salvaged lists may have lost broken entries: map list positions back to the file's.
  const map = typeof list === 'string' && typeof item === 'number' ? origin.indexMaps[list as ListName] : undefined;
  const fileItem = map !== undefined && typeof item === 'number' ? (map[item] ?? item) : item;
  const tail = [...(list === undefined ? [] : [list]), ...(fileItem === undefined ? [] : [fileItem]), ...rest];
  return { origin, local: ['tenants', origin.localIndex, ...tail], merged: ['tenants', index, ...tail] };
}

export function validateSources(sources: readonly ModelSource[], cache?: ParseCache): LoadResult {
  const fast = fastValidate(sources, cache);
  if (fast !== undefined) return { ok: true, ...fast };
  return validateCarefully(sources);
}

/**
 * The position-tracking path: every problem, each with its file and line:col. `found` are problems
 * found elsewhere (against a live server) at paths of the merged model: they are located the way
 * the model's own are.
 */
export function validateCarefully(sources: readonly ModelSource[], found: readonly Problem[] = []): LoadResult {
  const problems: Problem[] = [];
  const parsed: Array<{ source: SourceDoc; server: ModelFile['server']; tenants: readonly SalvagedTenant[] }> = [];
  let shapeProblems = false;

  for (const { file, content } of sources) {
    let text: string;
    if (typeof content === 'string') text = content;
    else {
      const decoded = decodeModelBytes(file, content);
      if (!decoded.ok) {
        problems.push(...decoded.problems);
        continue;
      }
      text = decoded.text;
    }
    const res = parseModelText(file, text);
    if (!res.ok) {
      problems.push(...res.problems);
      continue;
    }
    const { source } = res;
    if (source.value === null || source.value === undefined) {
      problems.push({ code: 'empty-file', path: [], message: "file is empty: expected a mapping with 'tenants' (and optionally 'server')", file });
      continue;
    }
    if (typeof source.value !== 'object' || Array.isArray(source.value)) {
      problems.push({ code: 'wrong-type', path: [], message: "the top level must be a mapping with 'tenants' (and optionally 'server')", ...where(source, []) });
      continue;
    }
    const result = ModelFileSpec.safeParse(source.value, { reportInput: true });
    if (result.success) {
      const tenants = result.data.tenants.map((tenant) => ({ tenant, indexMaps: identityMaps(tenant), broken: new Set<string>() }));
      parsed.push({ source, server: result.data.server, tenants });
    } else {
      shapeProblems = true;
      const known = knownKeysFor(source.value);
      for (const issue of result.error.issues) {
        for (const p of problemsFromZodIssue(issue, known)) problems.push(positioned(p, source, p.path));
      }
      parsed.push({ source, ...salvageFile(source.value as Record<string, unknown>) });
    }
  }

  // Merge: tenants in file order; at most one file says where the server is.
  const origins: Origin[] = [];
  const tenants: TenantSpec[] = [];
  let serverFrom: SourceDoc | undefined;
  let server: ModelFile['server'];
  for (const { source, server: fileServer, tenants: fileTenants } of parsed) {
    fileTenants.forEach(({ tenant, indexMaps, broken }, i) => {
      tenants.push(tenant);
      origins.push({ source, localIndex: i, indexMaps, broken });
    });
    if (fileServer !== undefined) {
      if (serverFrom !== undefined) {
        const first = where(serverFrom, ['server']);
        problems.push(
          positioned(
            { code: 'duplicate-server', path: ['server'], message: `the server section is already defined in ${first.file}:${first.line ?? 1}:${first.col ?? 1}; define it in one file only` },
            source,
            ['server'],
          ),
        );
      } else {
        serverFrom = source;
        server = fileServer;
      }
    }
  }
  if (parsed.length === 0 && problems.length === 0) {
    return { ok: false, problems: [{ code: 'no-model', path: [], message: 'no model files to read' }] };
  }

  const model = assembleModel(server, tenants);

  for (const p of [...checkModel(model), ...found]) {
    if (p.path[0] === 'server') {
      problems.push(serverFrom === undefined ? p : positioned(p, serverFrom, p.path));
      continue;
    }
    const at = toLocal(p.path, origins);
    if (at === undefined) {
      problems.push(p);
      continue;
    }
    // A reference to an entity that failed the schema is reported there, not again here.
    if (p.ref !== undefined && at.origin.broken.has(p.ref)) continue;
    let located = positioned({ ...p, path: at.merged }, at.origin.source, at.local);
    if (p.related !== undefined) {
      const rel = toLocal(p.related, origins);
      if (rel !== undefined) {
        const r = where(rel.origin.source, rel.local);
        located = { ...located, message: `${p.message} at ${r.file}:${r.line ?? 1}:${r.col ?? 1}` };
      }
    }
    problems.push(located);
  }
  if (problems.length > 0 || shapeProblems) return { ok: false, problems: sortProblems(dedupeDeep(problems)) };
  return { ok: true, model, files: parsed.map((p) => p.source.file) };
}

/** A stack-exhausting document yields one error per level: one is enough. */
function dedupeDeep(problems: Problem[]): Problem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    if (p.code !== 'too-deep') return true;
    const key = p.file ?? '';
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function unreadable(file: string, err: unknown): Problem {
  const code = (err as NodeJS.ErrnoException).code;
  const message = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : code === 'ELOOP' ? 'symbolic links loop' : `cannot read (${code ?? 'error'})`;
  return { code: 'file-not-found', path: [], message, file };
}

/**
 * The model files under a directory, in sorted order. Symbolic links are followed (a model kept in
 * several repositories is often linked together), each real directory is read once (no loops), and
 * a link that leads nowhere is a problem: a file that cannot be read never silently drops out of
 * the model, since a model missing a tenant would delete it.
 */
async function walk(dir: string, seen: Set<string>, problems: Problem[]): Promise<string[]> {
  const real = await realpath(dir);
  if (seen.has(real)) return [];
  seen.add(real);
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    let isDir = e.isDirectory();
    let isFile = e.isFile();
    if (e.isSymbolicLink()) {
      try {
        const st = await stat(path);
        isDir = st.isDirectory();
        isFile = st.isFile();
      } catch (err) {
        problems.push(unreadable(path, err));
        continue;
      }
    }
    if (isDir) out.push(...(await walk(path, seen, problems)));
    else if (isFile && MODEL_EXTENSIONS.test(e.name)) out.push(path);
  }
  return out;
}

/** The model files `paths` name (directories walked, in sorted order), each once. */
export async function modelFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const p of paths) files.push(...(await collectFiles(p, [])));
  return [...new Set(files)];
}

async function collectFiles(path: string, problems: Problem[]): Promise<string[]> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    problems.push(unreadable(path, err));
    return [];
  }
  if (st.isFile()) return [path];
  if (!st.isDirectory()) {
    problems.push({ code: 'not-a-file', path: [], message: 'not a regular file or directory', file: path });
    return [];
  }
  const files = (await walk(path, new Set(), problems)).sort();
  if (files.length === 0 && problems.length === 0) {
    problems.push({ code: 'empty-directory', path: [], message: 'directory holds no model files (*.yaml, *.yml, *.json): an empty model would delete every tenant', file: path });
  }
  return files;
}

/**
 * Problems found outside the model (against a live server: a user another door manages) at paths of
 * the merged model that `paths` load, with the file and line:col of each, as validate prints them.
 */
export async function locateProblems(paths: readonly string[], found: readonly Problem[]): Promise<readonly Problem[]> {
  const result = await loadModel(paths, found);
  return result.ok ? found : result.problems;
}

/** Read model files (or directories of them, recursively, in sorted order) and validate them. */
export async function loadModel(paths: readonly string[], found: readonly Problem[] = [], cache?: ParseCache): Promise<LoadResult> {
  const problems: Problem[] = [];
  const files: string[] = [];
  for (const p of paths) files.push(...(await collectFiles(p, problems)));
  if (problems.length > 0) return { ok: false, problems };
  const sources: ModelSource[] = [];
  for (const file of [...new Set(files)]) {
    try {
      const st = await stat(file);
      if (st.size > MAX_FILE_BYTES) {
        // Refuse before reading: a huge file must not be pulled into memory first.
        problems.push({
          code: 'file-too-large',
          path: [],
          message: `file is ${(st.size / 1024 / 1024).toFixed(1)} MiB; a model file may hold at most ${MAX_FILE_BYTES / 1024 / 1024} MiB (split the model into a directory of files)`,
          file,
        });
        continue;
      }
      sources.push({ file, content: await readFile(file) });
    } catch (err) {
      problems.push(unreadable(file, err));
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return found.length === 0 ? validateSources(sources, cache) : validateCarefully(sources, found);
}
