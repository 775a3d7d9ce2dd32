import { resolve } from 'node:path';
import { BOOTSTRAP_CREDENTIALS_FILE, DATABASE_URL_ENV, LOGIN_DEFAULTS, SCIM_DEFAULTS, StartupError, startServer, type LoginOptions } from './index.ts';
import { EXIT, UsageError, type Command } from '../command/io.ts';
import { parseCommandArgs } from '../command/args.ts';

const USAGE =
  'usage: idforge serve --data-dir <dir> [--database <postgres-url>] [--port <n>] [--base-domain <domain>] [--scheme http|https] [--host <addr>] [--public-port <n>] [--trusted-proxies <n>] [--key-alg RS256|ES256]\n' +
  '                     [--smtp-url <url> | --mail-outbox <dir>] [--mail-from <addr>] [--otp-lifetime <s>] [--otp-attempts <n>]\n' +
  '                     [--lockout-threshold <n>] [--lockout-seconds <s>] [--failure-window <s>] [--address-lockout-threshold <n>] [--backoff-ms <ms>]\n' +
  '                     [--scim-rate <n>] [--scim-burst <n>]';

const HELP = `${USAGE}

Runs the authorization server until SIGINT or SIGTERM.

  --data-dir     master key (unless IDFORGE_MASTER_KEY is set), the bootstrap admin credentials
                 (${BOOTSTRAP_CREDENTIALS_FILE}, mode 0600) and, without --database, the SQLite
                 database. Created if missing.
  --database     PostgreSQL instead of SQLite: postgres://user:password@host:port/database
                 (default \$${DATABASE_URL_ENV}); replicas may share it; the schema is migrated at start
  --port         port to listen on (default 9080; 0 picks a free one)
  --base-domain  tenants are served at <tenant>.<base-domain>, the admin API at the base domain
                 itself (default localhost)
  --scheme       scheme of public URLs (default http); with https, put a TLS-terminating proxy in
                 front: the server trusts its X-Forwarded-* headers
  --host         address to bind (default 127.0.0.1)
  --public-port  port in public URLs when a proxy listens on another port than the server
  --trusted-proxies  proxies in front whose X-Forwarded-For entries are believed (default 1 with
                 https, 0 with http); the client address is read that many hops from the right
  --key-alg      signing algorithm for new tenants' keys (default RS256)

Sign-in (see src/server/README.md, "Login methods"):
  --smtp-url     send emailed sign-in codes by SMTP, e.g. smtps://user:pass@mail.example.com
  --mail-outbox  without --smtp-url, write each message as a .eml file here
                 (default <data-dir>/outbox)
  --mail-from    sender address (default idforge <no-reply@<base-domain>>)
  --otp-lifetime seconds an emailed code stays valid (default ${LOGIN_DEFAULTS.otpLifetimeSeconds})
  --otp-attempts wrong entries that void an emailed code (default ${LOGIN_DEFAULTS.otpMaxAttempts})
  --lockout-threshold          failed attempts that lock an account (default ${LOGIN_DEFAULTS.lockoutThreshold})
  --lockout-seconds            how long a lockout lasts (default ${LOGIN_DEFAULTS.lockoutSeconds})
  --failure-window             seconds a failure counts towards backoff and lockout (default ${LOGIN_DEFAULTS.failureWindowSeconds})
  --address-lockout-threshold  failed attempts that lock a client address (default ${LOGIN_DEFAULTS.addressLockoutThreshold})
  --backoff-ms   first backoff delay after repeated failures, doubling (default ${LOGIN_DEFAULTS.backoffBaseMs}; 0 = off)

SCIM (<tenant host>/scim/v2, see src/server/README.md, "SCIM"); the sign-in's guessing defence guards its tokens too:
  --scim-rate    requests per second one SCIM token may make, sustained (default ${SCIM_DEFAULTS.requestsPerSecond}); beyond it, 429 with Retry-After
  --scim-burst   requests a SCIM token may make at once before the rate applies (default ${SCIM_DEFAULTS.burst})
`;

