/**
 * `idforge apply` records where each entry a console proposal may change was declared (the file,
 * relative to its Git work tree, the path in it, and its exact lines) in the entry's last-applied
 * record, so the console's proposal is a patch that `git apply` takes on that file. Files that
 * cannot be read again are passed over: the proposal then falls back to a diff of the export.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, relative, sep } from 'node:path';
import type { EntrySource, PlanStep } from '../contract/index.ts';
import { applicationSourceKey, assignmentsSourceKey, entrySourcesOf, modelFiles, userSourceKey } from '../schema/index.ts';

/** The Git work tree a file is in (the nearest directory above it holding `.git`), if any. */
function workTreeOf(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(`${dir}${sep}.git`)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** The sources of the entries of the model files `paths` name; file names as `git apply` reads them. */
export async function readEntrySources(paths: readonly string[], cwd: string): Promise<Map<string, EntrySource>> {
  const out = new Map<string, EntrySource>();
  for (const file of await modelFiles(paths)) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    const name = relative(workTreeOf(file) ?? cwd, file).split(sep).join('/');
    for (const [key, s] of entrySourcesOf(name, text)) if (!out.has(key)) out.set(key, s);
  }
  return out;
}

/** The plan's steps with the sources recorded in their last-applied entries (applications', users', and a tenant's: its assignments list). */
export function withEntrySources(steps: readonly PlanStep[], sources: ReadonlyMap<string, EntrySource>): PlanStep[] {
  if (sources.size === 0) return [...steps];
  return steps.map((s) => {
    if (s.op !== 'put' || (s.kind !== 'application' && s.kind !== 'tenant' && s.kind !== 'user')) return s;
    const source = sources.get(s.kind === 'application' ? applicationSourceKey(s.tenant, s.application) : s.kind === 'user' ? userSourceKey(s.tenant, s.user) : assignmentsSourceKey(s.tenant));
    const last = s.body.lastApplied;
    if (source === undefined || last === undefined) return s;
    return { ...s, body: { ...s.body, lastApplied: { ...last, source } } } as PlanStep;
  });
}
