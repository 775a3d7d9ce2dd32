/** Byte-stable text in the contract's JSON normal form (sorted keys): JSON, YAML, env files. */
import { stringify as yamlStringify } from 'yaml';
import { ENV_KEY, envValueProblem, normalize } from '../contract/index.ts';

export { stableJson } from '../contract/index.ts';

export function stableYaml(value: unknown, header = ''): string {
  return header + yamlStringify(normalize(value), { lineWidth: 0 });
}

/**
 * An env file in the one format Docker (`--env-file`), Compose, systemd (`EnvironmentFile=`) and
 * kubectl (`--from-env-file`) all read unchanged (src/contract/env-file.ts): keys sorted, one
 * `KEY=value` per line, never quoted. A value that cannot be written so is an error, not a quoted
 * value that half of those readers would take with its quotes.
 */
export function envFile(vars: Readonly<Record<string, string>>, header = ''): string {
  const lines = Object.keys(vars)
    .sort()
    .map((k) => {
      const v = vars[k]!;
      if (!ENV_KEY.test(k)) throw new Error(`env variable name ${JSON.stringify(k)} is not a portable name`);
      const why = envValueProblem(v);
      if (why !== undefined) throw new Error(`env value of ${k} ${why}: ${JSON.stringify(v)}`);
      return `${k}=${v}`;
    });
  return `${header}${lines.join('\n')}\n`;
}
