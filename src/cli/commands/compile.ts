import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { compileArtifacts } from '../../generators/index.ts';
import { EXIT, UsageError, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { loadForCommand } from '../_model.ts';
import { counted } from '../../contract/index.ts';
import { DEFAULT_STATE_FILE, StateFileError, locateStateFile, resolveSecrets, stateLine } from '../_state.ts';

const USAGE = 'usage: idforge compile <model file or directory>... --out <dir> [--overlay <environment overlay>] [--state <file>] [--json]';

/** Lists what idforge wrote, so a later compile removes only its own stale files, never the user's. */
const MANIFEST = '.idforge-manifest.json';

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(
    argv,
    { out: { type: 'string', short: 'o' }, state: { type: 'string' }, overlay: { type: 'string' }, json: { type: 'boolean' } },
    USAGE,
  );
  if (values.help) {
    io.stdout(
      `${USAGE}\n\nWrites <out>/plan.json and <out>/<tenant>/<application>/ client configurations.\n` +
        `Secrets are made once and kept in the state file (--state, else $IDFORGE_STATE, else ${DEFAULT_STATE_FILE} next to the model; mode 0600, git-ignored).\n`,
    );
    return EXIT.ok;
  }
  if (positionals.length === 0) throw new UsageError(`no model given\n${USAGE}`);
  if (values.out === undefined) throw new UsageError(`--out is required\n${USAGE}`);
  const json = values.json === true;
  const model = await loadForCommand(io, positionals, json, values.overlay);
  if (model === undefined) return EXIT.invalid;

  const state = await locateStateFile(positionals, values.state, io.env, io.cwd);
  const stateFile = state.file;
  let secrets;
  try {
    secrets = await resolveSecrets(model, stateFile);
  } catch (err) {
    if (err instanceof StateFileError) {
      io.stderr(`idforge compile: ${err.message}\n`);
      return EXIT.invalid;
    }
    throw err;
  }
  const { artifacts } = compileArtifacts(model, { secrets });

  const outDir = resolve(io.cwd, values.out);
  await mkdir(outDir, { recursive: true });
  const previous = await readFile(join(outDir, MANIFEST), 'utf8')
    .then((t) => (JSON.parse(t) as { files?: unknown }).files)
    .catch(() => undefined);
  const current = new Set(artifacts.map((a) => a.path));
  if (Array.isArray(previous)) {
    for (const f of previous) {
      // Only plain relative paths that idforge itself wrote; a tampered manifest cannot escape.
      if (typeof f === 'string' && !current.has(f) && !f.split('/').includes('..') && !f.startsWith('/')) {
        await rm(join(outDir, f), { force: true });
      }
    }
  }
  for (const a of artifacts) {
    const target = join(outDir, a.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, a.content, { mode: a.secret ? 0o600 : 0o644 });
    await chmod(target, a.secret ? 0o600 : 0o644);
  }
  await writeFile(join(outDir, MANIFEST), `${JSON.stringify({ files: [...current] }, null, 2)}\n`);

  if (json) {
    io.stdout(`${JSON.stringify({ ok: true, out: outDir, stateFile, files: artifacts.map((a) => ({ path: a.path, secret: a.secret })) }, null, 2)}\n`);
  } else {
    io.stdout(stateLine(state));
    io.stdout(`wrote ${counted(artifacts.length, 'file')} to ${values.out}\n`);
    for (const a of artifacts) io.stdout(`  ${a.path}${a.secret ? '  (secret, mode 0600)' : ''}\n`);
  }
  return EXIT.ok;
};
