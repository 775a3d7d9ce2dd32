// What each idforge resource's `__provider` shell (_load.ts, shellSource) hands its calls to: the
// provider a module of this checkout exports, loaded once per process and then called directly.
//
// Why a file and not all of this in the shell: the shell's text is copied into every resource's
// state twice (inputs and outputs) and into every message about it, 1,000 resources in a 500-tenant
// stack; at 1.1 KB it was 2.4 MB of the state. And the shell imported its module again for every
// call (`import()` of a module already loaded still resolves it, and `existsSync` twice): ~0.25 s of
// the provider host's CPU in a no-op preview of 500 tenants (README, "Scale").
//
// Plain CommonJS on node builtins: the provider host requires it before any loader.
'use strict';

const { existsSync } = require('node:fs');
const { fileURLToPath, pathToFileURL } = require('node:url');

/** The module's URL where the state says it is, else the same file under the project (the clone moved). */
const at = (url, rel) => (existsSync(fileURLToPath(url)) ? url : pathToFileURL(`${process.cwd()}/${rel}`).href);

/** A watchdog on the parent (the engine), once per process: for a host other than idforge's, which watches from its start. */
function watchParent() {
  if (globalThis.__idforgeWatch !== undefined) return;
  const parent = process.ppid;
  globalThis.__idforgeWatch = setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, 1000);
  globalThis.__idforgeWatch.unref();
}

/** tsx's loader, registered once: a TypeScript source (a development checkout) imports through it. */
function registerTsx() {
  globalThis.__idforgeTsx ??= import('tsx/esm/api').then((api) => void api.register());
  return globalThis.__idforgeTsx;
}

const loaded = new Map();

/**
 * The provider `name` that the module at `url` (`rel` from the project root) exports, as the eight
 * methods the dynamic provider host calls (undefined for one the provider lacks). The module is
 * imported at the first call, once per process; a failed import is tried again at the next call.
 */
function shell(url, rel, name) {
  watchParent();
  const key = `${url}\n${name}`;
  const load = () => {
    let p = loaded.get(key);
    if (p === undefined) {
      p = (async () => {
        const href = at(url, rel);
        if (href.endsWith('.ts')) await registerTsx();
        const provider = (await import(href))[name];
        if (provider === undefined) throw new Error(`${rel} does not export ${name}`);
        return provider;
      })();
      p.catch(() => loaded.delete(key));
      loaded.set(key, p);
    }
    return p;
  };
  const methods = {};
  for (const m of ['check', 'diff', 'create', 'read', 'update', 'delete', 'previewCreate', 'previewUpdate']) {
    methods[m] = async (...a) => {
      const p = await load();
      return p[m] && p[m](...a);
    };
  }
  return methods;
}

/**
 * Imports the modules at `urls` ahead of the first call that needs them (the provider host does it
 * while the engine waits for the program's first resources). Errors are left to that call.
 */
function preload(urls) {
  return Promise.all(
    urls.map(async (url) => {
      if (url.endsWith('.ts')) await registerTsx();
      await import(url);
    }),
  ).catch(() => undefined);
}

module.exports = { shell, preload };
