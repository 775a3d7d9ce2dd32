// idforge's dynamic provider host: the process the engine starts for every `pulumi-nodejs:dynamic`
// resource (scripts/pulumi-resource-pulumi-nodejs runs it), in place of @pulumi/pulumi's own
// cmd/dynamic-provider. It serves the same gRPC ResourceProvider interface and runs the same
// providers (each resource's `__provider` shell, _load.ts), with what the upstream host leaves out:
//
// - It exits with the engine from its first instruction: a watchdog on its parent, installed before
//   anything else loads (the upstream host loads a provider, and our shell's watchdog with it, only
//   at the first call, so an engine killed in the first second left the process running).
// - A provider's `diff` may answer `detailedDiff` (property path → kind), which the engine shows
//   and puts in `preview --json` (`applications["portal"].redirectUris[1]: add`).
// - `create`, `read` and `update` may answer `refreshBeforeUpdate`: the engine then reads the
//   resource before every preview and up (pkg/resource/deploy/deployment_executor.go,
//   refreshBeforeUpdateOnly). No idforge provider does any longer: those reads run one after another
//   before the engine starts the program (Tenant compares with the live server in its diff instead),
//   and a state that asked for them stops asking at its next read, which answers without the flag.
// - Every method gets a last argument `{ urn, log(severity, message) }`: diagnostics attached to the
//   resource, shown by the engine under it; diff, update and delete also `inputs`, the old inputs the
//   engine keeps, and read the inputs (so a provider's outputs need not repeat its inputs: Tenant's).
// - In a preview, a provider's `previewCreate(inputs)` or `previewUpdate(id, olds, news)` may say what
//   the outputs will be (the unknown value where it cannot tell); without them the outputs are the
//   inputs, as the engine does for providers that do not preview (TenantSecrets keeps the values it
//   already has known, so the client configurations of a renamed application preview exactly).
// - It answers one function, `pulumi-nodejs:idforge:ready`, which the program invokes first so that
//   the engine starts this host while the program reads the model, and imports the provider modules
//   the call names meanwhile (program.ts).
//
// Whatever the providers answer beyond the upstream interface is ignored by the upstream host, so a
// stack also runs (without these extras) when the engine finds another pulumi-resource-pulumi-nodejs.
// Plain CommonJS on node builtins and @pulumi/pulumi's own modules: it runs before any loader.
'use strict';

// The engine's pid, as the launcher saw it before it exec'd node; the parent we have now if not given.
const enginePid = Number(process.env.IDFORGE_ENGINE_PID) || process.ppid;
delete process.env.IDFORGE_ENGINE_PID;
const watchEngine = () => {
  if (process.ppid !== enginePid) process.exit(1);
};
watchEngine();
setInterval(watchEngine, 250).unref();

const { createRequire, enableCompileCache } = require('node:module');
// V8's compile cache (in the system's temporary directory): the engine starts this host for every
// command, and compiling the same @pulumi/pulumi, gRPC and idforge modules again was ~0.4 s of its CPU
// each time (measured on the imports of tenant.ts). Stale entries are never used (keyed by content).
enableCompileCache?.();
const pulumiRequire = createRequire(require.resolve('@pulumi/pulumi/package.json'));
// Strings in the engine's messages through Buffer's native UTF-8, not google-protobuf's loops
// (_fast-strings.cjs); their Structs read straight into values, not through a message per value (_fast-struct.cjs).
require('./_fast-strings.cjs').install();
require('./_fast-struct.cjs').install();
const grpc = pulumiRequire('@grpc/grpc-js');
const requireFromString = pulumiRequire('require-from-string');
const anyproto = pulumiRequire('google-protobuf/google/protobuf/any_pb');
const emptyproto = pulumiRequire('google-protobuf/google/protobuf/empty_pb');
const structproto = pulumiRequire('google-protobuf/google/protobuf/struct_pb');
const plugproto = require('@pulumi/pulumi/proto/plugin_pb');
const provrpc = require('@pulumi/pulumi/proto/provider_grpc_pb');
const provproto = require('@pulumi/pulumi/proto/provider_pb');
const statusproto = require('@pulumi/pulumi/proto/status_pb');
const enginerpc = require('@pulumi/pulumi/proto/engine_grpc_pb');
const engineproto = require('@pulumi/pulumi/proto/engine_pb');
const rpc = require('@pulumi/pulumi/runtime/rpc');
const { grpcChannelOptions } = require('@pulumi/pulumi/runtime/settings');
const { version } = require('@pulumi/pulumi/version');
const dynConfig = require('@pulumi/pulumi/cmd/dynamic-provider/config');
const { getProject } = require('@pulumi/pulumi/metadata');