function count(value: string | undefined, flag: string, allowZero = false): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) throw new UsageError(`${flag} must be a ${allowZero ? 'non-negative' : 'positive'} number, got '${value}'\n${USAGE}`);
  return n;
}

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
      database: { type: 'string' },
      port: { type: 'string', short: 'p' },
      'base-domain': { type: 'string' },
      scheme: { type: 'string' },
      host: { type: 'string' },
      'public-port': { type: 'string' },
      'trusted-proxies': { type: 'string' },
      'key-alg': { type: 'string' },
      'smtp-url': { type: 'string' },
      'mail-outbox': { type: 'string' },
      'mail-from': { type: 'string' },
      'otp-lifetime': { type: 'string' },
      'otp-attempts': { type: 'string' },
      'lockout-threshold': { type: 'string' },
      'lockout-seconds': { type: 'string' },
      'failure-window': { type: 'string' },
      'address-lockout-threshold': { type: 'string' },
      'backoff-ms': { type: 'string' },
      'scim-rate': { type: 'string' },
      'scim-burst': { type: 'string' },
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
  if (values['smtp-url'] !== undefined && values['mail-outbox'] !== undefined) throw new UsageError(`--smtp-url and --mail-outbox exclude each other\n${USAGE}`);
  const login: LoginOptions = {
    ...(values['smtp-url'] === undefined ? {} : { smtpUrl: values['smtp-url'] }),
    ...(values['mail-outbox'] === undefined ? {} : { mailOutbox: resolve(io.cwd, values['mail-outbox']) }),
    ...(values['mail-from'] === undefined ? {} : { mailFrom: values['mail-from'] }),
    otpLifetimeSeconds: count(values['otp-lifetime'], '--otp-lifetime'),
    otpMaxAttempts: count(values['otp-attempts'], '--otp-attempts'),
    lockoutThreshold: count(values['lockout-threshold'], '--lockout-threshold'),
    lockoutSeconds: count(values['lockout-seconds'], '--lockout-seconds'),
    failureWindowSeconds: count(values['failure-window'], '--failure-window'),
    addressLockoutThreshold: count(values['address-lockout-threshold'], '--address-lockout-threshold'),
    backoffBaseMs: count(values['backoff-ms'], '--backoff-ms', true),
  };

  let server;
  try {
    server = await startServer({
      dataDir,
      ...(values.database === undefined ? {} : { database: values.database }),
      port: port(values.port, '--port', 9080),
      baseDomain: values['base-domain'] ?? 'localhost',
      scheme,
      host: values.host ?? '127.0.0.1',
      ...(values['public-port'] === undefined ? {} : { publicPort: port(values['public-port'], '--public-port', 0) }),
      ...(values['trusted-proxies'] === undefined ? {} : { trustedProxies: count(values['trusted-proxies'], '--trusted-proxies', true) }),
      keyAlg,
      login,
      scim: { requestsPerSecond: count(values['scim-rate'], '--scim-rate'), burst: count(values['scim-burst'], '--scim-burst') },
      env: io.env,
      log: (line) => io.stderr(`idforge serve: ${line}\n`),
    });
  } catch (err) {
    // The operator's mistake (wrong master key, port in use): say it plainly, exit 1.
    if (err instanceof StartupError) {
      io.stderr(`idforge serve: ${err.message}\n`);
      return EXIT.invalid;
    }
    throw err;
  }
  io.stdout(
    `idforge server listening on ${server.url}\n` +
      `  admin API:   ${server.adminUrl} (OpenAPI at ${server.adminUrl}/openapi.json)\n` +
      `  tenants:     ${server.issuer('<tenant>')}\n` +
      `  admin creds: ${resolve(dataDir, BOOTSTRAP_CREDENTIALS_FILE)}\n` +
      `  storage:     ${server.storage}\n`,
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
