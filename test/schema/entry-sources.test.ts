/**
 * Where each entry was declared, read the fast way (js-yaml's listener) and the careful way (yaml's
 * position-tracking parse): for generated model files written as people write them (block and flow
 * entries, comments at every indentation, blank lines, block scalars, quoted keys, document markers,
 * a missing final newline, CRLF), both find the same entries on the same lines. The fast way is
 * what `idforge apply` runs on every file; the careful one is its reference and its fallback.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applicationSourceKey, assignmentsSourceKey, entrySourcesOf, userSourceKey } from '../../src/schema/index.ts';
import { carefulEntrySources, fastEntrySources } from '../../src/schema/entry-sources.ts';

const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/);
const indent = fc.constantFrom(0, 2, 4, 6, 8, 10, 12);
/** Lines a person puts between any two lines: nothing, blank lines, or a comment at some indentation. */
const between = fc.oneof(
  { weight: 4, arbitrary: fc.constant([] as string[]) },
  fc.array(fc.oneof(fc.constant(''), indent.map((n) => `${' '.repeat(n)}# note`), fc.constant('   ')), { minLength: 1, maxLength: 3 }),
);
const key = (k: string) => fc.constantFrom(k, `"${k}"`, `'${k}'`);
const trailing = fc.constantFrom('', '', '  # why', ' ');

/** One application entry, at `at` (the column of its `- `), in block or flow style. */
const appEntry = (name: string, at: number) => fc.record({
  flow: fc.boolean(), nameKey: key('name'), tail: trailing, gap: between, gap2: between,
  block: fc.boolean(), lines: fc.integer({ min: 1, max: 3 }), scopes: fc.uniqueArray(word, { maxLength: 3 }), scopesFlow: fc.boolean(),
}).map((e) => {
  const pad = ' '.repeat(at);
  if (e.flow) return [`${pad}- { ${e.nameKey}: ${name}, kind: web, origin: "http://${name}.localhost:3000" }${e.tail}`];
  const body = [
    `${pad}- ${e.nameKey}: ${name}${e.tail}`,
    ...e.gap,
    `${pad}  kind: web`,
    `${pad}  origin: http://${name}.localhost:3000`,
    ...(e.block ? [`${pad}  displayName: |`, ...Array.from({ length: e.lines }, (_, i) => `${pad}    line ${i}`)] : []),
    ...e.gap2,
    ...(e.scopes.length === 0 ? [] : e.scopesFlow ? [`${pad}  scopes: [${e.scopes.join(', ')}]`] : [`${pad}  scopes:`, ...e.scopes.map((s) => `${pad}    - ${s}`)]),
  ];
  return body;
});

const userEntry = (id: string, at: number) => fc.record({ flow: fc.boolean(), tail: trailing, gap: between }).map((e) => {
  const pad = ' '.repeat(at);
  if (e.flow) return [`${pad}- {id: ${id}, email: ${id}@example.com}${e.tail}`];
  return [`${pad}- id: ${id}${e.tail}`, ...e.gap, `${pad}  email: ${id}@example.com`];
});

const tenant = (name: string, at: number) => fc.record({
  apps: fc.uniqueArray(word, { minLength: 0, maxLength: 4 }),
  users: fc.uniqueArray(word, { minLength: 0, maxLength: 3 }),
  at: fc.constant(at),
  assignments: fc.constantFrom('none', 'block', 'flow', 'flow-lines'),
  gaps: fc.array(between, { minLength: 6, maxLength: 6 }),
  order: fc.boolean(),
}).chain((t) => fc.tuple(
  fc.tuple(...t.apps.map((a) => appEntry(a, t.at))),
  fc.tuple(...t.users.map((u) => userEntry(u, t.at))),
).map(([apps, users]) => {
  const pad = ' '.repeat(t.at - 2);
  const section = (k: string, entries: string[][], gap: string[]) => (entries.length === 0 ? [] : [`${pad}  ${k}:`, ...gap, ...entries.flatMap((e, i) => (i === 0 ? e : [...t.gaps[i % 6]!, ...e]))]);
  const pairs = t.users.flatMap((u) => t.apps.slice(0, 1).map((a) => `{ user: ${u}, application: ${a} }`));
  const assignments = t.assignments === 'none' || pairs.length === 0 ? []
    : t.assignments === 'block' ? [`${pad}  assignments:`, ...t.gaps[1]!, ...pairs.map((p) => `${pad}    - ${p}`)]
    : t.assignments === 'flow' ? [`${pad}  assignments: [${pairs.join(', ')}]`]
    : [`${pad}  assignments: [`, ...pairs.map((p) => `${pad}      ${p},`), `${pad}    ]`];
  const parts = [section('applications', apps, t.gaps[2]!), section('users', users, t.gaps[3]!), assignments];
  return [`${pad}- name: ${name}`, `${pad}  subdomain: ${name}`, ...t.gaps[4]!, ...(t.order ? parts : parts.reverse()).flat(), ...t.gaps[5]!];
}));

