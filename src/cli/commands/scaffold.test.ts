import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../command/io.ts';
import { renderProject, run } from './scaffold.ts';

/** A compiled tree in the format `idforge compile --out` writes, for tenant acme. */
function writeCompiled(root: string): void {
  const files: Record<string, string> = {
    'plan.json': '{}\n',
    'acme/portal/grant.json': JSON.stringify({
      defaults: { origin: 'http://portal.localhost:3000', prefix: '/connect', transport: 'session', state: true },
      acme: {
        authorize_url: 'http://[subdomain].localhost:8080/oauth2/auth',
        access_url: 'http://[subdomain].localhost:8080/oauth2/token',
        profile_url: 'http://[subdomain].localhost:8080/oauth2/me',
        oauth: 2,
        subdomain: 'acme',
        key: 'portal-id',
        secret: 'portal-secret',
        scope: ['openid', 'profile', 'email'],
        scope_delimiter: ' ',
        callback: '/hello',
        response: ['tokens', 'raw', 'profile'],
      },
    }),
    'acme/portal/session.env': 'SESSION_SECRET=s3cr3t\n',
    'acme/wiki/oauth2-proxy.env': 'OAUTH2_PROXY_PROVIDER=oidc\nOAUTH2_PROXY_UPSTREAMS=http://127.0.0.1:4181\n',
    'acme/wiki/docker-compose.yml': 'services: {}\n',
    'acme/dashboard/spa-config.json': JSON.stringify({
      wellknown_endpoint: 'http://acme.localhost:8080/oauth2/.well-known/openid-configuration',
      client_id: 'dashboard-id',
      audience: ['https://orders.acme.example'],
      scope: 'openid profile email offline admin',
      redirect_uri: 'http://dashboard.localhost:5173',
      cache_type: 'session_storage',
    }),
    'acme/orders-api/api-config.json': JSON.stringify({
      issuer: 'http://acme.localhost:8080/oauth2/',
      jwks_uri: 'http://acme.localhost:8080/oauth2/.well-known/jwks.json',
      audience: 'https://orders.acme.example',
      origin: 'http://orders.localhost:8000',
      public_routes: ['/'],
      routes: [
        { path: '/whoami', scopes: [] },
        { path: '/admin', scopes: ['admin'] },
      ],
    }),
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

function bufferIo(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    env: {},
    cwd,
    color: false,
    out: () => out,
    err: () => err,
  };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'scaffold-test-'));
  writeCompiled(join(dir, 'compiled'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const scaffold = async (app: string, ...extra: string[]) => {
  const io = bufferIo(dir);
  const code = await run([`acme/${app}`, '--from', 'compiled', '--out', app, ...extra], io);
  return { code, io, files: code === 0 ? readdirSync(join(dir, app), { recursive: true }).map(String).sort() : [] };
};
const read = (...p: string[]) => readFileSync(join(dir, ...p), 'utf8');
const mode = (...p: string[]) => statSync(join(dir, ...p)).mode & 0o777;

describe('idforge scaffold', () => {
  it('renders the web app with its grant config and session secret, secrets owner-only', async () => {
    const { code, files, io } = await scaffold('portal');
    expect(code).toBe(0);
    expect(files).toEqual(['.gitignore', 'grant.json', 'package.json', 'server.js', 'session.env', ...(files.includes('README.md') ? ['README.md'] : [])].sort());
    expect(JSON.parse(read('portal', 'grant.json')).acme.key).toBe('portal-id');
    expect(read('portal', 'session.env')).toBe('SESSION_SECRET=s3cr3t\n');
    expect(mode('portal', 'session.env')).toBe(0o600);
    expect(mode('portal', 'grant.json')).toBe(0o600);
    expect(JSON.parse(read('portal', 'package.json')).name).toBe('acme-portal');
    expect(read('portal', '.gitignore')).toContain('session.env');
    expect(io.out()).toContain('npm install && npm start');
  });

  it('renders the proxy with an executable run script, the env file and the compose file', async () => {
    const { code, files } = await scaffold('wiki');
    expect(code).toBe(0);
    expect(files).toEqual(expect.arrayContaining(['docker-compose.yml', 'oauth2-proxy.env', 'run.sh', 'upstream.js']));
    expect(mode('wiki', 'run.sh') & 0o100).toBe(0o100);
    expect(mode('wiki', 'oauth2-proxy.env')).toBe(0o600);
  });

  it('renders the SPA and points it at the API named by its audience', async () => {
    const { code, files } = await scaffold('dashboard');
    expect(code).toBe(0);
    expect(files).toEqual(expect.arrayContaining(['spa-config.json', 'spa.env', 'build.js', 'serve.js', 'src/main.js', 'src/index.html']));
    expect(read('dashboard', 'spa.env')).toContain('API_URL=http://orders.localhost:8000\n');
  });

  it('renders the API and allows CORS from the SPAs whose audience names it', async () => {
    const { code } = await scaffold('orders-api');
    expect(code).toBe(0);
    expect(read('orders-api', 'api.env')).toContain('CORS_ORIGINS=http://dashboard.localhost:5173\n');
    expect(JSON.parse(read('orders-api', 'api-config.json')).audience).toBe('https://orders.acme.example');
  });

  it('names the known applications when the target is not compiled', async () => {
    const { code, io } = await scaffold('nope');
    expect(code).toBe(1);
    expect(io.err()).toBe(
      "idforge scaffold: acme/nope: not in the compiled output; applications of acme: acme/dashboard, acme/orders-api, acme/portal, acme/wiki\n",
    );
  });

  it('refuses a non-empty output directory unless forced', async () => {
    mkdirSync(join(dir, 'portal'));
    writeFileSync(join(dir, 'portal', 'keep.txt'), 'x');
    expect((await scaffold('portal')).code).toBe(1);
    expect((await scaffold('portal', '--force')).code).toBe(0);
    expect(read('portal', 'keep.txt')).toBe('x');
  });

  it('rejects usage mistakes as usage errors', async () => {
    await expect(run(['acme', '--from', 'x', '--out', 'y'], bufferIo(dir))).rejects.toThrow('<tenant>/<app>');
    await expect(run(['acme/portal', '--out', 'y'], bufferIo(dir))).rejects.toThrow('exactly one of --from');
    await expect(run(['acme/portal', '--from', 'x'], bufferIo(dir))).rejects.toThrow('--out');
  });
});

describe('idforge scaffold --model', () => {
  const example = join(import.meta.dirname, '..', '..', '..', 'examples', 'acme.yaml');

  it('compiles the example model in-process and renders every application of it', async () => {
    const io = bufferIo(dir);
    const state = ['--state', join(dir, 'state.json')];
    for (const app of ['portal', 'wiki', 'dashboard', 'orders-api']) {
      expect(await run([`acme/${app}`, '--model', example, ...state, '--out', `m-${app}`], io)).toBe(0);
    }
    const grant = JSON.parse(read('m-portal', 'grant.json'));
    expect(grant.defaults.origin).toBe('http://portal.localhost:3000');
    expect(grant.acme.callback).toBe('/hello');
    expect(read('m-wiki', 'oauth2-proxy.env')).toContain('OAUTH2_PROXY_REDIRECT_URL=http://wiki.localhost:4180/oauth2/callback');
    expect(read('m-dashboard', 'spa.env')).toContain('API_URL=http://orders-api.localhost:4000\n');
    expect(read('m-orders-api', 'api.env')).toContain('CORS_ORIGINS=http://dashboard.localhost:5173\n');
    // Secrets come from the one state file, so two renders agree with each other (and with apply).
    expect(await run(['acme/portal', '--model', example, ...state, '--out', 'm-portal-2'], io)).toBe(0);
    expect(read('m-portal-2', 'grant.json')).toBe(read('m-portal', 'grant.json'));
  });

  it('reports model problems from compile and writes nothing, not even a temporary tree', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'tenants: 3\n');
    const io = bufferIo(dir);
    // Where scaffold compiles to (os.tmpdir() reads TMPDIR): a folder of this test's own.
    const temp = join(dir, 'tmp');
    mkdirSync(temp);
    const before = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    try {
      expect(await run(['acme/portal', '--model', 'bad.yaml', '--out', 'x'], io)).toBe(1);
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
    expect(io.err()).not.toBe('');
    expect(() => readdirSync(join(dir, 'x'))).toThrow();
    expect(readdirSync(temp)).toEqual([]);
  });
});

describe('renderProject', () => {
  it('is deterministic and sorted by path', () => {
    const input = {
      tenant: 'acme',
      target: { app: 'orders-api', files: [{ path: 'api-config.json', content: '{"audience":"a"}', mode: 0o644 }] },
      template: [
        { path: 'server.js', content: '// __PACKAGE_NAME__', mode: 0o644 },
        { path: 'gitignore', content: 'node_modules/\n', mode: 0o644 },
      ],
      siblings: [],
    };
    const a = renderProject(input);
    expect(a).toEqual(renderProject(input));
    expect(a.files.map((f) => f.path)).toEqual(['.gitignore', 'api-config.json', 'api.env', 'server.js']);
    expect(a.files.find((f) => f.path === 'server.js')?.content).toBe('// acme-orders-api');
  });
});
