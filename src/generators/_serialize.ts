/** Byte-stable text in the contract's JSON normal form (sorted keys): JSON, YAML, env files. */
import { stringify as yamlStringify } from 'yaml';
import { normalize } from '../contract/index.ts';

export { stableJson } from '../contract/index.ts';

export function stableYaml(value: unknown, header = ''): string {
  return header + yamlStringify(normalize(value), { lineWidth: 0 });
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