const PROVIDER_KEY = '__provider';
// The function the program invokes first, so that the engine starts this host early (program.ts).
const READY_TOKEN = 'pulumi-nodejs:idforge:ready';

// Errors nobody awaited still fail the process with a non-zero code, as upstream.
const uncaught = new Set();
const onUncaught = (err) => {
  if (uncaught.has(err)) return;
  uncaught.add(err);
  console.error((err && (err.stack || err.message)) || String(err));
};
process.on('uncaughtException', onUncaught);
process.on('unhandledRejection', onUncaught);
process.on('exit', (code) => {
  if (code === 0 && uncaught.size > 0) process.exitCode = 1;
});

/** The engine, for diagnostics; undefined when it gave no address. */
let engine;
const SEVERITY = { debug: 0, info: 1, warning: 2, error: 3 };

/** A diagnostic on the resource `urn`, shown by the engine under it; stderr when there is no engine to tell. */
function log(urn, severity, message) {
  if (engine === undefined) {
    process.stderr.write(`${message}\n`);
    return Promise.resolve();
  }
  const req = new engineproto.LogRequest();
  req.setSeverity(SEVERITY[severity] ?? SEVERITY.info);
  req.setMessage(message);
  req.setUrn(urn || '');
  req.setEphemeral(false);
  return new Promise((resolve) => engine.log(req, () => resolve()));
}

/**
 * The context a method gets. With `inputs` (a Struct of the request, or a getter of one), the context
 * also holds the resource's inputs as the engine keeps them, decoded only when a provider asks: the old
 * inputs for diff, update and delete, the inputs for read. A provider whose outputs leave out what it
 * was declared with (Tenant) reads it from there.
 */
const contextOf = (urn, inputs) => {
  const ctx = { urn, log: (severity, message) => log(urn, severity, message) };
  if (inputs === undefined) return ctx;
  let decoded;
  return Object.defineProperty(ctx, 'inputs', {
    enumerable: true,
    get: () => {
      if (decoded === undefined) {
        const struct = inputs();
        decoded = struct ? struct.toJavaScript() : null;
      }
      return decoded === null ? undefined : decoded;
    },
  });
};

const providers = new Map();
/** Loads (once per shell) the provider a resource's `__provider` shell names, as upstream's getProvider. */
async function providerOf(props, rawConfig) {
  const source = props[PROVIDER_KEY];
  let provider = providers.get(source);
  if (provider === undefined) {
    provider = requireFromString(source).handler();
    providers.set(source, provider);
    if (provider.configure) await provider.configure({ config: new dynConfig.Config(rawConfig, getProject()) });
  }
  return provider;
}

const withProvider = (result, props) => Object.assign(result || {}, { [PROVIDER_KEY]: props[PROVIDER_KEY] });

