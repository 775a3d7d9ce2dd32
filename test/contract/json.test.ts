import { describe, expect, it } from 'vitest';
import { canonicalJson, normalize } from '../../src/contract/json.ts';

describe('the JSON normal form', () => {
  it('sorts keys, drops undefined members, keeps arrays in order, and keeps `__proto__` as data', () => {
    const hostile = JSON.parse('{"b": 1, "__proto__": {"polluted": true}, "a": [3, {"d": null, "c": "x"}]}') as Record<string, unknown>;
    const n = normalize({ ...hostile, u: undefined, ['__proto__']: hostile['__proto__'] }) as Record<string, unknown>;
    expect(Object.keys(n)).toEqual(['__proto__', 'a', 'b']);
    expect(Object.getPrototypeOf(n)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(canonicalJson(hostile)).toBe('{"__proto__":{"polluted":true},"a":[3,{"c":"x","d":null}],"b":1}');
  });
});
