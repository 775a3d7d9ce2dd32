/**
 * The proposal's patch is a real unified diff: GNU patch applies it and gets the new text back,
 * for random edits of a model-like text. And notes become comments beside their values.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { modelYaml, unifiedDiff } from '../../src/generators/index.ts';
import { tempDir } from '../server/_support.ts';

const dir = tempDir('idforge-diff-');
afterAll(() => dir.remove());

const lines = fc.array(fc.constantFrom('a', 'b', 'c', '  - x', '  - y', 'name: z', ''), { maxLength: 30 });

describe('unifiedDiff', () => {
  it('is empty for equal texts, and writes a changed line as its removal then its addition', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n', { from: 'a', to: 'b' })).toBe('');
    expect(unifiedDiff('a\nb\nc\n', 'a\nB\nc\n', { from: 'a/m', to: 'b/m' })).toBe('--- a/m\n+++ b/m\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n');
  });

  it('patch(1) turns the old text into the new one', () => {
    fc.assert(fc.property(lines, lines, (a, b) => {
      const before = a.map((l) => `${l}\n`).join('');
      const after = b.map((l) => `${l}\n`).join('');
      const patch = unifiedDiff(before, after, { from: 'a/m.yaml', to: 'b/m.yaml' });
      if (before === after) return patch === '';
      const file = join(dir.path, 'm.yaml');
      writeFileSync(file, before);
      writeFileSync(join(dir.path, 'p.diff'), patch);
      execFileSync('patch', ['--quiet', '--force', file, join(dir.path, 'p.diff')], { stdio: 'pipe' });
      return readFileSync(file, 'utf8') === after;
    }), { numRuns: 150 });
  });
});

describe('modelYaml', () => {
  it('writes notes as comments beside scalars and before collections', () => {
    const text = modelYaml({ tenants: [{ name: 't', applications: [{ name: 'w', upstream: 'http://x' }], users: [{ id: 'u' }] }] }, [
      { path: ['tenants', 0, 'applications', 0, 'upstream'], message: 'set it' },
      { path: ['tenants', 0, 'users'], message: 'no passwords' },
    ], 'Header line');
    expect(text).toBe(`# Header line
tenants:
  - name: t
    applications:
      - name: w
        upstream: http://x # set it
    users:
      # no passwords
      - id: u
`);
  });
});
