/**
 * `idforge apply`: make the live server match the model. Computes the same plan as `idforge plan`
 * (server-side dry runs), refuses mass deletions without --allow-mass-delete, then sends only the
 * PUTs that change something and the DELETEs, in dependency order. Every call is idempotent, so
 * an interrupted apply is finished by running it again; a second apply changes nothing.
 */
import { refOf, stepName } from '../../contract/index.ts';
import { EXIT, type Command } from '../../command/io.ts';
import { AdminApiError, CREDENTIAL_HELP, formatGuard, formatPlan, planJson, preparePlan, type PlannedChange } from './plan.ts';

const USAGE = 'usage: idforge apply <model file or directory>... (--data-dir <server data dir> | env IDFORGE_ADMIN_CLIENT_ID/SECRET) [--state <file>] [--json] [--allow-mass-delete]';
const HELP = `${USAGE}

Makes the server named in the model's 'server' section match the model: creates and updates
what differs, deletes objects marked managedBy: idforge that the model no longer has.
Deleting most of a tenant's users or assignments is refused without --allow-mass-delete.
Initial user passwords come from the environment variables the model names.

${CREDENTIAL_HELP}
`;

export const run: Command = async (argv, io) => {
  const prepared = await preparePlan('apply', argv, io, USAGE, HELP);
  if ('exit' in prepared) return prepared.exit;
  const { plan, client, steps, values } = prepared;
  // The guard is judged before the first write, so a refused apply changes nothing.
  if (plan.guard.length > 0 && !values.allowMassDelete) {
    if (values.json) io.stdout(`${JSON.stringify({ ok: false, applied: false, ...planJson(plan) }, null, 2)}\n`);
    else {
      io.stdout(formatPlan(plan, io.color));
      io.stderr(formatGuard(plan.guard));
    }
    return EXIT.invalid;
  }
  const done: PlannedChange[] = [];
  const secrets: { name: string; clientSecret: string }[] = [];
  try {
    // Every PUT in dependency order; the server writes only what differs and says what it did.
    for (const step of steps) {
      if (step.op !== 'put') continue;
      const r = await client.putStep(step);
      done.push({
        op: r.outcome === 'created' ? 'create' : r.outcome === 'updated' ? 'update' : 'unchanged',
        kind: step.kind, ref: refOf(step), name: stepName(step), fields: r.outcome === 'updated' ? r.changes : [],
      });
      if (typeof r.clientSecret === 'string') secrets.push({ name: stepName(step), clientSecret: r.clientSecret });
    }
    // A delete of what is already gone (e.g. with its tenant) succeeds: the desired state holds.
    for (const c of plan.changes.filter((x) => x.op === 'delete')) {
      await client.removeRef(c.ref);
      done.push(c);
    }
  } catch (err) {
    if (!(err instanceof AdminApiError)) throw err;
    if (values.json) io.stdout(`${JSON.stringify({ ok: false, applied: false, error: err.message }, null, 2)}\n`);
    else io.stderr(`idforge apply: ${err.message}\nCalls before this one were applied; every call is idempotent, so run apply again once fixed.\n`);
    return EXIT.invalid;
  }
  const result = { ...plan, changes: done };
  if (values.json) {
    io.stdout(`${JSON.stringify({ ok: true, applied: true, ...planJson(result), ...(secrets.length > 0 ? { generatedSecrets: secrets } : {}) }, null, 2)}\n`);
    return EXIT.ok;
  }
  io.stdout(formatPlan(result, io.color).replace(/^Plan: /m, 'Applied: ').replace(/ to create, /, ' created, ').replace(/ to change, /, ' changed, ').replace(/ to delete, /, ' deleted, '));
  for (const x of secrets) io.stdout(`  client secret made by the server for ${x.name}: ${x.clientSecret} (shown once)\n`);
  return EXIT.ok;
};
