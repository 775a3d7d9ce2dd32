// `npm run build` (and npm ci's "prepare"): compiles src/ to dist/ with tsc (tsconfig.build.json), so
// bin/idforge.js, the Pulumi program and the dynamic providers run JavaScript, not TypeScript through a
// loader at every start. Then stamps the build; bin/_load.js falls back to the sources (through tsx)
// only while a source file is newer than that stamp, i.e. in a development checkout after an edit.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from '../bin/_node.js';
import { BUILD_STAMP } from '../bin/_load.js';

const started = Date.now();
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
// A clean build when asked (--clean), else incremental (dist/.tsbuildinfo).
if (process.argv.includes('--clean')) rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
mkdirSync(join(ROOT, 'dist'), { recursive: true });
const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
if (r.status !== 0) {
  console.error('build: tsc failed (above); bin/idforge.js keeps running the TypeScript sources through tsx');
  process.exit(r.status ?? 1);
}
writeFileSync(BUILD_STAMP, `${new Date().toISOString()}\n`);
console.log(`build: compiled src/ to dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
