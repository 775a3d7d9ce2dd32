/**
 * The one piece of code every provider shell shares, and therefore the one piece that Pulumi
 * serializes into the state with each dynamic resource (pulumi#6490, #6646).
 *
 * Why a loader: whatever a dynamic provider's methods capture is frozen into the state and replayed
 * by `pulumi-resource-pulumi-nodejs` on the next refresh or destroy. Capturing the implementation
 * would freeze today's bugs into every resource and copy kilobytes per resource; capturing
 * credentials would leak them. So a shell captures two strings (this module's URL and tsx's) and
 * imports the implementation from the installed package each time it runs.
 */

/** tsx's loader API, so the provider process (plain node) can import our TypeScript sources. */
const TSX_API: string = import.meta.resolve('tsx/esm/api');

/**
 * Imports a provider module by URL in the provider process. If the clone moved since the state was
 * written, falls back to the same file under the current project (the engine runs providers in the
 * project directory).
 */
export async function _loadImpl<T>(moduleUrl: string): Promise<T> {
  const { existsSync } = await import('node:fs');
  const { fileURLToPath, pathToFileURL } = await import('node:url');
  const { basename, join } = await import('node:path');
  const here = (url: string, rel: string): string =>
    existsSync(fileURLToPath(url)) ? url : pathToFileURL(join(process.cwd(), rel)).href;
  const g = globalThis as { __idforgeTsx?: Promise<void> };
  // Registering twice would stack two loaders; once per process is enough.
  g.__idforgeTsx ??= import(here(TSX_API, 'node_modules/tsx/dist/esm/api/index.mjs')).then(
    (api: { register: () => unknown }) => void api.register(),
  );
  await g.__idforgeTsx;
  return (await import(here(moduleUrl, join('src/provider', basename(fileURLToPath(moduleUrl)))))) as T;
}
