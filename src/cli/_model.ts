/** Load a model for a command and report problems the same way everywhere. */
import { loadModelWithOverlay, type Model } from '../schema/index.ts';
import { formatProblems, type Problem } from '../schema/problems.ts';
import type { CliIo } from '../command/io.ts';

export function reportProblems(io: CliIo, problems: readonly Problem[], json: boolean): void {
  if (json) {
    io.stdout(`${JSON.stringify({ ok: false, problems }, null, 2)}\n`);
    return;
  }
  io.stderr(`${formatProblems(problems, { color: io.color })}\n`);
  const n = problems.length;
  io.stderr(`\n${n} problem${n === 1 ? '' : 's'} found.\n`);
}

/** The model (with an environment's overlay, when given), or undefined after the problems were reported. */
export async function loadForCommand(io: CliIo, paths: readonly string[], json: boolean, overlay?: string): Promise<Model | undefined> {
  const result = await loadModelWithOverlay(paths, overlay);
  if (!result.ok) {
    reportProblems(io, result.problems, json);
    return undefined;
  }
  return result.model;
}
