/**
 * The whole integration stack for end-to-end tests, as a developer would run it: the example model
 * copied into a temp dir with fresh ports, `idforge apply` provisioning a real server's data dir,
 * `idforge serve`, `idforge compile`, and each requested app rendered by `idforge scaffold` and
 * started with its own start command as its own process.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { parseDocument, YAMLSeq, type Document } from 'yaml';
import { AdminClient } from '../../src/admin-client/index.ts';
import { REPO_ROOT, freePorts, runToCompletion, startProcess, stopAll, waitForPort, type RunningProcess } from '../support/processes.ts';

export const TENANT = 'acme';
const EXAMPLE_MODEL = join(REPO_ROOT, 'examples', 'acme.yaml');
const IDFORGE = join(REPO_ROOT, 'bin', 'idforge.js');

export type AppName = 'portal' | 'wiki' | 'dashboard' | 'orders-api';

export interface TestUser {
  readonly id: string;
  readonly email: string;
  readonly password: string;
}

export interface StartedApp {
  readonly name: AppName;
  /** Public origin from the compiled model, e.g. http://portal.localhost:41234. */
  readonly origin: string;
  readonly dir: string;
  readonly process: RunningProcess;
}

export interface Stack {
  readonly dir: string;
  readonly issuer: string;
  /** The server's data dir (admin credentials). */
  readonly dataDir: string;
  /** The typed admin client, as `idforge apply` uses it. */
  admin(): Promise<AdminClient>;
  /** u-alice: admin scope, assigned everywhere. u-bob: no admin, not assigned to the wiki. */
  readonly users: { readonly alice: TestUser; readonly bob: TestUser; readonly carol: TestUser };
  readonly apps: Readonly<Partial<Record<AppName, StartedApp>>>;
  app(name: AppName): StartedApp;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Prefix of the log files under test-output/logs, so test files running side by side differ. */
  readonly label: string;
  readonly apps: readonly AppName[];
  /** Binary for the proxy's run script (tests use the one built by scripts/ensure-tools.sh). */
  readonly oauth2ProxyBin?: string;
  /** Extra `idforge serve` flags, e.g. a short `--access-token-lifetime`. */
  readonly serverArgs?: readonly string[];
  /** Changes to the (port-patched) example model before it is applied and compiled. */
  readonly patchModel?: (doc: Document) => void;
}

const password = (): string => `${randomBytes(12).toString('base64url')}-Aa1`;

/**
 * The example model with every port replaced by a free one (so test files run side by side) and
 * one extra user, carol, who is assigned to nothing: the "unassigned user" of every pattern.
 */
function patchModel(text: string, ports: Map<number, number>, more?: (doc: Document) => void): string {
  const swap = (p: string): string => String(ports.get(Number(p)) ?? p);
  const replaced = text
    .replace(/((?:localhost|127\.0\.0\.1):)(\d{2,5})\b/g, (_m, host: string, p: string) => `${host}${swap(p)}`)
    .replace(/^(\s*port:\s*)(\d{2,5})\b/m, (_m, key: string, p: string) => `${key}${swap(p)}`);
  const doc = parseDocument(replaced);
  const users = doc.getIn(['tenants', 0, 'users']);
  if (!(users instanceof YAMLSeq)) throw new Error('examples/acme.yaml: tenants[0].users is not a list');
  users.add(doc.createNode({ id: 'u-carol', email: 'carol@acme.example', displayName: 'Carol Contractor', password: { env: 'ACME_CAROL_PASSWORD' } }));
  more?.(doc);
  return doc.toString();
}

