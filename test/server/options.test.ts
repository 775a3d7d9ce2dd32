/**
 * `idforge serve`'s options are one table (src/server/options.ts): the parser, --help, the usage
 * line, the in-process defaults and the README's option list all come from it. This keeps the
 * README's copy current and shows the parser refusing what it should.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/command/io.ts';
import { DEFAULTS, SERVE_OPTIONS, parseServeValues, serveHelp, serveOptionsMarkdown, serveUsage } from '../../src/server/options.ts';
import { run } from '../../src/server/serve-command.ts';

const README = resolve(import.meta.dirname, '../../src/server/README.md');

describe('serve options table', () => {
  it("the README's option list is the table's (regenerate: the markdown of serveOptionsMarkdown() between the serve-options markers)", () => {
    const text = readFileSync(README, 'utf8');
    const begin = text.indexOf('\n', text.indexOf('<!-- serve-options:begin')) + 1;
    const end = text.indexOf('<!-- serve-options:end -->');
    expect(text.slice(begin, end).trimEnd()).toBe(serveOptionsMarkdown());
  });

  it('--help and the usage line name every option, with its default and environment variable', () => {
    const help = serveHelp();
    for (const r of SERVE_OPTIONS) {
      expect(help).toContain(`  ${r.flag}`);
      expect(serveUsage()).toContain(r.flag);
      if (r.env !== undefined) expect(help).toContain(`env ${r.env}`);
    }
    expect(help).toContain('default the number of CPUs');
  });

  it('in-process defaults are the table’s (except the port: in-process hosts want a free one)', () => {
    const parsed = parseServeValues({ 'data-dir': 'd' }, '/srv');
    expect(parsed).toMatchObject({
      dataDir: '/srv/d', port: 9080, baseDomain: DEFAULTS.baseDomain, host: DEFAULTS.host, scheme: DEFAULTS.scheme, keyAlg: DEFAULTS.keyAlg,
      providerCacheSize: DEFAULTS.providerCacheSize, shutdownTimeoutSeconds: DEFAULTS.shutdownTimeoutSeconds, accessLog: false,
    });
    expect(parsed.workers).toBeGreaterThanOrEqual(1);
    expect(DEFAULTS.port).toBe(0);
  });

  it('parses every kind of value, paths against the working directory, login settings into login', () => {
    expect(parseServeValues({
      'data-dir': 'data', 'master-key-file': '../k', port: '0', workers: '3', 'access-log': true, 'key-alg': 'ES256', 'backoff-ms': '0', 'lockout-threshold': '7', 'mail-outbox': 'out',
    }, '/srv/app')).toMatchObject({
      dataDir: '/srv/app/data', masterKeyFile: '/srv/k', port: 0, workers: 3, accessLog: true, keyAlg: 'ES256',
      login: { backoffBaseMs: 0, lockoutThreshold: 7, mailOutbox: '/srv/app/out' },
    });
  });

  it.each([
    [{}, '--data-dir is required'],
    [{ 'data-dir': 'd', port: '70000' }, "--port must be a port number, got '70000'"],
    [{ 'data-dir': 'd', workers: '0' }, "--workers must be a positive number, got '0'"],
    [{ 'data-dir': 'd', 'backoff-ms': '-1' }, "--backoff-ms must be a non-negative number, got '-1'"],
    [{ 'data-dir': 'd', scheme: 'ftp' }, '--scheme must be http or https'],
    [{ 'data-dir': 'd', 'smtp-url': 'smtp://x', 'mail-outbox': 'o' }, '--smtp-url and --mail-outbox exclude each other'],
  ])('refuses %j: %s', (values, message) => {
    expect(() => parseServeValues(values, '/')).toThrow(UsageError);
    expect(() => parseServeValues(values, '/')).toThrow(message);
  });

  it('`idforge serve --help` prints the help; an unknown flag is a usage error', async () => {
    let out = '';
    const io = { stdout: (t: string) => { out += t; }, stderr: () => {}, env: {}, cwd: '/', color: false };
    expect(await run(['--help'], io)).toBe(0);
    expect(out).toBe(serveHelp());
    await expect(run(['--data-dir', 'd', '--no-such-flag'], io)).rejects.toThrow(UsageError);
  });
});
