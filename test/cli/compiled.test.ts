/**
 * The compiled CLI: bin/_load.js runs dist/ when the build is at least as new as every source, and
 * the TypeScript source through tsx as soon as one source is newer (a development checkout after an
 * edit), so nobody runs stale code. Proven on a small project laid out like the repository, with the
 * real loader files and the real tsx.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../..');
let dir: string;

function where(): string {
  const script = `const { load } = await import(${JSON.stringify(join(dir, 'bin/_load.js'))}); console.log((await load('cli/main')).where);`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim();
}

const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'idforge-compiled-'));
  mkdirSync(join(dir, 'bin'));
  for (const f of ['_load.js', '_node.js']) cpSync(join(REPO, 'bin', f), join(dir, 'bin', f));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  mkdirSync(join(dir, 'src/cli'), { recursive: true });
  mkdirSync(join(dir, 'dist/cli'), { recursive: true });
  writeFileSync(join(dir, 'src/cli/main.ts'), "export const where: string = 'source';\n");
  writeFileSync(join(dir, 'dist/cli/main.js'), "export const where = 'compiled';\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bin/_load.js', () => {
  it('runs the compiled JavaScript when the build is newer than every source', () => {
    at(join(dir, 'src/cli/main.ts'), 1_000);
    writeFileSync(join(dir, 'dist/.build-stamp'), 'now\n');
    at(join(dir, 'dist/.build-stamp'), 2_000);
    expect(where()).toBe('compiled');
  });

  it('runs the TypeScript source through tsx once a source is newer than the build', () => {
    at(join(dir, 'src/cli/main.ts'), 3_000);
    expect(where()).toBe('source');
  });

  it('runs the source when there is no build at all', () => {
    rmSync(join(dir, 'dist/.build-stamp'));
    expect(where()).toBe('source');
  });
});

describe('the build', () => {
  it('compiles every source of src/ that the entry points load', () => {
    // What npm ci's prepare (scripts/build.js) produces in this clone: one .js per source module.
    execFileSync(process.execPath, [join(REPO, 'scripts/build.js')], { cwd: REPO, stdio: 'pipe' });
    const out = execFileSync(process.execPath, [join(REPO, 'bin/idforge.js'), 'validate', join(REPO, 'examples/acme.yaml')], { encoding: 'utf8' });
    expect(out).toMatch(/^valid: 1 tenant, /);
    const fresh = execFileSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(REPO, 'bin/_load.js'))}); console.log(m.buildIsFresh());`], { encoding: 'utf8' });
    expect(fresh.trim()).toBe('true');
  }, 120_000);
});
