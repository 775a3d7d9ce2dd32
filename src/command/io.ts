/**
 * What a command may touch of the outside world, passed in so commands are testable in-process:
 * tests give buffers and a fake environment, the bin gives the real process. Shared by the idforge
 * CLI (src/cli) and the server's own `serve` command (src/server/serve-command.ts).
 */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
  readonly color: boolean;
  /** stderr is a terminal: progress lines may be drawn there (absent: no). */
  readonly interactive?: boolean;
}

export function processIo(): CliIo {
  const env = process.env;
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env,
    cwd: process.cwd(),
    color: !noColor && process.stdout.isTTY === true && env.TERM !== 'dumb',
    interactive: process.stderr.isTTY === true && env.TERM !== 'dumb' && env.CI !== 'true',
  };
}

/** Exit codes: 0 ok, 1 the input is wrong (invalid model, failed apply), 2 usage error. */
export const EXIT = { ok: 0, invalid: 1, usage: 2 } as const;

/** A usage mistake: printed as one line with the command's usage, exit 2, never a stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type Command = (argv: readonly string[], io: CliIo) => Promise<number>;
