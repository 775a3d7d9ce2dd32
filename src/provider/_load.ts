/**
 * The serialized shell of every idforge dynamic resource: the code Pulumi stores in the state with
 * each resource (`__provider`) and runs in `pulumi-resource-pulumi-nodejs` (pulumi#6490, #6646).
 *
 * Why a hand-written shell: whatever a provider captures is frozen into the state and replayed on
 * the next refresh or destroy. Freezing the implementation would keep today's bugs in every
 * resource; capturing credentials would leak them; and every byte is copied into every resource's
 * state, which the engine rewrites after every step (a large stack's `up` is quadratic in it). So
 * the shell is ~1.1 KB of fixed text holding four strings (the provider module's URL and its path
 * in the project, the name of the provider it exports, tsx's loader) and imports the implementation
 * from the installed package each time it runs. It also exits when its parent, the engine, is gone
 * (idforge's own host, _host.cjs, watches from its start; this is for another host). Besides the
 * six methods of a dynamic provider it forwards previewCreate and previewUpdate, which idforge's host
 * asks for in a preview (undefined when the module has none).
 * It is written here rather than produced by Pulumi's closure serializer,
 * which makes a 4 KB shell and inspects the program's heap at start.
 */
import type * as pulumi from '@pulumi/pulumi';
// From its own module, not the package's index: the provider host loads this file, and the index
// loads all of the SDK (its automation API, npm's arborist, TypeScript for closures), 0.6 s of the
// host's first call, on which every resource of a command waits (README, "Scale").
import { CustomResource } from '@pulumi/pulumi/resource.js';

/** tsx's loader API, so the provider process (plain node) can import TypeScript sources in a development checkout. */
const TSX_API: string = import.meta.resolve('tsx/esm/api');
const ROOT_URL = new URL('../../', import.meta.url).href;

/**
 * The CommonJS module the dynamic provider plugin loads with require-from-string. It imports the
 * provider module (compiled JavaScript in dist/, or a TypeScript source through tsx when the program
 * ran from the sources). If the clone moved since the state was written, it falls back to the same
 * file under the current project (the engine runs the plugin in the project directory).
 */
export function shellSource(moduleUrl: string, providerName: string): string {
  const rel = moduleUrl.startsWith(ROOT_URL) ? decodeURIComponent(moduleUrl.slice(ROOT_URL.length)) : moduleUrl.slice(moduleUrl.lastIndexOf('/') + 1);
  return `exports.handler = () => {
  const M = ${JSON.stringify(moduleUrl)}, R = ${JSON.stringify(rel)}, P = ${JSON.stringify(providerName)}, T = ${JSON.stringify(TSX_API)};
  if (globalThis.__idforgeWatch === undefined) {
    const parent = process.ppid;
    globalThis.__idforgeWatch = setInterval(() => { if (process.ppid !== parent) process.exit(1); }, 1000);
    globalThis.__idforgeWatch.unref();
  }
  const { existsSync } = require('node:fs');
  const { fileURLToPath, pathToFileURL } = require('node:url');
  const at = (u, rel) => (existsSync(fileURLToPath(u)) ? u : pathToFileURL(process.cwd() + '/' + rel).href);
  const load = async () => {
    if (M.endsWith('.ts')) {
      globalThis.__idforgeTsx ??= import(at(T, 'node_modules/tsx/dist/esm/api/index.mjs')).then((api) => void api.register());
      await globalThis.__idforgeTsx;
    }
    return (await import(at(M, R)))[P];
  };
  const shell = {};
  for (const m of ['check', 'diff', 'create', 'read', 'update', 'delete', 'previewCreate', 'previewUpdate']) shell[m] = async (...a) => { const p = await load(); return p[m] && p[m](...a); };
  return shell;
};
`;
}

/**
 * Base of idforge's dynamic resources: a `pulumi-nodejs:dynamic` resource (so the engine runs it
 * with the Node dynamic provider plugin) whose provider is {@link shellSource}.
 */
export abstract class _DynamicResource extends CustomResource {
  constructor(
    moduleUrl: string,
    providerName: string,
    type: string,
    name: string,
    props: Record<string, unknown>,
    opts?: pulumi.CustomResourceOptions,
  ) {
    super(`pulumi-nodejs:dynamic/idforge:${type}`, name, { ...props, __provider: shellSource(moduleUrl, providerName) }, opts);
  }
}
