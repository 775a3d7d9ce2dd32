/**
 * ClientConfigs: the generated client configurations, written as files under one directory in the
 * layout of `idforge compile --out` (DIR/<tenant>/<app>/...), where `idforge scaffold` and people
 * find them.
 *
 * A resource rather than a side effect of the program so that a preview writes nothing, `destroy`
 * removes what `up` wrote, and `refresh` notices a file edited or deleted by hand. The contents hold
 * client, cookie and session secrets, so the `files` input is a secret and files are written 0600.
 */
import type * as pulumi from '@pulumi/pulumi';
// From its own module, not the package's index, which the provider host need not load (_load.ts).
import { output as pulumiOutput, secret as pulumiSecret } from '@pulumi/pulumi/output.js';
import { z } from 'zod';
import { changedKeys, checkWith, isUnknown, jsonEqual, type ProviderContext } from './_common.ts';
import { _DynamicResource } from './_load.ts';
import { packValue, sameJsonText, unpackValue } from './_packed.ts';

export interface ClientConfigsArgs {
  /** Absolute directory. */
  readonly dir: pulumi.Input<string>;
  /** Relative path (with `/`) → file content. Pass as a secret. */
  readonly files: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

export interface ClientConfigsInputs {
  readonly dir: string;
  /**
   * On the wire: the packed canonical JSON of every file by path, one string (_packed.ts; a state from
   * before: plain JSON, or the object; a caller of the provider: the object). Why one string: the
   * 100k-user model has 17,500 client files, ~9 MB, and as an object each was a value that the
   * program, the engine and the provider host converted, copied and compared on every preview
   * (README, "Scale"); packed, 14 MB of state became about 1; a secret, so a preview never shows
   * them anyway.
   */
  readonly files: Record<string, string> | string;
}
/** Under idforge's provider host, the outputs leave `files` to the inputs (slimOutputs); else they are the inputs. */
export type ClientConfigsOutputs = Omit<ClientConfigsInputs, 'files'> & { readonly files?: ClientConfigsInputs['files'] };

/**
 * Pure: the outputs as the state keeps them under idforge's host (the only one that passes a context,
 * and it hands the inputs back as `ctx.inputs`): without the files. Why: the files are the inputs
 * already (12.6 MB for the 100k-user model), and outputs that repeated them were a third of the
 * state, encrypted, written, read back and copied by the engine on every command (README, "Scale").
 */
const outputsFor = (i: ClientConfigsInputs, ctx: ProviderContext | undefined): ClientConfigsOutputs => {
  if (ctx === undefined) return i;
  const { files: _, ...rest } = i;
  return rest;
};

/** Outputs with the files taken from the inputs when they leave them out (outputs of before hold them). */
const withFiles = (outs: ClientConfigsOutputs, ctx: ProviderContext | undefined): ClientConfigsInputs =>
  (outs.files !== undefined ? outs : { ...outs, files: (ctx?.inputs?.files as ClientConfigsInputs['files'] | undefined) ?? {} }) as ClientConfigsInputs;

const relPath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith('/') && !p.split('/').some((s) => s === '' || s === '.' || s === '..'), {
    error: 'must be a relative path inside the directory, without "." or ".." segments',
  });

const ClientConfigsInputsSchema = z.strictObject({
  dir: z.string().refine((d) => d.startsWith('/'), { error: 'must be an absolute path' }),
  files: z.record(relPath, z.string()),
});

/**
 * The last packed strings this process unpacked, and what they hold: a check unpacks the state's files
 * and the program's, and the update that follows gets the same two strings (~0.1 s for the 100k-user
 * model's 17,500 files, on the critical path of the up: the client files are its last resource).
 * Read only: no caller changes what filesOf gives.
 */
const unpacked = new Map<string, Record<string, string>>();

/** The files by path, from the wire (one JSON string) or from an object. */
export const filesOf = (files: ClientConfigsInputs['files'] | undefined): Record<string, string> => {
  if (typeof files !== 'string') return files ?? {};
  let out = unpacked.get(files);
  if (out === undefined) {
    out = unpackValue(files) as Record<string, string>;
    if (unpacked.size >= 2) unpacked.delete(unpacked.keys().next().value!);
    unpacked.set(files, out);
  }
  return out;
};

/** A check's answer with `files` as given (the packed string, or the unknown value), unless it failed. */
function keepFiles(r: pulumi.dynamic.CheckResult<ClientConfigsInputs & Record<string, unknown>>, files: unknown): pulumi.dynamic.CheckResult<ClientConfigsInputs> {
  if (r.inputs === undefined || (r.failures?.length ?? 0) > 0) return r as pulumi.dynamic.CheckResult<ClientConfigsInputs>;
  return { ...r, inputs: { ...r.inputs, files } as ClientConfigsInputs };
}

/** The files as the wire carries them: one packed JSON string (unknown in a preview stays unknown). */
const packFiles = (files: unknown): unknown => (typeof files === 'string' || isUnknown(files) ? files : packValue(files));

/**
 * Writes and removes files so that `dir` holds `news` instead of `olds`; pure of Pulumi. A file is
 * written when its content is not the one the state holds (`olds`) or it is missing on disk (deleted
 * by hand, a fresh checkout); a file edited by hand is what `refresh` finds (read compares contents),
 * and the up after it writes it again. Why not read every file to compare: the 100k-user model has
 * 17,500 of them, and reading them all was most of the provider host's work in an `up` that changed
 * one application (README, "Scale"); one walk of the directory says which are missing.
 */
