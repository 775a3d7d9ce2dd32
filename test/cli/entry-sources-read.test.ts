/**
 * What `idforge apply` reads of the model's files to record where each entry was declared: only the
 * files that may declare a tenant it sends (one changed tenant in a model of hundreds of files is
 * one file to parse), never fewer than that: a file that names the tenant, or holds a backslash (a
 * double-quoted escape can spell a name), is read.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchWithEntrySources, readEntrySources } from '../../src/cli/_entry-sources.ts';
import { applicationSourceKey, assignmentsSourceKey, userSourceKey } from '../../src/schema/index.ts';
import { tempDir } from '../server/_support.ts';

const work = tempDir('idforge-entry-sources-');
afterAll(() => work.remove());

const tenantFile = (name: string, quoted = name) => `tenants:
  - name: ${quoted}
    applications:
      - name: portal
        kind: spa
        origin: http://portal.localhost:3000
    users:
      - id: u-ann
        email: ann@example.com
    assignments:
      - { application: portal, users: [u-ann] }
`;

const dir = join(work.path, 'model');
mkdirSync(dir);
writeFileSync(join(dir, 'a.yaml'), tenantFile('acme'));
writeFileSync(join(dir, 'b.yaml'), tenantFile('beta'));
// "globex" spelled with an escape: the file does not hold the name as written.
writeFileSync(join(dir, 'c.yaml'), tenantFile('globex', '"glob\\x65x"'));

describe('the sources apply reads', () => {
  it('without a tenant set: every file', async () => {
    const all = await readEntrySources([dir], work.path);
    expect([...all.keys()].filter((k) => k.startsWith('application '))).toEqual(['application acme/portal', 'application beta/portal', 'application globex/portal']);
  });

  it('for the tenants sent: the files that may declare them, and no other', async () => {
    const one = await readEntrySources([dir], work.path, new Set(['beta']));
    // c.yaml holds a backslash, so it is read too; a.yaml neither names beta nor can spell it.
    expect([...one.keys()].filter((k) => k.startsWith('application '))).toEqual(['application beta/portal', 'application globex/portal']);
    const escaped = await readEntrySources([dir], work.path, new Set(['globex']));
    expect(escaped.get(applicationSourceKey('globex', 'portal'))).toMatchObject({ file: 'model/c.yaml', line: 4 });
    expect((await readEntrySources([dir], work.path, new Set())).size).toBe(0);
  });

  it('are recorded in the batch sent, in the last-applied entries that have one', async () => {
    const sources = await readEntrySources([dir], work.path, new Set(['acme']));
    const lastApplied = { entry: { name: 'x' }, index: 0 };
    const batch = batchWithEntrySources('acme', {
      tenant: { displayName: 'Acme', lastApplied },
      applications: [{ name: 'portal', body: { kind: 'spa', lastApplied } }, { name: 'other', body: { kind: 'spa', lastApplied } }],
      users: [{ id: 'u-ann', body: { email: 'ann@example.com', lastApplied } }, { id: 'u-bob', body: { email: 'bob@example.com' } }],
    } as never, sources) as { tenant: { lastApplied: { source?: unknown } }; applications: { body: { lastApplied: { source?: unknown } } }[]; users: { body: { lastApplied?: { source?: unknown } } }[] };
    expect(batch.tenant.lastApplied.source).toEqual(sources.get(assignmentsSourceKey('acme')));
    expect(batch.applications[0]!.body.lastApplied.source).toEqual(sources.get(applicationSourceKey('acme', 'portal')));
    expect(batch.applications[1]!.body.lastApplied.source).toBeUndefined();
    expect(batch.users[0]!.body.lastApplied!.source).toEqual(sources.get(userSourceKey('acme', 'u-ann')));
    expect(batch.users[1]!.body.lastApplied).toBeUndefined();
  });
});
