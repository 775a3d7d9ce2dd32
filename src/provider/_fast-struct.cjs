// Protobuf Structs (google.protobuf.Struct: every property map the engine, the Pulumi program and
// idforge's provider host exchange) read straight into JavaScript values. google-protobuf builds a
// message object per value, a jspb.Map per object and a list per array, and `toJavaScript()` then
// walks that tree to make the plain value that every reader here wants. Profiled on a 500-tenant
// preview (README, "Scale"), that was the provider host's largest cost (0.65 s of its CPU: the olds
// and news of every check and diff) and 0.25 s of the program's (the engine's answers).
//
// How: `Struct.deserializeBinaryFromReader` keeps the bytes of the Struct's entries (through the
// reader's public API) and nothing else; `toJavaScript()` decodes them directly. Anything else a
// reader may ask of such a Struct (its fields map, to serialize it, to clone it) first builds the
// message exactly as google-protobuf would, from the same bytes. The direct decoder accepts only what
// it fully understands (the wire types the fields are declared with, valid UTF-8); for anything else
// it hands the same bytes to google-protobuf, so its result is google-protobuf's result or an error
// google-protobuf would also raise (test/provider/fast-struct.test.ts checks this over generated
// values and random bytes). Plain CommonJS on node builtins: the host loads it before any loader.
'use strict';

const { createRequire } = require('node:module');
const { isUtf8 } = require('node:buffer');

/** The decoder's "not mine": google-protobuf decides. */
const FALLBACK = Symbol('fallback');
/** On a Struct read lazily: its entries' bytes (Uint8Array[]), until it is built. */
const RAW = Symbol('idforge.structEntries');

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/** A cursor over bytes; every read returns FALLBACK rather than read past `end`. */
class Cursor {
  constructor(bytes, start, end) {
    this.b = bytes;
    this.p = start;
    this.end = end;
  }
  /** A varint's low 32 bits, unsigned (as google-protobuf's readUnsignedVarint32 keeps them); at most 10 bytes. */
  varint() {
    let low = 0;
    for (let i = 0; i < 10; i++) {
      if (this.p >= this.end) return FALLBACK;
      const byte = this.b[this.p++];
      if (i < 5) low |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) return low >>> 0;
    }
    return FALLBACK;
  }
  /** A field's tag (number << 3 | wire type); field number 0 is google-protobuf's to refuse. */
  tag() {
    const t = this.varint();
    return t === FALLBACK || t >>> 3 === 0 ? FALLBACK : t;
  }
  /** A length-delimited field's extent: [start, end). */
  delimited() {
    const len = this.varint();
    if (len === FALLBACK || len > this.end - this.p) return FALLBACK;
    const start = this.p;
    this.p += len;
    return [start, this.p];
  }
  skip(wire) {
    if (wire === WIRE_VARINT) return this.varint() === FALLBACK ? FALLBACK : true;
    if (wire === WIRE_FIXED64 || wire === WIRE_FIXED32) {
      const n = wire === WIRE_FIXED64 ? 8 : 4;
      if (this.end - this.p < n) return FALLBACK;
      this.p += n;
      return true;
    }
    if (wire === WIRE_DELIMITED) return this.delimited() === FALLBACK ? FALLBACK : true;
    return FALLBACK; // groups: google-protobuf's
  }
}

/** A UTF-8 string of [start, end), or FALLBACK when the bytes are not valid UTF-8. */
function utf8(bytes, start, end) {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
  return isUtf8(view) ? view.toString('utf8') : FALLBACK;
}

