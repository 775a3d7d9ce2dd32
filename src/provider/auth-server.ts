/**
 * AuthServer: deploys the authorization server.
 *
 * Local mode (the embedded default) runs `idforge serve` as a detached background process that
 * outlives `pulumi up`, with its data dir and port, a pid file and a log in the data dir. Created =
 * started and healthy; settings changed = restarted; deleted = stopped (the data dir stays: it is
 * the server's database and key store). The inputs are grouped by mode (`local: {...}`) so that a
 * `container` or `kubernetes` mode can add its own group without changing the addresses or the
 * outputs that tenants and applications consume.
 *
 * Liveness is part of the diff: a server that was stopped behind Pulumi's back (a reboot, a kill)
 * shows as an update and the next `up` starts it again, instead of failing every tenant call.
 *
 * Outputs: base URL, admin API URL, issuer per tenant, and `connection`, the admin API address with
 * the bootstrap admin client's credentials (a secret), which every other resource takes as input.
 */
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { TenantName } from '../contract/index.ts';
import { adminBaseUrl, issuerUrl, type ServerAddress } from '../contract/index.ts';
import type { AdminEndpoint } from '../admin-client/index.ts';
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
}

export interface AuthServerArgs {
  /** Where the server runs. Only `local` exists today. Immutable. */
  readonly mode?: pulumi.Input<'local'>;
  /** Default: http (local mode serves plain HTTP on loopback). */
  readonly scheme?: pulumi.Input<'http'>;
  /** Tenants are `<tenant>.<baseDomain>`. Default: localhost. */
  readonly baseDomain?: pulumi.Input<string>;
  readonly port: pulumi.Input<number>;
  readonly local?: pulumi.Input<LocalServerArgs>;
  /** Tenants whose issuer URLs to output. */
  readonly tenants?: pulumi.Input<pulumi.Input<string>[]>;
}

export interface AuthServerInputs {
  readonly mode: 'local';
  readonly scheme: 'http';
  readonly baseDomain: string;
  readonly port: number;
  readonly local: {
    readonly dataDir: string;
    readonly command?: string[];
    readonly env?: Record<string, string>;
    readonly startTimeoutSeconds: number;
  };
  readonly tenants: string[];
}

export interface AuthServerOutputs extends AuthServerInputs {
  readonly baseUrl: string;
  readonly adminUrl: string;
  readonly issuers: Record<string, string>;
  /** Process id of the running server; 0 when a refresh found it stopped. */
  readonly pid: number;
  /** Secret. */
  readonly connection: AdminEndpoint;
  /** Where the server keeps its bootstrap admin credentials, rewritten on every start (not a secret: a path). */
  readonly credentialsFile: string;
}

const AuthServerInputsSchema = z.strictObject({
  mode: z.literal('local', { error: "only 'local' mode exists so far" }).default('local'),
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
  }),
  tenants: z.array(TenantName).default([]),
});

/** Settings a running process was started with: any change means a restart. */
const RESTART_KEYS = ['scheme', 'baseDomain', 'port'] as const;
const RESTART_LOCAL_KEYS = ['command', 'env'] as const;

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
    credentialsFile: `${i.local.dataDir}/admin-credentials.json`,
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
      const { isServing } = await import('./_local-server.ts');
      changes = !(await isServing(olds.pid, olds.baseUrl, olds.local.dataDir));
    }
    // Two servers cannot share a port: stop the old one before starting its replacement.
    return { changes, replaces, deleteBeforeReplace: true };
  },
  async create(inputs) {
    const { startServer } = await import('./_local-server.ts');
    const started = await startServer(inputs);
    return { id: inputs.local.dataDir, outs: { ...inputs, ...serverUrls(inputs), ...started } };
  },
  async read(id, props) {
    const { isServing } = await import('./_local-server.ts');
    const old = props as AuthServerOutputs;
    const serving = await isServing(old.pid, old.baseUrl, old.local.dataDir);
    // A stopped server stays in the state with pid 0, so the next diff restarts it.
    const now: AuthServerOutputs = { ...old, pid: serving ? old.pid : 0 };
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
    const { isServing, startServer, stopServer } = await import('./_local-server.ts');
    let started: Pick<AuthServerOutputs, 'pid' | 'connection'> = { pid: olds.pid, connection: olds.connection };
    if (needsRestart(olds, news) || !(await isServing(olds.pid, olds.baseUrl, olds.local.dataDir))) {
      await stopServer(olds.pid, olds.local.dataDir);
      started = await startServer(news);
    }
    return { outs: { ...news, ...serverUrls(news), ...started } };
  },
  async delete(_id, props) {
    const { stopServer } = await import('./_local-server.ts');
    const old = props as AuthServerOutputs;
    await stopServer(old.pid, old.local.dataDir);
  },
};

export class AuthServer extends _DynamicResource {
  declare readonly baseUrl: pulumi.Output<string>;
  declare readonly adminUrl: pulumi.Output<string>;
  declare readonly issuers: pulumi.Output<Record<string, string>>;
  declare readonly pid: pulumi.Output<number>;
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
      { ...args, baseUrl: undefined, adminUrl: undefined, issuers: undefined, pid: undefined, connection: undefined, credentialsFile: undefined },
      // `local.env` may carry the master key (IDFORGE_MASTER_KEY): keep the whole block secret.
      { ...opts, additionalSecretOutputs: ['connection', 'local'] },
    );
  }
}
