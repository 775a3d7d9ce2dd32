/**
 * The fast path for valid models. Source positions are only needed to report problems, so a
 * model is first read with js-yaml (an order of magnitude faster than a position-tracking
 * parse) and validated; only if anything is wrong does the caller re-read it with positions,
 * which yields the exact, located messages. Anything unusual (anchors, aliases, deep nesting, a
 * parser error) also takes the careful path, so hostile input is handled in one place.
 */
import jsyaml from 'js-yaml';
import { checkModel } from './checks.ts';
import { ModelFileSpec, assembleModel, type Model, type ModelFile, type TenantSpec } from './model.ts';
import { blockDepthTooDeep, decodeModelBytes } from './_yaml-source.ts';
import type { ParseCache } from './parse-cache.ts';

/** Anchors (&a) and aliases (*a) are where alias bombs live: leave them to the careful parser. */
export const ANCHOR_OR_ALIAS = /(?:^|[\s[{,:-])[&*][^\s,\]}"']/m;

export interface FastSource {
  readonly file: string;
  readonly content: string | Uint8Array;
}

/**
 * The valid model, or undefined when the careful path must run (to report or to be safe). With a
 * cache (parse-cache.ts), a text js-yaml read before is not read again.
 */
export function fastValidate(sources: readonly FastSource[], cache?: ParseCache): { model: Model; files: string[] } | undefined {
  const tenants: TenantSpec[] = [];
  let server: ModelFile['server'];
  for (const { file, content } of sources) {
    let text: string;
    if (typeof content === 'string') text = content;
    else {
      const decoded = decodeModelBytes(file, content);
      if (!decoded.ok) return undefined;
      text = decoded.text;
    }
    if (ANCHOR_OR_ALIAS.test(text)) return undefined;
    let value: unknown = cache?.get(text);
    if (value === undefined) {
      try {
        value = jsyaml.load(text, { schema: jsyaml.CORE_SCHEMA, filename: file });
      } catch {
        return undefined;
      }
      cache?.set(text, value);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value) || blockDepthTooDeep(value)) return undefined;
    const parsed = ModelFileSpec.safeParse(value);
    if (!parsed.success) return undefined;
    if (parsed.data.server !== undefined) {
      if (server !== undefined) return undefined;
      server = parsed.data.server;
    }
    tenants.push(...parsed.data.tenants);
  }
  if (sources.length === 0) return undefined;
  const model = assembleModel(server, tenants);
  if (checkModel(model).length > 0) return undefined;
  return { model, files: sources.map((s) => s.file) };
}
