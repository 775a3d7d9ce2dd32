/**
 * `idforge serve`: the server's own command (bin/idforge.js composes it with the CLI, which never
 * imports the server). Its options are the table in options.ts; with `--workers N` above 1 this
 * process becomes the cluster primary (ops/cluster.ts) and each worker runs this command again.
 */
import { resolve } from 'node:path';
import { BOOTSTRAP_CREDENTIALS_FILE, StartupError, startServer } from './index.ts';
import { EXIT, UsageError, type Command, type CliIo } from '../command/io.ts';
import type { EdgeApp } from '../contract/index.ts';
import { parseCommandArgs } from '../command/args.ts';
import { isWorker, runPrimary, workerLink } from './ops/cluster.ts';
import { jsonLogLine } from './ops/log.ts';
import { foldWriteAheadLog } from './storage/index.ts';
import { parseArgsConfig, parseServeValues, serveHelp, serveUsage } from './options.ts';

/** Resolves with the first SIGINT or SIGTERM. */
function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((done) => {
    const onSignal = (s: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      done(s);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/**
 * `idforge serve` with apps at the server's edge (the admin console): the entry point composes them,
 * so the server never imports them.
 */
export function serveCommand(edge: readonly EdgeApp[]): Command {
  return (argv, io) => serve(argv, io, edge);
}

/** `idforge serve` without edge apps. */
export const run: Command = (argv, io) => serve(argv, io, []);

async function serve(argv: readonly string[], io: CliIo, edge: readonly EdgeApp[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, parseArgsConfig(), serveUsage());
  if (values.help) {
    io.stdout(serveHelp());
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'\n${serveUsage()}`);
  const settings = parseServeValues(values, io.cwd);
  const log = (line: string) => io.stderr(`${jsonLogLine(line)}\n`);
  if (settings.workers > 1 && !isWorker()) {
    const { code } = await runPrimary(settings.workers, (banner) => io.stdout(`${banner}  workers:     ${settings.workers} processes (pid ${process.pid} is their primary)\n`), log);
    // The workers are gone: alone now, fold SQLite's write-ahead log that two closing at once can leave.
    if ((settings.database ?? '') === '') foldWriteAheadLog(settings.dataDir);
    return code;
  }
  if (!isWorker()) return serveHere(settings, io, log, edge);
  // A worker's IPC channel would keep it alive, and a worker that lets go of it exits with 0
  // (node:cluster): end it here, with its own code, which the primary reports.
  let code: number;
  try {
    code = await serveHere(settings, io, log, edge);
  } catch (err) {
    io.stderr(`idforge serve: internal error in worker ${process.pid}: ${(err as Error)?.stack ?? String(err)}\n`);
    code = 70;
  }
  process.exit(code);
}

/** One server in this process: the whole of `idforge serve --workers 1`, or one worker of many. */
async function serveHere(settings: ReturnType<typeof parseServeValues>, io: CliIo, log: (line: string) => void, edge: readonly EdgeApp[]): Promise<number> {
  const link = isWorker() ? workerLink() : undefined;
  const { workers: _workers, ...options } = settings;
  // Asked to stop while starting: stop as soon as it listens.
  const signal = nextSignal();
  let server;
  try {
    server = await startServer({ ...options, env: io.env, log, edge, ...(link === undefined ? {} : { cluster: link }) });
  } catch (err) {
    // The operator's mistake (wrong master key, port in use): say it plainly, exit 1.
    if (err instanceof StartupError) {
      io.stderr(`idforge serve: ${err.message}\n`);
      return EXIT.invalid;
    }
    throw err;
  }
  const banner =
    `idforge server listening on ${server.url}\n` +
    `  admin API:   ${server.adminUrl} (OpenAPI at ${server.adminUrl}/openapi.json)\n` +
    `  tenants:     ${server.issuer('<tenant>')}\n` +
    `  health:      ${server.url}/healthz, ${server.url}/readyz, metrics at ${server.url}/metrics\n` +
    `  admin creds: ${resolve(settings.dataDir, BOOTSTRAP_CREDENTIALS_FILE)}\n` +
    `  storage:     ${server.storage}\n`;
  if (link === undefined) io.stdout(banner);
  else link.listening(banner);

  // Run until asked to stop (or, in a worker, until the primary is gone); then drain and close.
  const why = await Promise.race([
    signal.then((s) => `${s} received`),
    ...(link === undefined ? [] : [new Promise<string>((done) => process.once('disconnect', () => done('the cluster primary is gone')))]),
  ]);
  log(`${why}: draining requests in flight, then shutting down`);
  await server.close();
  return EXIT.ok;
}
