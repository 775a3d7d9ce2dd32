/** Loading the examples and resolving secrets deterministically, for tests of generators. */
import { createHash } from 'node:crypto';
import { requiredSecrets, type Resolved, type ResolvedSecrets } from '../../src/generators/index.ts';
import { loadModel, type Model } from '../../src/schema/index.ts';

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
