#!/usr/bin/env node
// `npm run demo`: installs what is missing, deploys the example model with Pulumi (dev stack: a
// local idforge server, its tenants, applications, users and assignments, and every client
// configuration), starts a sample app for each application (src/demo), then prints where to sign
// in and as whom. Running it again changes nothing and leaves the apps running.
// Teardown: bin/demo-destroy.js.
//
// IDFORGE_DEMO_DIR=<dir> keeps all of the demo's state (.pulumi-state/, .idforge/) in <dir>
// instead of the clone; the ports stay the model's.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { ROOT, ensureSupportedNode, npmEnv } from './_node.js';

// Node.js 22 or later first: on an older node this installs Node 24 into tools/ and runs again under it.
await ensureSupportedNode();
const sh = (cmd, args, env = process.env) => {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', env });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
// A fresh clone: npm dependencies (built for this node), then the engine. Each is skipped when
// already there; scripts/ensure-tools.sh caches its Go builds in tools/.
if (!existsSync(join(ROOT, 'node_modules/@pulumi/pulumi/package.json'))) {
  console.log('demo: installing npm dependencies (npm ci)');
  sh('npm', ['ci', '--no-audit', '--no-fund'], npmEnv());
}
sh('bash', [join(ROOT, 'scripts/ensure-tools.sh')]);

const { load } = await import('./_load.js');
const { DEV_STACK, configFileArgs, demoPaths, devPulumiEnv, preparePulumiHome, releaseStaleLock, runOrExit, writeDemoStackConfig } = await load('provider/_dev-stack');
const { loadModel, formatProblems } = await load('schema/index');
const { formatAppLines, sampleAppsOf } = await load('demo/sample-apps');
const { runApps } = await load('demo/app-processes');
const { parse } = await import('yaml');

const paths = demoPaths();
// Checkpoints off (PULUMI_SKIP_CHECKPOINTS=true; README, "Scale"): the engine writes the state once,
// at the end; a run killed half-way is finished by the next one, which takes back what carries the
// stack's mark.
const env = devPulumiEnv();
await writeDemoStackConfig(paths);
const stackConfig = parse(readFileSync(join(ROOT, 'stacks', `Pulumi.${DEV_STACK}.yaml`), 'utf8'));
const modelPath = join(ROOT, stackConfig.config['idforge:model']);
const loaded = await loadModel([modelPath]);
if (!loaded.ok) {
  console.error(`${modelPath} is invalid:\n${formatProblems(loaded.problems)}`);
  process.exit(1);
}

// Initial passwords are never in Git: the model names environment variables. Any not set get a
// random dev password, made once and kept in a git-ignored file (0600), so a second run sends the
// same values and the hints printed below stay true.
const { stateDir } = paths;
mkdirSync(stateDir, { recursive: true, mode: 0o700 });
const passwordFile = join(stateDir, 'dev-passwords.json');
const devPasswords = existsSync(passwordFile) ? JSON.parse(readFileSync(passwordFile, 'utf8')) : {};
for (const t of loaded.model.tenants) {
  for (const u of t.users) {
    const name = u.password && 'env' in u.password ? u.password.env : undefined;
    if (name === undefined) continue;
    devPasswords[name] ??= randomBytes(12).toString('base64url');
    env[name] ??= devPasswords[name];
  }
}
writeFileSync(passwordFile, `${JSON.stringify(devPasswords, null, 2)}\n`, { mode: 0o600 });

// The engine writes no automatic debug log there: most of its work on a big stack (README, "Scale").
preparePulumiHome(env.PULUMI_HOME);
const selected = runOrExit('pulumi', ['stack', 'select', DEV_STACK], env, { capture: true, allowFailure: true });
if (selected.status !== 0) runOrExit('pulumi', ['stack', 'init', DEV_STACK, '--secrets-provider', 'passphrase'], env);
// A demo killed during its `pulumi up` left the file backend's lock behind: released when its process is gone.
if (await releaseStaleLock(paths, env)) console.log('demo: released the stack lock a killed pulumi up left behind (pulumi cancel)');
runOrExit('pulumi', ['up', '--yes', '--skip-preview', '--stack', DEV_STACK, ...configFileArgs(paths)], env);

const out = JSON.parse(runOrExit('pulumi', ['stack', 'output', '--json', '--stack', DEV_STACK], env, { capture: true }).stdout);

// The sample apps, rendered from the client configurations the stack just wrote. An app already
// running the same files is left alone.
const { apps, skipped } = sampleAppsOf(loaded.model);
const builtProxy = join(resolve(ROOT, process.env.IDFORGE_TOOLS_DIR ?? 'tools'), 'bin', 'oauth2-proxy');
// Else scripts/ensure-tools.sh found an oauth2-proxy on PATH.
const oauth2ProxyBin = existsSync(builtProxy) ? builtProxy : 'oauth2-proxy';
const { running, failed } = await runApps(apps, { appsDir: paths.appsDir, clientConfigDir: out.clientConfigDir, oauth2ProxyBin, say: (l) => console.log(l) });
for (const s of running) console.log(`demo: ${s.app.label} ${s.state === 'running' ? 'already running, unchanged' : s.state} (pid ${s.pid})`);

/** A path as the reader can use it: relative to the working directory when inside it. */
const shown = (p) => {
  const rel = relative(process.cwd(), p);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : p;
};

console.log('\nidforge is running.\n');
console.log('Issuers (discovery at <issuer>.well-known/openid-configuration):');
for (const [tenant, url] of Object.entries(out.issuers ?? {})) console.log(`  ${tenant.padEnd(12)} ${url}`);
console.log('\nSign in as:');
for (const u of loaded.model.tenants.flatMap((t) => t.users.map((x) => ({ ...x, tenant: t.name })))) {
  const ref = u.password;
  let pw = '(no password: another login method)';
  if (ref?.env) pw = `${env[ref.env]}  ($${ref.env}${process.env[ref.env] ? '' : `, dev value kept in ${passwordFile}`})`;
  else if (ref?.config) pw = `(stack config ${ref.config})`;
  console.log(`  ${u.tenant}: ${u.id} <${u.email}>  password: ${pw}`);
}
if (running.length > 0) {
  console.log('\nSample apps, running in the background (open the URL; sign in as a user named there):');
  const lines = formatAppLines(
    running.map((s) => s.app),
    {
      credentials: (_tenant, user) => {
        const ref = user.password;
        if (ref && 'env' in ref) return `${user.email} / ${env[ref.env]}`;
        if (ref && 'config' in ref) return `${user.email} (password: stack config ${ref.config})`;
        return `${user.email} (no password)`;
      },
      log: (app) => shown(running.find((s) => s.app === app)?.log ?? ''),
    },
  );
  for (const line of lines) console.log(line);
}
for (const s of skipped) console.log(`  ${s.tenant}/${s.name}: not started: ${s.reason}`);
console.log(`\nClient configurations: ${out.clientConfigDir}`);
console.log(`  e.g. node bin/idforge.js scaffold acme/portal --from ${out.clientConfigDir} --out /tmp/portal`);
console.log(`Admin API: ${out.baseUrl}/admin/v1`);
console.log(`Server log: ${join(stateDir, 'server', 'idforge-serve.log')}`);
console.log('Tear it all down: npm run demo:destroy   (node bin/demo-destroy.js)');
if (failed.length > 0) {
  console.error(`\ndemo: the server is running, but ${failed.map((f) => f.app.label).join(', ')} did not start:`);
  for (const f of failed) console.error(f.message);
  console.error('Fix that and run `npm run demo` again (it starts only what is not running), or tear down with `npm run demo:destroy`.');
  process.exit(1);
}
