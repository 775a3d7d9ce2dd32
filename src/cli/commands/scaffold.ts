/**
 * `idforge scaffold <tenant>/<app> --from <compiled dir> --out <dir>`: renders a runnable sample
 * client project for one application from its compiled artifacts and the template of its kind
 * (templates/<kind>). Rendering is a pure function of (template files, artifacts, sibling
 * artifacts); this module's command part is the only one that reads and writes files.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, type CliIo, type Command } from '../../command/io.ts';

export type ClientKind = 'web' | 'proxy' | 'spa' | 'api';

/** A file of a template, an artifact directory or a rendered project; paths use '/'. */
export interface ProjectFile {
  readonly path: string;
  readonly content: string;
  /** Unix permission bits: 0o755 for scripts, 0o600 for files holding secrets. */
  readonly mode: number;
}

/** One compiled application of the tenant: its name and its artifact files. */
export interface CompiledApp {
  readonly app: string;
  readonly files: readonly ProjectFile[];
}

export interface RenderInput {
  readonly tenant: string;
  readonly target: CompiledApp;
  /** The template of the target's kind. */
  readonly template: readonly ProjectFile[];
  /** Every compiled application of the same tenant (may include the target). */
  readonly siblings: readonly CompiledApp[];
}

export interface RenderedProject {
  readonly kind: ClientKind;
  readonly files: readonly ProjectFile[];
  /** What to run, for the closing message. */
  readonly start: string;
}

/** The artifact that identifies each kind; compile writes exactly one of these per application. */
const KIND_MARKERS: readonly (readonly [string, ClientKind])[] = [
  ['grant.json', 'web'],
  ['oauth2-proxy.env', 'proxy'],
  ['spa-config.json', 'spa'],
  ['api-config.json', 'api'],
];

/** Artifacts that hold client or cookie secrets: written owner-only and git-ignored by the templates. */
const SECRET_ARTIFACTS = new Set(['grant.json', 'session.env', 'oauth2-proxy.env']);

const START: Record<ClientKind, string> = {
  web: 'npm install && npm start',
  proxy: './run.sh',
  spa: 'npm install && npm start',
  api: 'npm install && npm start',
};

export function kindOf(app: CompiledApp): ClientKind | undefined {
  const names = new Set(app.files.map((f) => f.path));
  return KIND_MARKERS.find(([marker]) => names.has(marker))?.[1];
}

/** Placeholders in template text files. */
function substitute(text: string, tenant: string, app: string): string {
  const packageName = `${tenant}-${app}`.toLowerCase().replace(/[^a-z0-9._-]+/g, '-');
  return text
    .replaceAll('__PACKAGE_NAME__', packageName)
    .replaceAll('__TENANT__', tenant)
    .replaceAll('__APP__', app);
}

function fileOf(app: CompiledApp, name: string): string | undefined {
  return app.files.find((f) => f.path === name)?.content;
}

