/**
 * Problems are data: a code, the path in the model, a message, and where in which file.
 * Formatting is one pure function so the CLI, the Pulumi program and tests print the same text.
 */
import type { z } from 'zod';
import { formatPath, suggest, type PathSegment, type Problem as RuleProblem } from '../contract/index.ts';

export { formatPath, suggest, type PathSegment };

/** A problem of the model: the contract's problem, plus where in which file. */
export interface Problem extends RuleProblem {
  readonly file?: string | undefined;
  /** 1-based. */
  readonly line?: number | undefined;
  /** 1-based. */
  readonly col?: number | undefined;
}

export interface FormatOptions {
  readonly color?: boolean;
}

/** `file:line:col  message  (at tenants[0].applications[2].origin)`, one line per problem. */
export function formatProblem(p: Problem, opts: FormatOptions = {}): string {
  const where = p.file === undefined ? '' : p.line === undefined ? p.file : `${p.file}:${p.line}:${p.col ?? 1}`;
  const at = p.path.length > 0 ? `  (at ${formatPath(p.path)})` : '';
  if (opts.color) {
    return `${where === '' ? '' : `\x1b[1m${where}\x1b[0m  `}\x1b[31m${p.message}\x1b[0m\x1b[2m${at}\x1b[0m`;
  }
  return `${where === '' ? '' : `${where}  `}${p.message}${at}`;
}

export function formatProblems(problems: readonly Problem[], opts: FormatOptions = {}): string {
  return problems.map((p) => formatProblem(p, opts)).join('\n');
}

/** Problems in reading order: by file, then position, then path; stable for equal keys. */
export function sortProblems(problems: readonly Problem[]): Problem[] {
  return [...problems].sort(
    (a, b) =>
      (a.file ?? '').localeCompare(b.file ?? '') ||
      (a.line ?? 0) - (b.line ?? 0) ||
      (a.col ?? 0) - (b.col ?? 0) ||
      formatPath(a.path).localeCompare(formatPath(b.path)),
  );
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'object':
      return 'a mapping';
    case 'string':
      return 'a string';
    case 'number':
      return Number.isInteger(value) ? 'an integer' : 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return typeof value;
  }
}

const EXPECTED: Readonly<Record<string, string>> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
};

/** Keys a strict object accepts, found by walking the schema along the issue's path. */
export type KnownKeys = (path: readonly PathSegment[]) => readonly string[];

/**
 * One zod issue → one or more problems (an unknown-keys issue names each key, so each gets its
 * own position). Messages name the field and what was expected, in the model's own words.
 */
export function problemsFromZodIssue(issue: z.core.$ZodIssue, knownKeys: KnownKeys): Problem[] {
  const path = issue.path.filter((s): s is PathSegment => typeof s !== 'symbol');
  const last = path[path.length - 1];
  const parent = path[path.length - 2];
  const field =
    typeof last === 'string' ? `'${last}'` : typeof parent === 'string' ? `each entry of '${parent}'` : 'this entry';
  switch (issue.code) {
    case 'invalid_type': {
      if (!('input' in issue) || issue.input === undefined) {
        return [{ code: 'missing-field', path, message: `missing required field ${field}` }];
      }
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      return [{ code: 'wrong-type', path, message: `${field} must be ${expected}, not ${typeName(issue.input)}` }];
    }
    case 'unrecognized_keys':
      return issue.keys.map((key) => {
        const hint = suggest(key, knownKeys(path));
        return {
          code: 'unknown-field',
          path: [...path, key],
          message: `unknown field '${key}'${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`,
        };
      });
    case 'invalid_value': {
      const allowed = issue.values.map((v) => String(v)).join(', ');
      const got = JSON.stringify(issue.input);
      const hint = typeof issue.input === 'string' ? suggest(issue.input, issue.values.map(String)) : undefined;
      return [
        {
          code: 'invalid-value',
          path,
          message: `${field} must be one of ${allowed}, not ${got}${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`,
        },
      ];
    }
    case 'too_small':
    case 'too_big': {
      const min = issue.code === 'too_small';
      const n = Number(min ? issue.minimum : issue.maximum);
      if (issue.origin === 'number' || issue.origin === 'int') {
        return [{ code: min ? 'too-small' : 'too-big', path, message: `${field} must be at ${min ? 'least' : 'most'} ${n}` }];
      }
      const what =
        issue.origin === 'string'
          ? `${n} character${n === 1 ? '' : 's'}`
          : issue.origin === 'array'
            ? `${n} entr${n === 1 ? 'y' : 'ies'}`
            : String(n);
      return [{ code: min ? 'too-small' : 'too-big', path, message: `${field} must have at ${min ? 'least' : 'most'} ${what}` }];
    }
    case 'invalid_union': {
      if (/^must\b/.test(issue.message)) return [{ code: 'invalid-value', path, message: `${field} ${issue.message}` }];
      // A discriminated union (application kind): point at the `kind` key when there is one.
      const input = issue.input as { kind?: unknown } | undefined;
      const at = path.at(-1) !== 'kind' && input !== null && typeof input === 'object' && 'kind' in input ? [...path, 'kind'] : path;
      return [{ code: 'invalid-kind', path: at, message: issue.message }];
    }
    default:
      // Custom messages (formats, references) are written as "must be ...": name the field first.
      return [
        {
          code: issue.code.replaceAll('_', '-'),
          path,
          message: /^must\b/.test(issue.message) ? `${field} ${issue.message}` : issue.message,
        },
      ];
  }
}
