/**
 * The Marketplace forms carry the model's `pkce` for confidential clients only, and leave it out
 * when the default applies, so the model's rule (src/contract/pkce.ts) judges what a person picks;
 * a form's problems name its fields and the applications they clash with, each once.
 */
import { describe, expect, it } from 'vitest';
import { KIND_FORMS, formOfSpec, specOfForm } from '../../src/console/forms.ts';
import { buildApplication } from '../../src/console/applications.ts';
import type { LiveTenantState } from '../../src/admin-client/index.ts';

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

describe('a form\'s problems', () => {
  const addr = { scheme: 'http', baseDomain: 'localhost', port: 3000 } as const;
  const live = {
    tenant: { name: 'acme', displayName: 'Acme', scopes: [{ name: 'admin', description: 'administer' }], managedBy: 'idforge' },
    applications: [{
      name: 'portal', kind: 'web', displayName: 'Portal', clientId: 'portal', redirectUris: ['http://portal.localhost:3000/connect/idforge/callback'],
      postLogoutRedirectUris: ['http://portal.localhost:3000/'], scopes: ['openid'], audience: [], managedBy: 'idforge',
    }],
    users: [],
    assignments: {},
  } as unknown as LiveTenantState;

  it('name the form\'s field and the application they clash with, never a place in a file the console made', () => {
    const r = buildApplication(addr, live, 'web', { name: 'portal-2', clientId: 'portal', origin: 'http://portal2.localhost:3000' });
    expect(r.ok).toBe(false);
    const errors = (r as { errors: Record<string, string[]> }).errors;
    expect(errors).toEqual({ clientId: ['client id "portal" is already defined by application "portal"'] });
    expect(JSON.stringify(errors)).not.toMatch(/console\.yaml|:\d+:\d+/);
  });

  it('appear once each, however many rules find them', () => {
    const r = buildApplication(addr, live, 'web', { name: 'x', origin: 'http://x.localhost:3000', scopes: 'openid admin admin' });
    const errors = (r as { errors: Record<string, string[]> }).errors;
    for (const list of Object.values(errors)) expect(new Set(list).size).toBe(list.length);
    expect(errors.scopes).toEqual(['scope "admin" is listed twice']);
  });
});