/** A google.protobuf.Value of [start, end) as JavaScript; the last kind on the wire wins, as in google-protobuf. */
function value(bytes, start, end, depth) {
  const c = new Cursor(bytes, start, end);
  let out = FALLBACK;
  while (c.p < c.end) {
    const tag = c.tag();
    if (tag === FALLBACK) return FALLBACK;
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1 || field === 4) {
      // null_value (an enum: any value reads as null), bool_value (its low 32 bits, as google-protobuf reads it)
      if (wire !== WIRE_VARINT) return FALLBACK;
      const v = c.varint();
      if (v === FALLBACK) return FALLBACK;
      out = field === 1 ? null : v !== 0;
    } else if (field === 2) {
      if (wire !== WIRE_FIXED64 || c.end - c.p < 8) return FALLBACK;
      out = Buffer.from(bytes.buffer, bytes.byteOffset + c.p, 8).readDoubleLE(0);
      c.p += 8;
    } else if (field === 3 || field === 5 || field === 6) {
      if (wire !== WIRE_DELIMITED) return FALLBACK;
      const range = c.delimited();
      if (range === FALLBACK) return FALLBACK;
      out = field === 3 ? utf8(bytes, range[0], range[1]) : field === 5 ? struct(bytes, range[0], range[1], depth + 1) : list(bytes, range[0], range[1], depth + 1);
      if (out === FALLBACK) return FALLBACK;
    } else if (c.skip(wire) === FALLBACK) return FALLBACK;
  }
  return out; // FALLBACK when no kind was set: google-protobuf's "Unexpected struct type"
}

/** A google.protobuf.ListValue of [start, end) as an array. */
function list(bytes, start, end, depth) {
  if (depth > MAX_DEPTH) return FALLBACK;
  const c = new Cursor(bytes, start, end);
  const out = [];
  while (c.p < c.end) {
    const tag = c.tag();
    if (tag === FALLBACK) return FALLBACK;
    if (tag >>> 3 === 1) {
      if ((tag & 7) !== WIRE_DELIMITED) return FALLBACK;
      const range = c.delimited();
      if (range === FALLBACK) return FALLBACK;
      const v = value(bytes, range[0], range[1], depth);
      if (v === FALLBACK) return FALLBACK;
      out.push(v);
    } else if (c.skip(tag & 7) === FALLBACK) return FALLBACK;
  }
  return out;
}

/** One map entry (key = 1, value = 2) of [start, end) into `into`; a repeated key's last value wins. */
function entry(bytes, start, end, depth, into) {
  const c = new Cursor(bytes, start, end);
  let key = '';
  let v; // an entry without a value: google-protobuf's default Value, which has no kind
  while (c.p < c.end) {
    const tag = c.tag();
    if (tag === FALLBACK) return FALLBACK;
    const field = tag >>> 3;
    if (field === 1 || field === 2) {
      if ((tag & 7) !== WIRE_DELIMITED) return FALLBACK;
      const range = c.delimited();
      if (range === FALLBACK) return FALLBACK;
      if (field === 1) key = utf8(bytes, range[0], range[1]);
      else v = value(bytes, range[0], range[1], depth);
      // A key that is not UTF-8, a value this decoder does not take (or that has no kind): google-protobuf's.
      // So is `__proto__`: jspb.Map keeps its keys in a plain object, where that key is not data.
      if (key === FALLBACK || key === '__proto__' || v === FALLBACK) return FALLBACK;
    } else if (c.skip(tag & 7) === FALLBACK) return FALLBACK;
  }
  if (v === undefined) return FALLBACK;
  into.set(key, v);
  return true;
}

/** An object of a map's entries, keys in google-protobuf's order (sorted), set by assignment as its toJavaScript sets them. */
function objectOf(entries) {
  const out = {};
  for (const k of [...entries.keys()].sort()) out[k] = entries.get(k);
  return out;
}

/** A google.protobuf.Struct of [start, end) as an object. */
function struct(bytes, start, end, depth) {
  if (depth > MAX_DEPTH) return FALLBACK;
  const c = new Cursor(bytes, start, end);
  const entries = new Map();
  while (c.p < c.end) {
    const tag = c.tag();
    if (tag === FALLBACK) return FALLBACK;
    if (tag >>> 3 === 1) {
      if ((tag & 7) !== WIRE_DELIMITED) return FALLBACK;
      const range = c.delimited();
      if (range === FALLBACK || entry(bytes, range[0], range[1], depth, entries) === FALLBACK) return FALLBACK;
    } else if (c.skip(tag & 7) === FALLBACK) return FALLBACK;
  }
  return objectOf(entries);
}

