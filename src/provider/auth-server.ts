/**
 * AuthServer: deploys the authorization server.
 *
 * Local mode (the embedded default) runs `idforge serve` as a detached background process that
 * outlives `pulumi up`, with its data dir and port, a pid file and a log in the data dir. Created =
 * started and healthy; settings changed = restarted; deleted = stopped (the data dir stays: it is
 * the server's database and key store). Local-replicas mode runs `local.replicas.count` such
 * processes on one PostgreSQL database and one master key file, each with its data dir
 * `<dataDir>/replica-<i>`, all on the one port (SO_REUSEPORT: the kernel spreads connections);
 * one that dies is drift, and the next `up` starts them again. The inputs are grouped by mode (`local: {...}`) so that a
 * `container` or `kubernetes` mode can add its own group without changing the addresses or the
 * outputs that tenants and applications consume.
 *
 * Liveness is part of the diff: a server that was stopped behind Pulumi's back (a reboot, a kill)
 * shows as an update and the next `up` starts it again, instead of failing every tenant call.
 *
 * Outputs: base URL, admin API URL, issuer per tenant, and `connection`, the admin API address with
 * the bootstrap admin client's credentials (a secret), which every other resource takes as input.
 */
import type * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { TenantName } from '../contract/index.ts';
import { adminBaseUrl, issuerUrl, type ServerAddress } from '../contract/index.ts';
import type { AdminEndpoint } from '../admin-client/index.ts';
// Types only: the processes are started through a lazy import (below), as the provider runs them.
import type { LocalServers } from './_local-server.ts';
import { changedKeys, checkWith, isUnknown, jsonEqual } from './_common.ts';
import { _DynamicResource } from './_load.ts';

export interface LocalServerArgs {
  /** Absolute path of the server's data dir (SQLite, keys, bootstrap credentials, pid, log). Immutable. */
  readonly dataDir: pulumi.Input<string>;
  /** Command that runs the CLI; `serve ...` is appended. Default: this package's `bin/idforge.js` under the current node. */
  readonly command?: pulumi.Input<pulumi.Input<string>[]>;
  /** Extra environment for the server process (e.g. a master key reference). */
  readonly env?: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** How long to wait for the server to answer after start. Default: 60 s. */
  readonly startTimeoutSeconds?: pulumi.Input<number>;
  /** Required in `local-replicas` mode, refused in `local` mode. */
  readonly replicas?: pulumi.Input<LocalReplicasArgs>;
}

/** Local-replicas mode: N server processes on one PostgreSQL database, sharing the port. */
export interface LocalReplicasArgs {
  /** How many `idforge serve` processes. */
  readonly count: pulumi.Input<number>;
  /** PostgreSQL URL every replica uses, `postgres://user:password@host:port/database` (kept secret). */
  readonly database: pulumi.Input<string>;
  /** The master key file every replica uses; made on the first start when missing. Default `<dataDir>/master.key`. */
  readonly masterKeyFile?: pulumi.Input<string>;
}

export interface AuthServerArgs {
  /**
   * Where the server runs: `local` (default: one process, SQLite in the data dir) or
   * `local-replicas` (`local.replicas.count` processes on PostgreSQL). Immutable.
   */
  readonly mode?: pulumi.Input<'local' | 'local-replicas'>;
  /** Default: http (local mode serves plain HTTP on loopback). */
  readonly scheme?: pulumi.Input<'http'>;
  /** Tenants are `<tenant>.<baseDomain>`. Default: localhost. */
  readonly baseDomain?: pulumi.Input<string>;
  readonly port: pulumi.Input<number>;
  readonly local?: pulumi.Input<LocalServerArgs>;
  /** Tenants whose issuer URLs to output. */
  readonly tenants?: pulumi.Input<pulumi.Input<string>[]>;
}

export interface AuthServerInputs extends LocalServers {
  readonly mode: 'local' | 'local-replicas';
  readonly tenants: string[];
}