function portsIn(text: string): number[] {
  const found = new Set<number>();
  for (const m of text.matchAll(/(?:localhost|127\.0\.0\.1):(\d{2,5})\b/g)) found.add(Number(m[1]));
  const server = /^\s*port:\s*(\d{2,5})\b/m.exec(text);
  if (server) found.add(Number(server[1]));
  return [...found];
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'idforge-e2e-'));
  const original = readFileSync(EXAMPLE_MODEL, 'utf8');
  const oldPorts = portsIn(original);
  const newPorts = await freePorts(oldPorts.length);
  const ports = new Map(oldPorts.map((p, i) => [p, newPorts[i] as number]));
  const modelFile = join(dir, 'acme.yaml');
  writeFileSync(modelFile, patchModel(original, ports, options.patchModel));

  const model = parseDocument(readFileSync(modelFile, 'utf8')).toJS() as {
    server: { port: number };
    tenants: { applications: { name: string; origin?: string }[] }[];
  };
  const serverPort = model.server.port;
  const users = {
    alice: { id: 'u-alice', email: 'alice@acme.example', password: password() },
    bob: { id: 'u-bob', email: 'bob@acme.example', password: password() },
    carol: { id: 'u-carol', email: 'carol@acme.example', password: password() },
  };
  const env = {
    IDFORGE_STATE: join(dir, 'state.json'),
    ACME_ALICE_PASSWORD: users.alice.password,
    ACME_BOB_PASSWORD: users.bob.password,
    ACME_CAROL_PASSWORD: users.carol.password,
    NO_COLOR: '1',
  };
  const label = (name: string): string => `${options.label}-${name}`;
  const idforge = (name: string, ...args: string[]) => runToCompletion(label(name), process.execPath, [IDFORGE, ...args], { cwd: dir, env });

  const dataDir = join(dir, 'data');
  const server = startProcess(label('server'), process.execPath, [IDFORGE, 'serve', '--data-dir', dataDir, '--port', String(serverPort), '--base-domain', 'localhost', ...(options.serverArgs ?? [])], { cwd: dir, env });
  let admin: Promise<AdminClient> | undefined;
  const stack: Stack = {
    dir,
    issuer: `http://${TENANT}.localhost:${serverPort}/oauth2/`,
    dataDir,
    admin: () => (admin ??= AdminClient.forDataDir(dataDir)),
    users,
    apps: {},
    app(name) {
      const a = this.apps[name];
      if (a === undefined) throw new Error(`app ${name} was not started in this stack`);
      return a;
    },
    async stop() {
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitForPort(serverPort, { process: server });
    await idforge('apply', 'apply', modelFile, '--data-dir', dataDir);
    await idforge('compile', 'compile', modelFile, '--out', join(dir, 'compiled'));

    const apps: Partial<Record<AppName, StartedApp>> = {};
    for (const name of options.apps) {
      const appDir = join(dir, 'apps', name);
      await idforge(`scaffold-${name}`, 'scaffold', `${TENANT}/${name}`, '--from', join(dir, 'compiled'), '--out', appDir);
      // `npm install` in each temp project would fetch the same packages the repo already has.
      if (!existsSync(join(appDir, 'node_modules'))) symlinkSync(join(REPO_ROOT, 'node_modules'), join(appDir, 'node_modules'), 'dir');
      const origin = model.tenants[0]?.applications.find((a) => a.name === name)?.origin;
      if (origin === undefined) throw new Error(`examples/acme.yaml: ${name} has no origin`);
      const proc =
        name === 'wiki'
          ? startProcess(label(name), join(appDir, 'run.sh'), [], { cwd: appDir, env: { OAUTH2_PROXY_BIN: options.oauth2ProxyBin } })
          : startProcess(label(name), 'npm', ['start', '--silent'], { cwd: appDir });
      apps[name] = { name, origin: new URL(origin).origin, dir: appDir, process: proc };
    }
    for (const a of Object.values(apps)) await waitForPort(Number(new URL(a.origin).port), { process: a.process });
    return Object.assign(stack, { apps });
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/** Fills the tenant's login form (password step) and submits it. */
export async function signIn(page: Page, user: TestUser): Promise<void> {
  await page.locator('input[name="email"]').fill(user.email);
  await page.locator('input[name="password"]').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** True when the page is the tenant's login form on the issuer's host. */
export async function isLoginPage(page: Page, issuer: string): Promise<boolean> {
  return new URL(page.url()).host === new URL(issuer).host && (await page.locator('input[name="password"]').count()) > 0;
}
