// The `__provider` shell every resource's state holds (_load.ts, shellSource) as the provider host
// runs it: through require-from-string, as @pulumi/pulumi's dynamic provider and idforge's host do.
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shellSource } from '../../src/provider/_load.ts';

const pulumiRequire = createRequire(createRequire(import.meta.url).resolve('@pulumi/pulumi/package.json'));
const requireFromString = pulumiRequire('require-from-string') as (code: string) => { handler: () => Record<string, (...a: unknown[]) => Promise<unknown>> };

const SECRETS_URL = pathToFileURL(fileURLToPath(new URL('../../src/provider/tenant-secrets.ts', import.meta.url))).href;
const SHELL_FILE = fileURLToPath(new URL('../../src/provider/_shell.cjs', import.meta.url));

describe('the provider shell', () => {
  it('is small, and runs the provider it names (a method the provider lacks answers undefined)', async () => {
    const source = shellSource(SECRETS_URL, 'tenantSecretsProvider');
    expect(source.length).toBeLessThan(400);
    const provider = requireFromString(source).handler();
    const made = (await provider.create!({ sizes: { 'portal/clientSecret': 32 } })) as { outs: { values: Record<string, string> } };
    expect(made.outs.values['portal/clientSecret']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const kept = (await provider.update!('id', made.outs, { sizes: { 'portal/clientSecret': 32 } })) as { outs: { values: Record<string, string> } };
    expect(kept.outs.values).toEqual(made.outs.values);
    expect(await provider.previewCreate!({ sizes: {} })).toBeUndefined();
  });

  it('finds both files again under the project when the clone moved since the state was written', async () => {
    // The state's text, with both absolute locations gone (its paths in the project stay).
    const moved = shellSource(SECRETS_URL, 'tenantSecretsProvider').replace(SECRETS_URL, SECRETS_URL.replace(/^file:\/\/\//, 'file:///moved-away/')).replace(JSON.stringify(SHELL_FILE), JSON.stringify(`/moved-away${SHELL_FILE}`));
    expect(moved).toContain('/moved-away/');
    // The engine runs the plugin in the project directory: the test's working directory is the repository.
    expect(process.cwd()).toBe(fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, ''));
    const provider = requireFromString(moved).handler();
    expect(await provider.diff!('id', { sizes: { a: 32 }, values: {} }, { sizes: { a: 16 } })).toEqual({ changes: true });
  });

  it('preloads provider modules ahead of their first call; a module that is not there fails nothing', async () => {
    const { preload } = createRequire(import.meta.url)(SHELL_FILE) as { preload: (urls: string[]) => Promise<void> };
    await expect(preload([SECRETS_URL, 'file:///nowhere/provider.js'])).resolves.toBeUndefined();
    const provider = requireFromString(shellSource(SECRETS_URL, 'tenantSecretsProvider')).handler();
    expect(await provider.diff!('id', { sizes: { a: 32 }, values: {} }, { sizes: { a: 32 } })).toEqual({ changes: false });
  });

  it('names a provider the module does not export as the error of the call, and tries again at the next', async () => {
    const provider = requireFromString(shellSource(SECRETS_URL, 'noSuchProvider')).handler();
    await expect(provider.check!({}, {})).rejects.toThrow('src/provider/tenant-secrets.ts does not export noSuchProvider');
    await expect(provider.check!({}, {})).rejects.toThrow('does not export noSuchProvider');
  });
});
