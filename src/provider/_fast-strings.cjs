// Native UTF-8 for the protobuf strings that the Pulumi program and idforge's provider host exchange
// with the engine. google-protobuf (the JavaScript runtime @pulumi/pulumi's gRPC messages use) reads
// and writes every string one byte, one character, at a time in JavaScript; a Tenant's inputs are
// ~77 KB of JSON strings, and they cross the provider host about five times in a no-op preview (the
// read's inputs, check's olds and news, diff's news and old inputs). Profiled on 100 bench tenants,
// those loops were most of the host's protobuf time (README, "Scale"). Here a string is read with
// Buffer's native decoder and written as the bytes field it is on the wire (same tag, same length
// prefix, same bytes), which google-protobuf appends as one block.
//
// The reader's internals are minified names, so `install` checks itself on a message of known bytes
// (ASCII, two-, three- and four-byte characters, an empty string) and leaves google-protobuf as it
// is if anything differs: a newer google-protobuf is slower, never wrong. Plain CommonJS on node
// builtins: the host loads it before any loader.
'use strict';

const { createRequire } = require('node:module');

const SAMPLE = ['{"portal":"https://acme.example/cb"}', 'é ü ß', '€ ✓ 漢字', '𝄞 😀', '', 'x'.repeat(300)];

/** Patches the google-protobuf that `@pulumi/pulumi` resolves; returns whether it did. Idempotent. */
function install() {
  let pb;
  try {
    pb = createRequire(require.resolve('@pulumi/pulumi/package.json'))('google-protobuf');
  } catch {
    return false;
  }
  const R = pb.BinaryReader.prototype;
  const W = pb.BinaryWriter.prototype;
  if (R.__idforgeFast === true) return true;
  const slowRead = R.readString;
  const slowWrite = W.writeString;
  const readNames = Object.keys(R).filter((k) => R[k] === slowRead);
  const writeNames = Object.keys(W).filter((k) => W[k] === slowWrite);
  if (readNames.length === 0 || writeNames.length === 0) return false;

  // The reader's decoder holds the bytes (a Uint8Array) and the cursor; found by shape, then proven below.
  function fastRead() {
    const d = this.a;
    const len = d.o();
    const start = d.a;
    const end = start + len;
    const bytes = d.b;
    if (!(bytes instanceof Uint8Array) || end > bytes.length) return slowRead.call(this);
    d.a = end;
    return Buffer.from(bytes.buffer, bytes.byteOffset + start, len).toString('utf8');
  }
  function fastWrite(field, value) {
    if (value == null) return;
    this.writeBytes(field, Buffer.from(String(value), 'utf8'));
  }

  // Proof: the same bytes written both ways, and read back both ways, to the same strings.
  const encode = (write) => {
    const w = new pb.BinaryWriter();
    SAMPLE.forEach((s, i) => write.call(w, i + 1, s));
    return w.getResultBuffer();
  };
  const decode = (read, buf) => {
    const r = new pb.BinaryReader(buf);
    const out = [];
    while (r.nextField()) {
      if (r.isEndGroup()) break;
      out.push(read.call(r));
    }
    return out;
  };
  try {
    const slowBytes = encode(slowWrite);
    const fastBytes = encode(fastWrite);
    const same = slowBytes.length === fastBytes.length && slowBytes.every((b, i) => b === fastBytes[i]);
    const back = decode(fastRead, slowBytes);
    if (!same || JSON.stringify(back) !== JSON.stringify(SAMPLE) || JSON.stringify(decode(slowRead, fastBytes)) !== JSON.stringify(SAMPLE)) return false;
  } catch {
    return false;
  }
  for (const k of readNames) R[k] = fastRead;
  for (const k of writeNames) W[k] = fastWrite;
  Object.defineProperty(R, '__idforgeFast', { value: true });
  return true;
}

module.exports = { install };
