/** Loading the examples and resolving secrets deterministically, for tests of generators and the CLI. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { requiredSecrets, type Resolved, type ResolvedSecrets } from '../../src/generators/index.ts';
import { loadModel, type Model } from '../../src/schema/index.ts';

/** examples/acme.yaml's text, its server block pointed at a server on `port`. */
export function acmeModel(port: number): string {
  return readFileSync(resolve(import.meta.dirname, '../../examples/acme.yaml'), 'utf8').replace(/^(\s*port:\s*)\d+/m, `$1${port}`);
}

export async function loadExample(...paths: string[]): Promise<Model> {
  const result = await loadModel(paths);
  if (!result.ok) throw new Error(`example is invalid: ${JSON.stringify(result.problems)}`);
  return result.model;
}

/** Stable stand-ins for secrets: derived from the key, so snapshots do not churn. */
export function fixedSecrets(model: Model): Resolved {
  const secrets: Record<string, Record<string, string>> = {};
  for (const { key, kind } of requiredSecrets(model)) {
    const digest = createHash('sha256').update(`${key}:${kind}`).digest();
    (secrets[key] ??= {})[kind] = (kind === 'cookieSecret' ? digest.subarray(0, 16) : digest).toString('base64url');
  }
  return { secrets: secrets as ResolvedSecrets };
}
