/** Run the CLI in-process with captured output. */
import { main } from '../../src/cli/main.ts';

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runCli(argv: string[], opts: { cwd?: string; env?: Record<string, string>; color?: boolean; interactive?: boolean } = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: opts.env ?? {},
    cwd: opts.cwd ?? process.cwd(),
    color: opts.color ?? false,
    interactive: opts.interactive ?? false,
  });
  return { code, stdout, stderr };
}
