// Protobuf Structs (google.protobuf.Struct: every property map the engine, the Pulumi program and
// idforge's provider host exchange) read straight into JavaScript values. google-protobuf builds a
// message object per value, a jspb.Map per object and a list per array, and `toJavaScript()` then
// walks that tree to make the plain value that every reader here wants. Profiled on a 500-tenant
// preview (README, "Scale"), that was the provider host's largest cost (0.65 s of its CPU: the olds
// and news of every check and diff) and 0.25 s of the program's (the engine's answers).
//
// The other way too: `Struct.fromJavaScript` followed by serialization built the same trees to write
// them (0.35 s of the host's CPU: every check's answer holds the resource's inputs).
//
// How: `Struct.deserializeBinaryFromReader` keeps the bytes of the Struct's entries (through the
// reader's public API) and nothing else; `toJavaScript()` decodes them directly. `Struct.fromJavaScript`
// writes the value's bytes at once (as google-protobuf writes them: entries sorted by key), and
// serializing the message appends those bytes. Anything else asked of such a Struct (its fields map,
// to clone it) first builds the message exactly as google-protobuf would, from the same bytes. Both
// directions take only what they fully understand (the declared wire types, valid UTF-8, plain objects
// and arrays of JSON values and doubles); anything else is google-protobuf's, so the result is
// google-protobuf's result or an error google-protobuf would also raise (test/provider/fast-struct.test.ts
// checks this over generated values and random bytes). Plain CommonJS on node builtins: the host
// loads it before any loader.
'use strict';

const { createRequire } = require('node:module');
const { isUtf8 } = require('node:buffer');

/** The decoder's "not mine": google-protobuf decides. */
const FALLBACK = Symbol('fallback');
/** On a Struct read lazily: its entries' bytes (Uint8Array[]), until it is built. */
const RAW = Symbol('idforge.structEntries');
/** On a Struct made by fromJavaScript: its serialized bytes (a Buffer), until it is built. */
const ENCODED = Symbol('idforge.structBytes');

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

/**
 * Calls `each(start, end)` for every field 1 of [start, end), a message (a ListValue's values, a
 * Struct's entries), skipping other fields; FALLBACK when anything is off or `each` says so.
 */
function eachMessage(bytes, start, end, each) {
  const c = new Cursor(bytes, start, end);
  while (c.p < c.end) {
    const tag = c.tag();
    if (tag === FALLBACK) return FALLBACK;
    if (tag >>> 3 === 1) {
      if ((tag & 7) !== WIRE_DELIMITED) return FALLBACK;
      const range = c.delimited();
      if (range === FALLBACK || each(range[0], range[1]) === FALLBACK) return FALLBACK;
    } else if (c.skip(tag & 7) === FALLBACK) return FALLBACK;
  }
  return true;
}

/** A google.protobuf.ListValue of [start, end) as an array. */
function list(bytes, start, end, depth) {
  if (depth > MAX_DEPTH) return FALLBACK;
  const out = [];
  const read = (s, e) => {
    const v = value(bytes, s, e, depth);
    if (v === FALLBACK) return FALLBACK;
    out.push(v);
    return true;
  };
  return eachMessage(bytes, start, end, read) === FALLBACK ? FALLBACK : out;
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
  const entries = new Map();
  return eachMessage(bytes, start, end, (s, e) => entry(bytes, s, e, depth, entries)) === FALLBACK ? FALLBACK : objectOf(entries);
}

// The writer: sizes first (one pass, in the order the bytes will be written), then one buffer.

/** Bytes of a varint. */
const varintSize = (n) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** A plain object's keys as google-protobuf's map writes them (for-in, sorted), or FALLBACK. */
function keysOf(obj) {
  const proto = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) return FALLBACK; // goog.typeOf's other objects: google-protobuf's
  const keys = [];
  for (const k in obj) {
    if (k === '__proto__' || !k.isWellFormed()) return FALLBACK;
    keys.push(k);
  }
  return keys.sort();
}

/**
 * Pass one: the size of `v` as a Value's content, pushed after its parts' sizes (post-order), or
 * FALLBACK. `sizes` collects each delimited part's size for pass two; `keys` each object's keys.
 */
function sizeValue(v, sizes, keys, depth) {
  switch (typeof v) {
    case 'string':
      if (!v.isWellFormed()) return FALLBACK;
      {
        const n = Buffer.byteLength(v, 'utf8');
        sizes.push(n);
        return 1 + varintSize(n) + n;
      }
    case 'number':
      return Number.isNaN(v) ? FALLBACK : 9; // NaN: google-protobuf writes its own bit pattern
    case 'boolean':
      return 2;
    case 'object': {
      if (v === null) return 2;
      if (depth > MAX_DEPTH) return FALLBACK;
      const at = sizes.length;
      sizes.push(0); // this part's size, known below
      let n = 0;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const item = sizes.length;
          sizes.push(0);
          const m = sizeValue(v[i], sizes, keys, depth + 1);
          if (m === FALLBACK) return FALLBACK;
          sizes[item] = m;
          n += 1 + varintSize(m) + m;
        }
      } else {
        const n2 = sizeEntries(v, sizes, keys, depth + 1);
        if (n2 === FALLBACK) return FALLBACK;
        n = n2;
      }
      sizes[at] = n;
      return 1 + varintSize(n) + n;
    }
    default:
      return FALLBACK; // undefined, functions, symbols, bigints: google-protobuf's ("Unexpected struct type.")
  }
}

