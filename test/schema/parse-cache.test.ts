// The model's parse cache (src/schema/parse-cache.ts): what a hit gives is what js-yaml gives for
// the same text, the model read through it is the model read without it, and a cache file that is
// missing, foreign, broken or unwritable changes nothing but speed.
import fc from 'fast-check';
import jsyaml from 'js-yaml';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel, openParseCache } from '../../src/schema/index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'idforge-parse-cache-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

const load = (text: string) => jsyaml.load(text, { schema: jsyaml.CORE_SCHEMA });

describe('the parse cache', () => {
  it('gives back, after a save and a new open, what js-yaml made of the same text, and nothing for another text', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.string(), async (value, other) => {
        const file = join(dir, `p${n++}.json`);
        const text = jsyaml.dump(value);
        const first = openParseCache(file);
        expect(first.get(text)).toBeUndefined();
        first.set(text, load(text));
        await first.save();
        const again = openParseCache(file);
        // JSON's equality: YAML's -0 reads back as 0, which no model field tells apart.
        expect(JSON.stringify(again.get(text))).toBe(JSON.stringify(load(text)));
        if (other !== text) expect(again.get(other)).toBeUndefined();
      }),
      { numRuns: 60 },
    );
  });

  it('never keeps a text that may hold .inf or .nan, which JSON cannot', async () => {
    const file = join(dir, 'inf.json');
    const c = openParseCache(file);
    c.set('port: .inf\n', load('port: .inf\n'));
    c.set('port: 1\n', load('port: 1\n'));
    await c.save();
    const again = openParseCache(file);
    expect(again.get('port: .inf\n')).toBeUndefined();
    expect(again.get('port: 1\n')).toEqual({ port: 1 });
  });

  it('keeps only what the last run used, and reads a foreign, broken or missing file as empty', async () => {
    const file = join(dir, 'prune.json');
    const c = openParseCache(file);
    c.set('a: 1\n', { a: 1 });
    c.set('b: 2\n', { b: 2 });
    await c.save();
    const next = openParseCache(file);
    expect(next.get('a: 1\n')).toEqual({ a: 1 });
    await next.save();
    const entries = (JSON.parse(await readFile(file, 'utf8')) as { entries: object }).entries;
    expect(Object.keys(entries)).toHaveLength(1);
    expect(openParseCache(file).get('b: 2\n')).toBeUndefined();

    await writeFile(file, JSON.stringify({ version: 'js-yaml@0.0.0/other', entries }));
    expect(openParseCache(file).get('a: 1\n')).toBeUndefined();
    await writeFile(file, '{ not json');
    expect(openParseCache(file).get('a: 1\n')).toBeUndefined();
    expect(openParseCache(join(dir, 'missing', 'x.json')).get('a: 1\n')).toBeUndefined();
  });

  it('a write that fails is no error: the model is read as it was', async () => {
    // Under a file, not a directory: no directory can be made there (whoever runs the test, root too).
    const blocked = join(dir, 'a-file');
    await writeFile(blocked, '');
    await cp(join(import.meta.dirname, '../../examples/acme.yaml'), join(dir, 'acme.yaml'));
    const c = openParseCache(join(blocked, 'sub', 'cache.json'));
    const r = await loadModel([join(dir, 'acme.yaml')], [], c);
    expect(r).toEqual(await loadModel([join(dir, 'acme.yaml')]));
    expect(r.ok).toBe(true);
    await expect(c.save()).resolves.toBeUndefined();
  });

  it('the model read through it is the model read without it, the first time and the next', async () => {
    // The bench's fleet model (three tenants, a file each, and the server's): it takes the fast path.
    const model = join(dir, 'fleet');
    const { generateModel } = await import('../../bench/compile/generate.ts');
    await generateModel(model, 3);
    await writeFile(join(model, '000-server.yaml'), 'server:\n  baseDomain: localhost\n  port: 9080\n');
    const plain = await loadModel([model]);
    if (!plain.ok) throw new Error('the fleet model is invalid');
    const file = join(dir, 'model.json');
    for (let run = 0; run < 2; run++) {
      const c = openParseCache(file);
      const cached = await loadModel([model], [], c);
      await c.save();
      expect(cached).toEqual(plain);
    }
    const entries = (JSON.parse(await readFile(file, 'utf8')) as { entries: object }).entries;
    expect(Object.keys(entries)).toHaveLength(plain.files.length);
    // One file changed: read again, the others from the cache; the cache then holds the model as it is now.
    const t1 = join(model, 't00001.yaml');
    await writeFile(t1, (await readFile(t1, 'utf8')).replace('displayName: Tenant 1', 'displayName: Tenant One'));
    const c = openParseCache(file);
    const changed = await loadModel([model], [], c);
    await c.save();
    expect(changed).toEqual(await loadModel([model]));
    expect(changed.ok && changed.model.tenants.find((t) => t.name === 't00001')?.displayName).toBe('Tenant One');
    expect(Object.keys((JSON.parse(await readFile(file, 'utf8')) as { entries: object }).entries)).toHaveLength(plain.files.length);
  });
});
