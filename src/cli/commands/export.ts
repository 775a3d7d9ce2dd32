/**
 * `idforge export <tenant> --data-dir D [--out FILE]`: the live tenant as a model file, so a tenant
 * made in the console (or through the admin API) can move into Git: export, validate, then
 * `idforge plan` shows what apply would still change (nothing, for a tenant made by the console).
 *
 * Read through the admin API only (the one typed client). What the server cannot give back is said
 * in comments beside the values (see src/generators/from-live.ts): passwords and client secrets are
 * never exported. The file is checked with the model's own validation before the command ends.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AdminApiError, AdminClient, readLiveTenant } from '../../admin-client/index.ts';
import { type ServerAddress } from '../../contract/index.ts';
import { modelFileOfLive, modelYaml } from '../../generators/index.ts';
import { formatProblems, validateSources } from '../../schema/index.ts';
import { EXIT, UsageError, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { oneTenant } from '../_tenant-arg.ts';

const USAGE = 'usage: idforge export <tenant> --data-dir <server data dir> [--out <file>]';
const HELP = `${USAGE}

Writes the live tenant (its scopes, sign-in policy, applications, users and assignments) as a model
file, to <file> or standard output, and checks it as 'idforge validate' would. Passwords and client
secrets are never exported (the server keeps only hashes); values the server does not keep (a
proxy's upstream, an api's routes) are filled in and marked with a comment. The client secrets the
console showed when it made each confidential application belong in the state file
(.idforge/state.json next to the model, or --state for plan and apply); without them, apply replaces
those secrets.

--data-dir reads the bootstrap admin client the server wrote there (admin-credentials.json).
`;

/** The server's public address, from its admin API URL (as the credentials file records it). */
function addressOf(adminUrl: string): ServerAddress {
  const u = new URL(adminUrl);
  return { scheme: u.protocol === 'https:' ? 'https' : 'http', baseDomain: u.hostname, port: u.port === '' ? undefined : Number(u.port) };
}

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(argv, { 'data-dir': { type: 'string' }, out: { type: 'string' } }, USAGE);
  if (values.help) {
    io.stdout(HELP);
    return EXIT.ok;
  }
  const tenant = oneTenant(positionals, USAGE);
  if (values['data-dir'] === undefined) throw new UsageError(`--data-dir is required\n${USAGE}`);
  let text: string;
  let noteCount: number;
  let server: string;
  try {
    const client = await AdminClient.forDataDir(resolve(io.cwd, values['data-dir']));
    server = await client.server();
    const live = await readLiveTenant(client, tenant);
    if (live === undefined) {
      io.stderr(`idforge export: no tenant named '${tenant}' on ${server}\n`);
      return EXIT.invalid;
    }
    const { file, notes } = modelFileOfLive(addressOf((await client.endpoint).adminUrl), live);
    noteCount = notes.length;
    text = modelYaml(file, notes, `Tenant '${tenant}' exported by 'idforge export' from ${server}.\nPasswords and client secrets are never exported; comments mark what the server does not keep.`);
  } catch (err) {
    if (err instanceof AdminApiError) {
      io.stderr(`idforge export: ${err.message}\n`);
      return EXIT.invalid;
    }
    throw err;
  }
  const out = values.out === undefined ? undefined : resolve(io.cwd, values.out);
  const checked = validateSources([{ file: out ?? `${tenant}.yaml`, content: text }]);
  if (out === undefined) io.stdout(text);
  else await writeFile(out, text, { mode: 0o644 });
  if (!checked.ok) {
    io.stderr(`${formatProblems(checked.problems, { color: io.color })}\n\nidforge export: the exported model does not validate (${checked.problems.length} problem${checked.problems.length === 1 ? '' : 's'}): the live tenant holds something the model cannot express; fix the file before using it\n`);
    return EXIT.invalid;
  }
  if (out !== undefined) {
    io.stderr(`wrote ${values.out}: tenant '${tenant}' from ${server}${noteCount > 0 ? `; ${noteCount} comment${noteCount === 1 ? '' : 's'} mark values to check` : ''}\n`);
  }
  return EXIT.ok;
};