export interface AuthServerOutputs extends AuthServerInputs {
  readonly baseUrl: string;
  readonly adminUrl: string;
  readonly issuers: Record<string, string>;
  /** Process id of the running server (local-replicas: of the first replica); 0 when a refresh found it stopped. */
  readonly pid: number;
  /**
   * Process ids of every server process (one in local mode); all 0 when a refresh found one
   * stopped. Absent in state written before local-replicas mode: then `[pid]`.
   */
  readonly pids?: number[];
  /** Secret. */
  readonly connection: AdminEndpoint;
  /** Where the server keeps its bootstrap admin credentials, rewritten on every start (not a secret: a path). */
  readonly credentialsFile: string;
}

const absolute = (what: string) => z.string().refine((d) => d.startsWith('/'), { error: `${what} must be an absolute path` });

const AuthServerInputsSchema = z.strictObject({
  mode: z.enum(['local', 'local-replicas'], { error: "mode must be 'local' or 'local-replicas'" }).default('local'),
  scheme: z.literal('http', { error: "local mode serves plain HTTP: use 'http'" }).default('http'),
  baseDomain: z
    .string()
    .regex(/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, {
      error: 'must be a domain name such as localhost',
    })
    .default('localhost'),
  port: z.number().int().min(1).max(65535),
  local: z.strictObject({
    dataDir: z.string().refine((d) => d.startsWith('/'), { error: 'must be an absolute path' }),
    command: z.array(z.string()).min(1).optional(),
    env: z.record(z.string(), z.string()).optional(),
    startTimeoutSeconds: z.number().positive().max(600).default(60),
    replicas: z.strictObject({
      count: z.number().int().min(1).max(32),
      database: z.string().regex(/^postgres(ql)?:\/\//, { error: 'must be a postgres://user:password@host:port/database URL' }),
      masterKeyFile: absolute('masterKeyFile').optional(),
    }).optional(),
  }),
  tenants: z.array(TenantName).default([]),
}).superRefine((v, ctx) => {
  // A mode's own settings, and no other's: a misplaced group is a mistake, not a no-op.
  if (v.mode === 'local-replicas' && v.local.replicas === undefined) {
    ctx.addIssue({ code: 'custom', path: ['local', 'replicas'], message: "local-replicas mode needs local.replicas: { count, database }" });
  }
  if (v.mode === 'local' && v.local.replicas !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['local', 'replicas'], message: "local.replicas is for mode 'local-replicas'; set mode: 'local-replicas' or remove it" });
  }
});

/** Settings a running process was started with: any change means a restart. */
const RESTART_KEYS = ['scheme', 'baseDomain', 'port'] as const;
const RESTART_LOCAL_KEYS = ['command', 'env', 'replicas'] as const;

function address(i: Pick<AuthServerInputs, 'scheme' | 'baseDomain' | 'port'>): ServerAddress {
  return { scheme: i.scheme, baseDomain: i.baseDomain, port: i.port };
}

/** Pure: the addresses a server with these settings publishes. */
export function serverUrls(i: AuthServerInputs): Pick<AuthServerOutputs, 'baseUrl' | 'adminUrl' | 'issuers' | 'credentialsFile'> {
  const addr = address(i);
  const admin = adminBaseUrl(addr);
  return {
    baseUrl: admin.slice(0, -'/admin/v1'.length),
    adminUrl: admin,
    // The first replica's in local-replicas mode (every replica writes the same credentials).
    credentialsFile: `${i.local.dataDir}${i.local.replicas === undefined ? '' : '/replica-0'}/admin-credentials.json`,
    issuers: Object.fromEntries([...i.tenants].sort().map((t) => [t, issuerUrl(addr, t)])),
  };
}

