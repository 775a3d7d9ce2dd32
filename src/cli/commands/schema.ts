import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { allJsonSchemas } from '../../schema/all-schemas.ts';
import { EXIT, UsageError, type Command } from '../../command/io.ts';
import { parseCommandArgs } from '../../command/args.ts';
import { counted } from '../../contract/index.ts';

const USAGE = 'usage: idforge schema [--name <model|spa-config|api-config|grant-config|plan>] [--out <dir>]';

export const run: Command = async (argv, io) => {
  const { values, positionals } = parseCommandArgs(argv, { name: { type: 'string' }, out: { type: 'string' } }, USAGE);
  if (values.help) {
    io.stdout(`${USAGE}\n\nPrints the JSON Schema of the model (default) or of a generated artifact;\n--out writes all of them as <name>.schema.json files.\n`);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'\n${USAGE}`);
  const schemas = allJsonSchemas();
  if (values.out !== undefined) {
    const dir = resolve(io.cwd, values.out);
    await mkdir(dir, { recursive: true });
    for (const [file, text] of Object.entries(schemas)) await writeFile(join(dir, file), text);
    io.stdout(`wrote ${counted(Object.keys(schemas).length, 'schema')} to ${values.out}\n`);
    return EXIT.ok;
  }
  const file = `${values.name ?? 'idforge-model'}.schema.json`.replace(/^model\./, 'idforge-model.');
  const text = schemas[file];
  if (text === undefined) throw new UsageError(`unknown schema '${values.name}'\n${USAGE}`);
  io.stdout(text);
  return EXIT.ok;
};