/** A provider's error as the engine reads it: with `id`, the object exists but failed to initialize. */
function errorResponse(e) {
  const status = new statusproto.Status();
  status.setCode(grpc.status.UNKNOWN);
  status.setMessage(e.message);
  const metadata = new grpc.Metadata();
  if (e.id) {
    const detail = new provproto.ErrorResourceInitFailed();
    detail.setId(e.id);
    detail.setProperties(structproto.Struct.fromJavaScript(e.properties || {}));
    detail.setReasonsList(e.reasons || []);
    const details = new anyproto.Any();
    details.pack(detail.serializeBinary(), 'pulumirpc.ErrorResourceInitFailed');
    status.addDetails(details);
    metadata.add('grpc-status-details-bin', Buffer.from(status.serializeBinary()));
  }
  return { code: grpc.status.UNKNOWN, message: e.message, metadata };
}

const DIFF_KINDS = provproto.PropertyDiff.Kind;
const KIND = { add: DIFF_KINDS.ADD, 'add-replace': DIFF_KINDS.ADD_REPLACE, delete: DIFF_KINDS.DELETE, 'delete-replace': DIFF_KINDS.DELETE_REPLACE, update: DIFF_KINDS.UPDATE, 'update-replace': DIFF_KINDS.UPDATE_REPLACE };

const unimplemented = (what) => (call, callback) => callback({ code: grpc.status.UNIMPLEMENTED, details: `${what} is not implemented by the dynamic provider` }, undefined);

// IDFORGE_HOST_TIMING=<file>: one line per call (method, URN, milliseconds it took, milliseconds since
// the host started when it came), for profiling.
const timingFile = process.env.IDFORGE_HOST_TIMING;
// IDFORGE_HOST_CPU_PROF=<dir>: a V8 CPU profile of this process, written 2 s after its last call (the
// engine kills a plugin when it is done, so `node --cpu-prof` never gets to write one).
const profDir = process.env.IDFORGE_HOST_CPU_PROF;
let profSession;
let profTimer;
if (profDir) {
  const inspector = require('node:inspector');
  profSession = new inspector.Session();
  profSession.connect();
  profSession.post('Profiler.enable', () => profSession.post('Profiler.start'));
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { writeProfile(); process.exit(0); });
}
function writeProfile() {
  profSession.post('Profiler.stop', (err, r) => {
    if (!err) require('node:fs').writeFileSync(`${profDir}/host.${process.pid}.${Date.now()}.cpuprofile`, JSON.stringify(r.profile));
    profSession.post('Profiler.start');
  });
}
const profileLater = () => {
  clearTimeout(profTimer);
  profTimer = setTimeout(writeProfile, 2000);
};
const timed = (name, fn) => async (call, callback) => {
  if (profSession) profileLater();
  if (!timingFile) return fn(call, callback);
  const t0 = process.hrtime.bigint();
  const urn = call.request.getUrn ? call.request.getUrn() : '';
  await fn(call, (...a) => {
    require('node:fs').appendFileSync(timingFile, `${name} ${urn.slice(urn.lastIndexOf('::') + 2)} ${Number(process.hrtime.bigint() - t0) / 1e6} ${Math.round(performance.now())}\n`);
    callback(...a);
  });
};

