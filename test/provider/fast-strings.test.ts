import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const pulumiRequire = createRequire(require.resolve('@pulumi/pulumi/package.json'));
const struct = pulumiRequire('google-protobuf/google/protobuf/struct_pb') as {
  Struct: { fromJavaScript(v: unknown): { serializeBinary(): Uint8Array }; deserializeBinary(b: Uint8Array): { toJavaScript(): unknown } };
};

/** What the engine and the provider host exchange: JSON strings of every size and script, numbers, lists, nesting. */
const value = {
  applications: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`app-${i}`, JSON.stringify({ redirectUris: [`https://a${i}.example/cb`], name: `Ünïcödé 漢字 😀 ${i}` })])),
  body: 'x'.repeat(20_000),
  empty: '',
  n: 3.5,
  on: true,
  list: [1, 'é', null, { deep: '𝄞' }],
};

describe('native UTF-8 for protobuf strings (_fast-strings.cjs)', () => {
  it('writes the same bytes and reads back the same values as google-protobuf did', () => {
    const before = struct.Struct.fromJavaScript(value).serializeBinary();
    const { install } = require('../../src/provider/_fast-strings.cjs') as { install(): boolean };
    expect(install()).toBe(true);
    expect(install()).toBe(true); // idempotent
    const after = struct.Struct.fromJavaScript(value).serializeBinary();
    expect(Buffer.from(after).equals(Buffer.from(before))).toBe(true);
    expect(struct.Struct.deserializeBinary(before).toJavaScript()).toEqual(value);
  });
});
