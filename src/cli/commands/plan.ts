/**
 * `idforge plan`: what `apply` would create, change and delete on a live server.
 *
 * The server is the judge of what changes: every PUT of the compiled plan is sent with
 * `?dryRun=true`, and the server answers created / updated (with the fields) / unchanged. That
 * covers what the CLI cannot see itself (hashed client secrets, "initial password only when none
 * yet"). Deletions are found by listing the live tenants, applications, users and assignments that
 * carry `managedBy: idforge` and are absent from the model; nothing else is ever deleted.
 *
 * Admin credentials, in this order: `--data-dir <server data dir>` (reads the bootstrap file the
 * server wrote, admin-credentials.json), or IDFORGE_ADMIN_CLIENT_ID + IDFORGE_ADMIN_CLIENT_SECRET.
 */
import { resolve } from 'node:path';
import { AdminApiError, AdminClient, readAdminCredentials, endpointFromCredentials } from '../../admin-client/index.ts';
import {
  MANAGED_BY, SYSTEM_TENANT, adminBaseUrl, endpointUrl, refKey, refOf, stepName,
  type AdminResourceKind, type PlanStep, type PutStep, type ResourceRef, type ServerAddress, type TenantBody,
} from '../../contract/index.ts';
import type { Model } from '../../schema/model.ts';
import { compilePlan } from '../../generators/index.ts';
import { EXIT, UsageError, type CliIo, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { loadForCommand, reportProblems } from '../_model.ts';
import { locateProblems } from '../../schema/index.ts';
import { ownershipProblems } from './_ownership.ts';
import { DEFAULT_STATE_FILE, StateFileError, resolvePasswords, resolveSecrets } from '../_state.ts';

export { AdminApiError } from '../../admin-client/index.ts';

export type ChangeOp = 'create' | 'update' | 'delete';

export interface PlannedChange {
  readonly op: ChangeOp | 'unchanged';
  readonly kind: AdminResourceKind;
  readonly ref: ResourceRef;
  /** Human name: `acme`, `acme/portal`, `acme/u-alice`, `acme/portal/u-alice`. */
  readonly name: string;
  /** Changed fields (updates). */
  readonly fields: readonly string[];
}

export interface GuardViolation {
  readonly tenant: string;
  readonly kind: 'user' | 'assignment';
  readonly deleting: number;
  readonly existing: number;
}

export interface RemotePlan {
  readonly server: string;
  readonly changes: readonly PlannedChange[];
  readonly guard: readonly GuardViolation[];
}

export const CREDENTIAL_HELP = `Admin credentials: --data-dir <server data dir> reads the bootstrap client the server wrote
there (admin-credentials.json) and talks to the server that wrote it; otherwise set
IDFORGE_ADMIN_CLIENT_ID and IDFORGE_ADMIN_CLIENT_SECRET (a client of the server's 'system'
tenant allowed the 'admin' scope), sent to the server the model's 'server' section names.`;

/**
 * The admin client for the model's server. Credentials from a data dir go only to the server that
 * wrote them (the file's adminUrl); when that is not the server the model names, nothing is sent.
 */
export async function connect(addr: ServerAddress, dataDir: string | undefined, io: CliIo): Promise<AdminClient> {
  const wanted = adminBaseUrl(addr);
  if (dataDir !== undefined) {
    const creds = await readAdminCredentials(resolve(io.cwd, dataDir));
    if (creds.adminUrl !== wanted) {
      throw new AdminApiError(0, '', undefined,
        `the model's server is ${wanted}, but the credentials in ${dataDir} belong to ${creds.adminUrl}: nothing was sent. ` +
        "Point --data-dir at the data dir of the model's server, or change the model's server section");
    }
    return new AdminClient(endpointFromCredentials(creds));
  }
  const clientId = io.env.IDFORGE_ADMIN_CLIENT_ID;
  const clientSecret = io.env.IDFORGE_ADMIN_CLIENT_SECRET;
  if (!clientId || !clientSecret) throw new UsageError(`no admin credentials.\n${CREDENTIAL_HELP}`);
  return new AdminClient({ adminUrl: wanted, tokenUrl: endpointUrl(addr, SYSTEM_TENANT, 'token'), clientId, clientSecret });
}

const change = (op: PlannedChange['op'], ref: ResourceRef, fields: readonly string[] = []): PlannedChange =>
  ({ op, kind: ref.kind, ref: refOf(ref), name: stepName(ref), fields });

const tenantRef = (tenant: string): ResourceRef => ({ kind: 'tenant', tenant });

/**
 * Dry-runs every PUT; writes nothing. A step whose dependencies this same plan creates (a new
 * tenant's applications, an assignment of a new user) cannot be judged by the server yet: it is a
 * create when the object does not exist, else an update whose fields show after apply. Any other
 * refusal (a clashing clientId, an invalid body) would stop apply halfway, so it fails the plan.
 */
export async function dryRunPuts(client: AdminClient, steps: readonly PlanStep[]): Promise<PlannedChange[]> {
  const changes: PlannedChange[] = [];
  const creating = new Set<string>();
  /** Steps that will have changed the server by the time apply reaches later steps. */
  const applying: PutStep[] = [];
  for (const step of steps) {
    if (step.op !== 'put') continue;
    if (creating.has(refKey(tenantRef(step.tenant)))) {
      changes.push(change('create', step));
      continue;
    }
    try {
      const r = await client.putStep(step, { dryRun: true });
      const op = r.outcome === 'created' ? 'create' : r.outcome === 'updated' ? 'update' : 'unchanged';
      if (op === 'create') creating.add(refKey(step));
      if (op !== 'unchanged') applying.push(step);
      changes.push(change(op, step, r.outcome === 'updated' ? r.changes : []));
    } catch (err) {
      if (!(err instanceof AdminApiError) || !explainedByPlan(step, err, creating, applying)) throw err;
      const exists = (await client.findRef(step)) !== undefined;
      changes.push(change(exists ? 'update' : 'create', step, exists ? ['(depends on objects this plan creates)'] : []));
      if (!exists) creating.add(refKey(step));
      applying.push(step);
    }
  }
  return changes;
}

/**
 * Whether a dry-run refusal only says the server does not hold yet what earlier steps of this plan
 * will put there, so apply, which runs those steps first, will succeed: a parent the plan creates
 * (404), an audience naming an api the plan creates or changes (400 at `audience[N]`), a scope that
 * the plan adds to the tenant or to an api of the audience (400 at `scopes[N]`). Nothing else: a 409
 * (clientId, identifier or email taken by an object outside the model) stays a 409 after apply.
 */
function explainedByPlan(step: PutStep, err: AdminApiError, creating: ReadonlySet<string>, applying: readonly PutStep[]): boolean {
  if (err.status === 404) {
    if (step.kind !== 'assignment') return false;
    const parents: ResourceRef[] = [
      { kind: 'application', tenant: step.tenant, application: step.application },
      { kind: 'user', tenant: step.tenant, user: step.user },
    ];
    return parents.some((p) => creating.has(refKey(p)));
  }
  if (err.status !== 400 || step.kind !== 'application' || step.body.kind === 'api') return false;
  const body = step.body;
  const apis = applying.flatMap((s) => (s.kind === 'application' && s.body.kind === 'api' && s.tenant === step.tenant ? [s.body] : []));
  const problems = err.body?.problems ?? (err.body === undefined ? [] : [{ path: err.body.path }]);
  return problems.length > 0 && problems.every((p) => {
    const at = /^(audience|scopes)\[(\d+)\]$/.exec(p.path);
    if (at?.[1] === 'audience') {
      const aud = body.audience[Number(at[2])];
      return apis.some((api) => api.identifier === aud);
    }
    if (at?.[1] === 'scopes') {
      const scope = body.scopes[Number(at[2])]!;
      const tenant = applying.find((s): s is PutStep & { kind: 'tenant'; body: TenantBody } => s.kind === 'tenant' && s.tenant === step.tenant);
      return (tenant?.body.scopes.some((sc) => sc.name === scope) ?? false) ||
        apis.some((api) => body.audience.includes(api.identifier) && api.scopes.includes(scope));
    }
    return false;
  });
}

/** Managed live objects the model no longer has, and the mass-deletion guard's verdict. */
export async function plannedDeletions(client: AdminClient, steps: readonly PlanStep[]): Promise<{ deletions: PlannedChange[]; guard: GuardViolation[] }> {
  // Deletions: managed live objects the model no longer has; children first, tenants last.
  const wanted = new Set(steps.map((s) => refKey(s)));
  const deletions: PlannedChange[][] = [[], [], [], [], []];
  const guard: GuardViolation[] = [];
  for (const t of (await client.listAll('listTenants', {})) ?? []) {
    const tenant = t.name;
    const inModel = wanted.has(refKey(tenantRef(tenant)));
    const tenantGoes = !inModel && t.managedBy === MANAGED_BY;
    if (!inModel && !tenantGoes) continue; // not ours, or not in this model at all
    const apps = (await client.listAll('listApplications', { tenant })) ?? [];
    const users = (await client.listAll('listUsers', { tenant })) ?? [];
    let assignmentCount = 0;
    let assignmentDeletes = 0;
    let userDeletes = 0;
    for (const a of apps) {
      const appRef: ResourceRef = { kind: 'application', tenant, application: a.name };
      if (a.kind !== 'api') {
        for (const x of (await client.listAll('listAssignments', { tenant, application: a.name })) ?? []) {
          assignmentCount++;
          const ref: ResourceRef = { kind: 'assignment', tenant, application: a.name, user: x.userId };
          if (tenantGoes || (!wanted.has(refKey(ref)) && x.managedBy === MANAGED_BY)) {
            assignmentDeletes++;
            if (!tenantGoes) deletions[0]!.push(change('delete', ref));
          }
        }
      }
      if (!tenantGoes && !wanted.has(refKey(appRef)) && a.managedBy === MANAGED_BY) deletions[a.kind === 'api' ? 3 : 2]!.push(change('delete', appRef));
    }
    for (const u of users) {
      const ref: ResourceRef = { kind: 'user', tenant, user: u.id };
      if (tenantGoes || (!wanted.has(refKey(ref)) && u.managedBy === MANAGED_BY)) {
        userDeletes++;
        if (!tenantGoes) deletions[1]!.push(change('delete', ref));
      }
    }
    if (tenantGoes) deletions[4]!.push(change('delete', tenantRef(tenant)));
    // The guard: deleting most (more than half) of a tenant's users or assignments is refused
    // unless asked for, since a mistake there (a file left out of the model) locks people out.
    if (userDeletes > 0 && userDeletes * 2 > users.length) guard.push({ tenant, kind: 'user', deleting: userDeletes, existing: users.length });
    if (assignmentDeletes > 0 && assignmentDeletes * 2 > assignmentCount) {
      guard.push({ tenant, kind: 'assignment', deleting: assignmentDeletes, existing: assignmentCount });
    }
  }
  return { deletions: deletions.flat(), guard };
}

export async function planAgainst(client: AdminClient, steps: readonly PlanStep[]): Promise<RemotePlan> {
  const { deletions, guard } = await plannedDeletions(client, steps);
  return { server: await client.server(), changes: [...(await dryRunPuts(client, steps)), ...deletions], guard };
}

export function summary(plan: RemotePlan): Record<ChangeOp | 'unchanged', number> {
  const s = { create: 0, update: 0, delete: 0, unchanged: 0 };
  for (const c of plan.changes) s[c.op]++;
  return s;
}

const SIGIL = { create: '+', update: '~', delete: '-', unchanged: '=' } as const;

export function formatPlan(plan: RemotePlan, color: boolean): string {
  const paint = (op: keyof typeof SIGIL, s: string) =>
    !color ? s : `\u001b[${op === 'create' ? 32 : op === 'update' ? 33 : op === 'delete' ? 31 : 2}m${s}\u001b[0m`;
  const lines = plan.changes
    .filter((c) => c.op !== 'unchanged')
    .map((c) => paint(c.op, `  ${SIGIL[c.op]} ${c.kind} ${c.name}${c.fields.length > 0 ? ` (${c.fields.join(', ')})` : ''}`));
  const s = summary(plan);
  const head = `Server ${plan.server}`;
  const total = s.create + s.update + s.delete;
  const tail = total === 0
    ? `No changes: the server matches the model (${s.unchanged} object${s.unchanged === 1 ? '' : 's'}).`
    : `Plan: ${s.create} to create, ${s.update} to change, ${s.delete} to delete, ${s.unchanged} unchanged.`;
  return [head, ...lines, tail].join('\n') + '\n';
}

export function formatGuard(guard: readonly GuardViolation[]): string {
  return guard.map((g) => `refusing to delete ${g.deleting} of ${g.existing} ${g.kind}s of tenant '${g.tenant}' (most of them); ` +
    'if that is intended, run again with --allow-mass-delete\n').join('');
}

export const PLAN_OPTIONS = {
  'data-dir': { type: 'string' },
  state: { type: 'string' },
  json: { type: 'boolean' },
  'allow-mass-delete': { type: 'boolean' },
} as const;

/** Shared by plan and apply: load, resolve secrets, compile, connect, dry-run. */
export async function preparePlan(
  command: 'plan' | 'apply', argv: readonly string[], io: CliIo, usage: string, help: string,
): Promise<{ exit: number } | { plan: RemotePlan; client: AdminClient; steps: readonly PlanStep[]; values: { json: boolean; allowMassDelete: boolean } }> {
  const { values, positionals } = parseCommandArgs(argv, PLAN_OPTIONS, usage);
  if (values.help) {
    io.stdout(help);
    return { exit: EXIT.ok };
  }
  if (positionals.length === 0) throw new UsageError(`no model given\n${usage}`);
  const json = values.json === true;
  const model: Model | undefined = await loadForCommand(io, positionals.map((p) => resolve(io.cwd, p)), json);
  if (model === undefined) return { exit: EXIT.invalid };
  const { passwords, problems } = resolvePasswords(model, io.env);
  if (problems.length > 0) {
    if (command === 'apply') {
      reportProblems(io, problems, json);
      return { exit: EXIT.invalid };
    }
    // A plan without passwords is still a true plan: the initial password only matters on create.
    if (!json) for (const p of problems) io.stderr(`warning: ${p.message}\n`);
  }
  let secrets;
  try {
    secrets = await resolveSecrets(model, resolve(io.cwd, values.state ?? io.env.IDFORGE_STATE ?? DEFAULT_STATE_FILE));
  } catch (err) {
    if (err instanceof StateFileError) {
      io.stderr(`idforge ${command}: ${err.message}\n`);
      return { exit: EXIT.invalid };
    }
    throw err;
  }
  const steps = compilePlan(model, { secrets, passwords }).steps;
  try {
    const client = await connect(model.server, values['data-dir'], io);
    const owned = await ownershipProblems(client, model);
    if (owned.length > 0) {
      reportProblems(io, await locateProblems(positionals.map((p) => resolve(io.cwd, p)), owned), json);
      return { exit: EXIT.invalid };
    }
    // apply does not dry-run: it PUTs every step and the server reports what changed.
    let plan: RemotePlan;
    if (command === 'plan') plan = await planAgainst(client, steps);
    else {
      const { deletions, guard } = await plannedDeletions(client, steps);
      plan = { server: await client.server(), changes: deletions, guard };
    }
    return { plan, client, steps, values: { json, allowMassDelete: values['allow-mass-delete'] === true } };
  } catch (err) {
    if (err instanceof AdminApiError) {
      if (json) io.stdout(`${JSON.stringify({ ok: false, error: err.message }, null, 2)}\n`);
      else io.stderr(`idforge ${command}: ${err.message}\n`);
      return { exit: EXIT.invalid };
    }
    throw err;
  }
}

export function planJson(plan: RemotePlan) {
  return {
    server: plan.server,
    summary: summary(plan),
    changes: plan.changes.filter((c) => c.op !== 'unchanged').map(({ op, ref, name, fields }) => ({ op, ...ref, name, fields })),
    guard: plan.guard,
  };
}

const USAGE = 'usage: idforge plan <model file or directory>... (--data-dir <server data dir> | env IDFORGE_ADMIN_CLIENT_ID/SECRET) [--state <file>] [--json] [--allow-mass-delete]';
const HELP = `${USAGE}

Compares the model with the live server named in its 'server' section and prints what
'idforge apply' would create (+), change (~) and delete (-). Changes nothing.
Only objects marked managedBy: idforge are ever deleted; deleting most of a tenant's users or
assignments is refused without --allow-mass-delete (plan exits 1 when apply would refuse).

${CREDENTIAL_HELP}
`;

export const run: Command = async (argv, io) => {
  const prepared = await preparePlan('plan', argv, io, USAGE, HELP);
  if ('exit' in prepared) return prepared.exit;
  const { plan, values } = prepared;
  const refused = plan.guard.length > 0 && !values.allowMassDelete;
  if (values.json) {
    io.stdout(`${JSON.stringify({ ok: !refused, ...planJson(plan) }, null, 2)}\n`);
  } else {
    io.stdout(formatPlan(plan, io.color));
    if (refused) io.stderr(formatGuard(plan.guard));
  }
  return refused ? EXIT.invalid : EXIT.ok;
};
