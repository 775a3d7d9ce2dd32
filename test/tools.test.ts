/**
 * The external tools from scripts/ensure-tools.sh do their real jobs: the Pulumi CLI with our Node
 * language host runs a TypeScript program with a dynamic provider through stack init, up, a
 * no-change preview and destroy; oauth2-proxy is the pinned build; Debian's Chromium loads a page
 * from a *.localhost origin; and the system resolver maps *.localhost to loopback.
 */
import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_FLAGS } from './support/browser.ts';
import { pulumiEnv, toolPath, toolVersions } from './support/tools.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(file: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<RunResult>((done) => {
    execFile(file, [...args], { ...options, maxBuffer: 32 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout: stdout.toString(), stderr: stderr.toString() });
    });
  });
}

/** Runs a command that must succeed; on failure the assertion shows its output. */
async function ok(file: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = await run(file, args, options);
  expect(result, `${file} ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toMatchObject({ code: 0 });
  return result;
}

describe('pulumi', () => {
  const versions = toolVersions();
  let work: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'idforge-tools-'));
  });
  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it('is the pinned release (or a newer v3 found on PATH), and the npm SDK is the pinned release', async () => {
    const sdk = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/@pulumi/pulumi/package.json'), 'utf8'));
    expect(versions.PULUMI_VERSION).toBe('v3.259.0');
    expect(`v${sdk.version}`).toBe(versions.PULUMI_VERSION);
    const { stdout } = await ok(toolPath('pulumi'), ['version'], { env: pulumiEnv() });
    const cli = stdout.trim();
    if (toolPath('pulumi').startsWith(REPO_ROOT)) expect(cli).toBe(versions.PULUMI_VERSION);
    else expect(cli.localeCompare(versions.PULUMI_VERSION!, 'en', { numeric: true })).toBeGreaterThanOrEqual(0);
  });

  it('has its Node language host and dynamic-provider launcher beside it', async () => {
    const bin = dirname(toolPath('pulumi'));
    expect(dirname(toolPath('pulumi-language-nodejs'))).toBe(bin);
    expect(dirname(toolPath('pulumi-resource-pulumi-nodejs'))).toBe(bin);
    const { stdout } = await ok(toolPath('pulumi-language-nodejs'), ['--version']);
    expect(stdout.trim()).toBe(versions.PULUMI_VERSION);
  });

  /**
   * A Pulumi project in a temp dir. It lives outside the repo because the repo's package.json says
   * "type": "module" and this program is CommonJS TypeScript (what @pulumi/pulumi's ts-node runs
   * without extra setup); node_modules is a symlink so @pulumi/pulumi resolves to the repo's copy.
   */
  function writeProject(name: string, indexTs: string): string {
    const dir = join(work, name);
    mkdirSync(dir);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'Pulumi.yaml'), `name: ${name}\nruntime:\n  name: nodejs\n  options:\n    typescript: true\n`);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, main: 'index.ts' }, null, 2));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            strict: true,
            target: 'ES2022',
            module: 'commonjs',
            moduleResolution: 'node',
            esModuleInterop: true,
            skipLibCheck: true,
          },
        },
        null,
        2,
      ),
    );
    writeFileSync(join(dir, 'index.ts'), indexTs);
    return dir;
  }

  /** Per-project Pulumi home and file backend, so nothing touches ~/.pulumi or other tests. */
  function projectEnv(dir: string): NodeJS.ProcessEnv {
    return pulumiEnv({
      PULUMI_HOME: join(dir, '.pulumi-home'),
      PULUMI_CONFIG_PASSPHRASE: 'tools-test-passphrase',
    });
  }

  it(
    'runs a TypeScript program with a dynamic provider: stack init, up, no-change preview, destroy',
    async () => {
      const dir = writeProject(
        'tools-dynamic',
        `import * as pulumi from "@pulumi/pulumi";

interface GreetingInputs {
  name: string;
}

const greetingProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: GreetingInputs) {
    return { id: "greeting-" + inputs.name, outs: { name: inputs.name, message: "hello " + inputs.name } };
  },
};

class Greeting extends pulumi.dynamic.Resource {
  declare public readonly message: pulumi.Output<string>;
  constructor(name: string, args: { name: pulumi.Input<string> }, opts?: pulumi.CustomResourceOptions) {
    super(greetingProvider, name, { name: args.name, message: undefined }, opts);
  }
}

