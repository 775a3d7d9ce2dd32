/** Argument parsing for commands: node's parseArgs, with its errors turned into usage errors. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './io.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseCommandArgs<O extends Options>(argv: readonly string[], options: O, usageLine: string) {
  try {
    return parseArgs({ args: [...argv], options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  } catch (err) {
    const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(`${msg}\n${usageLine}`);
  }
}
