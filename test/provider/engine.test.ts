/**
 * The dynamic providers on the real engine (pulumi CLI + Node language host from tools/bin), with
 * the providers that need no server: the serialized shells load their implementation, secrets stay
 * secret in the backend, a preview right after `up` is empty, drift is found by `refresh` and
 * repaired by `up`, and `destroy` removes what `up` made.
 */
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellSource } from '../../src/provider/_load.ts';
import { unpackJson } from '../../src/provider/_packed.ts';
import { PulumiProject, urnName } from './_pulumi.ts';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

describe('providers on the real engine (no server needed)', { timeout: 300_000 }, () => {
  let p: PulumiProject;
  let dir: string;

  beforeAll(async () => {
    p = await PulumiProject.create(join(import.meta.dirname, 'fixtures/secrets-and-files.ts'), { 'fixture:note': 'first' });
    dir = join(p.root, 'clients');
    await p.configSet('fixture:dir', dir);
  });
  afterAll(async () => p?.cleanup());

  it('up writes the files; the secret appears nowhere in the backend in plain text', async () => {
    await p.up();
    const env = await readFile(join(dir, 'acme/wiki/oauth2-proxy.env'), 'utf8');
    const secret = /^OAUTH2_PROXY_COOKIE_SECRET=(.+)$/m.exec(env)?.[1] ?? '';
    expect(Buffer.from(secret, 'base64url')).toHaveLength(16);
    for (const f of await filesUnder(p.backend)) expect(await readFile(f, 'utf8')).not.toContain(secret);
    // Packed values (deflated, _packed.ts) would hide it from that search: any in plain sight is
    // unpacked and searched too, and the packed files are a secret (ciphertext, Pulumi's secret signature).
    for (const f of await filesUnder(p.backend)) {
      for (const [m] of (await readFile(f, 'utf8')).matchAll(/deflate:[A-Za-z0-9+/=]+/g)) expect(unpackJson(m)).not.toContain(secret);
    }
    const stateFile = (await filesUnder(p.backend)).find((f) => f.endsWith('.json') && f.includes('stacks'))!;
    const resources = (JSON.parse(await readFile(stateFile, 'utf8')) as { checkpoint: { latest: { resources: { type: string; inputs?: Record<string, unknown> }[] } } }).checkpoint.latest.resources;
    const files = resources.find((r) => r.type.endsWith(':ClientConfigs'))?.inputs?.files as Record<string, unknown> | undefined;
    expect(files?.['4dabf18193072939515e22adb298388d']).toBe('1b47061264138c4ac30d75fd1eb44270');
    expect(typeof files?.ciphertext).toBe('string');
    // The state holds the small shell, not the implementation.
    const state = (await Promise.all((await filesUnder(p.backend)).map((f) => readFile(f, 'utf8')))).join('\n');
    expect(state).toContain('_shell.cjs');
    expect(state).not.toContain('syncFiles');
    expect(shellSource('file:///x/src/provider/client-configs.ts', 'clientConfigsProvider').length).toBeLessThan(400);
  });

  it('a preview right after up changes nothing, and a second up keeps the secret', async () => {
    await p.must(['preview', '--expect-no-changes']);
    const before = await readFile(join(dir, 'acme/wiki/oauth2-proxy.env'), 'utf8');
    await p.up();
    expect(await readFile(join(dir, 'acme/wiki/oauth2-proxy.env'), 'utf8')).toBe(before);
  });

  it('an input change previews as exactly one update', async () => {
    await p.configSet('fixture:note', 'second');
    const steps = await p.previewSteps();
    expect(steps.map((s) => [s.op, urnName(s.urn)])).toEqual([['update', 'client-configs']]);
    await p.up();
    expect(await readFile(join(dir, 'acme/note.txt'), 'utf8')).toBe('second\n');
  });

  it('refresh finds a file edited behind its back; the next up repairs it', async () => {
    await writeFile(join(dir, 'acme/note.txt'), 'edited by hand\n');
    const refresh = await p.must(['refresh', '--yes', '--skip-preview']);
    expect(refresh.stdout).toMatch(/~ 1 updated/);
    const steps = await p.previewSteps();
    expect(steps.map((s) => [s.op, urnName(s.urn)])).toEqual([['update', 'client-configs']]);
    await p.up();
    expect(await readFile(join(dir, 'acme/note.txt'), 'utf8')).toBe('second\n');
    await p.must(['preview', '--expect-no-changes']);
  });

  it('destroy removes the files it wrote', async () => {
    await p.must(['destroy', '--yes', '--skip-preview']);
    expect(existsSync(join(dir, 'acme'))).toBe(false);
  });
});

describe('an invalid model', { timeout: 300_000 }, () => {
  it('fails the preview with the same located messages as idforge validate', async () => {
    const { loadModel, formatProblems } = await import('../../src/schema/index.ts');
    const p = await PulumiProject.create(join(import.meta.dirname, '../../src/provider/program.ts'), {});
    try {
      const model = join(p.root, 'bad.yaml');
      await writeFile(
        model,
        'tenants:\n  - name: Acme\n    displayName: Acme\n    applications:\n      - name: portal\n        kind: web\n        origin: http://portal.localhost:3000\n    assignments:\n      - application: nope\n        users: [ghost]\n',
      );
      await p.configSet('idforge:model', model);
      const loaded = await loadModel([model]);
      expect(loaded.ok).toBe(false);
      const expected = loaded.ok ? '' : formatProblems(loaded.problems);
      const r = await p.run(['preview']);
      expect(r.code).not.toBe(0);
      for (const line of expected.split('\n')) expect(r.stdout + r.stderr).toContain(line);
      expect(r.stdout + r.stderr).not.toMatch(/at .*\.ts:\d+:\d+/); // a message, not a stack trace
    } finally {
      await p.cleanup();
    }
  });
});