function parseJson(app: CompiledApp, name: string): Record<string, unknown> | undefined {
  const text = fileOf(app, name);
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function originOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

function audiencesOf(spa: Record<string, unknown>): readonly string[] {
  const aud = spa.audience;
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

/**
 * Settings a project needs that are not identity configuration and so are not compiled
 * artifacts, derived from the tenant's other applications: which browser origins may call an API
 * (the SPAs whose audience names it), and where an SPA finds its API.
 */
function derivedFiles(kind: ClientKind, target: CompiledApp, siblings: readonly CompiledApp[]): ProjectFile[] {
  const others = siblings.filter((s) => s.app !== target.app);
  if (kind === 'api') {
    const audience = parseJson(target, 'api-config.json')?.audience;
    const origins = others
      .map((s) => parseJson(s, 'spa-config.json'))
      .filter((spa): spa is Record<string, unknown> => spa !== undefined && audiencesOf(spa).includes(String(audience)))
      .map((spa) => originOf(spa.redirect_uri))
      .filter((o): o is string => o !== undefined);
    const list = [...new Set(origins)].sort().join(',');
    const text =
      '# Browser origins allowed to call this API (CORS), comma-separated: the single-page apps\n' +
      '# whose audience names this API. Bearer tokens travel in a header, so no credentials mode.\n' +
      `CORS_ORIGINS=${list}\n`;
    return [{ path: 'api.env', content: text, mode: 0o644 }];
  }
  if (kind === 'spa') {
    const spa = parseJson(target, 'spa-config.json') ?? {};
    const wanted = audiencesOf(spa)[0];
    const api = others
      .map((s) => parseJson(s, 'api-config.json'))
      .find((cfg) => cfg !== undefined && wanted !== undefined && cfg.audience === wanted);
    const apiUrl = originOf(api?.origin) ?? '';
    const text =
      '# Where the API named by the first audience listens; the page lets you change it.\n' +
      `API_URL=${apiUrl}\n`;
    return [{ path: 'spa.env', content: text, mode: 0o644 }];
  }
  return [];
}

/** Pure: template + artifacts → the project's files, sorted by path. */
export function renderProject(input: RenderInput): RenderedProject {
  const { tenant, target } = input;
  const kind = kindOf(target);
  if (kind === undefined) {
    throw new Error(
      `${tenant}/${target.app}: no client artifacts found (expected one of ${KIND_MARKERS.map(([m]) => m).join(', ')})`,
    );
  }
  const byPath = new Map<string, ProjectFile>();
  for (const file of input.template) {
    // Kept as `gitignore` in the repository so it does not apply to the template folder itself.
    const path = file.path === 'gitignore' ? '.gitignore' : file.path;
    byPath.set(path, { path, content: substitute(file.content, tenant, target.app), mode: file.mode });
  }
  for (const file of target.files) {
    byPath.set(file.path, { path: file.path, content: file.content, mode: SECRET_ARTIFACTS.has(file.path) ? 0o600 : 0o644 });
  }
  for (const file of derivedFiles(kind, target, input.siblings)) byPath.set(file.path, file);
  const files = [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { kind, files, start: START[kind] };
}

// ---------------------------------------------------------------------------------------------
// The command: everything below touches the filesystem.

const TEMPLATES_DIR = fileURLToPath(new URL('../../../templates/', import.meta.url));

/** Never copied from a template folder: installs, builds and the template's own tests. */
const SKIP = /(^|\/)(node_modules|dist|\.DS_Store)(\/|$)|\.test\.[cm]?[jt]s$/;

function readTree(root: string, mode?: number): ProjectFile[] {
  const out: ProjectFile[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const path = relative(root, full).split(sep).join('/');
      if (SKIP.test(path)) continue;
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push({ path, content: readFileSync(full, 'utf8'), mode: mode ?? (statSync(full).mode & 0o777) });
    }
  };
  walk(root);
  return out;
}

/** Every application of a tenant in a compiled directory: DIR/<tenant>/<app>/<artifact files>. */
function readCompiledTenant(from: string, tenant: string): CompiledApp[] {
  const dir = join(from, tenant);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => ({ app: e.name, files: readTree(join(dir, e.name), 0o644) }))
    .sort((a, b) => (a.app < b.app ? -1 : 1));
}

interface Args {
  readonly target: { tenant: string; app: string };
  readonly from?: string;
  readonly model?: string;
  readonly state?: string;
  readonly out: string;
  readonly force: boolean;
}

const HELP = `usage: idforge scaffold <tenant>/<app> (--from <compiled dir> | --model <model file> [--state <file>]) --out <dir> [--force]

Renders a runnable sample client for one application from its compiled configuration:
  web    express + express-session + grant      npm install && npm start
  proxy  oauth2-proxy + an upstream echo app     ./run.sh (or docker compose up)
  spa    oidc-client-ts single-page app          npm install && npm start
  api    express + jose resource server          npm install && npm start

options:
  --from DIR     a directory written by 'idforge compile --out DIR'
  --model FILE   compile this model in-process instead
  --state FILE   with --model: the state file holding the secrets (as for 'idforge compile')
  --out DIR      where to write the project (must be empty unless --force)
  --force        write into a non-empty directory, replacing files of the same name
`;

function parseArgs(argv: readonly string[]): Args | 'help' {
  let target: string | undefined;
  let from: string | undefined;
  let model: string | undefined;
  let out: string | undefined;
  let state: string | undefined;
  let force = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--help' || arg === '-h') return 'help';
    else if (arg === '--from') from = value();
    else if (arg.startsWith('--from=')) from = arg.slice('--from='.length);
    else if (arg === '--model') model = value();
    else if (arg.startsWith('--model=')) model = arg.slice('--model='.length);
    else if (arg === '--state') state = value();
    else if (arg.startsWith('--state=')) state = arg.slice('--state='.length);
    else if (arg === '--out') out = value();
    else if (arg.startsWith('--out=')) out = arg.slice('--out='.length);
    else if (arg === '--force') force = true;
    else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`);
    else if (target === undefined) target = arg;
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  const m = target === undefined ? null : /^([^/\s]+)\/([^/\s]+)$/.exec(target);
  if (m === null) throw new UsageError('give the application as <tenant>/<app>, e.g. acme/portal');
  if ((from === undefined) === (model === undefined)) throw new UsageError('give exactly one of --from <compiled dir> or --model <model file>');
  if (out === undefined) throw new UsageError('--out <dir> is required');
  if (state !== undefined && model === undefined) throw new UsageError('--state goes with --model (compile reads secrets from it)');
  return { target: { tenant: m[1] as string, app: m[2] as string }, from, model, state, out, force };
}

/**
 * Compiles a model in-process into a temporary tree shaped like `idforge compile --out`, so both
 * sources go through the same reader. Loaded lazily: only this path needs the generators.
 */
async function compileModel(modelPath: string, state: string | undefined, io: CliIo): Promise<string | { problems: string }> {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const out = mkdtempSync(join(tmpdir(), 'idforge-scaffold-'));
  // Reuse the compile command itself, so scaffold and compile can never disagree on layout.
  const compile = await import('./compile.ts');
  let errors = '';
  const stateArgs = state === undefined ? [] : ['--state', state];
  let code: number = EXIT.invalid;
  try {
    code = await compile.run([modelPath, '--out', out, ...stateArgs], { ...io, stdout: () => undefined, stderr: (t) => (errors += t) });
    return code === EXIT.ok ? out : { problems: errors };
  } finally {
    // Only a tree handed back is the caller's to remove; a failed compile's is removed here.
    if (code !== EXIT.ok) rmSync(out, { recursive: true, force: true });
  }
}

export const run: Command = async (argv, io) => {
  const args = parseArgs(argv);
  if (args === 'help') {
    io.stdout(HELP);
    return EXIT.ok;
  }
  const { tenant, app } = args.target;
  let from: string;
  let cleanup = (): void => undefined;
  if (args.model !== undefined) {
    const compiled = await compileModel(resolve(io.cwd, args.model), args.state === undefined ? undefined : resolve(io.cwd, args.state), io);
    if (typeof compiled !== 'string') {
      io.stderr(compiled.problems);
      return EXIT.invalid;
    }
    from = compiled;
    // The temporary tree holds client secrets: do not leave it behind.
    cleanup = () => rmSync(compiled, { recursive: true, force: true });
  } else {
    from = resolve(io.cwd, args.from as string);
    if (!existsSync(from)) {
      io.stderr(`idforge scaffold: ${args.from}: no such directory (write it with 'idforge compile <model> --out ${args.from}')\n`);
      return EXIT.invalid;
    }
  }

  try {
    return scaffold(io, args, from);
  } finally {
    cleanup();
  }
};

function scaffold(io: CliIo, args: Args, from: string): number {
  const { tenant, app } = args.target;
  const siblings = readCompiledTenant(from, tenant);
  const target = siblings.find((s) => s.app === app);
  if (target === undefined) {
    const known = siblings.map((s) => `${tenant}/${s.app}`);
    io.stderr(
      `idforge scaffold: ${tenant}/${app}: not in the compiled output` +
        (known.length > 0 ? `; applications of ${tenant}: ${known.join(', ')}\n` : `; no applications of tenant '${tenant}' there\n`),
    );
    return EXIT.invalid;
  }
  const kind = kindOf(target);
  if (kind === undefined) {
    io.stderr(`idforge scaffold: ${tenant}/${app}: no client configuration (expected one of ${KIND_MARKERS.map(([m]) => m).join(', ')})\n`);
    return EXIT.invalid;
  }

  const out = resolve(io.cwd, args.out);
  if (existsSync(out) && readdirSync(out).length > 0 && !args.force) {
    io.stderr(`idforge scaffold: ${args.out} is not empty; choose another --out or pass --force\n`);
    return EXIT.invalid;
  }

  const project = renderProject({ tenant, target, template: readTree(join(TEMPLATES_DIR, kind)), siblings });
  for (const file of project.files) {
    const dest = join(out, ...file.path.split('/'));
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, file.content, { mode: file.mode });
    chmodSync(dest, file.mode); // writeFileSync's mode applies only to new files (and the umask)
  }
  io.stdout(
    `Scaffolded ${tenant}/${app} (${kind}) into ${args.out}: ${project.files.length} file${project.files.length === 1 ? '' : 's'}.\n` +
      `Next: cd ${args.out} && ${project.start}\n`,
  );
  return EXIT.ok;
}
