/**
 * `idforge apply`: make the live server match the model. Computes the same plan as `idforge plan`
 * (a dry run of one tenant batch per tenant), refuses mass deletions without --allow-mass-delete
 * and refuses to start when the server would refuse any entry, then sends the batch of each tenant
 * that has something to change (each one transaction on the server) and deletes the managed
 * tenants the model left out. Every batch is idempotent, so an interrupted apply is finished by
 * running it again; a second apply sends nothing.
 */
import { mapLimit } from '../../admin-client/index.ts';
import { stepName } from '../../contract/index.ts';
import { appKey } from '../../generators/index.ts';
import { batchWithEntrySources, readEntrySources } from '../_entry-sources.ts';
import { newClientSecret, saveAsDeclared, saveClientSecrets, type AsDeclared } from '../_state.ts';
import { EXIT, type Command } from '../../command/io.ts';
import {
  AdminApiError, BATCH_CONCURRENCY, CREDENTIAL_HELP, MANAGER_HELP, MODEL_HELP, batchDigest, batchRefusal, changesFrom, leavesNothingToSay, formatGuard, formatPlan, planJson, preparePlan, progressLine, renameChanges,
} from './plan.ts';

const USAGE = 'usage: idforge apply <model file or directory>... [--overlay <environment overlay>] (--data-dir <server data dir> | env IDFORGE_ADMIN_CLIENT_ID/SECRET) [--manager <name>] [--force-conflicts] [--refresh] [--state <file>] [--json] [--allow-mass-delete] [--allow-delete-console]';
const HELP = `${USAGE}

Makes the server named in the model's 'server' section match the model: creates and updates
what differs, deletes what this manager keeps and the model no longer has.
Deleting most of a tenant's users or assignments is refused without --allow-mass-delete.
Objects made in the admin console are kept unless --allow-delete-console is given.
A client apply creates gets a secret made here, kept in the state file (--state) before it is sent.

${MANAGER_HELP}

${MODEL_HELP}

${CREDENTIAL_HELP}
`;

