/**
 * _fast-struct.cjs reads protobuf Structs straight into JavaScript. Its promise: the value
 * google-protobuf itself would give for the same bytes, or an error, never another value; and any
 * other use of such a message (its fields map, serializing it again) sees the message google-protobuf
 * would have built. Checked against an untouched copy of google-protobuf over generated values and
 * over random and mutated bytes (the engine is the only writer, but a decoder is a parser).
 */
import fc from 'fast-check';
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const pulumiRequire = createRequire(require.resolve('@pulumi/pulumi/package.json'));

interface StructMsg {
  toJavaScript(): unknown;
  serializeBinary(): Uint8Array;
  getFieldsMap(): { getLength(): number; get(k: string): { toJavaScript(): unknown } | undefined };
}
interface StructModule {
  Struct: { fromJavaScript(v: unknown): StructMsg; deserializeBinary(b: Uint8Array): StructMsg };
  Value: { fromJavaScript(v: unknown): { serializeBinary(): Uint8Array } };
}

/** google-protobuf's modules out of require's cache: the next require loads a fresh, separate copy. */
function forgetProtobuf(): void {
  for (const k of Object.keys(require.cache)) if (k.includes('/google-protobuf/') || k.includes('/@pulumi/pulumi/proto/')) delete require.cache[k];
}

let reference: StructModule;
let fast: StructModule;
const { directRead } = require('../../src/provider/_fast-struct.cjs') as { directRead(b: Uint8Array): { value: unknown } | undefined };

beforeAll(() => {
  forgetProtobuf();
  reference = pulumiRequire('google-protobuf/google/protobuf/struct_pb.js') as StructModule;
  forgetProtobuf();
  const { install } = require('../../src/provider/_fast-struct.cjs') as { install(): boolean };
  expect(install()).toBe(true);
  expect(install()).toBe(true); // idempotent
  fast = pulumiRequire('google-protobuf/google/protobuf/struct_pb.js') as StructModule;
  expect(fast).not.toBe(reference);
});

/** Equal as JavaScript values: same types, same keys in the same order, Object.is for leaves (-0, NaN). */
function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a !== null && typeof a === 'object') {
    if (b === null || typeof b !== 'object' || Array.isArray(b)) return false;
    // A `__proto__` key is assigned as google-protobuf assigns it: an object value becomes the prototype.
    const [pa, pb] = [Object.getPrototypeOf(a), Object.getPrototypeOf(b)];
    if (pa !== pb && (pa === Object.prototype || pb === Object.prototype || !same(pa, pb))) return false;
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return Object.is(a, b);
}

type Outcome = { value: unknown } | { error: true };
const decode = (m: StructModule, bytes: Uint8Array): Outcome => {
  try {
    return { value: m.Struct.deserializeBinary(bytes).toJavaScript() };
  } catch {
    return { error: true };
  }
};

/** Struct values as the engine sends them: any JSON, any string (every script), and doubles JSON has no word for. */
const leaf = fc.oneof(fc.string({ unit: 'binary' }), fc.double(), fc.boolean(), fc.constant(null), fc.integer());
/**
 * Struct bytes as no serializer here writes them but the wire allows: entries in any order, a key
 * given twice (the last wins), so the decoder's own ordering is what is checked.
 */
const shuffledEntries = fc.array(fc.tuple(fc.constantFrom('b', 'a', '10', '9', 'é', '__proto__'), fc.oneof(leaf, fc.array(leaf, { maxLength: 3 }))), { maxLength: 8 }).map((entries) => {
  const pb = pulumiRequire('google-protobuf') as { BinaryWriter: new () => { writeString(f: number, s: string): void; writeBytes(f: number, b: Uint8Array): void; beginSubMessage(f: number): void; endSubMessage(): void; getResultBuffer(): Uint8Array } };
  const w = new pb.BinaryWriter();
  for (const [k, v] of entries) {
    w.beginSubMessage(1);
    w.writeString(1, k);
    w.writeBytes(2, reference.Value.fromJavaScript(v).serializeBinary());
    w.endSubMessage();
  }
  return w.getResultBuffer();
});

const structValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('list'), tie('object')),
  list: fc.array(tie('value'), { maxLength: 6 }),
  object: fc.dictionary(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('__proto__', 'constructor', '10', '9', '')), tie('value'), { maxKeys: 6 }),
})).object;

