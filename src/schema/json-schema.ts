/** JSON Schema of the model, exported from the zod schema so editors complete and check files. */
import { z } from 'zod';
import { ModelFileSpec } from './model.ts';

export const MODEL_SCHEMA_ID = 'https://idforge.dev/schema/idforge-model.schema.json';

export function modelJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ModelFileSpec, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
  return { ...schema, $id: MODEL_SCHEMA_ID, title: 'idforge model', description: 'Tenants, applications, users and assignments of an idforge identity model.' };
}