export const run: Command = async (argv, io) => {
  const prepared = await preparePlan('apply', argv, io, USAGE, HELP);
  if ('exit' in prepared) return prepared.exit;
  const { plan, client, values, stateFile, movedSecrets, paths } = prepared;
  // The guard is judged before the first write, so a refused apply changes nothing.
  if (plan.guard.length > 0 && !values.allowMassDelete) {
    if (values.json) io.stdout(`${JSON.stringify({ ok: false, applied: false, stateFile, ...planJson(plan) }, null, 2)}\n`);
    else {
      io.stdout(formatPlan(plan, io.color));
      io.stderr(formatGuard(plan.guard));
    }
    return EXIT.invalid;
  }
  // Clients this apply creates get a secret made here and kept in the state file before anything is
  // sent (compile writes it into their configurations); an existing client keeps the server's.
  const made: { key: string; clientSecret: string }[] = [];
  const tenants = plan.tenants.map((t) => {
    const madeBefore = made.length;
    const created = new Set(t.judged.results.filter((r) => r.kind === 'application' && r.outcome === 'created').map((r) => r.application));
    const applications = (t.batch.applications ?? []).map((a) => {
      if (!created.has(a.name) || (a.body.kind !== 'web' && a.body.kind !== 'proxy') || a.body.clientSecret !== undefined) return a;
      const clientSecret = newClientSecret();
      made.push({ key: appKey(t.tenant, a.name), clientSecret });
      return { ...a, body: { ...a.body, clientSecret } };
    });
    const batch = { ...t.batch, applications };
    // What the next compile gives for the tenant: the secrets made here come from the state file then.
    return { ...t, batch, digest: made.length === madeBefore ? t.digest : batchDigest(t.tenant, batch, t.policy) };
  });
  await saveClientSecrets(stateFile, [...movedSecrets, ...made]);
  const secrets: { name: string; clientSecret: string }[] = [];
  // A webhook declared without a secret gets one from the server: its receiver needs it, and nothing else shows it.
  const hookSecrets: { name: string; webhookSecret: string }[] = [];
  let result;
  try {
    // Only tenants whose dry run found something to do are sent; the server writes what differs.
    const idle = (t: (typeof plan.tenants)[number]) => t.renameFrom === undefined && (t.appRenames ?? []).length === 0 && t.judged.results.every((r) => r.outcome === 'unchanged');
    const toSend = tenants.filter((t) => !idle(t)).length;
    // Each entry the console may propose a change to keeps the lines it was declared on: read for the tenants sent.
    const sources = await readEntrySources(paths, io.cwd, new Set(tenants.filter((t) => !idle(t)).map((t) => t.tenant)));
    const progress = progressLine(io, values.json, 'applying');
    let sent = 0;
    // Each tenant found or left exactly as declared: kept in the state file, so the next plan need not judge it again.
    const asDeclared = new Map<string, AsDeclared>();
    const applied = await mapLimit(tenants, BATCH_CONCURRENCY, async (t) => {
      if (idle(t)) {
        if (t.asDeclared !== undefined) asDeclared.set(t.tenant, t.asDeclared);
        return { tenant: t.tenant, judged: t.judged };
      }
      // A declared rename first: the batch then judges the moved tenant under its new name.
      if (t.renameFrom !== undefined) await client.call('renameTenant', { tenant: t.renameFrom }, { body: { to: t.tenant } });
      // Declared application renames next: each moves with its client id, secret, assignments and tokens.
      for (const r of t.appRenames ?? []) await client.call('renameApplication', { tenant: t.tenant, application: r.from }, { body: { to: r.to } });
      // Asked what else the tenant holds (`undeclared`), in the batch's transaction: to know whether it is left as declared.
      const r = await client.batch(t.tenant, { ...batchWithEntrySources(t.tenant, t.batch, sources), undeclared: true });
      progress.update(++sent, toSend);
      if (r.refused) throw batchRefusal(t.tenant, t.batch, r.results);
      if (leavesNothingToSay(r, plan.manager, t.policy, false)) {
        const objects = r.unchanged + r.results.filter((x) => x.outcome === 'created' || x.outcome === 'updated').length;
        asDeclared.set(t.tenant, { digest: t.digest, revision: r.revision!, objects });
      }
      for (const x of r.results) {
        if (typeof x.clientSecret === 'string') secrets.push({ name: stepName({ kind: 'application', tenant: t.tenant, application: x.application! }), clientSecret: x.clientSecret });
        if (typeof x.webhookSecret === 'string') hookSecrets.push({ name: stepName({ kind: 'webhook', tenant: t.tenant, webhook: x.webhook! }), webhookSecret: x.webhookSecret });
      }

      return { tenant: t.tenant, judged: r };
    });
    // Access the model does not declare (group assignments on its applications), under `unmanaged: remove`.
    const grants = plan.changes.filter((c) => c.op === 'delete' && c.kind === 'group assignment');
    for (const c of grants) await client.removeRef(c.ref);
    // A delete of what is already gone succeeds: the desired state holds.
    const going = plan.changes.filter((c) => c.op === 'delete' && c.kind === 'tenant');
    for (const c of going) await client.removeRef(c.ref);
    progress.done();
    // Only what spares the next plan some requests: a state file that cannot be written is said, not fatal (the server is applied).
    await saveAsDeclared(stateFile, plan.server, asDeclared).catch((err: NodeJS.ErrnoException) => {
      io.stderr(`idforge apply: could not keep in ${stateFile} which tenants this apply left as declared (${err.code ?? err.message}); the next plan judges every tenant\n`);
    });
    const { changes, unchanged } = changesFrom(applied, going.map((c) => ({ tenant: c.ref.tenant, before: { users: 0, assignments: 0 } })));
    result = { ...plan, changes: [...renameChanges(plan.tenants), ...changes, ...grants], unchanged };
  } catch (err) {
    if (!(err instanceof AdminApiError)) throw err;
    if (values.json) io.stdout(`${JSON.stringify({ ok: false, applied: false, error: err.message }, null, 2)}\n`);
    else io.stderr(`idforge apply: ${err.message}\nEach tenant's batch is one transaction, and those sent before this failure were applied; every batch is idempotent, so run apply again once fixed.\n`);
    return EXIT.invalid;
  }
  if (values.json) {
    io.stdout(`${JSON.stringify({ ok: true, applied: true, stateFile, ...planJson(result), ...(secrets.length > 0 ? { generatedSecrets: secrets } : {}), ...(hookSecrets.length > 0 ? { webhookSecrets: hookSecrets } : {}) }, null, 2)}\n`);
    return EXIT.ok;
  }
  io.stdout(formatPlan(result, io.color).replace(/^Plan: /m, 'Applied: ').replace(/ to create, /, ' created, ').replace(/ to change, /, ' changed, ').replace(/ to delete, /, ' deleted, '));
  if (made.length > 0) io.stdout(`  ${made.length} new client secret${made.length === 1 ? '' : 's'} kept in ${stateFile} (idforge compile writes them into the client configurations)\n`);
  for (const x of secrets) io.stdout(`  client secret made by the server for ${x.name}: ${x.clientSecret} (shown once)\n`);
  for (const x of hookSecrets) io.stdout(`  signing secret made by the server for webhook ${x.name}: ${x.webhookSecret} (shown once; declare secret: {env: VAR} to choose it)\n`);
  return EXIT.ok;
};
