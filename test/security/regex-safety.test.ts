/**
 * No regular expression that reads attacker input may take more than linear time. Every pattern in
 * src/ and bin/, and in the dependencies that parse what clients and model files send (YAML, the
 * routers and body parsers in front of every door, oidc-provider and koa, jose), is checked by
 * recheck (https://makenowjust-labs.github.io/recheck/), a ReDoS analyser from the registry. A
 * vulnerable pattern fails the test with its file, line and an attack string.
 *
 * In idforge's own code there are no exceptions. In a dependency, a vulnerable pattern passes only
 * when the audit table below says why no attacker input reaches it, and an entry whose pattern is
 * gone fails too, so the table never outlives what it excuses.
 */
import { globSync } from 'node:fs';
import { relative } from 'node:path';
import { check } from 'recheck';
import { describe, expect, it } from 'vitest';
import { regexesIn, type FoundRegex } from '../support/regexes.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Dependency files that read attacker input (requests, headers, cookies, tokens, model files). */
const DEPENDENCIES = [
  'node_modules/yaml/dist/**/*.js',
  'node_modules/router/**/*.js',
  'node_modules/path-to-regexp/dist/*.js',
  'node_modules/express/lib/**/*.js',
  'node_modules/body-parser/**/*.js',
  'node_modules/qs/lib/*.js',
  'node_modules/content-type/*.js',
  'node_modules/type-is/*.js',
  'node_modules/media-typer/*.js',
  'node_modules/cookie/dist/*.js',
  'node_modules/proxy-addr/*.js',
  'node_modules/forwarded/*.js',
  'node_modules/accepts/*.js',
  'node_modules/negotiator/**/*.js',
  'node_modules/oidc-provider/lib/**/*.js',
  'node_modules/koa/lib/*.js',
  'node_modules/jose/dist/webapi/**/*.js',
  'node_modules/openid-client/build/*.js',
  'node_modules/oauth4webapi/build/*.js',
];

/** Vulnerable patterns in dependencies that no attacker input reaches, each with the reason. */
const AUDITED: readonly { readonly file: string; readonly source: string; readonly why: string }[] = [
  {
    file: 'node_modules/yaml/dist/errors.js', source: '[\\n\\r]+$',
    why: 'prettifyError only, which the model loader turns off (prettyErrors: false, src/schema/_yaml-source.ts); ' +
      'measured with it on: 40,000 carriage returns on one line take 3 s (test/schema/fuzz.test.ts feeds such lines through the loader under a deadline)',
  },
  { file: 'node_modules/yaml/dist/schema/yaml-1.1/timestamp.js', source: '000000\\d*$', why: 'the YAML 1.1 timestamp tag, applied to a formatted number; the model loader reads YAML 1.2 (core schema), which has no timestamps' },
  { file: 'node_modules/yaml/dist/compose/resolve-flow-scalar.js', source: '[ \\t]+$', why: "a fallback for JavaScript engines without lookbehind (Safari < 16.4); on Node.js the linear lookbehind forms above it are used" },
  { file: 'node_modules/yaml/dist/compose/resolve-flow-scalar.js', source: '^[ \\t]+|[ \\t]+$', why: 'the same fallback, never taken on Node.js' },
  { file: 'node_modules/router/lib/layer.js', source: '\\/+$', why: "applied to route paths when routes are defined (idforge's own constant paths), never to a request" },
  { file: 'node_modules/router/lib/layer.js', source: '\\((?:\\?<(.*?)>)?(?!\\?)', why: 'applied to route paths when routes are defined, never to a request' },
  {
    file: 'node_modules/oauth4webapi/build/index.js', source: '^\\s+(.*)$',
    why: "parses WWW-Authenticate headers of the authorization server's responses to a client (the console's openid-client talks only to this server)",
  },
];

/** Deadline per pattern for the analyser; a pattern it cannot decide in time fails as "unknown". */
const TIMEOUT_MS = 10_000;

async function verdicts(files: readonly string[]): Promise<{ found: FoundRegex[]; bad: { at: FoundRegex; status: string; detail: string }[] }> {
  const found = files.flatMap((f) => regexesIn(f).literals);
  const bad: { at: FoundRegex; status: string; detail: string }[] = [];
  for (const r of found) {
    const d = await check(r.source, r.flags, { timeout: TIMEOUT_MS });
    if (d.status === 'safe') continue;
    const detail = d.status === 'vulnerable'
      ? `${d.complexity.summary}, e.g. ${JSON.stringify(d.attack.pattern)}`
      : `the analyser could not decide: ${JSON.stringify(d.error)}`;
    bad.push({ at: r, status: d.status, detail });
  }
  return { found, bad };
}

const where = (r: FoundRegex) => `${relative(ROOT, r.file)}:${r.line}:${r.col} /${r.source}/${r.flags}`;
const glob = (patterns: readonly string[]) => patterns.flatMap((p) => globSync(p, { cwd: ROOT }).map((f) => `${ROOT}${f}`)).sort();

describe('regular expressions that read attacker input run in linear time (recheck)', () => {
  it("every pattern of idforge's own code is safe", async () => {
    const files = glob(['src/**/*.ts', 'bin/*.js', 'templates/**/*.js', 'scripts/*.js']);
    const { found, bad } = await verdicts(files);
    console.log(`recheck: ${found.length} regular expressions in ${files.length} files of src/, bin/, templates/ and scripts/; ${bad.length} not safe`);
    expect(found.length).toBeGreaterThan(50);
    expect(bad.map((b) => `${where(b.at)}: ${b.status}, ${b.detail}`)).toEqual([]);
    // A pattern built from a variable cannot be analysed: there is none.
    expect(files.flatMap((f) => regexesIn(f).dynamic).map((d) => `${relative(ROOT, d.file)}:${d.line} ${d.text}`)).toEqual([]);
  }, 300_000);

  it('every pattern of the dependencies that parse attacker input is safe, or audited as unreachable', async () => {
    const files = glob(DEPENDENCIES);
    const { found, bad } = await verdicts(files);
    const audited = (b: { at: FoundRegex }) => AUDITED.some((a) => b.at.file === `${ROOT}${a.file}` && b.at.source === a.source);
    console.log(`recheck: ${found.length} regular expressions in ${files.length} dependency files; ${bad.length} vulnerable, all audited: ${bad.every(audited)}`);
    for (const b of bad) console.log(`  ${where(b.at)}: ${b.status}, ${b.detail}`);
    expect(files.length).toBeGreaterThan(40);
    expect(bad.filter((b) => !audited(b)).map((b) => `${where(b.at)}: ${b.status}, ${b.detail}`)).toEqual([]);
    // An audit entry without its pattern excuses nothing: remove it.
    expect(AUDITED.filter((a) => !bad.some((b) => b.at.file === `${ROOT}${a.file}` && b.at.source === a.source)).map((a) => `${a.file} /${a.source}/`)).toEqual([]);
  }, 300_000);

  it('the analyser finds a known-vulnerable pattern (the SCIM filter tokenizer of scim2-parse-filter 0.2.10)', async () => {
    // The pattern that froze the server, kept here as the analyser's own check: exponential.
    const d = await check('^(?:(\\s+)|(-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?(?![-\\w._:\\/\\)\\s]))|("(?:[^"\\\\]|\\\\.|\\n)*")|([[()]|]\\.?)|(\\w[-\\w._:\\/%]*))', '', { timeout: TIMEOUT_MS });
    expect(d.status).toBe('vulnerable');
    expect(d.status === 'vulnerable' ? d.complexity.type : undefined).toBe('exponential');
  }, 60_000);
});
