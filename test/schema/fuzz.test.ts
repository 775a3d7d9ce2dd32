/**
 * Whatever bytes arrive, validation answers with problems, never an exception or a hang: model files
 * and environment overlays (read, then merged over a model), including the texts that make a YAML
 * reader slow (long lines of carriage returns and line breaks, deep flow nesting), which must stay
 * linear (the `yaml` package's error prettifier is quadratic in a line's length and stays off:
 * prettyErrors: false in src/schema/_yaml-source.ts). In-process, so the deadline of each input is
 * the test's timeout: inputs are bounded, and `fuzz` lets the event loop turn between inputs so the
 * timeout interrupts a parser that runs away.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { applyOverlay, loadModelWithOverlay, validateSources, type LoadResult, type Model } from '../../src/schema/index.ts';
import { parseOverlay, OVERLAY_LISTS } from '../../src/schema/overlay.ts';
import { fuzz } from '../support/fuzz.ts';

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
  it('on arbitrary text', async () => {
    await fuzz('model (validateSources): arbitrary text', fc.string({ unit: 'binary', maxLength: 400 }), (text) => assertWellFormed(validateSources([{ file: 'f.yaml', content: text }])), 400);
  });
  it('on arbitrary bytes', async () => {
    await fuzz('model (validateSources): arbitrary bytes', fc.uint8Array({ maxLength: 400 }), (bytes) => assertWellFormed(validateSources([{ file: 'f.yaml', content: bytes }])), 400);
  });
  it('on arbitrary JSON-like values written as YAML and JSON', async () => {
    await fuzz('model (validateSources): JSON values as YAML and JSON', fc.jsonValue(), (value) => {
      assertWellFormed(validateSources([{ file: 'f.yaml', content: stringify(value) }]));
      assertWellFormed(validateSources([{ file: 'f.json', content: JSON.stringify(value) ?? 'null' }]));
    }, 300);
  });
  it('on documents shaped like models', async () => {
    await fuzz('model (validateSources): model-shaped documents', fc.tuple(modelish, fc.array(modelish, { maxLength: 3 })), ([doc, more]) => {
      const sources = [doc, ...more].map((d, i) => ({ file: `m${i}.yaml`, content: stringify(d) }));
      assertWellFormed(validateSources(sources));
    }, 500);
  });
  it('on models with one field replaced by noise', async () => {
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
    await fuzz('model (validateSources): one field replaced by noise', fc.tuple(fc.constantFrom(...paths), fc.jsonValue()), ([path, noise]) => {
      const doc = structuredClone(base) as Record<string | number, unknown>;
      let node: Record<string | number, unknown> = doc;
      for (const seg of path.slice(0, -1)) node = node[seg] as Record<string | number, unknown>;
      node[path.at(-1)!] = noise;
      assertWellFormed(validateSources([{ file: 'm.yaml', content: stringify(doc) }]));
    }, 400);
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

// ------------------------------------------------------------------------------------------------
// Environment overlays: a small file merged over the model entry by entry (src/schema/overlay.ts).
// Generated overlays name the model's own tenants and entries (so they merge, replace and remove)
// as well as unknown ones, with hostile keys (`__proto__`, `toString`: names every object has) and
// values of any type where a list, a mapping or a name is expected.

function baseModel(files: readonly string[]): Model {
  const r = validateSources(files.map((file) => ({ file, content: readFileSync(file) })));
  if (!r.ok) throw new Error(`${files.join(', ')} must be valid`);
  return r.model;
}
const BASES = {
  acme: baseModel(['examples/acme.yaml']),
  multi: baseModel(['examples/multi-tenant/server.yaml', 'examples/multi-tenant/globex.yaml', 'examples/multi-tenant/initech.json']),
};
/** Keys every object answers to without having them: a merge that asks `key in obj` finds them. */
const INHERITED = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'prototype'];
const ENTRY_IDS = ['u-alice', 'u-bob', 'u-new', 'portal', 'wiki', 'dashboard', 'orders-api', 'new-app', 'staff', 'admin', 'acme', 'globex', 'initech', ...INHERITED];
const TENANT_FIELDS = ['displayName', 'login', 'unmanaged', 'previousName', 'name', 'add', ...Object.keys(OVERLAY_LISTS), ...INHERITED, 'bogus'];
const ENTRY_FIELDS = ['id', 'name', 'application', 'email', 'displayName', 'kind', 'origin', 'audience', 'scopes', 'members', 'users', 'groups', 'password',
  'upstream', 'routes', 'description', 'remove', ...INHERITED];
