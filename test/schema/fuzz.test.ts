/**
 * Whatever bytes arrive, validation answers with problems, never an exception or a hang.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validateSources, type LoadResult } from '../../src/schema/index.ts';

function assertWellFormed(result: LoadResult): void {
  if (result.ok) return;
  expect(result.problems.length).toBeGreaterThan(0);
  for (const p of result.problems) {
    expect(typeof p.code).toBe('string');
    expect(p.message.length).toBeGreaterThan(0);
    expect(p.message).not.toMatch(/\n\s+at /); // no stack trace leaks into a message
    if (p.line !== undefined) expect(p.line).toBeGreaterThanOrEqual(1);
  }
}

const KEYS = ['server', 'tenants', 'name', 'displayName', 'users', 'applications', 'assignments', 'groups', 'scopes', 'kind', 'origin', 'id', 'email', 'audience', 'routes', 'path', 'members', 'application', 'offline', 'cacheType', 'upstream', 'provider', 'callback', 'response', 'port', 'baseDomain', 'scheme', 'password', 'env', 'redirectUris', 'publicRoutes', 'clientSecret'];
const leaf = fc.oneof(
  fc.constantFrom('acme', 'web', 'spa', 'api', 'proxy', 'http://a.localhost:3000', 'https://x.example', 'a@b.example', 'admin', 'openid', '/hello', 'session_storage', '*', ''),
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);
/** Documents shaped like models, so the fuzzer reaches the semantic checks and the salvage path. */
const modelish = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 4 }), tie('object')),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 6 }),
})).object;

describe('validate never throws', () => {
  it('on arbitrary text', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => assertWellFormed(validateSources([{ file: 'f.yaml', content: text }]))), { numRuns: 400 });
  });
  it('on arbitrary bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => assertWellFormed(validateSources([{ file: 'f.yaml', content: bytes }]))), { numRuns: 400 });
  });
  it('on arbitrary JSON-like values written as YAML and JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assertWellFormed(validateSources([{ file: 'f.yaml', content: stringify(value) }]));
        assertWellFormed(validateSources([{ file: 'f.json', content: JSON.stringify(value) ?? 'null' }]));
      }),
      { numRuns: 300 },
    );
  });
  it('on documents shaped like models', () => {
    fc.assert(
      fc.property(modelish, fc.array(modelish, { maxLength: 3 }), (doc, more) => {
        const sources = [doc, ...more].map((d, i) => ({ file: `m${i}.yaml`, content: stringify(d) }));
        assertWellFormed(validateSources(sources));
      }),
      { numRuns: 500 },
    );
  });
  it('on models with one field replaced by noise', () => {
    const base = {
      tenants: [
        {
          name: 'acme',
          displayName: 'Acme',
          users: [{ id: 'u1', email: 'u1@acme.example' }],
          applications: [
            { name: 'api', kind: 'api', audience: 'https://api.acme.example' },
            { name: 'ui', kind: 'spa', origin: 'http://ui.localhost:5173', audience: ['api'] },
          ],
          assignments: [{ application: 'ui', users: ['u1'] }],
        },
      ],
    };
    const paths = [
      ['tenants', 0, 'name'],
      ['tenants', 0, 'users', 0],
      ['tenants', 0, 'users', 0, 'email'],
      ['tenants', 0, 'applications', 1, 'kind'],
      ['tenants', 0, 'applications', 1, 'audience'],
      ['tenants', 0, 'applications', 0],
      ['tenants', 0, 'assignments', 0, 'users'],
      ['tenants', 0, 'assignments'],
    ] as const;
    fc.assert(
      fc.property(fc.constantFrom(...paths), fc.jsonValue(), (path, noise) => {
        const doc = structuredClone(base) as Record<string | number, unknown>;
        let node: Record<string | number, unknown> = doc;
        for (const seg of path.slice(0, -1)) node = node[seg] as Record<string | number, unknown>;
        node[path.at(-1)!] = noise;
        assertWellFormed(validateSources([{ file: 'm.yaml', content: stringify(doc) }]));
      }),
      { numRuns: 400 },
    );
  });
});

describe('the fast path for valid models', () => {
  it('gives the same model as the position-tracking path for every example', async () => {
    const { readFile, readdir } = await import('node:fs/promises');
    const { validateCarefully } = await import('../../src/schema/load.ts');
    const sets = [['examples/acme.yaml'], (await readdir('examples/multi-tenant')).sort().map((f) => `examples/multi-tenant/${f}`)];
    for (const files of sets) {
      const sources = await Promise.all(files.map(async (file) => ({ file, content: await readFile(file, 'utf8') })));
      const fast = validateSources(sources);
      const careful = validateCarefully(sources);
      expect(fast.ok).toBe(true);
      expect(fast).toEqual(careful);
    }
  });
  it('gives the same verdict as the position-tracking path on model-shaped documents', () => {
    return import('../../src/schema/load.ts').then(({ validateCarefully }) =>
      fc.assert(
        fc.property(modelish, (doc) => {
          const sources = [{ file: 'm.yaml', content: stringify(doc) }];
          const fast = validateSources(sources);
          const careful = validateCarefully(sources);
          expect(fast.ok).toBe(careful.ok);
          if (fast.ok && careful.ok) expect(fast.model).toEqual(careful.model);
        }),
        { numRuns: 300 },
      ),
    );
  });
});
