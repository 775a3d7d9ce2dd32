/**
 * `idforge events <tenant>`: the tenant's event log (src/contract/events.ts) from the admin API,
 * oldest first, filtered as GET .../events filters; `--follow` keeps reading what comes after
 * (polling the page's `follow` cursor), `--json` writes one event per line (JSON Lines, as SIEM
 * shippers such as Vector, Fluent Bit and Filebeat read them).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { resolve } from 'node:path';
import { AdminApiError, AdminClient } from '../../admin-client/index.ts';
import { EVENT_QUERY, SYSTEM_TENANT, endpointUrl, parseEventQuery, type EventView, type ServerAddress } from '../../contract/index.ts';
import { EXIT, UsageError, type CliIo, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { oneTenant } from '../_tenant-arg.ts';

const USAGE = 'usage: idforge events <tenant> (--data-dir <server data dir> | --server <url> with env IDFORGE_ADMIN_CLIENT_ID/SECRET) ' +
  '[--type <types>] [--actor <who|manager|commit>] [--object <kind[:name]>] [--since <time>] [--until <time>] [--follow [--interval <s>]] [--json]';
const HELP = `${USAGE}

Prints the tenant's event log, oldest first: every change through every door (admin API, console,
SCIM, idforge apply, Pulumi) with who made it, its manager and Git commit, and the fields changed
(secrets never shown); every sign-in outcome, factor change, lockout and token revocation.

${EVENT_QUERY.map((q) => `  --${q.name.padEnd(8)} ${q.description}`).join('\n')}
  --follow   keep reading new events as they come (every --interval seconds, default 2), until interrupted
  --json     one event per line as JSON (JSON Lines), the contract's event schema

--data-dir reads the bootstrap admin client the server wrote there (admin-credentials.json);
--server names the server's base URL (http://localhost:9080) for the credentials in the environment.
`;

const OPTIONS = {
  'data-dir': { type: 'string' }, server: { type: 'string' }, json: { type: 'boolean' }, follow: { type: 'boolean' }, interval: { type: 'string' },
  ...Object.fromEntries(EVENT_QUERY.map((q) => [q.name, { type: 'string' }])),
} as const;

function clientFor(values: { 'data-dir'?: string | undefined; server?: string | undefined }, io: CliIo): Promise<AdminClient> | AdminClient {
  if (values['data-dir'] !== undefined) return AdminClient.forDataDir(resolve(io.cwd, values['data-dir']));
  if (values.server === undefined) throw new UsageError(`--data-dir or --server is required\n${USAGE}`);
  const clientId = io.env.IDFORGE_ADMIN_CLIENT_ID;
  const clientSecret = io.env.IDFORGE_ADMIN_CLIENT_SECRET;
  if (!clientId || !clientSecret) throw new UsageError(`--server needs IDFORGE_ADMIN_CLIENT_ID and IDFORGE_ADMIN_CLIENT_SECRET\n${USAGE}`);
  let u: URL;
  try {
    u = new URL(values.server);
  } catch {
    throw new UsageError(`--server '${values.server}' is not a URL\n${USAGE}`);
  }
  const addr: ServerAddress = { scheme: u.protocol === 'https:' ? 'https' : 'http', baseDomain: u.hostname, port: u.port === '' ? undefined : Number(u.port) };
  return new AdminClient({ adminUrl: `${u.origin}/admin/v1`, tokenUrl: endpointUrl(addr, SYSTEM_TENANT, 'token'), clientId, clientSecret });
}

/** One line a person reads: time, type, object, who, commit, and what changed. */
export function eventLine(e: EventView): string {
  const by = [e.actor.manager, e.actor.who].filter((x) => x !== undefined).join(' ');
  const git = e.actor.git === undefined ? '' : ` @${e.actor.git.commit.slice(0, 12)}${e.actor.git.branch === undefined ? '' : ` (${e.actor.git.branch})`}${e.actor.git.path === undefined ? '' : ` ${e.actor.git.path}`}`;
  const show = (v: unknown) => (v === undefined ? '-' : JSON.stringify(v));
  const changes = e.changes.map((c) => (c.redacted ? `${c.field} (changed)` : `${c.field}: ${show(c.before)} -> ${show(c.after)}`));
  const details = e.details === undefined ? [] : Object.entries(e.details).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${e.time}  ${e.type}  ${e.object.kind}:${e.object.name}${by === '' && git === '' ? '' : `  by ${by}${git}`}${[...changes, ...details].length > 0 ? `  ${[...changes, ...details].join('; ')}` : ''}`;
}

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(argv, OPTIONS, USAGE);
  if (values.help) {
    io.stdout(HELP);
    return EXIT.ok;
  }
  const tenant = oneTenant(positionals, USAGE);
  const v = values as Record<string, string | boolean | undefined>;
  const query = Object.fromEntries(EVENT_QUERY.map((q) => [q.name, typeof v[q.name] === 'string' ? (v[q.name] as string) : undefined]));
  // Judged here too, so a mistake is a usage error naming the option, before anything is sent.
  const { problems } = parseEventQuery(query);
  if (problems.length > 0) throw new UsageError(`${problems.map((p) => `--${p.path.slice('query.'.length)}: ${p.message}`).join('\n')}\n${USAGE}`);
  if (values.follow === true && query.order === 'desc') throw new UsageError(`--follow reads oldest first: leave out --order desc\n${USAGE}`);
  const intervalMs = values.interval === undefined ? 2000 : Number(values.interval) * 1000;
  if (!Number.isFinite(intervalMs) || intervalMs < 100) throw new UsageError(`--interval must be a number of seconds, at least 0.1\n${USAGE}`);
  const print = (e: EventView) => io.stdout(values.json === true ? `${JSON.stringify(e)}\n` : `${eventLine(e)}\n`);
  try {
    const client = await clientFor(values, io);
    let cursor: string | undefined;
    for (;;) {
      const page = await client.call('listEvents', { tenant }, { query: { ...query, limit: 500, cursor } });
      for (const e of page.items) print(e);
      cursor = page.follow;
      if (page.nextCursor !== null) continue;
      if (values.follow !== true) return EXIT.ok;
      await sleep(intervalMs);
    }
  } catch (err) {
    if (err instanceof AdminApiError) {
      io.stderr(`idforge events: ${err.message}\n`);
      return EXIT.invalid;
    }
    throw err;
  }
};