const greeting = new Greeting("greeting", { name: "acme" });
export const message = greeting.message;
export const greetingId = greeting.id;
`,
      );
      const state = join(dir, '.state');
      mkdirSync(state);
      const env = projectEnv(dir);
      const pulumi = toolPath('pulumi');
      const opts = { cwd: dir, env };

      await ok(pulumi, ['login', `file://${state}`], opts);
      await ok(pulumi, ['stack', 'init', 'dev', '--non-interactive'], opts);

      const up = await ok(pulumi, ['up', '--yes', '--non-interactive', '--skip-preview'], opts);
      expect(up.stdout).toMatch(/\+ +pulumi-nodejs:dynamic:Resource +greeting +created/);

      const outputs = JSON.parse((await ok(pulumi, ['stack', 'output', '--json'], opts)).stdout);
      expect(outputs).toEqual({ message: 'hello acme', greetingId: 'greeting-acme' });

      const preview = await ok(pulumi, ['preview', '--expect-no-changes', '--non-interactive'], opts);
      expect(preview.stdout).toMatch(/2 unchanged/);

      const destroy = await ok(pulumi, ['destroy', '--yes', '--non-interactive', '--skip-preview'], opts);
      expect(destroy.stdout).toMatch(/- +pulumi-nodejs:dynamic:Resource +greeting +deleted/);

      const exported = JSON.parse((await ok(pulumi, ['stack', 'export'], opts)).stdout);
      expect(exported.deployment.resources ?? []).toEqual([]);
    },
    600_000,
  );

  it(
    'reports a failing program as a failed preview with the program\'s own error',
    async () => {
      const dir = writeProject(
        'tools-failing',
        `import * as pulumi from "@pulumi/pulumi";
const config = new pulumi.Config();
throw new Error("tenant model is broken: " + config.require("reason"));
`,
      );
      const state = join(dir, '.state');
      mkdirSync(state);
      const env = pulumiEnv({
        PULUMI_HOME: join(dir, '.pulumi-home'),
        PULUMI_CONFIG_PASSPHRASE: 'tools-test-passphrase',
        PULUMI_BACKEND_URL: `file://${state}`,
      });
      const pulumi = toolPath('pulumi');
      await ok(pulumi, ['stack', 'init', 'dev', '--non-interactive'], { cwd: dir, env });
      await ok(pulumi, ['config', 'set', 'reason', 'no-tenants'], { cwd: dir, env });

      const preview = await run(pulumi, ['preview', '--non-interactive'], { cwd: dir, env });
      expect(preview.code).not.toBe(0);
      expect(preview.stdout + preview.stderr).toContain('tenant model is broken: no-tenants');
    },
    300_000,
  );
});

/** A node of release 22 or later: this one, or the one ensure-tools.sh installed. */
function supportedNode(): string {
  return Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : join(REPO_ROOT, 'tools/node/bin/node');
}

/** The folder of the go command (the stamps of built tools name the Go release). */
function goBin(): string {
  const found = (process.env.PATH ?? '').split(':').find((d) => d !== '' && existsSync(join(d, 'go')));
  return found ?? '/usr/local/go/bin';
}

