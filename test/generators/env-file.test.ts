/**
 * Generated env files are read unchanged by the four readers people hand them to. Each reader
 * below follows its own documentation, quoted beside it, not idforge's writer: a file passes when
 * all four read back exactly the values the generator meant.
 */
import { describe, expect, it } from 'vitest';
import { compileArtifacts } from '../../src/generators/index.ts';
import { envFile } from '../../src/generators/_serialize.ts';
import { validateSources } from '../../src/schema/index.ts';
import { fixedSecrets, loadExample } from '../support/model.ts';

type Reader = (text: string) => Map<string, string>;

const lines = (text: string) => text.replace(/\n$/, '').split('\n');

/**
 * `docker run --env-file` (docs.docker.com/reference/cli/docker/container/run/#env): "This file
 * should use the syntax <variable>=value ... and # for comments. Lines beginning with # are
 * treated as line comments and are ignored, whereas a # appearing anywhere else in a line is
 * treated as part of the variable value." The value is the rest of the line, quotes included.
 */
const docker: Reader = (text) => {
  const out = new Map<string, string>();
  for (const raw of lines(text)) {
    const line = raw.trimStart();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) out.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return out;
};

/**
 * `kubectl create configmap --from-env-file` (kubernetes.io, "Create ConfigMaps from files"):
 * "Each line in an env file has to be in VAR=VAL format. Lines beginning with # (i.e. comments)
 * are ignored. Blank lines are ignored. There is no special handling of quotation marks (i.e.
 * they will be part of the ConfigMap value)."
 */
const kubectl: Reader = (text) => {
  const out = new Map<string, string>();
  for (const line of lines(text)) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    out.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return out;
};

/**
 * Compose env files (docs.docker.com/compose/how-tos/environment-variables/variable-interpolation,
 * "Env file syntax"): lines beginning with # are comments, blank lines ignored; `VAR="VAL"` and
 * `VAR='VAL'` give VAL; "Unquoted and double-quoted values have interpolation applied"
 * (`$VAR`, `${VAR}`; nothing is set here, so they expand to ''); "Inline comments for unquoted
 * values must be preceded with a space"; single-quoted values are literal; `\` escapes quotes,
 * and `\n \r \t \\` are read in double-quoted values. Unquoted values are trimmed.
 */
