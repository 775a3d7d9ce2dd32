/**
 * A throwaway Pulumi project for engine tests: its own directory, file backend, PULUMI_HOME and
 * stack, running a program module of this repo through the real `pulumi` CLI and Node language host
 * (built into tools/bin by scripts/ensure-tools.sh).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { devPulumiEnv, fileBackendUrl, preparePulumiHome } from '../../src/provider/_dev-stack.ts';

export const REPO = resolve(import.meta.dirname, '../..');

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface PreviewStep {
  readonly op: string;
  readonly urn: string;
  readonly diffReasons?: string[];
  readonly replaceReasons?: string[];
  readonly detailedDiff?: Record<string, { kind: string }>;
}

export class PulumiProject {
  private constructor(
    readonly root: string,
    readonly dir: string,
    readonly backend: string,
    readonly stack: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /**
   * `program` is a module of this repo whose exports become the stack outputs: a TypeScript module
   * (run through tsx), or a Pulumi `main` of plain JavaScript whose default export they are
   * (src/provider/pulumi-main.js: the compiled program when the build is fresh, as a user's stack runs it).
   */
  static async create(program: string, config: Record<string, string>, extraEnv: Record<string, string> = {}): Promise<PulumiProject> {
    const root = await mkdtemp(join(tmpdir(), 'idforge-pulumi-'));
    const dir = join(root, 'project');
    const backend = join(root, 'backend');
    await mkdir(dir);
    await mkdir(backend);
    preparePulumiHome(join(root, 'home'));
    await writeFile(
      join(dir, 'Pulumi.yaml'),
      'name: idforge\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n',
    );
    await writeFile(join(dir, 'package.json'), '{ "name": "idforge-test-project", "private": true, "type": "module" }\n');
    // The engine runs the language host and the dynamic provider plugin here; both resolve
    // @pulumi/pulumi (and the program its dependencies) from this node_modules.
    await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'));
    await writeFile(
      join(dir, 'index.js'),
      program.endsWith('.js')
        ? `const main = await import(${JSON.stringify(pathToFileURL(program).href)});\nexport default main.default;\n`
        : `import { register } from 'tsx/esm/api';\nregister();\nconst program = await import(${JSON.stringify(pathToFileURL(program).href)});\nexport default { ...program };\n`,
    );
    const env = devPulumiEnv({
      ...process.env,
      ...extraEnv,
      PULUMI_BACKEND_URL: fileBackendUrl(backend),
      PULUMI_HOME: join(root, 'home'),
      PULUMI_CONFIG_PASSPHRASE: 'test-only-passphrase',
      NO_COLOR: '1',
    });
    delete env.PULUMI_CONFIG_PASSPHRASE_FILE;
    const p = new PulumiProject(root, dir, backend, 'test', env);
    await p.must(['stack', 'init', 'test', '--secrets-provider', 'passphrase']);
    for (const [k, v] of Object.entries(config)) await p.must(['config', 'set', k, v]);
    return p;
  }

  /** The environment every command of this project runs with (its backend, home and passphrase). */
  environment(extraEnv: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { ...this.env, ...extraEnv };
  }

  run(args: readonly string[], extraEnv: Record<string, string> = {}): Promise<RunResult> {
    return new Promise((resolvePromise, reject) => {
      const child = spawn('pulumi', [...args, '--non-interactive'], {
        cwd: this.dir,
        env: { ...this.env, ...extraEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolvePromise({ code: code ?? 1, stdout, stderr }));
    });
  }

  /** Runs and fails the test with the CLI's own words when it fails. */
  async must(args: readonly string[], extraEnv: Record<string, string> = {}): Promise<RunResult> {
    const r = await this.run(args, extraEnv);
    if (r.code !== 0) throw new Error(`pulumi ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  up(extraEnv: Record<string, string> = {}): Promise<RunResult> {
    return this.must(['up', '--yes', '--skip-preview'], extraEnv);
  }

  /** The steps a preview plans, other than `same`. */
  async previewSteps(extraEnv: Record<string, string> = {}): Promise<PreviewStep[]> {
    const r = await this.must(['preview', '--json', '--diff'], extraEnv);
    const steps = (JSON.parse(r.stdout) as { steps?: PreviewStep[] }).steps ?? [];
    // Refresh steps are the reads before the preview (Tenant resources ask for them): not changes.
    return steps.filter((s) => s.op !== 'same' && s.op !== 'refresh');
  }

  async outputs(): Promise<Record<string, unknown>> {
    return JSON.parse((await this.must(['stack', 'output', '--json'])).stdout) as Record<string, unknown>;
  }

  async configSet(key: string, value: string): Promise<void> {
    await this.must(['config', 'set', key, value]);
  }

  async cleanup(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}

/**
 * Live processes whose environment carries `IDFORGE_CRASH_MARK=<mark>` (what a run started with that
 * mark started: language host, program, provider hosts), other than the idforge server (meant to stay).
 */
export async function markedProcesses(mark: string): Promise<string[]> {
  const out: string[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    try {
      const environ = await readFile(`/proc/${pid}/environ`, 'latin1');
      if (!environ.includes(`IDFORGE_CRASH_MARK=${mark}`)) continue;
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1] ?? '';
      const state = stat[0];
      if (state === 'Z' || / serve /.test(`${cmdline} `)) continue;
      // The server's own helpers (its TypeScript loader's esbuild service, when dist/ is older than the
      // sources) stay with it.
      const parent = await readFile(`/proc/${stat.split(' ')[1]}/cmdline`, 'utf8').catch(() => '');
      if (/ serve /.test(`${parent.split('\0').join(' ')} `)) continue;
      out.push(`${pid} ${cmdline}`);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Waits until `check` holds, polling; fails naming `what` after `ms`. */
export async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `name` part of a URN (`urn:pulumi:stack::project::type::name`). */
export function urnName(urn: string): string {
  return urn.slice(urn.lastIndexOf('::') + 2);
}

/** The example model's users' initial passwords, as the engine tests pass them. */
export const ACME_PASSWORDS = { ACME_ALICE_PASSWORD: 'alice-password-1', ACME_BOB_PASSWORD: 'bob-password-22' };

/**
 * A stack of the real program (src/provider/program.ts) for examples/acme.yaml (copied, so a test may
 * edit it), its server on a free port with its data dir and client configs in the project's temp
 * root. `dispose` leaves no server behind.
 */
export async function acmeStack(extraConfig: Record<string, string> = {}, env: Record<string, string> = ACME_PASSWORDS) {
  const { copyFile, readFile } = await import('node:fs/promises');
  const { freePort } = await import('../support/processes.ts');
  const { isOurProcess, PID_FILE } = await import('../../src/provider/_local-server.ts');
  const p = await PulumiProject.create(join(REPO, 'src/provider/program.ts'), {}, env);
  const model = join(p.root, 'acme.yaml');
  const dataDir = join(p.root, 'server');
  const clients = join(p.root, 'clients');
  await copyFile(join(REPO, 'examples/acme.yaml'), model);
  const config = {
    'idforge:model': model, 'idforge:port': String(await freePort()), 'idforge:dataDir': dataDir, 'idforge:clientConfigDir': clients, ...extraConfig,
  };
  for (const [k, v] of Object.entries(config)) await p.configSet(k, v);
  return {
    p, model, dataDir, clients,
    async dispose(): Promise<void> {
      const pid = Number((await readFile(join(dataDir, PID_FILE), 'utf8').catch(() => '0')).trim());
      if (isOurProcess(pid, dataDir)) process.kill(-pid, 'SIGKILL');
      await p.cleanup();
    },
  };
}