/** Pass one for a Struct's content (its entries). */
function sizeEntries(obj, sizes, keys, depth) {
  const ks = keysOf(obj);
  if (ks === FALLBACK) return FALLBACK;
  keys.push(ks);
  let n = 0;
  for (const k of ks) {
    const kn = Buffer.byteLength(k, 'utf8');
    const at = sizes.length;
    sizes.push(kn, 0);
    const vn = sizeValue(obj[k], sizes, keys, depth);
    if (vn === FALLBACK) return FALLBACK;
    const en = 1 + varintSize(kn) + kn + 1 + varintSize(vn) + vn;
    sizes[at + 1] = vn;
    n += 1 + varintSize(en) + en;
  }
  return n;
}

/** Pass two: writes what pass one measured, in the same order (the sizes, then each object's keys, as met). */
class Writer {
  constructor(size, sizes, keys) {
    this.buf = Buffer.allocUnsafe(size);
    this.p = 0;
    this.sizes = sizes;
    this.s = 0;
    this.keys = keys;
    this.k = 0;
  }
  byte(b) {
    this.buf[this.p++] = b;
  }
  varint(n) {
    while (n >= 0x80) {
      this.buf[this.p++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[this.p++] = n;
  }
  value(v) {
    switch (typeof v) {
      case 'string': {
        const n = this.sizes[this.s++];
        this.byte(0x1a); // string_value = 3, delimited
        this.varint(n);
        this.p += this.buf.write(v, this.p, 'utf8');
        return;
      }
      case 'number':
        this.byte(0x11); // number_value = 2, fixed64
        this.buf.writeDoubleLE(v, this.p);
        this.p += 8;
        return;
      case 'boolean':
        this.byte(0x20); // bool_value = 4, varint
        this.byte(v ? 1 : 0);
        return;
      default: {
        if (v === null) {
          this.byte(0x08); // null_value = 1, varint NULL_VALUE (0)
          this.byte(0);
          return;
        }
        const n = this.sizes[this.s++];
        if (Array.isArray(v)) {
          this.byte(0x32); // list_value = 6
          this.varint(n);
          for (let i = 0; i < v.length; i++) this.listItem(v[i]);
        } else {
          this.byte(0x2a); // struct_value = 5
          this.varint(n);
          this.entries(v);
        }
      }
    }
  }
  listItem(v) {
    this.byte(0x0a); // values = 1, each a delimited Value
    this.varint(this.sizes[this.s++]);
    this.value(v);
  }
  entries(obj) {
    const ks = this.keys[this.k++];
    for (const k of ks) {
      const kn = this.sizes[this.s++];
      const vn = this.sizes[this.s++];
      const en = 1 + varintSize(kn) + kn + 1 + varintSize(vn) + vn;
      this.byte(0x0a); // fields = 1, a map entry
      this.varint(en);
      this.byte(0x0a); // key = 1
      this.varint(kn);
      this.p += this.buf.write(k, this.p, 'utf8');
      this.byte(0x12); // value = 2
      this.varint(vn);
      this.value(obj[k]);
    }
  }
}

/** A plain object's Struct content as google-protobuf writes it, or FALLBACK. */
function encodeEntries(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return FALLBACK;
  const sizes = [];
  const keys = [];
  const size = sizeEntries(obj, sizes, keys, 0);
  if (size === FALLBACK) return FALLBACK;
  try {
    const w = new Writer(size, sizes, keys);
    w.entries(obj);
    return w.p === size ? w.buf : FALLBACK; // a measure that does not match the writing: google-protobuf's
  } catch {
    return FALLBACK;
  }
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
  if (typeof pb.BinaryWriter.prototype.writeSerializedMessage !== 'function' || typeof Struct.fromJavaScript !== 'function' || typeof Struct.serializeBinaryToWriter !== 'function') return false;

  /** A lazily read or written Struct made the message google-protobuf would have made of the same bytes. */
  function build(msg) {
    const encoded = msg[ENCODED];
    if (encoded !== undefined) {
      msg[ENCODED] = undefined;
      slowRead(msg, new pb.BinaryReader(encoded));
      return;
    }
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
    if (msg[RAW] !== undefined || msg[ENCODED] !== undefined || (slowFieldsMap.call(msg, true)?.getLength() ?? 0) > 0) {
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
    const encoded = this[ENCODED];
    if (raw !== undefined || encoded !== undefined) {
      const out = raw !== undefined ? decodeEntries(raw) : struct(encoded, 0, encoded.length, 0);
      if (out !== FALLBACK) return out;
      build(this);
    }
    return slowToJavaScript.call(this);
  };
  const slowFrom = Struct.fromJavaScript;
  Struct.fromJavaScript = function fromJavaScript(obj) {
    const bytes = encodeEntries(obj);
    if (bytes === FALLBACK) return slowFrom(obj);
    const msg = new Struct();
    msg[ENCODED] = bytes;
    return msg;
  };
  const slowWrite = Struct.serializeBinaryToWriter;
  Struct.serializeBinaryToWriter = function serializeBinaryToWriter(message, writer) {
    const encoded = message[ENCODED];
    if (encoded === undefined) return slowWrite(message, writer);
    writer.writeSerializedMessage(encoded, 0, encoded.length);
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
