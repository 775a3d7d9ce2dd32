/**
 * Fuzzing the doors: every request carries a deadline, so a hang fails the test instead of stalling
 * it, and every property prints how many inputs it tried (`fuzz: <parser>: <N> generated inputs`),
 * so a run's closing note can report the counts. Durations are never asserted: a deadline is far
 * above any answer and far below a frozen process.
 */
import fc from 'fast-check';

/** Every request's deadline: far above what any answer takes, far below a frozen process. */
export const DEADLINE_MS = 10_000;

/** A fresh deadline for one request (its body included when the signal is given to the whole exchange). */
export const deadline = (): AbortSignal => AbortSignal.timeout(DEADLINE_MS);

/** Whether `err` is a deadline that ran out (fetch and node:http say it differently). */
export const isDeadline = (err: unknown): boolean => {
  const name = (err as { name?: unknown })?.name;
  const cause = (err as { cause?: { name?: unknown } })?.cause?.name;
  return name === 'TimeoutError' || name === 'AbortError' || cause === 'TimeoutError' || cause === 'AbortError';
};

/** Runs `exchange`; a deadline that runs out becomes a failure that names the request as a hang. */
export async function answered<T>(what: string, exchange: () => Promise<T>): Promise<T> {
  try {
    return await exchange();
  } catch (err) {
    if (isDeadline(err)) throw new Error(`hang: no answer within ${DEADLINE_MS / 1000} s to ${what.slice(0, 500)}`);
    throw err;
  }
}

/**
 * Checks `check` on `examples`, then on `numRuns` generated inputs (more when a failure is shrunk),
 * and prints the count.
 * Each input starts after a turn of the event loop, so a test timeout also interrupts a synchronous
 * parser that runs away on one input (it fails at the next input instead of after all of them).
 */
export async function fuzz<T>(
  parser: string, arb: fc.Arbitrary<T>, check: (input: T) => Promise<void> | void, numRuns: number,
  /** Inputs tried first, every run: the bugs fuzzing found, kept as regressions. */
  examples: readonly NoInfer<T>[] = [],
): Promise<number> {
  let inputs = 0;
  try {
    await fc.assert(
      fc.asyncProperty(arb, async (input) => {
        inputs++;
        await new Promise((resolve) => setImmediate(resolve));
        await check(input);
      }),
      { numRuns, examples: examples.map((e) => [e] as [T]) },
    );
  } finally {
    console.log(`fuzz: ${parser}: ${inputs} generated inputs`);
  }
  return inputs;
}

/** A stack trace in an answer (a V8 frame line, or a module URL of ours). */
export const STACK_TRACE = /\n {4}at |\bat (?:file:\/\/\/|node:internal\/)/;
