/**
 * Environment overlays: merged entry by entry over the model, validated again as a whole, and every
 * mistake in an overlay located in the overlay file.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { applyOverlay, formatProblems, validateSources } from '../../src/schema/index.ts';
import { parseOverlay } from '../../src/schema/overlay.ts';

async function base() {
  const r = validateSources([{ file: 'acme.yaml', content: await readFile('examples/acme.yaml') }]);
  if (!r.ok) throw new Error('the example must be valid');
  return r.model;
}

function overlay(text: string) {
  const parsed = parseOverlay('staging.yaml', new TextEncoder().encode(text));
  if (!parsed.ok) throw new Error(formatProblems(parsed.problems));
  return parsed.source;
}

describe('applyOverlay', () => {
  it('merges the staging overlay: port, origins and users of the environment, the rest of the model as it is', async () => {
    const r = applyOverlay(await base(), overlay(await readFile('stacks/staging.overlay.yaml', 'utf8')));
    if (!r.ok) throw new Error(formatProblems(r.problems));
    expect(r.model.server).toMatchObject({ baseDomain: 'localhost', port: 9180 });
    const acme = r.model.tenants[0]!;
    expect(acme.displayName).toBe('Acme Corporation (staging)');
    expect(acme.users.map((u) => u.id)).toEqual(['u-alice', 'u-carol']);
    expect(acme.applications.find((a) => a.name === 'portal')).toMatchObject({ kind: 'web', origin: 'http://portal.localhost:3100', provider: 'acme', callback: '/hello' });
    expect(acme.applications.find((a) => a.name === 'orders-api')).toMatchObject({ audience: 'http://orders-api.localhost:4100', routes: [{ path: '/whoami' }, { path: '/admin', scopes: ['admin'] }] });
    expect(acme.groups[0]).toMatchObject({ name: 'staff', members: ['u-alice', 'u-carol'] });
  });

  it('locates an overlay mistake in the overlay file', async () => {
    const r = applyOverlay(await base(), overlay('tenants:\n  - name: acme\n    users:\n      - id: u-dave\n        remove: true\n'));
    expect(r.ok).toBe(false);
    expect(formatProblems(r.ok ? [] : r.problems)).toMatchInlineSnapshot(`"staging.yaml:4:9  user "u-dave" is not in the model: there is nothing to remove  (at tenants[0].users[0])"`);
  });

  it('validates the merged model as a whole: a reference the overlay broke is a problem', async () => {
    // Removing bob leaves the model's group naming him.
    const r = applyOverlay(await base(), overlay('tenants:\n  - name: acme\n    users:\n      - id: u-bob\n        remove: true\n'));
    expect(r.ok).toBe(false);
    expect(formatProblems(r.ok ? [] : r.problems)).toBe(`staging.yaml  user "u-bob" is not defined in tenant 'acme' (after the overlay)  (at tenants[0].groups[0].members[1])`);
  });

  it('a misspelt tenant name is a located problem with a did-you-mean, never a new tenant', async () => {
    const r = applyOverlay(await base(), overlay('tenants:\n  - name: acmee\n    displayName: Acme (staging)\n'));
    expect(r.ok).toBe(false);
    expect(formatProblems(r.ok ? [] : r.problems)).toMatchInlineSnapshot(`"staging.yaml:2:11  tenant "acmee" is not in the model (did you mean 'acme'?): an overlay changes the tenants of the model; a tenant only this environment has says add: true  (at tenants[0].name)"`);
    // A name far from every tenant is refused too: no guess, still no new tenant.
    const far = applyOverlay(await base(), overlay('tenants:\n  - name: qa\n'));
    expect(far.ok ? far.model.tenants.map((t) => t.name) : far.problems.map((p) => p.code)).toEqual(['unknown-reference']);
  });

  it('adds a tenant only this environment has when it says add: true, and only then', async () => {
    const r = applyOverlay(await base(), overlay('tenants:\n  - name: qa\n    add: true\n    displayName: QA\n'));
    if (!r.ok) throw new Error(formatProblems(r.problems));
    expect(r.model.tenants.map((t) => t.name)).toEqual(['acme', 'qa']);
    expect(r.model.tenants[1]).not.toHaveProperty('add');
    const twice = applyOverlay(await base(), overlay('tenants:\n  - name: acme\n    add: true\n  - name: qa\n    add: yes\n'));
    expect(formatProblems(twice.ok ? [] : twice.problems)).toMatchInlineSnapshot(`
      "staging.yaml:3:10  tenant "acme" is in the model already: add: true is only for a tenant the model lacks  (at tenants[0].add)
      staging.yaml:5:10  'add' must be true when given  (at tenants[1].add)"
    `);
  });

  it('refuses what an overlay cannot hold', async () => {
    const r = applyOverlay(await base(), overlay('servers: {}\ntenants:\n  - displayName: nameless\n'));
    expect(formatProblems(r.ok ? [] : r.problems)).toMatchInlineSnapshot(`
      "staging.yaml:1:1  unknown field 'servers': an overlay holds server and tenants  (at servers)
      staging.yaml:3:5  each tenant of an overlay names the tenant it changes (name)  (at tenants[0])"
    `);
  });
});