const overlayLeaf = fc.oneof(leaf, fc.constantFrom(...ENTRY_IDS), fc.constant(true), fc.constantFrom('remove', 'report', 'keep', 'http://portal.localhost:3100', 'https://x.example', 'web', 'spa'));
const overlayValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, overlayLeaf, fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(fc.constantFrom(...ENTRY_FIELDS), tie('value'), { maxKeys: 3 })),
})).value;
const overlayEntry = fc.oneof(
  fc.record({ key: fc.constantFrom('id', 'name', 'application'), id: fc.constantFrom(...ENTRY_IDS), remove: fc.option(fc.oneof(fc.constant(true), overlayLeaf), { nil: undefined }), fields: fc.dictionary(fc.constantFrom(...ENTRY_FIELDS), overlayValue, { maxKeys: 3 }) })
    .map(({ key, id, remove, fields }) => ({ ...fields, [key]: id, ...(remove === undefined ? {} : { remove }) })),
  overlayValue,
);
const overlayTenant = fc.oneof(
  fc.record({ name: fc.oneof(fc.constantFrom('acme', 'globex', 'initech', 'newco', ...INHERITED), overlayLeaf), fields: fc.dictionary(fc.constantFrom(...TENANT_FIELDS), fc.oneof(fc.array(overlayEntry, { maxLength: 3 }), overlayValue), { maxKeys: 4 }) })
    .map(({ name, fields }) => ({ ...fields, name })),
  overlayValue,
);
const overlayDoc = fc.oneof(
  { weight: 4, arbitrary: fc.record({ server: fc.oneof(fc.dictionary(fc.constantFrom('baseDomain', 'scheme', 'port', 'bogus', ...INHERITED), overlayLeaf, { maxKeys: 3 }), overlayValue), tenants: fc.oneof(fc.array(overlayTenant, { maxLength: 3 }), overlayValue), extra: fc.dictionary(fc.constantFrom('$schema', 'servers', ...INHERITED), overlayValue, { maxKeys: 1 }) }, { requiredKeys: [] })
    .map(({ extra, ...doc }) => ({ ...extra, ...doc })) },
  { weight: 1, arbitrary: overlayValue },
);

function overlayResult(base: Model, text: string | Uint8Array): LoadResult {
  const parsed = parseOverlay('overlay.yaml', typeof text === 'string' ? new TextEncoder().encode(text) : text);
  return parsed.ok ? applyOverlay(base, parsed.source) : parsed;
}

