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
import { MANAGED_BY, adminPaths, type AdminResourceKind, type PlanStep } from '../../schema/admin-api.ts';
import { adminBaseUrl, endpointUrl, type ServerAddress } from '../../schema/urls.ts';
import type { Model } from '../../schema/model.ts';
import { compilePlan } from '../../generators/index.ts';
import { ADMIN_AUDIENCE, ADMIN_SCOPE, getAdminToken, localhostFetch, readAdminCredentials } from '../../server/index.ts';
import { EXIT, UsageError, type CliIo, type Command } from '../_io.ts';
import { parseCommandArgs } from '../_args.ts';
import { loadForCommand, reportProblems } from '../_model.ts';
import { DEFAULT_STATE_FILE, StateFileError, resolvePasswords, resolveSecrets } from '../_state.ts';

export type ChangeOp = 'create' | 'update' | 'delete';

export interface PlannedChange {
  readonly op: ChangeOp | 'unchanged';
  readonly kind: AdminResourceKind;
  readonly path: string;
  /** Human name: `acme`, `acme/portal`, `acme/u-alice`, `acme/portal/u-alice`. */
  readonly name: string;
  /** Changed fields (updates). */
  readonly fields: readonly string[];
  /** The PUT to send (create/update). */
  readonly step?: PlanStep;
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

export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';
}

/** An authenticated admin API session against the model's server. */
export interface AdminSession {
  readonly base: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export const CREDENTIAL_HELP = `Admin credentials: --data-dir <server data dir> reads the bootstrap client the server wrote
there (admin-credentials.json); otherwise set IDFORGE_ADMIN_CLIENT_ID and IDFORGE_ADMIN_CLIENT_SECRET
(a client of the server's 'system' tenant allowed the 'admin' scope).`;

export async function connect(addr: ServerAddress, dataDir: string | undefined, io: CliIo): Promise<AdminSession> {
  let clientId: string | undefined;
  let clientSecret: string | undefined;
  if (dataDir !== undefined) {
    try {
      ({ clientId, clientSecret } = readAdminCredentials(resolve(io.cwd, dataDir)));
    } catch (err) {
      throw new AdminApiError(`cannot read admin credentials from ${dataDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} (has the server started with this --data-dir?)`);
    }
  } else {
    clientId = io.env.IDFORGE_ADMIN_CLIENT_ID;
    clientSecret = io.env.IDFORGE_ADMIN_CLIENT_SECRET;
  }
  if (!clientId || !clientSecret) throw new UsageError(`no admin credentials.\n${CREDENTIAL_HELP}`);
  const tokenEndpoint = endpointUrl(addr, 'system', 'token');
  let token: string;
  try {
    token = await getAdminToken({ clientId, clientSecret, tokenEndpoint, resource: ADMIN_AUDIENCE, scope: ADMIN_SCOPE });
  } catch (err) {
    throw new AdminApiError(`cannot get an admin token from ${tokenEndpoint}: ${(err as Error).message.replace(/^admin token request to \S+ failed: /, '')}`);
  }
  const base = adminBaseUrl(addr).slice(0, -adminPaths.base.length);
  return {
    base,
    async call(method, path, body) {
      let res: Response;
      try {
        res = await localhostFetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        throw new AdminApiError(`cannot reach the server at ${base}: ${(err as Error).message}`);
      }
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed };
    },
  };
}

function fail(method: string, path: string, r: { status: number; body: any }): never {
  const detail = r.body && typeof r.body === 'object' ? `${r.body.error}: ${r.body.message}${r.body.path ? ` (at ${r.body.path})` : ''}` : String(r.body);
  throw new AdminApiError(`${method} ${path} → ${r.status} ${detail}`);
}