export async function syncFiles(dir: string, olds: Record<string, string>, news: Record<string, string>): Promise<void> {
  const fs = await import('node:fs/promises');
  const path = await import('node:path');
  const { readdirSync } = await import('node:fs');
  // One synchronous walk, on the entries' types: the promise form makes a promise per directory, and
  // readdir's own `recursive` stats every entry to know whether to go in. For the 100k-user model's
  // 10,500 directories: 0.9 to 1 s, then 0.27 s, now 0.1 s, on the critical path of every up (the
  // client files are the stack's last resource). A directory that cannot be read holds nothing here.
  const present = new Set<string>();
  const walk = (at: string, rel: string): void => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(at, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(path.join(at, e.name), r);
      else present.add(r);
    }
  };
  walk(dir, '');
  for (const [rel, content] of Object.entries(news)) {
    if (olds[rel] === content && present.has(rel)) continue;
    const file = path.join(dir, rel);
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    // Write beside and rename, so a reader never sees half a config.
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, content, { mode: 0o600 });
    await fs.rename(tmp, file);
  }
  for (const rel of Object.keys(olds)) {
    if (rel in news) continue;
    const file = path.join(dir, rel);
    await fs.rm(file, { force: true });
    // Remove directories this left empty, up to (not including) dir.
    for (let d = path.dirname(file); d.startsWith(dir + path.sep); d = path.dirname(d)) {
      const left = await fs.readdir(d).catch(() => ['?']);
      if (left.length > 0) break;
      await fs.rmdir(d).catch(() => undefined);
    }
  }
}

/**
 * The provider. The state's shell (_load.ts) imports this module and calls `clientConfigsProvider` by name
 * in the provider process: renaming it would break refresh and destroy of existing stacks.
 */
export const clientConfigsProvider: Required<
  Omit<pulumi.dynamic.ResourceProvider<ClientConfigsInputs, ClientConfigsOutputs>, 'configure'>
> = {
  async check(olds, news) {
    const schema = ClientConfigsInputsSchema as z.ZodType<ClientConfigsInputs & Record<string, unknown>>;
    // What is judged: the object as given; of a packed string (the program's form) only the paths the
    // stack does not hold yet, and the string goes on as it came. Why: the 100k-user model has 17,500
    // files, and judging every path and packing them all again when one application changed was on
    // the critical path of the up (the client files are its last resource).
    const given = news.files as unknown;
    let judged: Record<string, string> = {};
    if (typeof given === 'string' && !isUnknown(given)) {
      const held = olds?.files;
      if (!(typeof held === 'string' && sameJsonText(held, given))) {
        const before = filesOf(held);
        judged = Object.fromEntries(Object.entries(filesOf(given)).filter(([rel]) => !Object.hasOwn(before, rel)));
      }
    } else if (!isUnknown(given)) judged = given as Record<string, string>;
    const r = checkWith(schema, { ...news, files: judged } as never);
    return keepFiles(r, typeof given === 'string' ? given : r.inputs?.files);
  },
  async diff(_id, outs, news, ctx?: ProviderContext) {
    const olds = withFiles(outs, ctx);
    const replaces = changedKeys(['dir'], { ...olds }, { ...news });
    const same = typeof olds.files === 'string' && typeof news.files === 'string' ? sameJsonText(olds.files, news.files) : jsonEqual(filesOf(olds.files), filesOf(news.files));
    return { changes: replaces.length > 0 || !same, replaces };
  },
  async create(inputs, ctx?: ProviderContext) {
    await syncFiles(inputs.dir, {}, filesOf(inputs.files));
    return { id: inputs.dir, outs: outputsFor(inputs, ctx) };
  },
  async read(id, props, ctx?: ProviderContext) {
    const fs = await import('node:fs/promises');
    const path = await import('node:path');
    const old = withFiles(props ?? ({} as ClientConfigsOutputs), ctx);
    const files: Record<string, string> = {};
    for (const rel of Object.keys(filesOf(old.files))) {
      const content = await fs.readFile(path.join(old.dir, rel), 'utf8').catch(() => undefined);
      if (content !== undefined) files[rel] = content;
    }
    // In the shape the state had it; the files found on disk are the inputs the next diff compares the model with.
    const now = { ...old, files: typeof old.files === 'string' ? packFiles(files) as string : files };
    return { id, props: outputsFor(now, ctx), inputs: now };
  },
  async update(_id, outs, news, ctx?: ProviderContext) {
    await syncFiles(news.dir, filesOf(withFiles(outs, ctx).files), filesOf(news.files));
    return { outs: outputsFor(news, ctx) };
  },
  async delete(_id, props, ctx?: ProviderContext) {
    const old = withFiles(props, ctx);
    await syncFiles(old.dir, filesOf(old.files), {});
  },
};

export class ClientConfigs extends _DynamicResource {
  declare readonly dir: pulumi.Output<string>;

  constructor(name: string, args: ClientConfigsArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      import.meta.url,
      'clientConfigsProvider',
      'ClientConfigs',
      name,
      // One packed JSON string on the wire (ClientConfigsInputs.files).
      { ...args, files: pulumiSecret(pulumiOutput(args.files).apply(packFiles)) },
      { ...opts, additionalSecretOutputs: ['files'] },
    );
  }
}