describe('an overlay never throws', () => {
  it('on overlays shaped like overlays: the model\'s own entries replaced and removed, unknown ones added, hostile keys and values', async () => {
    const outcomes = new Set<boolean>();
    await fuzz('overlay (parseOverlay + applyOverlay), overlay-shaped', fc.tuple(overlayDoc, fc.constantFrom('acme', 'multi') as fc.Arbitrary<keyof typeof BASES>, fc.boolean()), ([doc, base, json]) => {
      const r = overlayResult(BASES[base], json ? JSON.stringify(doc) ?? 'null' : stringify(doc));
      outcomes.add(r.ok);
      assertWellFormed(r);
    }, 600, [
      // Found by this suite: a tenant field named like an inherited property was merged as a list and threw
      // (TypeError: not iterable), and a server section merged unchecked threw in the semantic checks.
      [{ tenants: [{ name: 'acme', toString: [] }] }, 'acme', false],
      [{ tenants: [{ name: 'acme', ['__proto__']: [] }] }, 'acme', false],
      [{ server: { baseDomain: true } }, 'acme', false],
    ]);
    // Some overlays merge into a valid model: the fuzzer reaches the merged model's validation.
    expect([...outcomes].sort()).toEqual([false, true]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('on arbitrary text and bytes as an overlay', async () => {
    await fuzz('overlay (parseOverlay + applyOverlay), arbitrary text and bytes', fc.oneof(fc.string({ unit: 'binary', maxLength: 400 }), fc.uint8Array({ maxLength: 400 })), (input) => {
      assertWellFormed(overlayResult(BASES.acme, input));
    }, 300);
  });

  it('through loadModelWithOverlay, from files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idforge-overlay-fuzz-'));
    try {
      await fuzz('overlay (loadModelWithOverlay), overlay-shaped files', overlayDoc, async (doc) => {
        const file = join(dir, 'overlay.yaml');
        writeFileSync(file, stringify(doc));
        assertWellFormed(await loadModelWithOverlay(['examples/acme.yaml'], file));
      }, 60);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ------------------------------------------------------------------------------------------------
// Texts that are slow to read when a reader is careless: runs of line breaks inside unterminated
// scalars, flow collections nested at and past MAX_DEPTH, runs of markers (each a problem), and one
// long line of carriage returns ending in a key's colon: the yaml package's error prettifier rescans
// the line for each error in it, so with prettyErrors on, 40,000 of them take 2-7 s to read (measured
// here); with it off, milliseconds. Each text is read as a model file and as an overlay.

const PREFIXES = ['', 'a', 'a: "', "a: '", 'a: ', 'a: [', 'a: {', '- ', '? ', '"', '[', '{', '{a: ', 'a: |\n', 'a: >\n', '&a ', '!tag ', '%YAML 1.2\n---\n',
  '#', 'tenants:\n  - name: "', 'tenants:\n  - name: acme\n    displayName: ', 'server: {port: ', 'key\r: '];
const UNITS = ['\r', '\n', '\r\n', '\n\r', ' \r', '\r ', '[', '{', '[{', '{a: [', '- ', '? ', 'a', ' ', '\t', '"', "'", '\\', ',', ':', '\u2028', '\u0085', '\ufeff', '#\r', 'a\r', '[\r', '"\r'];
const SUFFIXES = ['', ': b', '"', "'", ']', '}', '\n', ': ', 'x', ': [', '\nb: c', ': b\n: c'];
const slowText = fc.tuple(fc.constantFrom(...PREFIXES), fc.constantFrom(...UNITS), fc.integer({ min: 1, max: 20_000 }), fc.constantFrom(...SUFFIXES), fc.constantFrom(...UNITS), fc.nat({ max: 30 }))
  .map(([prefix, unit, n, suffix, tail, m]) => prefix + unit.repeat(Math.ceil(n / unit.length)) + suffix + tail.repeat(m));
/** One line of 20,000 to 60,000 carriage returns, ending where the reader finds an error at its end. */
const longCrLine = fc.tuple(fc.constantFrom('', 'a', 'key', 'a: b', '- a', '{a', '"', 'a: "', '[', 'a: [', '? a', 'tenants:\n  - name: acme\n    '),
  fc.integer({ min: 20_000, max: 60_000 }), fc.constantFrom(':', ': b', ': [', ':\n', ': b\nc: d'))
  .map(([prefix, n, suffix]) => prefix + '\r'.repeat(n) + suffix);

describe('long lines, line breaks and deep flow nesting are read in linear time', () => {
  it('runs of line breaks, markers and brackets, as a model file and as an overlay', async () => {
    await fuzz('model and overlay text: runs of CR/LF, markers, deep flow nesting', slowText, (text) => {
      assertWellFormed(validateSources([{ file: 'f.yaml', content: text }]));
      assertWellFormed(overlayResult(BASES.acme, text));
    }, 80);
  }, 60_000);

  it('one long line of carriage returns ending in an error, as a model file and as an overlay', async () => {
    // The deadline is this test's timeout: with the prettifier on, these inputs take minutes together.
    await fuzz('model and overlay text: one long line of carriage returns', longCrLine, (text) => {
      assertWellFormed(validateSources([{ file: 'f.yaml', content: text }]));
      assertWellFormed(overlayResult(BASES.acme, text));
    }, 30);
  }, 30_000);
});
