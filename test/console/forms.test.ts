/**
 * The Marketplace forms carry the model's `pkce` for confidential clients only, and leave it out
 * when the default applies, so the model's rule (src/contract/pkce.ts) judges what a person picks.
 */
import { describe, expect, it } from 'vitest';
import { KIND_FORMS, formOfSpec, specOfForm } from '../../src/server/console/forms.ts';

describe('the pkce field', () => {
  it('is offered to web apps and proxies, not to single-page apps or APIs', () => {
    const has = (kind: keyof typeof KIND_FORMS) => KIND_FORMS[kind].some((f) => f.key === 'pkce');
    expect([has('web'), has('proxy'), has('spa'), has('api')]).toEqual([true, true, false, false]);
  });

  it('writes optional into the spec, and nothing for required (the default)', () => {
    const base = { name: 'portal', origin: 'http://portal.localhost:3000' };
    expect(specOfForm('web', { ...base, pkce: 'optional' })).toMatchObject({ kind: 'web', pkce: 'optional' });
    expect(specOfForm('proxy', { ...base, upstream: 'http://127.0.0.1:8080', pkce: '' })).not.toHaveProperty('pkce');
    expect(formOfSpec({ ...base, kind: 'web', pkce: 'optional' })).toMatchObject({ pkce: 'optional' });
  });
});