/** Pure: does going from `olds` to `news` need the process restarted? */
export function needsRestart(olds: AuthServerInputs, news: AuthServerInputs): boolean {
  return (
    changedKeys(RESTART_KEYS, { ...olds }, { ...news }).length > 0 ||
    changedKeys(RESTART_LOCAL_KEYS, { ...olds.local }, { ...news.local }).length > 0
  );
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `authServerProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const authServerProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<AuthServerInputs, AuthServerOutputs>, 'configure'>
> = {
  async check(_olds, news) {
    return checkWith(AuthServerInputsSchema as z.ZodType<AuthServerInputs & Record<string, unknown>>, news as never);
  },
  async diff(_id, olds, news) {
    const replaces = changedKeys(['mode'], { ...olds }, { ...news });
    const newLocal = news.local as unknown;
    if (!isUnknown(newLocal) && !isUnknown(news.local.dataDir) && olds.local.dataDir !== news.local.dataDir) {
      replaces.push('local.dataDir');
    }
    let changes = replaces.length > 0 || needsRestart(olds, news) || !jsonEqual([...olds.tenants].sort(), [...(news.tenants ?? [])].sort());
    if (!changes) {
      // A server that died since the last up is drift to repair: report an update that restarts it.
      const { allServing, processDataDirs } = await import('./_local-server.ts');
      changes = !(await allServing(olds.pids ?? [olds.pid], olds.baseUrl, processDataDirs(olds)));
    }
    // Two servers cannot share a port: stop the old one before starting its replacement.
    return { changes, replaces, deleteBeforeReplace: true };
  },
  async create(inputs) {
    const { startServers } = await import('./_local-server.ts');
    const started = await startServers(inputs);
    return { id: inputs.local.dataDir, outs: { ...inputs, ...serverUrls(inputs), ...started } };
  },
  async read(id, props) {
    const { allServing, processDataDirs } = await import('./_local-server.ts');
    const old = props as AuthServerOutputs;
    const pids = old.pids ?? [old.pid];
    const serving = await allServing(pids, old.baseUrl, processDataDirs(old));
    // A stopped server stays in the state with pid 0, so the next diff restarts it.
    const now: AuthServerOutputs = { ...old, pid: serving ? old.pid : 0, pids: serving ? pids : pids.map(() => 0) };
    const inputs: AuthServerInputs = {
      mode: old.mode,
      scheme: old.scheme,
      baseDomain: old.baseDomain,
      port: old.port,
      local: old.local,
      tenants: old.tenants,
    };
    return { id, props: now, inputs: inputs as AuthServerOutputs };
  },
  async update(_id, olds, news) {
    const { allServing, processDataDirs, startServers, stopServers } = await import('./_local-server.ts');
    const oldPids = olds.pids ?? [olds.pid];
    let started: Pick<AuthServerOutputs, 'pid' | 'pids' | 'connection'> = { pid: olds.pid, pids: oldPids, connection: olds.connection };
    if (needsRestart(olds, news) || !(await allServing(oldPids, olds.baseUrl, processDataDirs(olds)))) {
      await stopServers(oldPids, processDataDirs(olds));
      started = await startServers(news);
    }
    return { outs: { ...news, ...serverUrls(news), ...started } };
  },
  async delete(_id, props) {
    const { processDataDirs, stopServers } = await import('./_local-server.ts');
    const old = props as AuthServerOutputs;
    await stopServers(old.pids ?? [old.pid], processDataDirs(old));
  },
};

export class AuthServer extends _DynamicResource {
  declare readonly baseUrl: pulumi.Output<string>;
  declare readonly adminUrl: pulumi.Output<string>;
  declare readonly issuers: pulumi.Output<Record<string, string>>;
  declare readonly pid: pulumi.Output<number>;
  declare readonly pids: pulumi.Output<number[]>;
  /** Secret: the admin API address and the bootstrap admin client's credentials. */
  declare readonly connection: pulumi.Output<AdminEndpoint>;
  /** Path of the credentials file the server rewrites on every start. */
  declare readonly credentialsFile: pulumi.Output<string>;

  constructor(name: string, args: AuthServerArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'authServerProvider',
      'AuthServer',
      name,
      { ...args, baseUrl: undefined, adminUrl: undefined, issuers: undefined, pid: undefined, pids: undefined, connection: undefined, credentialsFile: undefined },
      // `local.env` may carry the master key (IDFORGE_MASTER_KEY), `local.replicas` the database's password: keep the whole block secret.
      { ...opts, additionalSecretOutputs: ['connection', 'local'] },
    );
  }
}