const compose: Reader = (text) => {
  const out = new Map<string, string>();
  const interpolate = (v: string) => v.replace(/\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*/g, '');
  for (const line of lines(text)) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq).trim().replace(/^export\s+/, '');
    const rest = line.slice(eq + 1).trimStart();
    let value: string;
    if (rest.startsWith("'")) {
      value = /^'((?:\\'|[^'])*)'/.exec(rest)?.[1]?.replace(/\\'/g, "'") ?? rest;
    } else if (rest.startsWith('"')) {
      const inner = /^"((?:\\.|[^"\\])*)"/.exec(rest)?.[1] ?? rest;
      value = interpolate(inner.replace(/\\([nrt"\\])/g, (_m, c: string) => ({ n: '\n', r: '\r', t: '\t' })[c] ?? c));
    } else {
      value = interpolate(rest.replace(/\s#.*$/, '').trim());
    }
    out.set(key, value);
  }
  return out;
};

/**
 * systemd `EnvironmentFile=` (systemd.exec(5)): lines that are empty, have no "=", or start with
 * ";" or "#" are ignored. "An unquoted value after the "=" is parsed with the same
 * backslash-escape rules as unquoted text in a POSIX shell, but unlike in a shell, interior
 * whitespace is preserved and quotes after the first non-whitespace character are preserved.
 * Leading and trailing whitespace (space, tab, carriage return) is discarded." A '-quoted value is
 * verbatim; a "-quoted value reads \" \\ \` \$ escapes. Whitespace around the "=" is ignored.
 */
const systemd: Reader = (text) => {
  const out = new Map<string, string>();
  for (const line of lines(text)) {
    const t = line.trimStart();
    if (t === '' || t.startsWith('#') || t.startsWith(';') || !t.includes('=')) continue;
    const eq = t.indexOf('=');
    const key = t.slice(0, eq).trim();
    const rest = t.slice(eq + 1).replace(/^[ \t\r]+|[ \t\r]+$/g, '');
    let value: string;
    if (rest.startsWith("'")) value = rest.slice(1, rest.indexOf("'", 1));
    else if (rest.startsWith('"')) value = /^"((?:\\.|[^"\\])*)"/.exec(rest)![1]!.replace(/\\(["\\`$])/g, '$1');
    else value = rest.replace(/\\(.)/g, '$1');
    out.set(key, value);
  }
  return out;
};

const READERS = { docker, compose, systemd, kubectl } as const;

/** What each reader makes of `text`, by reader name. */
const readAll = (text: string) => Object.fromEntries(Object.entries(READERS).map(([name, read]) => [name, Object.fromEntries(read(text))]));

describe('generated env files', () => {
  it.each([['acme', ['examples/acme.yaml']], ['multi-tenant', ['examples/multi-tenant']]] as const)(
    'every env file of the %s example reads the same in Docker, Compose, systemd and kubectl',
    async (_name, paths) => {
      const model = await loadExample(...paths);
      const files = compileArtifacts(model, fixedSecrets(model)).artifacts.filter((a) => a.path.endsWith('.env'));
      expect(files.length).toBeGreaterThan(1);
      for (const f of files) {
        const read = readAll(f.content);
        for (const name of Object.keys(READERS)) expect(read[name], `${f.path} as ${name} reads it`).toEqual(read.docker);
        expect(Object.values(read.docker!).every((v) => !/^['"]/.test(v)), f.path).toBe(true);
      }
    },
  );

  it('oauth2-proxy.env gives oauth2-proxy the scopes and email domains themselves, not quoted words', async () => {
    const model = await loadExample('examples/acme.yaml');
    const env = compileArtifacts(model, fixedSecrets(model)).artifacts.find((a) => a.path === 'acme/wiki/oauth2-proxy.env')!;
    for (const read of Object.values(READERS)) {
      const vars = read(env.content);
      expect(vars.get('OAUTH2_PROXY_EMAIL_DOMAINS')).toBe('*');
      expect(vars.get('OAUTH2_PROXY_SCOPE')?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email', 'profile']));
      expect(vars.get('OAUTH2_PROXY_PROVIDER_DISPLAY_NAME')).toBe('Acme Corporation');
    }
  });

  // Values from the model (display names, upstreams, email domains) and what could be in them.
  const SAMPLES = [
    'plain', 'openid email profile', '*', 'Acme Corporation', 'http://127.0.0.1:4181', 'a=b', 'x,y', 'déjà vu', '😀', '',
    "Acme's", '"quoted"', '`cmd`', '$HOME', '${HOME}', 'cost: 5$', 'back\\slash', 'a # b', '#hash', 'a#b', ' lead', 'trail ',
    'tab\there', 'line\nbreak', 'cr\r', '\uFEFFbom', 'lone \uD800',
  ];

  it.each(SAMPLES)('writes %j so that all four read it back, or refuses it', (value) => {
    let text: string;
    try {
      text = envFile({ VALUE: value });
    } catch {
      return; // refused at compile time: nobody gets a file that some reader misreads
    }
    for (const [name, read] of Object.entries(READERS)) expect(read(text).get('VALUE'), name).toBe(value);
  });

  it('refuses exactly the values some reader would change, and writes every other sample', () => {
    const written = SAMPLES.filter((v) => {
      try {
        envFile({ VALUE: v });
        return true;
      } catch {
        return false;
      }
    });
    expect(written).toEqual(['plain', 'openid email profile', '*', 'Acme Corporation', 'http://127.0.0.1:4181', 'a=b', 'x,y', 'déjà vu', '😀', '']);
  });
});

describe('the model check for what goes into oauth2-proxy.env', () => {
  const model = (tenantName: string, emailDomain: string, upstream: string) => `
tenants:
  - name: acme
    displayName: ${JSON.stringify(tenantName)}
    applications:
      - name: wiki
        kind: proxy
        origin: http://wiki.localhost:4180
        upstream: ${JSON.stringify(upstream)}
        emailDomains: [${JSON.stringify(emailDomain)}]
`;

  it('names each field whose value cannot be written unquoted, before anything is compiled', () => {
    const r = validateSources([{ file: 'm.yaml', content: model("Acme's", 'a.example #x', 'http://127.0.0.1:4181/$x') }]);
    expect(r.ok).toBe(false);
    const problems = r.ok ? [] : r.problems.filter((p) => p.code === 'env-file-value').map((p) => [p.path.join('.'), p.message]);
    expect(problems).toEqual([
      ['tenants.0.displayName', expect.stringMatching(/^"Acme's" holds a quote.*oauth2-proxy\.env/)],
      ['tenants.0.applications.0.upstream', expect.stringMatching(/holds '\$', which Compose expands/)],
      ['tenants.0.applications.0.emailDomains.0', expect.stringMatching(/holds '#'/)],
    ]);
  });

  it('accepts ordinary values', () => {
    expect(validateSources([{ file: 'm.yaml', content: model('Acme Corporation', 'acme.example', 'http://127.0.0.1:4181') }]).ok).toBe(true);
  });
});