const modelFile = fc.record({
  names: fc.uniqueArray(word, { minLength: 1, maxLength: 3 }),
  at: fc.constantFrom(4, 6),
  head: fc.constantFrom('', '---\n', '# the model\n', '%YAML 1.2\n---\n', '\uFEFF', '\uFEFF# with a byte order mark\n'),
  end: fc.constantFrom('\n', '', '\n\n', '\n# end\n', '\n...\n'),
  crlf: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
}).chain((f) => fc.tuple(...f.names.map((n) => tenant(n, f.at))).map((tenants) => {
  const text = `${f.head}tenants:\n${tenants.flat().join('\n')}${f.end}`;
  return f.crlf ? text.replace(/\n/g, '\r\n') : text;
}));

describe('entry sources: the fast read agrees with the careful one', () => {
  it('on generated model files: the same entries, on the same lines', () => {
    let read = 0;
    let found = 0;
    fc.assert(fc.property(modelFile, (text) => {
      const careful = carefulEntrySources('m.yaml', text);
      const fast = fastEntrySources('m.yaml', text);
      // What js-yaml refuses, yaml finds no entry in either (entrySourcesOf would take the careful read).
      if (fast === undefined) {
        expect(careful.size).toBe(0);
        return;
      }
      read++;
      found += fast.size;
      expect([...fast]).toEqual([...careful]);
    }), { numRuns: 1000 });
    // The generated files are YAML both parsers read, and hold entries: the comparison is not of two empty maps.
    expect(read).toBeGreaterThan(900);
    expect(found).toBeGreaterThan(read);
  });

  it('finds each kind of entry in a plain file (so the property above is not comparing two empty maps)', () => {
    const text = [
      'tenants:',
      '  - name: acme',
      '    applications:',
      '      - name: portal',
      '        kind: web',
      '        # about the next one',
      '      - name: orders',
      '        kind: api',
      '',
      '    users:',
      '      - id: u-bob',
      '        email: bob@example.com',
      '    assignments:',
      '      - { user: u-bob, application: portal }',
      '# the end',
      '',
    ].join('\n');
    const s = entrySourcesOf('m.yaml', text);
    expect(s.get(applicationSourceKey('acme', 'portal'))).toMatchObject({ line: 4, column: 8, text: '      - name: portal\n        kind: web' });
    expect(s.get(applicationSourceKey('acme', 'orders'))).toMatchObject({ line: 7, text: '      - name: orders\n        kind: api' });
    expect(s.get(userSourceKey('acme', 'u-bob'))).toMatchObject({ line: 11 });
    expect(s.get(assignmentsSourceKey('acme'))).toMatchObject({ line: 13, column: 4, text: '    assignments:\n      - { user: u-bob, application: portal }', after: '# the end' });
    expect([...s]).toEqual([...carefulEntrySources('m.yaml', text)]);
  });

  it('leaves anchors, aliases and text js-yaml refuses to the careful read', () => {
    const anchored = 'tenants:\n  - name: acme\n    applications:\n      - &p { name: portal, kind: web }\n    users: []\n';
    expect([...entrySourcesOf('m.yaml', anchored)]).toEqual([...carefulEntrySources('m.yaml', anchored)]);
    const tabs = 'tenants:\n  - name: acme\n    applications:\n      - name: portal\n\tkind: web\n';
    expect([...entrySourcesOf('m.yaml', tabs)]).toEqual([...carefulEntrySources('m.yaml', tabs)]);
  });
});
