/**
 * Packed JSON: how the state keeps its largest values, a tenant's users and assignments and the
 * client files (one string each): their canonical JSON, deflated (RFC 1951, zlib level 1) and
 * written base64 after a `deflate:` tag. Equal values pack to equal strings, so the providers still
 * compare them as strings and decode only what differs.
 *
 * Why: these values were 44 of the 61 MB state of the 100k-user model (README, "Scale"), and the
 * program, the engine and the provider host each copied, encoded and decoded them several times in
 * every command (the program's registration, the engine's check and diff requests, the state
 * written and read back). Packed, the users of a 200-user tenant are 4 KB instead of 53 KB, and
 * packing one costs about 0.1 ms.
 *
 * A string without the tag is plain canonical JSON (a state written before): it reads the same, so
 * a stack moves to the packed form at its next `up` without previewing a change.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { canonicalJson } from '../contract/index.ts';

const TAG = 'deflate:';

/** Packed values are read from the stack's own state; this bounds what one may inflate to (1 GiB). */
const MAX_JSON_BYTES = 1 << 30;

/** Pure: canonical JSON text packed (deterministic for a given zlib). */
export function packJson(json: string): string {
  return TAG + deflateRawSync(json, { level: 1 }).toString('base64');
}

/** Pure: the JSON text of a packed string; a string without the tag is JSON already. */
export function unpackJson(s: string): string {
  if (!s.startsWith(TAG)) return s;
  return inflateRawSync(Buffer.from(s.slice(TAG.length), 'base64'), { maxOutputLength: MAX_JSON_BYTES }).toString('utf8');
}

/** Pure: a JSON value packed, in its normal form (canonicalJson): equal values, equal strings. */
export function packValue(value: unknown): string {
  return packJson(canonicalJson(value));
}

/** Pure: the value of a packed string (or of plain JSON text). */
export function unpackValue(s: string): unknown {
  return JSON.parse(unpackJson(s));
}

/** Whether two strings hold the same JSON text, packed or not (equal strings: without decoding). */
export function sameJsonText(a: string, b: string): boolean {
  return a === b || unpackJson(a) === unpackJson(b);
}
