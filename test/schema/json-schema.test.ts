import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { allJsonSchemas } from '../../src/schema/all-schemas.ts';

describe('committed JSON Schemas', () => {
  it('are exactly what `idforge schema --out schema` writes now (run it after changing a schema)', async () => {
    const fresh = allJsonSchemas();
    expect((await readdir('schema')).sort()).toEqual(Object.keys(fresh).sort());
    for (const [file, text] of Object.entries(fresh)) {
      expect(await readFile(`schema/${file}`, 'utf8'), `schema/${file} is stale`).toBe(text);
    }
  });
});
