/**
 * Counts in what the CLI and the delete guard print agree with their nouns: `1 user`, `2 users`,
 * never `1 users` or `user(s)`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { counted, formatMassDeletion, massDeletions } from '../../src/contract/index.ts';
import { formatGuard } from '../../src/cli/commands/plan.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../server/_support.ts';

const work = tempDir('idforge-plurals-');
afterAll(() => work.remove());

describe('counted', () => {
  it('names one thing in the singular, any other count in the plural', () => {
    expect([0, 1, 2].map((n) => counted(n, 'user'))).toEqual(['0 users', '1 user', '2 users']);
    expect(counted(1, 'entry', 'entries')).toBe('1 entry');
    expect(counted(3, 'entry', 'entries')).toBe('3 entries');
  });
});

describe('the delete guard', () => {
  it('refuses deleting the only application, user or assignment of a tenant in the singular (pulumi up)', () => {
    const found = massDeletions({ acme: { applications: ['portal'], users: 1, assignments: 1 } }, { acme: { applications: [], users: 0, assignments: 0 } });
    expect(found.map(formatMassDeletion)).toEqual([
      "refusing to delete 1 of 1 application of tenant 'acme' (most of them)",
      "refusing to delete 1 of 1 user of tenant 'acme' (most of them)",
      "refusing to delete 1 of 1 assignment of tenant 'acme' (most of them)",
    ]);
  });

  it('says the same in idforge plan and apply', () => {
    expect(formatGuard([{ tenant: 'acme', kind: 'user', deleting: 1, existing: 1 }, { tenant: 'acme', kind: 'assignment', deleting: 2, existing: 3 }])).toBe(
      "refusing to delete 1 of 1 user of tenant 'acme' (most of them); if that is intended, run again with --allow-mass-delete\n" +
        "refusing to delete 2 of 3 assignments of tenant 'acme' (most of them); if that is intended, run again with --allow-mass-delete\n",
    );
  });
});

describe('idforge validate', () => {
  it('summarises a model of one of each in the singular', async () => {
    const model = join(work.path, 'one.yaml');
    writeFileSync(model, [
      'tenants:',
      '  - name: acme',
      '    displayName: Acme',
      '    users:',
      '      - { id: u-alice, email: alice@acme.example }',
      '    applications:',
      '      - { name: dashboard, kind: spa, origin: http://dashboard.localhost:5173 }',
      '    assignments:',
      '      - { application: dashboard, users: [u-alice] }',
      '',
    ].join('\n'));
    expect(await runCli(['validate', model])).toEqual({ code: 0, stdout: 'valid: 1 tenant, 1 application, 1 user, 1 assignment\n', stderr: '' });
  });
});
