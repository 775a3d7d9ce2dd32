/**
 * Problems are data: a stable code, the path of the offending value, and a message. Every door
 * (model loader, admin API, Pulumi `check`, console, SCIM) reports the rules of this folder as
 * problems, and prints paths with the one formatter below.
 */

export type PathSegment = string | number;
export type Path = readonly PathSegment[];

export interface Problem {
  /** Stable, machine-readable: e.g. `unknown-field`, `duplicate-name`, `insecure-url`. */
  readonly code: string;
  /** Where, e.g. ['tenants', 0, 'applications', 2, 'origin'] in a model, ['redirectUris', 0] in a body. */
  readonly path: Path;
  readonly message: string;
  /** The other place involved (the first definition of a duplicate). */
  readonly related?: Path | undefined;
  /** The name a broken reference points to. */
  readonly ref?: string | undefined;
}

export function problem(code: string, path: Path, message: string, extra: Pick<Problem, 'related' | 'ref'> = {}): Problem {
  return { code, path, message, ...extra };
}

/** `tenants[0].applications[2].origin`, `redirectUris[0]`: the one way a path is printed. */
export function formatPath(path: Path): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** "did you mean" for typos: the closest candidate within a third of the word's length. */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** `1 user`, `2 users`, `0 entries`: a count with its noun, for every message that counts things. */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

/** ` (did you mean 'x'?)` or nothing. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const hint = suggest(word, candidates);
  return hint === undefined ? '' : ` (did you mean '${hint}'?)`;
}
