/**
 * Console proposals as patches of the lines an entry was declared on: for generated model files
 * (entries in flow and block style, with comments, quoting and fields the console's forms do not
 * know) and generated changes, real `git apply` takes the patch on the file, and the patched file
 * declares exactly the changed entry, with every other entry and field as it was.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { entryPatch, assignmentsPatch } from '../../src/generators/index.ts';
import { applicationSourceKey, assignmentsSourceKey, entrySourcesOf } from '../../src/schema/index.ts';
import { tempDir } from '../server/_support.ts';

const work = tempDir('idforge-entry-patch-');
execFileSync('git', ['init', '-q'], { cwd: work.path });
afterAll(() => work.remove());

type App = Record<string, string | string[]>;
const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,9}$/);
const text = fc.oneof(word, fc.constantFrom('Acme Portal', 'Orders: the API', 'it\'s here', '#not a comment', 'x  y'));
const app = (name: string) => fc.record({
  name: fc.constant(name), kind: fc.constantFrom('web', 'proxy', 'spa'), displayName: text,
  origin: word.map((w) => `http://${w}.localhost:3000`), scopes: fc.uniqueArray(word, { maxLength: 3 }),
}, { requiredKeys: ['name', 'kind', 'origin'] }) as fc.Arbitrary<App>;

/** One entry as a person might write it: flow on one line, or block with comments and quotes. */
function entryText(a: App, flow: boolean, comment: boolean): string {
  const scalar = (v: string) => JSON.stringify(v);
  const value = (v: string | string[]) => (Array.isArray(v) ? `[${v.join(', ')}]` : scalar(v));
  const pairs = Object.entries(a).map(([k, v]) => `${k}: ${value(v)}`);
  if (flow) return `      - { ${pairs.join(', ')} }${comment ? '   # kept as written' : ''}`;
  return pairs.map((p, i) => `${i === 0 ? '      - ' : '        '}${p}${comment && i === 1 ? '  # a comment' : ''}`).join('\n');
}

const model: fc.Arbitrary<Generated> = fc.tuple(fc.uniqueArray(word, { minLength: 1, maxLength: 4 }), fc.boolean()).chain(([names, withAssignments]) =>
  fc.record({
    apps: fc.tuple(...names.map((n) => fc.tuple(app(n), fc.boolean(), fc.boolean()))),
    assignments: withAssignments ? fc.uniqueArray(fc.tuple(fc.constantFrom(...names), fc.uniqueArray(word, { minLength: 1, maxLength: 3 })), { selector: ([n]) => n, minLength: 1, maxLength: names.length }) : fc.constant(undefined),
  }));

interface Generated {
  readonly apps: readonly (readonly [App, boolean, boolean])[];
  readonly assignments: readonly (readonly [string, string[]])[] | undefined;
}

const fileOf = (m: Generated) => [
  'server: { baseDomain: localhost }',
  'tenants:',
  '  - name: acme',
  '    # the applications',
  '    applications:',
  ...m.apps.map(([a, flow, comment]) => entryText(a, flow, comment)),
  ...(m.assignments === undefined ? [] : ['    assignments:', ...m.assignments.map(([n, users]) => `      - { application: ${n}, users: [${users.join(', ')}] }`)]),
  '    users: []',
  '',
].join('\n');

/** Writes `file`, applies `patch` with git, and returns the patched file's value. */
function gitApply(file: string, patch: string): any {
  writeFileSync(join(work.path, 'acme.yaml'), file);
  writeFileSync(join(work.path, 'change.patch'), patch);
  execFileSync('git', ['apply', 'change.patch'], { cwd: work.path, stdio: ['ignore', 'ignore', 'pipe'] });
  return parse(readFileSync(join(work.path, 'acme.yaml'), 'utf8'));
}

describe('entry patches', () => {
  it('an application change: git apply takes it, and only that entry changes, only in the changed fields', () => {
    fc.assert(fc.property(model, fc.nat(), text, (m, pick, displayName) => {
      const file = fileOf(m);
      const [target] = m.apps[pick % m.apps.length]!;
      const source = entrySourcesOf('acme.yaml', file).get(applicationSourceKey('acme', target.name as string));
      expect(source).toBeDefined();
      const after = { ...target, displayName, scopes: [...(target.scopes ?? []), 'extra-scope'] };
      const patch = entryPatch(source!, target, after)!;
      expect(patch).toContain('--- a/acme.yaml');
      const patched = gitApply(file, patch);
      const before = parse(file);
      expect(patched.tenants[0].applications).toEqual(before.tenants[0].applications.map((x: App) => (x.name === target.name ? { ...x, ...after } : x)));
      expect({ ...patched.tenants[0], applications: [] }).toEqual({ ...before.tenants[0], applications: [] });
    }), { numRuns: 60, seed: 20261125 });
  });

  it('an assignments change: git apply takes it, and only that application\'s users change', () => {
    fc.assert(fc.property(model, fc.nat(), fc.uniqueArray(word, { maxLength: 3 }), (m, pick, users) => {
      const file = fileOf(m);
      const source = entrySourcesOf('acme.yaml', file).get(assignmentsSourceKey('acme'));
      if (m.assignments === undefined) {
        expect(source).toBeUndefined();
        return;
      }
      const application = m.apps[pick % m.apps.length]![0].name as string;
      const patch = assignmentsPatch(source!, application, users)!;
      const want = [...m.assignments.map(([n, u]) => ({ application: n, users: n === application ? users : u })), ...(m.assignments.some(([n]) => n === application) ? [] : [{ application, users }])]
        .filter((e) => e.users.length > 0);
      if (patch === '') {
        expect(want).toEqual(m.assignments.map(([n, u]) => ({ application: n, users: u })));
        return;
      }
      const patched = gitApply(file, patch);
      expect(patched.tenants[0].assignments ?? []).toEqual(want);
      expect({ ...patched.tenants[0], assignments: [] }).toEqual({ ...parse(file).tenants[0], assignments: [] });
    }), { numRuns: 60, seed: 20261125 });
  });

  it('a file that changed since apply is refused by git apply rather than patched in the wrong place', () => {
    const file = fileOf({ apps: [[{ name: 'portal', kind: 'web', origin: 'http://p.localhost:3000', displayName: 'Portal' }, true, false]], assignments: undefined });
    const source = entrySourcesOf('acme.yaml', file).get(applicationSourceKey('acme', 'portal'))!;
    const patch = entryPatch(source, { name: 'portal', displayName: 'Portal' }, { name: 'portal', displayName: 'New' })!;
    expect(() => gitApply(file.replace('displayName: "Portal"', 'displayName: "Edited in Git"'), patch)).toThrow(/patch does not apply/);
  });
});