const service = {
  config: {},
  cancel: (call, callback) => callback(undefined, new emptyproto.Empty()),
  configure(call, callback) {
    const args = call.request.getArgs();
    const config = {};
    for (const [k, v] of Object.entries(args ? args.toJavaScript() : {})) if (k !== PROVIDER_KEY) config[k] = rpc.unwrapRpcSecret(v);
    service.config = config;
    const resp = new provproto.ConfigureResponse();
    resp.setAcceptsecrets(false);
    // Create and update are called in previews too (with `preview` set): see previewCreate/previewUpdate.
    resp.setSupportspreview(true);
    callback(undefined, resp);
  },
  invoke(call, callback) {
    // The program's first call (program.ts): it makes the engine start this host while the program
    // still reads the model, so the first resources find it ready, their providers loaded.
    if (call.request.getTok() === READY_TOKEN) {
      // And the provider modules the program names are imported now, not at the first resource's call.
      const args = call.request.getArgs();
      const modules = args ? args.toJavaScript().modules : undefined;
      if (Array.isArray(modules)) void require('./_shell.cjs').preload(modules.filter((m) => typeof m === 'string' && m.startsWith('file:')));
      const resp = new provproto.InvokeResponse();
      resp.setReturn(structproto.Struct.fromJavaScript({}));
      callback(undefined, resp);
      return;
    }
    callback(new Error(`unknown function ${call.request.getTok()}`), undefined);
  },
  async check(call, callback) {
    try {
      const req = call.request;
      const olds = req.getOlds().toJavaScript();
      const news = req.getNews().toJavaScript();
      const provider = await providerOf(news[PROVIDER_KEY] === rpc.unknownValue ? olds : news, service.config);
      let inputs = news;
      let failures = [];
      if (provider.check) {
        const result = await provider.check(olds, news, contextOf(req.getUrn()));
        if (result.inputs) inputs = result.inputs;
        if (result.failures) failures = result.failures;
      }
      inputs[PROVIDER_KEY] = news[PROVIDER_KEY];
      const resp = new provproto.CheckResponse();
      resp.setInputs(structproto.Struct.fromJavaScript(inputs));
      resp.setFailuresList(failures.map((f) => {
        const failure = new provproto.CheckFailure();
        failure.setProperty(f.property);
        failure.setReason(f.reason);
        return failure;
      }));
      callback(undefined, resp);
    } catch (e) {
      console.error(`${e}: ${e.stack}`);
      callback(e, undefined);
    }
  },
  checkConfig: unimplemented('CheckConfig'),
  async diff(call, callback) {
    try {
      const req = call.request;
      const olds = req.getOlds().toJavaScript();
      const news = req.getNews().toJavaScript();
      // As upstream: a changed provider implementation is no change of the resource.
      const provider = await providerOf(news[PROVIDER_KEY] === rpc.unknownValue ? olds : news, service.config);
      const resp = new provproto.DiffResponse();
      if (provider.diff) {
        const result = await provider.diff(req.getId(), olds, news, contextOf(req.getUrn(), () => req.getOldInputs()));
        const D = provproto.DiffResponse.DiffChanges;
        resp.setChanges(result.changes === true ? D.DIFF_SOME : result.changes === false ? D.DIFF_NONE : D.DIFF_UNKNOWN);
        if (result.replaces && result.replaces.length > 0) resp.setReplacesList(result.replaces);
        if (result.deleteBeforeReplace) resp.setDeletebeforereplace(true);
        if (result.detailedDiff !== undefined && result.changes === true) {
          const map = resp.getDetaileddiffMap();
          const tops = new Set();
          for (const [path, kind] of Object.entries(result.detailedDiff)) {
            const d = new provproto.PropertyDiff();
            d.setKind(KIND[kind] ?? DIFF_KINDS.UPDATE);
            d.setInputdiff(true);
            map.set(path, d);
            tops.add(path.split(/[.[]/)[0]);
          }
          resp.setDiffsList([...tops]);
          resp.setHasdetaileddiff(true);
        }
      }
      callback(undefined, resp);
    } catch (e) {
      console.error(`${e}: ${e.stack}`);
      callback(e, undefined);
    }
  },
  diffConfig: unimplemented('DiffConfig'),
  async create(call, callback) {
    try {
      const req = call.request;
      const props = req.getProperties().toJavaScript();
      const provider = await providerOf(props, service.config);
      const resp = new provproto.CreateResponse();
      if (req.getPreview()) {
        const outs = (provider.previewCreate && (await provider.previewCreate(props, contextOf(req.getUrn())))) || props;
        resp.setProperties(structproto.Struct.fromJavaScript(withProvider({ ...outs }, props)));
        callback(undefined, resp);
        return;
      }
      const result = await provider.create(props, contextOf(req.getUrn()));
      resp.setId(result.id);
      resp.setProperties(structproto.Struct.fromJavaScript(withProvider(result.outs, props)));
      if (result.refreshBeforeUpdate === true) resp.setRefreshBeforeUpdate(true);
      callback(undefined, resp);
    } catch (e) {
      const r = errorResponse(e);
      callback(r, null, r.metadata);
    }
  },
  async read(call, callback) {
    try {
      const req = call.request;
      const id = req.getId();
      const props = req.getProperties().toJavaScript();
      const provider = await providerOf(props, service.config);
      const resp = new provproto.ReadResponse();
      if (provider.read) {
        const result = await provider.read(id, props, contextOf(req.getUrn(), () => req.getInputs()));
        resp.setId(result.id);
        resp.setProperties(structproto.Struct.fromJavaScript(withProvider(result.props, props)));
        // Explicit inputs are what the next diff compares the program with (pulumi#13679).
        if (result.inputs) resp.setInputs(structproto.Struct.fromJavaScript(withProvider(result.inputs, props)));
        if (result.refreshBeforeUpdate === true) resp.setRefreshBeforeUpdate(true);
      } else {
        resp.setId(id);
        resp.setProperties(req.getProperties());
      }
      callback(undefined, resp);
    } catch (e) {
      console.error(`${e}: ${e.stack}`);
      callback(e, undefined);
    }
  },
  list: (call) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'List is not implemented by the dynamic provider' }),
  async update(call, callback) {
    try {
      const req = call.request;
      const olds = req.getOlds().toJavaScript();
      const news = req.getNews().toJavaScript();
      const provider = await providerOf(news, service.config);
      const resp = new provproto.UpdateResponse();
      if (req.getPreview()) {
        const outs = (provider.previewUpdate && (await provider.previewUpdate(req.getId(), olds, news, contextOf(req.getUrn())))) || news;
        resp.setProperties(structproto.Struct.fromJavaScript(withProvider({ ...outs }, news)));
        callback(undefined, resp);
        return;
      }
      const result = provider.update ? ((await provider.update(req.getId(), olds, news, contextOf(req.getUrn(), () => req.getOldInputs()))) || {}) : {};
      resp.setProperties(structproto.Struct.fromJavaScript(withProvider(result.outs, news)));
      if (result.refreshBeforeUpdate === true) resp.setRefreshBeforeUpdate(true);
      callback(undefined, resp);
    } catch (e) {
      const r = errorResponse(e);
      callback(r, null, r.metadata);
    }
  },
  async delete(call, callback) {
    try {
      const req = call.request;
      const props = req.getProperties().toJavaScript();
      const provider = await providerOf(props, service.config);
      if (provider.delete) await provider.delete(req.getId(), props, contextOf(req.getUrn(), () => req.getOldInputs()));
      callback(undefined, new emptyproto.Empty());
    } catch (e) {
      console.error(`${e}: ${e.stack}`);
      callback(e, undefined);
    }
  },
  getPluginInfo(call, callback) {
    const resp = new plugproto.PluginInfo();
    resp.setVersion(version);
    callback(undefined, resp);
  },
  handshake: unimplemented('Handshake'),
  getSchema: unimplemented('GetSchema'),
  construct: unimplemented('Construct'),
  parameterize: unimplemented('Parameterize'),
  call: unimplemented('Call'),
  attach: unimplemented('Attach'),
  getMapping: unimplemented('GetMapping'),
  getMappings: unimplemented('GetMappings'),
};

async function main(args) {
  if (args.length === 0) {
    console.error('fatal: Missing <engine> address');
    process.exit(-1);
  }
  engine = new enginerpc.EngineClient(args[0], grpc.credentials.createInsecure(), grpcChannelOptions);
  const server = new grpc.Server({ ...grpcChannelOptions });
  server.addService(provrpc.ResourceProviderService, Object.fromEntries(Object.entries(service).map(([k, v]) => [k, typeof v === 'function' ? timed(k, v) : v])));
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  // The engine reads the port from the first line of stdout.
  console.log(port.toString());
}

main(process.argv.slice(2));