async function listAll(session: AdminSession, path: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `${path}?limit=500${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const r = await session.call('GET', q);
    if (r.status === 404) return items;
    if (r.status !== 200) fail('GET', q, r);
    items.push(...r.body.items);
    cursor = r.body.nextCursor;
  } while (cursor !== null);
  return items;
}

export const nameOf = (path: string) =>
  path.replace(`${adminPaths.base}/tenants/`, '').replace('/applications/', '/').replace('/users/', '/').replace('/assignments/', '/').split('/').map(decodeURIComponent).join('/');

const tenantPathOf = (path: string) => path.split('/').slice(0, 5).join('/');

/**
 * Dry-runs every PUT; writes nothing. A step whose dependencies this same plan creates (a new
 * tenant's applications, an assignment of a new user) cannot be judged by the server yet: it is a
 * create when the object does not exist, else an update whose fields show after apply. Any other
 * refusal (a clashing clientId, an invalid body) would stop apply halfway, so it fails the plan.
 */
export async function dryRunPuts(session: AdminSession, steps: readonly PlanStep[]): Promise<PlannedChange[]> {
  const changes: PlannedChange[] = [];
  const creating = new Set<string>();
  /** Steps that will have changed the server by the time apply reaches later steps. */
  const applying: PlanStep[] = [];
  for (const step of steps) {
    if (step.op !== 'put') continue;
    const tenantPath = tenantPathOf(step.path);
    const base = { kind: step.kind, path: step.path, name: nameOf(step.path), step };
    if (creating.has(tenantPath)) {
      changes.push({ ...base, op: 'create', fields: [] });
      continue;
    }
    const r = await session.call('PUT', `${step.path}?dryRun=true`, step.body);
    if (r.status === 200 || r.status === 201) {
      const outcome = r.body.outcome as 'created' | 'updated' | 'unchanged';
      const op = outcome === 'created' ? 'create' : outcome === 'updated' ? 'update' : 'unchanged';
      if (op === 'create') creating.add(step.path);
      if (op !== 'unchanged') applying.push(step);
      changes.push({ ...base, op, fields: outcome === 'updated' ? r.body.changes : [] });
      continue;
    }
    if (explainedByPlan(step, r, creating, applying)) {
      const exists = (await session.call('GET', step.path)).status === 200;
      changes.push({ ...base, op: exists ? 'update' : 'create', fields: exists ? ['(depends on objects this plan creates)'] : [] });
      if (!exists) creating.add(step.path);
      applying.push(step);
      continue;
    }
    fail('PUT', step.path, r);
  }
  return changes;
}

/**
 * Whether a dry-run refusal only says the server does not hold yet what earlier steps of this plan
 * will put there, so apply, which runs those steps first, will succeed: a parent the plan creates
 * (404), an audience naming an api the plan creates or changes (400 at `audience.N`), a scope that
 * the plan adds to the tenant or to an api of the audience (400 at `scopes.N`). Nothing else: a 409
 * (clientId, identifier or email taken by an object outside the model) stays a 409 after apply.
 */
function explainedByPlan(step: PlanStep & { op: 'put' }, r: { status: number; body: any }, creating: ReadonlySet<string>, applying: readonly PlanStep[]): boolean {
  if (r.status === 404) {
    const parts = step.path.split('/');
    // An assignment's parents are its application and its user; the tenant's case never gets here.
    const parents = step.kind === 'assignment' ? [parts.slice(0, 7).join('/'), [...parts.slice(0, 5), 'users', parts[8]].join('/')] : [];
    return parents.some((p) => creating.has(p));
  }
  if (r.status !== 400 || step.kind !== 'application' || step.body.kind === 'api') return false;
  const body = step.body;
  const tenantPath = tenantPathOf(step.path);
  const apis = applying.flatMap((s) => (s.op === 'put' && s.kind === 'application' && s.body.kind === 'api' && tenantPathOf(s.path) === tenantPath ? [s.body] : []));
  const at = /^(audience|scopes)\.(\d+)$/.exec(typeof r.body?.path === 'string' ? r.body.path : '');
  if (at?.[1] === 'audience') {
    const aud = body.audience[Number(at[2])];
    return apis.some((api) => api.identifier === aud);
  }
  if (at?.[1] === 'scopes') {
    const scope = body.scopes[Number(at[2])];
    const tenant = applying.find((s) => s.op === 'put' && s.kind === 'tenant' && s.path === tenantPath);
    return (tenant?.op === 'put' && tenant.kind === 'tenant' && tenant.body.scopes.some((sc) => sc.name === scope)) ||
      apis.some((api) => body.audience.includes(api.identifier) && api.scopes.includes(scope!));
  }
  return false;
}

/** Managed live objects the model no longer has, and the mass-deletion guard's verdict. */
export async function plannedDeletions(session: AdminSession, steps: readonly PlanStep[]): Promise<{ deletions: PlannedChange[]; guard: GuardViolation[] }> {
  // Deletions: managed live objects the model no longer has; children first, tenants last.
  const wanted = new Set(steps.map((s) => s.path));
  const del = (kind: AdminResourceKind, path: string) => ({ op: 'delete' as const, kind, path, name: nameOf(path), fields: [] });
  const deletions: PlannedChange[][] = [[], [], [], [], []];
  const guard: GuardViolation[] = [];
  const tenants = await listAll(session, `${adminPaths.base}/tenants`);
  for (const t of tenants) {
    const tenantPath = adminPaths.tenant(t.name);
    const tenantGoes = !wanted.has(tenantPath) && t.managedBy === MANAGED_BY;
    if (!wanted.has(tenantPath) && !tenantGoes) continue; // not ours, or not in this model at all
    const apps = await listAll(session, `${tenantPath}/applications`);
    const users = await listAll(session, `${tenantPath}/users`);
    let assignmentCount = 0;
    let assignmentDeletes = 0;
    let userDeletes = 0;
    for (const a of apps) {
      const appPath = adminPaths.application(t.name, a.name);
      if (a.kind !== 'api') {
        for (const x of await listAll(session, `${appPath}/assignments`)) {
          assignmentCount++;
          const p = adminPaths.assignment(t.name, a.name, x.userId);
          if (tenantGoes || (!wanted.has(p) && x.managedBy === MANAGED_BY)) {
            assignmentDeletes++;
            if (!tenantGoes) deletions[0]!.push(del('assignment', p));
          }
        }
      }
      if (!tenantGoes && !wanted.has(appPath) && a.managedBy === MANAGED_BY) deletions[a.kind === 'api' ? 3 : 2]!.push(del('application', appPath));
    }
    for (const u of users) {
      const p = adminPaths.user(t.name, u.id);
      if (tenantGoes || (!wanted.has(p) && u.managedBy === MANAGED_BY)) {
        userDeletes++;
        if (!tenantGoes) deletions[1]!.push(del('user', p));
      }
    }
    if (tenantGoes) deletions[4]!.push(del('tenant', tenantPath));
    // The guard: deleting most (more than half) of a tenant's users or assignments is refused
    // unless asked for, since a mistake there (a file left out of the model) locks people out.
    if (userDeletes > 0 && userDeletes * 2 > users.length) guard.push({ tenant: t.name, kind: 'user', deleting: userDeletes, existing: users.length });
    if (assignmentDeletes > 0 && assignmentDeletes * 2 > assignmentCount) {
      guard.push({ tenant: t.name, kind: 'assignment', deleting: assignmentDeletes, existing: assignmentCount });
    }
  }
  return { deletions: deletions.flat(), guard };
}

export async function planAgainst(session: AdminSession, steps: readonly PlanStep[]): Promise<RemotePlan> {
  const { deletions, guard } = await plannedDeletions(session, steps);
  return { server: session.base, changes: [...(await dryRunPuts(session, steps)), ...deletions], guard };
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
): Promise<{ exit: number } | { plan: RemotePlan; session: AdminSession; steps: readonly PlanStep[]; values: { json: boolean; allowMassDelete: boolean } }> {
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
    const session = await connect(model.server, values['data-dir'], io);
    // apply does not dry-run: it PUTs every step and the server reports what changed.
    let plan: RemotePlan;
    if (command === 'plan') plan = await planAgainst(session, steps);
    else {
      const { deletions, guard } = await plannedDeletions(session, steps);
      plan = { server: session.base, changes: deletions, guard };
    }
    return { plan, session, steps, values: { json, allowMassDelete: values['allow-mass-delete'] === true } };
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
    changes: plan.changes.filter((c) => c.op !== 'unchanged').map(({ op, kind, path, name, fields }) => ({ op, kind, name, path, fields })),
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
