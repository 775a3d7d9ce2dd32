/** The model: schemas, loading with positions, semantic checks, problems and their formatting. */
export { applicationSourceKey, assignmentsSourceKey, entrySourcesOf, userSourceKey } from './entry-sources.ts';
export { loadModel, locateProblems, modelFiles, validateSources, type LoadResult, type ModelSource } from './load.ts';
export { checkModel } from './checks.ts';
export { applyOverlay, loadModelWithOverlay, OVERLAY_LISTS } from './overlay.ts';
export { openParseCache, type ParseCache } from './parse-cache.ts';
export { formatProblem, formatProblems, formatPath, type Problem, type PathSegment } from './problems.ts';
export { modelJsonSchema, MODEL_SCHEMA_ID } from './json-schema.ts';
export { MAX_FILE_BYTES, MAX_DEPTH, MAX_ALIASES } from './_yaml-source.ts';
export * from './model.ts';
