/**
 * The serialized shell of every idforge dynamic resource: the code Pulumi stores in the state with
 * each resource (`__provider`) and runs in `pulumi-resource-pulumi-nodejs` (pulumi#6490, #6646).
 *
 * Why a hand-written shell: whatever a provider captures is frozen into the state and replayed on
 * the next refresh or destroy. Freezing the implementation would keep today's bugs in every
 * resource; capturing credentials would leak them; and every byte is copied into every resource's
 * state, which the engine rewrites after every step (a large stack's `up` is quadratic in it). So
 * the shell is ~0.3 KB of fixed text holding four strings (where _shell.cjs is, the provider module's
 * URL and its path in the project, the name of the provider it exports); _shell.cjs imports the
 * implementation from the checkout once per process. It also exits when its parent, the engine, is
 * gone (idforge's own host, _host.cjs, watches from its start; this is for another host). Besides the
 * six methods of a dynamic provider it forwards previewCreate and previewUpdate, which idforge's host
 * asks for in a preview (undefined when the module has none). A state written with the shell of
 * before (~1.1 KB, which imported the module itself at every call) still runs as it is, and takes this
 * one at its next `up`: a changed shell is no change of the resource.
 * It is written here rather than produced by Pulumi's closure serializer,
 * which makes a 4 KB shell and inspects the program's heap at start.
 */
import { fileURLToPath } from 'node:url';
import type * as pulumi from '@pulumi/pulumi';
// From its own module, not the package's index: the provider host loads this file, and the index
// loads all of the SDK (its automation API, npm's arborist, TypeScript for closures), 0.6 s of the
// host's first call, on which every resource of a command waits (README, "Scale").
import { CustomResource } from '@pulumi/pulumi/resource.js';

const ROOT_URL = new URL('../../', import.meta.url).href;
/** The file every shell hands its calls to (plain CommonJS beside the sources, in a built checkout too). */
const SHELL_FILE = fileURLToPath(new URL('../../src/provider/_shell.cjs', import.meta.url));

/**
 * The CommonJS module the dynamic provider plugin loads with require-from-string: it hands the
 * provider module's URL (compiled JavaScript in dist/, or a TypeScript source through tsx when the
 * program ran from the sources), its path in the project and the provider's name to _shell.cjs,
 * which imports it once per process. If the clone moved since the state was written, both files are
 * found again under the current project (the engine runs the plugin in the project directory).
 */
export function shellSource(moduleUrl: string, providerName: string): string {
  const rel = moduleUrl.startsWith(ROOT_URL) ? decodeURIComponent(moduleUrl.slice(ROOT_URL.length)) : moduleUrl.slice(moduleUrl.lastIndexOf('/') + 1);
  return `exports.handler = () => { const f = ${JSON.stringify(SHELL_FILE)}; return require(require('node:fs').existsSync(f) ? f : process.cwd() + '/src/provider/_shell.cjs').shell(${JSON.stringify(moduleUrl)}, ${JSON.stringify(rel)}, ${JSON.stringify(providerName)}); };\n`;
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
