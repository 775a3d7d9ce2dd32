/**
 * The Pulumi program (Pulumi.yaml's `main` loads it through pulumi-main.js).
 *
 * Stack config (namespace `idforge`), paths relative to the project directory:
 *   model            model file or directory (required), e.g. examples/acme.yaml
 *   overlay          this environment's overlay file, merged over the model (src/schema/overlay.ts),
 *                    e.g. stacks/staging.overlay.yaml. Default: none
 *   dataDir          local server's data dir. Default: .idforge/<stack>/server
 *   port             local server's port. Default: the model's `server.port`, else 9080
 *   clientConfigDir  where client configs are written. Default: .idforge/<stack>/clients
 *   adopt            true: take over tenants, applications, users and assignments that already
 *                    exist on the server (made by hand or by `idforge apply`) instead of refusing
 *                    to create them. Default: false. Set it for one `up`, then remove it.
 *   allowDelete      true: let this run delete a tenant that has users, or most of a tenant's
 *                    applications, users or assignments (refused otherwise, in preview already).
 *                    Default: false. Set it for one `up`, then remove it.
 *
 * Beside the stack's server and client configs, `.idforge/<stack>/model-cache.json` keeps what js-yaml
 * made of each model file (src/schema/parse-cache.ts); it may be deleted at any time.
 *
 * Users' initial passwords come from the references in the model: `{env: NAME}` reads the
 * environment of `pulumi up`, `{config: key}` reads a secret stack config value
 * (`pulumi config set --secret key ...`). They never enter Git and stay secrets in the state, and
 * they are needed only when a user is created: a preview or up of existing users runs without them.
 */
import type * as pulumi from '@pulumi/pulumi';
// From the SDK's own modules, not its index, which would load its automation API, npm's arborist and
// TypeScript before the first resource (~0.2 s of every command; _load.ts).
import { Config } from '@pulumi/pulumi/config.js';
import { RunError } from '@pulumi/pulumi/errors.js';
import { getStack } from '@pulumi/pulumi/metadata.js';
import { secret as pulumiSecret } from '@pulumi/pulumi/output.js';
import { invoke } from '@pulumi/pulumi/runtime/invoke.js';
import { Resource } from '@pulumi/pulumi/resource.js';
import { getRootDirectory } from '@pulumi/pulumi/runtime/settings.js';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatProblems, loadModelWithOverlay, openParseCache, type CredentialRef } from '../schema/index.ts';
import { gitInfoOf } from '../schema/git-source.ts';
import { IdentityStack } from './identity-stack.ts';

// Three things the SDK does for its own debugging, which the program leaves out; set
// PULUMI_DEBUG_PROMISE_LEAKS, the SDK's own debugging switch, to have all three back.
const sdkDebug = process.env.PULUMI_DEBUG_PROMISE_LEAKS !== undefined;
const require = createRequire(import.meta.url);
// 1. No stack frames in the program's errors and promises. Why: the SDK captures a stack trace for
// every promise it makes (debuggablePromise, four for each top-level input of each resource), and
// under tsx and source-map-support each capture maps every frame to its source: profiled, 1.0 s of
// the program's ~6.5 s of CPU in a no-op preview of 100 bench tenants (README, "Scale"). The model's
// problems are located messages, not stacks.
if (!sdkDebug) Error.stackTraceLimit = 0;
// 2. No source position in the resources' registrations: for each resource the SDK lifts that limit
// for one capture, to record where the resource was declared. For idforge's resources that is always
// the same line of identity-stack.ts (the model declares them, not the user's code, and the model's
// problems carry their own paths), and that capture, mapped frame by frame by source-map-support, was
// 0.4 s of the program's ~6 s of CPU in a preview of 500 bench tenants, the command's critical path.
if (!sdkDebug) (Resource as unknown as { stackTrace(skip: number): unknown[] }).stackTrace = () => [];
// 3. No debug messages: three for each resource ("Registering resource", "RegisterResource RPC
// prepared", "... finished"), each a gRPC call to the engine, sent one after another, for the engine
// to show only under `pulumi up --debug`. In a preview of 500 bench tenants: 3,000 calls, 0.3 s of
// the program's CPU in the calls alone (their answers and the engine's work besides), on the
// command's critical path. Warnings and errors are not debug messages: they are sent as before.
if (!sdkDebug) require('@pulumi/pulumi/log/index.js').debug = () => Promise.resolve();
// The SDK's messages to the engine with native UTF-8 strings, and the engine's Structs read straight
// into values (why: src/provider/_fast-strings.cjs, _fast-struct.cjs). Resolved from the project
// root, so the sources and the build (dist/) find the same files.
for (const file of ['_fast-strings.cjs', '_fast-struct.cjs']) require(fileURLToPath(new URL(`../../src/provider/${file}`, import.meta.url))).install();

