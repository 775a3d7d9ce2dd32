/**
 * A bench's setup steps (provisioning calls, a server start, a warm-up, a model it writes and reads
 * back) check their answers, and a failed one ends the bench: one line on stderr naming the step and
 * the answer, exit code 1. Going on would measure the failure instead: bench/login once registered a
 * redirect URI the contract refuses, ignored the refusal, and timed nothing but `invalid_client`.
 *
 * A step throws SetupFailed out of the bench's own try/finally (which stops its server and removes its
 * files); importing this module installs the handler that prints it and exits.
 */

export class SetupFailed extends Error {
  override readonly name = 'SetupFailed';
}

/** Throws SetupFailed naming the step unless `ok`. */
export function setupCheck(ok: boolean, step: string, answer: string): asserts ok {
  if (!ok) throw new SetupFailed(`${step}: ${answer}`);
}

/** Runs a setup step; whatever it throws becomes SetupFailed naming the step. */
export async function setupStep<T>(step: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SetupFailed) throw err;
    throw new SetupFailed(`${step}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// A setup failure says what failed in its message; its stack would only show this bench's own lines.
process.on('uncaughtException', (err) => {
  process.stderr.write(err instanceof SetupFailed ? `bench stopped, a setup step failed: ${err.message}\n` : `${err.stack ?? String(err)}\n`);
  process.exit(1);
});
