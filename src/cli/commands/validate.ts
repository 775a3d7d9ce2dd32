import { EXIT, UsageError, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { loadForCommand } from '../_model.ts';
import { counted } from '../../contract/index.ts';

const USAGE = 'usage: idforge validate <model file or directory>... [--overlay <environment overlay>] [--json]';

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(argv, { json: { type: 'boolean' }, overlay: { type: 'string' } }, USAGE);
  if (values.help) {
    io.stdout(`${USAGE}\n\nChecks the model (with an environment's overlay merged over it, when given) and reports every\nproblem as file:line:col  message  (at path).\nExit 0 valid, 1 invalid, 2 usage error.\n`);
    return EXIT.ok;
  }
  if (positionals.length === 0) throw new UsageError(`no model given\n${USAGE}`);
  const json = values.json === true;
  const model = await loadForCommand(io, positionals, json, values.overlay);
  if (model === undefined) return EXIT.invalid;
  const { tenants } = model;
  const count = (f: (t: (typeof tenants)[number]) => number) => tenants.reduce((n, t) => n + f(t), 0);
  const summary = {
    tenants: tenants.length,
    applications: count((t) => t.applications.length),
    users: count((t) => t.users.length),
    assignments: count((t) => t.assignments.length),
  };
  if (json) io.stdout(`${JSON.stringify({ ok: true, problems: [], summary }, null, 2)}\n`);
  else io.stdout(`valid: ${counted(summary.tenants, 'tenant')}, ${counted(summary.applications, 'application')}, ${counted(summary.users, 'user')}, ${counted(summary.assignments, 'assignment')}\n`);
  return EXIT.ok;
};