describe('direct Struct reads (_fast-struct.cjs)', () => {
  it('reads every value as google-protobuf does, key order included, and serializes it again to the same bytes', () => {
    fc.assert(
      fc.property(fc.oneof(structValue.map((v) => reference.Struct.fromJavaScript(v).serializeBinary()), shuffledEntries), (bytes) => {
        const want = reference.Struct.deserializeBinary(bytes).toJavaScript();
        // The direct decoder takes every well-formed Struct itself (it does not hand them all back),
        // but for a `__proto__` key, which google-protobuf's map does not keep as data.
        const direct = directRead(bytes);
        if (direct !== undefined || !Buffer.from(bytes).includes('__proto__')) expect(direct !== undefined && same(direct.value, want)).toBe(true);
        const msg = fast.Struct.deserializeBinary(bytes);
        expect(same(msg.toJavaScript(), want)).toBe(true);
        expect(same(msg.toJavaScript(), want)).toBe(true); // again: each call a new value, as before
        // Any other reader sees the message built as google-protobuf builds it.
        expect(Buffer.from(msg.serializeBinary()).equals(Buffer.from(reference.Struct.deserializeBinary(bytes).serializeBinary()))).toBe(true);
        expect(msg.getFieldsMap().getLength()).toBe(reference.Struct.deserializeBinary(bytes).getFieldsMap().getLength());
        expect(same(msg.toJavaScript(), want)).toBe(true);
      }),
      { numRuns: 1500 },
    );
  });

  it('on random and mutated bytes, gives google-protobuf\'s value or an error, never another value', () => {
    const valid = fc.oneof(structValue.map((v) => reference.Struct.fromJavaScript(v).serializeBinary()), shuffledEntries);
    const mutated = fc
      .tuple(valid, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'delete')), { minLength: 1, maxLength: 4 }))
      .map(([bytes, edits]) => {
        const out = [...bytes];
        for (const [at, byte, how] of edits) {
          const i = out.length === 0 ? 0 : at % (out.length + (how === 'insert' ? 1 : 0));
          if (how === 'set' && out.length > 0) out[i] = byte;
          else if (how === 'insert') out.splice(i, 0, byte);
          else if (how === 'delete' && out.length > 0) out.splice(i, 1);
        }
        return Uint8Array.from(out);
      });
    let equalValues = 0;
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), mutated), (bytes) => {
        const ours = decode(fast, bytes);
        const theirs = decode(reference, bytes);
        const direct = directRead(bytes);
        if (direct !== undefined) expect('value' in theirs && same(direct.value, theirs.value)).toBe(true);
        if ('value' in ours) {
          expect('value' in theirs && same(ours.value, theirs.value)).toBe(true);
          equalValues++;
        }
      }),
      { numRuns: 1500 },
    );
    // The property is not vacuous: most inputs decode (mutations of valid bytes often stay valid).
    expect(equalValues).toBeGreaterThan(150);
  });

  it('writes every value to the bytes google-protobuf writes, and reads back what it holds', () => {
    class Thing {
      x = 1;
    }
    // Also what the direct writer leaves to google-protobuf: members it refuses, objects that are not plain, odd numbers.
    const odd = fc.constantFrom<unknown>(undefined, NaN, -0, Infinity, -Infinity, 5e-324, new Date(0), new Thing(), [1, , 3], () => 1, '\ud800', Object.create(null) as object);
    const oddValue = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, leaf, odd, tie('list'), tie('object')),
      list: fc.array(tie('value'), { maxLength: 5 }),
      object: fc.dictionary(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('__proto__', '10', '9', '\ud800')), tie('value'), { maxKeys: 5 }),
    })).object;
    let direct = 0;
    fc.assert(
      fc.property(fc.oneof(structValue, oddValue), (v) => {
        let want: Uint8Array | undefined;
        try {
          want = reference.Struct.fromJavaScript(v).serializeBinary();
        } catch {
          want = undefined;
        }
        let got: Uint8Array | undefined;
        try {
          got = fast.Struct.fromJavaScript(v).serializeBinary();
        } catch {
          got = undefined;
        }
        expect(got === undefined ? undefined : Buffer.from(got).toString('hex')).toBe(want === undefined ? undefined : Buffer.from(want).toString('hex'));
        if (want !== undefined) {
          const msg = fast.Struct.fromJavaScript(v);
          if (Object.getOwnPropertySymbols(msg).length > 0) direct++;
          expect(same(msg.toJavaScript(), reference.Struct.deserializeBinary(want).toJavaScript())).toBe(true);
          expect(msg.getFieldsMap().getLength()).toBe(reference.Struct.deserializeBinary(want).getFieldsMap().getLength());
          expect(Buffer.from(msg.serializeBinary()).equals(Buffer.from(want))).toBe(true); // built, then written again
        }
      }),
      { numRuns: 1500 },
    );
    // Not vacuous: the direct writer wrote most of them itself.
    expect(direct).toBeGreaterThan(300);
  });

  it('carries the engine\'s messages: a check request\'s olds and news, with nested Structs', () => {
    const provider = pulumiRequire('@pulumi/pulumi/proto/provider_pb.js') as {
      CheckRequest: new () => { setUrn(u: string): void; setOlds(s: StructMsg): void; setNews(s: StructMsg): void; serializeBinary(): Uint8Array };
    } & { CheckRequest: { deserializeBinary(b: Uint8Array): { getUrn(): string; getOlds(): StructMsg; getNews(): StructMsg } } };
    const news = { body: '{"a":1}', applications: { portal: '{"redirectUris":["https://é.example/cb"]}' }, n: -0, list: [1, [2, { x: null }]], empty: {} };
    const req = new provider.CheckRequest();
    req.setUrn('urn:pulumi:s::p::t::n');
    req.setOlds(fast.Struct.fromJavaScript({}));
    const written = fast.Struct.fromJavaScript(news);
    expect(Object.getOwnPropertySymbols(written)).toHaveLength(1); // written directly, not through google-protobuf's tree
    req.setNews(written);
    const back = provider.CheckRequest.deserializeBinary(req.serializeBinary());
    expect(back.getUrn()).toBe('urn:pulumi:s::p::t::n');
    expect(back.getOlds().toJavaScript()).toEqual({});
    expect(same(back.getNews().toJavaScript(), reference.Struct.fromJavaScript(news).toJavaScript())).toBe(true);
    // A nested Struct read lazily answers its fields map too.
    expect(back.getNews().getFieldsMap().get('applications')?.toJavaScript()).toEqual(news.applications);
  });
});
