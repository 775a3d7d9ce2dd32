/** Every JSON Schema idforge publishes, by file name, as the exact text committed under schema/. */
import { z } from 'zod';
import { ARTIFACT_SCHEMAS } from '../generators/artifact-schemas.ts';
import { stableJson } from '../generators/_serialize.ts';
import { modelJsonSchema } from './json-schema.ts';

export function allJsonSchemas(): Record<string, string> {
  const out: Record<string, string> = { 'idforge-model.schema.json': stableJson(modelJsonSchema()) };
  for (const [name, schema] of Object.entries(ARTIFACT_SCHEMAS)) {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' });
    out[`${name}.schema.json`] = stableJson({ ...json, $id: `https://idforge.dev/schema/${name}.schema.json`, title: `idforge ${name}` });
  }
  return out;
}
