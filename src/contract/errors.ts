/**
 * The admin API's error body. Every refusal says what (`error`, a stable code; `message`, for a
 * person) and where (`path`, the offending field printed with the one path formatter, empty when
 * none); a refused body lists every problem it has in `problems`.
 */
import { z } from 'zod';

export const ErrorBody = z.object({
  error: z.string().describe('stable code: invalid_request, not_found, conflict, invalid_token, insufficient_scope, ...'),
  message: z.string(),
  path: z.string().describe('the offending field, e.g. redirectUris[0]; empty when none'),
  problems: z.array(z.object({ path: z.string(), message: z.string(), code: z.string().optional() })).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;
