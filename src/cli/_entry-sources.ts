/**
 * `idforge apply` records where each entry a console proposal may change was declared (the file,
 * relative to its Git work tree, the path in it, and its exact lines) in the entry's last-applied
 * record, so the console's proposal is a patch that `git apply` takes on that file. Files that
 * cannot be read again are passed over: the proposal then falls back to a diff of the export.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, relative, sep } from 'node:path';
import type { EntrySource, LastApplied, TenantBatchBody } from '../contract/index.ts';
import { applicationSourceKey, assignmentsSourceKey, entrySourcesOf, modelFiles, userSourceKey } from '../schema/index.ts';

/** The Git work tree a file is in (the nearest directory above it holding `.git`), if any. */
function workTreeOf(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(`${dir}${sep}.git`)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** Up to this many tenants, a file that cannot declare any of them is not parsed (a larger set costs more to look for). */
const FILTER_UP_TO = 32;

/**
 * The sources of the entries of the model files `paths` name; file names as `git apply` reads them.
 * With `tenants` (what an apply sends), a file is read only if it may declare one of them: it names
 * one, or holds a backslash (a double-quoted escape could spell a name). One changed tenant in a
 * model of 500 files is then one file to parse, not 500.
 */
export async function readEntrySources(paths: readonly string[], cwd: string, tenants?: ReadonlySet<string>): Promise<Map<string, EntrySource>> {
  const out = new Map<string, EntrySource>();
  if (tenants !== undefined && tenants.size === 0) return out;
  const wanted = tenants !== undefined && tenants.size <= FILTER_UP_TO ? [...tenants] : undefined;
  for (const file of await modelFiles(paths)) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    if (wanted !== undefined && !text.includes('\\') && !wanted.some((t) => text.includes(t))) continue;
    const name = relative(workTreeOf(file) ?? cwd, file).split(sep).join('/');
    for (const [key, s] of entrySourcesOf(name, text)) if (!out.has(key)) out.set(key, s);
  }
  return out;
}

/** A tenant batch with the sources recorded in its last-applied entries (applications', users', and the tenant's: its assignments list). */
export function batchWithEntrySources<B extends TenantBatchBody>(tenant: string, batch: B, sources: ReadonlyMap<string, EntrySource>): B {
  if (sources.size === 0) return batch;
  const recorded = <T extends { lastApplied?: LastApplied }>(body: T, key: string): T => {
    const source = sources.get(key);
    return source === undefined || body.lastApplied === undefined ? body : { ...body, lastApplied: { ...body.lastApplied, source } };
  };
  return {
    ...batch,
    ...(batch.tenant === undefined ? {} : { tenant: recorded(batch.tenant as { lastApplied?: LastApplied }, assignmentsSourceKey(tenant)) }),
    ...(batch.applications === undefined ? {} : { applications: batch.applications.map((a) => ({ ...a, body: recorded(a.body as { lastApplied?: LastApplied }, applicationSourceKey(tenant, a.name)) })) }),
    ...(batch.users === undefined ? {} : { users: batch.users.map((u) => ({ ...u, body: recorded(u.body as { lastApplied?: LastApplied }, userSourceKey(tenant, u.id)) })) }),
  };
}