// First of all, a call the provider host answers (_host.cjs, READY_TOKEN): the engine starts the host
// for it, while this program reads and compiles the model. Why: the engine starts the host only for
// the first resource that needs it, ~2 s into a preview of 500 bench tenants, and then takes ~1 s to
// have it ready, while the program already registers resources that wait for it (README, "Scale").
// Its answer is not needed; another host (not idforge's) refuses the call, which changes nothing.
// It names the provider modules (beside this one, sources or build alike) for the host to load meanwhile.
const PROVIDER_MODULES = ['delete-guard', 'auth-server', 'tenant', 'tenant-secrets', 'client-configs'];
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
invoke('pulumi-nodejs:idforge:ready', { modules: PROVIDER_MODULES.map((m) => new URL(`./${m}${ext}`, import.meta.url).href) }).catch(() => undefined);

const config = new Config('idforge');
const stack = getStack();
// The directory of Pulumi.yaml; the program itself runs in the directory of `main`.
const projectDir = getRootDirectory();
const here = (p: string): string => resolve(projectDir, p);

// The environment's overlay (base domain, origins, ports, users), merged over the model in Git.
const overlay = config.get('overlay');
// What js-yaml made of each model file last time, by its text's hash (src/schema/parse-cache.ts):
// on every preview and up the model is read before the first resource can be registered.
const parseCache = openParseCache(here(`.idforge/${stack}/model-cache.json`));
const loaded = await loadModelWithOverlay([here(config.require('model'))], overlay === undefined ? undefined : here(overlay), parseCache);
if (!loaded.ok) {
  // The same located messages as `idforge validate`, without a stack trace.
  throw new RunError(`the model is invalid:\n${formatProblems(loaded.problems)}`);
}
const port = config.getNumber('port');
// The stack's port wins over the model's, everywhere: the server listens on it and every issuer URL
// in the client configs names it.
const model = port === undefined ? loaded.model : { ...loaded.model, server: { ...loaded.model.server, port } };

/** A secret reference of the model, resolved: its value (a Pulumi secret), or where it should come from. */
function resolveRef(ref: CredentialRef): { readonly value: pulumi.Input<string> } | { readonly missing: string } {
  if ('env' in ref) {
    const v = process.env[ref.env];
    return v === undefined || v === '' ? { missing: `environment variable ${ref.env}` } : { value: pulumiSecret(v) };
  }
  const v = config.getSecret(ref.config) ?? new Config().getSecret(ref.config);
  return v === undefined ? { missing: `stack config ${ref.config} (pulumi config set --secret ${ref.config} ...)` } : { value: v };
}

// Initial passwords are needed only for users being created (TenantUsers' check says which): the
// ones this run does not have are passed on as where they should come from, never as an error here.
const passwords: Record<string, pulumi.Input<string>> = {};
const missingPasswords: Record<string, string> = {};
for (const t of model.tenants) {
  for (const u of t.users) {
    if (u.password === undefined) continue;
    const r = resolveRef(u.password);
    if ('value' in r) passwords[`${t.name}/${u.id}`] = r.value;
    else missingPasswords[`${t.name}/${u.id}`] = r.missing;
  }
}

// Webhooks' signing secrets are sent on every run (a new value is a rotation): each one the model
// names must be here, or the program stops naming where it should come from.
const webhookSecrets: Record<string, pulumi.Input<string>> = {};
const unresolvedHooks: string[] = [];
for (const t of model.tenants) {
  for (const w of t.webhooks) {
    if (w.secret === undefined) continue;
    const r = resolveRef(w.secret);
    if ('value' in r) webhookSecrets[`${t.name}/${w.name}`] = r.value;
    else unresolvedHooks.push(`secret of webhook ${t.name}/${w.name}: ${r.missing} is not set`);
  }
}
if (unresolvedHooks.length > 0) throw new RunError(unresolvedHooks.join('\n'));

// Where the model comes from in Git: each write names its commit in the server's event log.
const git = await gitInfoOf(here(config.require('model')));

const identity = new IdentityStack('idforge', {
  model,
  server: {
    local: { dataDir: here(config.get('dataDir') ?? `.idforge/${stack}/server`) },
  },
  clientConfigDir: here(config.get('clientConfigDir') ?? `.idforge/${stack}/clients`),
  passwords,
  webhookSecrets,
  missingPasswords,
  adopt: config.getBoolean('adopt') ?? false,
  allowDelete: config.getBoolean('allowDelete') ?? false,
  ...(git === undefined ? {} : { git }),
});

// Every resource made before the program's exports are read (IdentityStack makes them a few tenants at a time).
await identity.ready;
// Written once the resources are registered, off the way to the first one (only when a file changed).
await parseCache.save();

export const baseUrl = identity.baseUrl;
export const issuers = identity.issuers;
export const clientConfigDir = identity.clientConfigDir;
// No list of users: the model holds it (the demo reads it there). As a stack output it was every user
// of the model serialized by the SDK, copied by the engine for its events and kept in the state on
// every run: 100,000 objects and 8 MB of state for the 100k-user model, 1.4 s of the engine's CPU in
// a no-op preview (README, "Scale").
