/** Byte-stable text: sorted keys, two-space indent, LF, trailing newline. */
import { stringify as yamlStringify } from 'yaml';

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/**
 * Writes what `JSON.stringify(sortKeys(value), null, 2)` would, without building the sorted
 * copy first: plans of a large model hold hundreds of thousands of objects.
 */
function writeJson(value: unknown, indent: string, out: string[]): void {
  if (value === null || typeof value !== 'object') {
    out.push(JSON.stringify(value) ?? 'null');
    return;
  }
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) {
      out.push('[]');
      return;
    }
    out.push('[\n');
    value.forEach((item, i) => {
      out.push(inner);
      writeJson(item === undefined || typeof item === 'function' ? null : item, inner, out);
      out.push(i === value.length - 1 ? '\n' : ',\n');
    });
    out.push(`${indent}]`);
    return;
  }
  const keys = Object.keys(value)
    .filter((k) => {
      const v = (value as Record<string, unknown>)[k];
      return v !== undefined && typeof v !== 'function';
    })
    .sort();
  if (keys.length === 0) {
    out.push('{}');
    return;
  }
  out.push('{\n');
  keys.forEach((k, i) => {
    out.push(inner, JSON.stringify(k), ': ');
    writeJson((value as Record<string, unknown>)[k], inner, out);
    out.push(i === keys.length - 1 ? '\n' : ',\n');
  });
  out.push(`${indent}}`);
}

export function stableJson(value: unknown): string {
  const out: string[] = [];
  writeJson(value, '', out);
  out.push('\n');
  return out.join('');
}

export function stableYaml(value: unknown, header = ''): string {
  return header + yamlStringify(sortKeys(value), { lineWidth: 0 });
}

/**
 * A dotenv file that both `docker compose --env-file`/`env_file` and a POSIX shell (`set -a; .`)
 * read the same way: keys sorted; values with spaces or shell metacharacters single-quoted.
 */
export function envFile(vars: Readonly<Record<string, string>>, header = ''): string {
  const lines = Object.keys(vars)
    .sort()
    .map((k) => {
      const v = vars[k]!;
      if (/[\n\r']/.test(v)) throw new Error(`env value of ${k} cannot hold quotes or newlines`);
      return /^[A-Za-z0-9_./:@,+=*-]*$/.test(v) && !v.startsWith('*') ? `${k}=${v}` : `${k}='${v}'`;
    });
  return `${header}${lines.join('\n')}\n`;
}