/** Nesting the direct decoder takes on (the engine's values are a few levels deep); deeper is google-protobuf's. */
const MAX_DEPTH = 200;

/** A lazily read Struct's entries as an object, or FALLBACK. */
function decodeEntries(raw) {
  const entries = new Map();
  for (const bytes of raw) if (entry(bytes, 0, bytes.length, 0, entries) === FALLBACK) return FALLBACK;
  return objectOf(entries);
}

/** Patches the google-protobuf that `@pulumi/pulumi` resolves; returns whether it did. Idempotent. */
function install() {
  let pb;
  let S;
  try {
    const pulumiRequire = createRequire(require.resolve('@pulumi/pulumi/package.json'));
    pb = pulumiRequire('google-protobuf');
    S = pulumiRequire('google-protobuf/google/protobuf/struct_pb.js');
  } catch {
    return false;
  }
  const Struct = S.Struct;
  if (Struct.__idforgeFast === true) return true;
  const P = Struct.prototype;
  const slowRead = Struct.deserializeBinaryFromReader;
  const slowToJavaScript = P.toJavaScript;
  const slowFieldsMap = P.getFieldsMap;
  const R = pb.BinaryReader.prototype;
  if (typeof slowRead !== 'function' || typeof slowToJavaScript !== 'function' || typeof slowFieldsMap !== 'function') return false;
  if (typeof R.readBytes !== 'function' || typeof R.getWireType !== 'function' || typeof pb.Map?.deserializeBinary !== 'function') return false;

  /** A lazily read Struct made the message google-protobuf would have made of the same bytes. */
  function build(msg) {
    const raw = msg[RAW];
    if (raw === undefined) return;
    msg[RAW] = undefined;
    const map = slowFieldsMap.call(msg);
    for (const bytes of raw) {
      const reader = new pb.BinaryReader(bytes);
      pb.Map.deserializeBinary(map, reader, R.readString, R.readMessage, S.Value.deserializeBinaryFromReader, '', new S.Value());
    }
  }

  function lazyRead(msg, reader) {
    // A Struct that has fields already is merged into: google-protobuf's.
    if (msg[RAW] !== undefined || (slowFieldsMap.call(msg, true)?.getLength() ?? 0) > 0) {
      build(msg);
      return slowRead(msg, reader);
    }
    const raw = [];
    while (reader.nextField()) {
      if (reader.isEndGroup()) break;
      if (reader.getFieldNumber() !== 1) reader.skipField();
      else if (reader.getWireType() !== WIRE_DELIMITED) throw new Error(`protobuf Struct: field 1 with wire type ${reader.getWireType()}, not a message`);
      else raw.push(reader.readBytes());
    }
    msg[RAW] = raw;
    return msg;
  }

  // Every other reader of the message sees it built. `toObject`, `serializeBinaryToWriter` and
  // `cloneMessage` read the fields map through this getter or through the message's array, which
  // `toArray` syncs from the map.
  P.getFieldsMap = function getFieldsMap(...args) {
    build(this);
    return slowFieldsMap.apply(this, args);
  };
  const slowToArray = P.toArray;
  P.toArray = function toArray() {
    build(this);
    return slowToArray.call(this);
  };
  const slowClear = P.clearFieldsMap;
  if (typeof slowClear === 'function') {
    P.clearFieldsMap = function clearFieldsMap() {
      build(this);
      return slowClear.call(this);
    };
  }
  P.toJavaScript = function toJavaScript() {
    const raw = this[RAW];
    if (raw !== undefined) {
      const out = decodeEntries(raw);
      if (out !== FALLBACK) return out;
      build(this);
    }
    return slowToJavaScript.call(this);
  };
  Struct.deserializeBinaryFromReader = lazyRead;
  Object.defineProperty(Struct, '__idforgeFast', { value: true });
  return true;
}

/** The direct decoder alone, for tests: a Struct's bytes as `{ value }`, or undefined where google-protobuf decides. */
function directRead(bytes) {
  const out = struct(bytes, 0, bytes.length, 0);
  return out === FALLBACK ? undefined : { value: out };
}

module.exports = { install, directRead };
