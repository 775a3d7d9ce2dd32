// Loads one of idforge's modules: the compiled JavaScript in dist/ (scripts/build.js) when it is at
// least as new as every source file, else the TypeScript source through tsx's loader, so an edited
// checkout never runs stale code. Plain JavaScript with node: builtins only.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './_node.js';

export const BUILD_STAMP = join(ROOT, 'dist', '.build-stamp');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

let fresh;
/** Whether dist/ holds a build of the current sources. */
export function buildIsFresh() {
  if (fresh === undefined) {
    let stamp = 0;
    try {
      stamp = statSync(BUILD_STAMP).mtimeMs;
    } catch {
      stamp = 0;
    }
    fresh = stamp > 0 && newestSource(join(ROOT, 'src')) <= stamp;
  }
  return fresh;
}

let tsx;
/** `module` is a path below src/ without extension, e.g. `cli/main`. */
export async function load(module) {
  if (buildIsFresh()) return import(pathToFileURL(join(ROOT, 'dist', `${module}.js`)).href);
  tsx ??= import('tsx/esm/api').then((api) => void api.register());
  await tsx;
  return import(pathToFileURL(join(ROOT, 'src', `${module}.ts`)).href);
}
