/**
 * How the server makes an event's parts, pinned where bench/apply made them cheaper (issue 24): the
 * id is an RFC 9562 UUIDv7 (the time first, version 7, variant 10, the rest random) and ids made in
 * time order sort in it; the changes of a created or deleted object list every field but the
 * declaration as written, secrets only as changed; an update lists what differs in JSON's normal form.
 */
import { describe, expect, it } from 'vitest';
import { fieldChanges } from '../../src/contract/index.ts';
import { isSecretField } from '../../src/contract/index.ts';
import { makeEvent, uuidv7 } from '../../src/server/events/make.ts';

describe('event ids', () => {
  it('are UUIDv7: the time in the first 48 bits, version 7, RFC 9562 variant, random bits that differ', () => {
    const at = Date.UTC(2026, 10, 26, 8, 0, 0, 123);
    const ids = Array.from({ length: 1000 }, () => uuidv7(at));
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(uuidv7(0).startsWith('00000000-0000-7')).toBe(true);
    expect(uuidv7(2 ** 48 - 1).startsWith('ffffffff-ffff-7')).toBe(true);
    expect(() => uuidv7(2 ** 48)).toThrow(RangeError);
    expect(() => uuidv7(-1)).toThrow(RangeError);
  });

  it('sort in the order of their times', () => {
    const times = [1, 255, 256, 65_535, 1_700_000_000_000, 1_700_000_000_001, Date.now()];
    const ids = times.map((t) => uuidv7(t));
    expect([...ids].sort()).toEqual(ids);
  });
});

describe('an event made at a time', () => {
  it('has that time, to the millisecond, in its id and as ISO 8601, however the times alternate (each millisecond is kept for the next event)', () => {
    const times = [1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_000, 0, 2 ** 48 - 1, 1_700_000_000_001.9];
    for (const t of times) {
      const e = makeEvent({ tenant: 'acme', type: 'user.created', object: { kind: 'user', name: 'u-ann' } }, t);
      expect(e.time).toBe(new Date(Math.trunc(t)).toISOString());
      expect(parseInt(e.id.replace(/-/g, '').slice(0, 12), 16)).toBe(Math.trunc(t));
    }
    expect(() => makeEvent({ tenant: 'acme', type: 'user.created', object: { kind: 'user', name: 'u-ann' } }, -1)).toThrow(RangeError);
  });
});

describe('secret fields', () => {
  it('are named so, in any case, every time they are asked (the answers are kept by name)', () => {
    for (let round = 0; round < 2; round++) {
      for (const f of ['clientSecret', 'PASSWORD', 'passwordHash', 'sealed_secret', 'key', 'privateJwk', 'totpSeed', 'refreshToken']) expect(isSecretField(f)).toBe(true);
      for (const f of ['displayName', 'email', 'keys', 'monkey', 'scopes', 'manager']) expect(isSecretField(f)).toBe(false);
    }
  });
});

describe('event changes', () => {
  const body = { displayName: 'Ada', email: 'ada@example.com', groups: ['g1', 'g2'], profile: { b: 1, a: [1, { y: 2, x: 1 }] }, passwordHash: 'h', lastApplied: { x: 1 } };

  it('of a created or deleted object: every field, sorted, secrets redacted, the declaration left out', () => {
    const created = [
      { field: 'displayName', after: 'Ada' }, { field: 'email', after: 'ada@example.com' }, { field: 'groups', after: ['g1', 'g2'] },
      { field: 'passwordHash', redacted: true }, { field: 'profile', after: { b: 1, a: [1, { y: 2, x: 1 }] } },
    ];
    expect(fieldChanges(undefined, body)).toEqual(created);
    expect(fieldChanges(body, undefined)).toEqual(created.map(({ field, after, redacted }) => (redacted ? { field, redacted } : { field, before: after })));
    // A member present but undefined is no field.
    expect(fieldChanges(undefined, { a: undefined, b: null })).toEqual([{ field: 'b', after: null }]);
    expect(fieldChanges({ a: undefined }, { a: undefined })).toEqual([]);
  });

  it('of an update: what differs in normal form (key order is no change, array order is)', () => {
    expect(fieldChanges(body, { ...body, profile: { a: [1, { x: 1, y: 2 }], b: 1 } })).toEqual([]);
    expect(fieldChanges(body, { ...body, groups: ['g2', 'g1'] })).toEqual([{ field: 'groups', before: ['g1', 'g2'], after: ['g2', 'g1'] }]);
    expect(fieldChanges({ a: 1 }, { b: 1 })).toEqual([{ field: 'a', before: 1 }, { field: 'b', after: 1 }]);
    expect(fieldChanges({ a: null }, { a: undefined })).toEqual([{ field: 'a', before: null }]);
  });
});
