import { resolve } from 'node:path';
import { BOOTSTRAP_CREDENTIALS_FILE, startServer } from '../../server/index.ts';
import { EXIT, UsageError, type Command } from '../_io.ts';
import { parseCommandArgs } from '../_args.ts';

const USAGE =
  'usage: idforge serve --data-dir <dir> [--port <n>] [--base-domain <domain>] [--scheme http|https] [--host <addr>] [--public-port <n>] [--key-alg RS256|ES256]';

const HELP = `${USAGE}

Runs the authorization server until SIGINT or SIGTERM.

  --data-dir     SQLite database, master key (unless IDFORGE_MASTER_KEY is set) and the bootstrap
                 admin credentials (${BOOTSTRAP_CREDENTIALS_FILE}, mode 0600). Created if missing.
  --port         port to listen on (default 9080; 0 picks a free one)
  --base-domain  tenants are served at <tenant>.<base-domain>, the admin API at the base domain
                 itself (default localhost)
  --scheme       scheme of public URLs (default http); with https, put a TLS-terminating proxy in
                 front: the server trusts its X-Forwarded-* headers
  --host         address to bind (default 127.0.0.1)
  --public-port  port in public URLs when a proxy listens on another port than the server
  --key-alg      signing algorithm for new tenants' keys (default RS256)
`;

function port(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flag} must be a port number, got '${value}'\n${USAGE}`);
  return n;
}

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(
    argv,
    {
      'data-dir': { type: 'string' },
      port: { type: 'string', short: 'p' },
      'base-domain': { type: 'string' },
      scheme: { type: 'string' },
      host: { type: 'string' },
      'public-port': { type: 'string' },
      'key-alg': { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    io.stdout(HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'\n${USAGE}`);
  if (values['data-dir'] === undefined) throw new UsageError(`--data-dir is required\n${USAGE}`);
  const scheme = values.scheme ?? 'http';
  if (scheme !== 'http' && scheme !== 'https') throw new UsageError(`--scheme must be http or https\n${USAGE}`);
  const keyAlg = values['key-alg'] ?? 'RS256';
  if (keyAlg !== 'RS256' && keyAlg !== 'ES256') throw new UsageError(`--key-alg must be RS256 or ES256\n${USAGE}`);
  const dataDir = resolve(io.cwd, values['data-dir']);

  const server = await startServer({
    dataDir,
    port: port(values.port, '--port', 9080),
    baseDomain: values['base-domain'] ?? 'localhost',
    scheme,
    host: values.host ?? '127.0.0.1',
    ...(values['public-port'] === undefined ? {} : { publicPort: port(values['public-port'], '--public-port', 0) }),
    keyAlg,
    env: io.env,
    log: (line) => io.stderr(`idforge serve: ${line}\n`),
  });
  io.stdout(
    `idforge server listening on ${server.url}\n` +
      `  admin API:   ${server.adminUrl} (OpenAPI at ${server.adminUrl}/openapi.json)\n` +
      `  tenants:     ${server.issuer('<tenant>')}\n` +
      `  admin creds: ${resolve(dataDir, BOOTSTRAP_CREDENTIALS_FILE)}\n`,
  );

  // Run until asked to stop; then finish in-flight work and close the database cleanly.
  const signal = await new Promise<NodeJS.Signals>((done) => {
    const onSignal = (s: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      done(s);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  io.stderr(`idforge serve: ${signal} received, shutting down\n`);
  await server.close();
  return EXIT.ok;
};