describe('scripts/ensure-tools.sh', () => {
  it('uses a compatible pulumi, language host, oauth2-proxy and node already on PATH, and builds nothing', async () => {
    // A machine where the tools were installed some other way: a folder on PATH holding them, and an
    // empty tools dir for this run.
    const work = mkdtempSync(join(tmpdir(), 'idforge-ensure-'));
    try {
      const userBin = join(work, 'usr-local-bin');
      mkdirSync(userBin);
      for (const tool of ['pulumi', 'pulumi-language-nodejs', 'oauth2-proxy'] as const) symlinkSync(toolPath(tool), join(userBin, tool));
      symlinkSync(supportedNode(), join(userBin, 'node'));
      const env = { ...process.env, PATH: `${userBin}:${goBin()}:/usr/local/bin:/usr/bin:/bin`, IDFORGE_TOOLS_DIR: join(work, 'tools') };
      const r = await ok('bash', [join(REPO_ROOT, 'scripts/ensure-tools.sh')], { env });
      expect(r.stderr).not.toMatch(/building|installing/);
      expect(r.stderr).toMatch(new RegExp(`pulumi +v3\\.\\d+\\.\\d+ +${userBin}/pulumi \\(found on PATH\\)`));
      expect(r.stderr).toContain(`${userBin}/pulumi-language-nodejs (found beside pulumi)`);
      expect(r.stderr).toMatch(new RegExp(`oauth2-proxy +v7\\.\\d+\\.\\d+ +${userBin}/oauth2-proxy \\(found on PATH\\)`));
      expect(r.stderr).toMatch(new RegExp(`node +v2\\d\\.\\d+\\.\\d+ +${userBin}/node \\(found on PATH\\)`));
      expect(r.stdout).toMatch(new RegExp(`^pulumi +${userBin}/pulumi `, 'm'));
      // Nothing was built or installed into the tools dir: only the SDK's dynamic-provider launcher is linked.
      expect(readdirSync(join(work, 'tools', 'bin'))).toEqual(['pulumi-resource-pulumi-nodejs']);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses a pulumi older than the pinned release and says why', async () => {
    const work = mkdtempSync(join(tmpdir(), 'idforge-ensure-old-'));
    try {
      const userBin = join(work, 'bin');
      mkdirSync(userBin);
      writeFileSync(join(userBin, 'pulumi'), '#!/bin/sh\necho v3.100.0\n', { mode: 0o755 });
      symlinkSync(supportedNode(), join(userBin, 'node'));
      // The real tools dir: the pinned build is there, so nothing is built either.
      const env = { ...process.env, PATH: `${userBin}:${goBin()}:/usr/local/bin:/usr/bin:/bin` };
      const r = await ok('bash', [join(REPO_ROOT, 'scripts/ensure-tools.sh')], { env });
      expect(r.stderr).toContain(`${userBin}/pulumi is older than ${toolVersions().PULUMI_VERSION}: not used`);
      expect(r.stdout).toMatch(/^pulumi +\S+\/tools\/bin\/pulumi +v3\.259\.0$/m);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('Node.js', () => {
  it('every entry point runs on Node 22 or later: an older machine node hands over to tools/node', async () => {
    const machineNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p));
    expect(machineNode, 'a node on the machine').toBeDefined();
    const { stdout: machineVersion } = await ok(machineNode!, ['--version']);
    const env = { ...process.env, PATH: `${dirname(machineNode!)}:/usr/bin:/bin` };
    const viaRun = (await ok(machineNode!, [join(REPO_ROOT, 'bin/run.js'), 'node', '-p', 'process.version + " " + process.release.lts'], { env })).stdout.trim();
    const viaCli = (await ok(machineNode!, [join(REPO_ROOT, 'bin/idforge.js'), '--version'], { env })).stdout.trim();
    expect(viaCli).toBe('idforge 0.1.0');
    if (Number(machineVersion.slice(1).split('.')[0]) >= 22) {
      expect(viaRun).toBe(`${machineVersion.trim()} ${viaRun.split(' ')[1]}`);
    } else {
      // The pinned LTS release from tools/node, not the machine's.
      expect(viaRun).toBe(`v${toolVersions().NODE_VERSION} Krypton`);
    }
  }, 120_000);
});

describe('oauth2-proxy', () => {
  it('is the pinned tag', async () => {
    const tag = toolVersions().OAUTH2_PROXY_VERSION!;
    expect(tag).toMatch(/^v7\.\d+\.\d+$/);
    expect(toolVersions().OAUTH2_PROXY_IMAGE).toBe(`quay.io/oauth2-proxy/oauth2-proxy:${tag}`);
    const { stdout } = await ok(toolPath('oauth2-proxy'), ['--version']);
    expect(stdout).toMatch(new RegExp(`^oauth2-proxy ${tag.replace(/\./g, '\\.')} \\(built with go`));
  });
});

describe('*.localhost', () => {
  it('resolves to loopback through the system resolver', async () => {
    // libnss-myhostname answers with the canonical name "localhost" and ::1 before 127.0.0.1.
    const { stdout } = await ok('getent', ['hosts', 'acme.localhost']);
    expect(stdout).toMatch(/^(127\.\d+\.\d+\.\d+|::1)\s+\S*localhost\b/);

    const addresses = await lookup('acme.localhost', { all: true });
    expect(addresses.map((a) => a.address)).toContain('127.0.0.1');
    for (const { address } of addresses) expect(address).toMatch(/^(127\.\d+\.\d+\.\d+|::1)$/);
  });

  it('reaches a server bound to 127.0.0.1 from Node by its tenant host name', async () => {
    // ::1 comes first, so this relies on Node's happy-eyeballs fallback to 127.0.0.1.
    const server = createServer((req, res) => res.end(`host=${req.headers.host ?? ''}`));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as AddressInfo;
    try {
      const response = await fetch(`http://acme.localhost:${port}/`);
      expect(await response.text()).toBe(`host=acme.localhost:${port}`);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });

  it('loads in Chromium from a local server', async () => {
    const server: Server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>tenant page</title><p id="host">${req.headers.host ?? ''}</p>`);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as AddressInfo;
    const browser = await chromium.launch({
      executablePath: toolPath('chromium'),
      headless: true,
      // The flags every browser test uses: proven here to load a *.localhost page.
      args: [...CHROMIUM_FLAGS],
    });
    try {
      const page = await browser.newPage();
      const response = await page.goto(`http://acme.localhost:${port}/`);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('tenant page');
      expect(await page.locator('#host').innerText()).toBe(`acme.localhost:${port}`);
    } finally {
      await browser.close();
      await new Promise<void>((done) => server.close(() => done()));
    }
  });
});
