/**
 * The contract between idforge's parts: the admin API (routes, bodies, errors, OpenAPI), the rules
 * every door runs (names, redirect URIs, scopes, login policy, who may change an object), the application kinds, the server's
 * public addresses, the provisioning plan's shape, and the one JSON normal form and path formatter.
 * It depends on nothing else of idforge; everything else may depend on it.
 */
export * from './names.ts';
export * from './excerpt.ts';
export * from './ownership.ts';
export * from './hosts.ts';
export * from './json.ts';
export * from './problems.ts';
export * from './redirect-uri.ts';
export * from './env-file.ts';
export * from './scopes.ts';
export * from './login-policy.ts';
export * from './password-policy.ts';
export * from './mail.ts';
export * from './kinds.ts';
export * from './pkce.ts';
export * from './tokens.ts';
export * from './backchannel.ts';
export * from './managers.ts';
export * from './last-applied.ts';
export * from './bodies.ts';
export * from './errors.ts';
export * from './credentials.ts';
export * from './plan.ts';
export * from './delete-guard.ts';
export * from './batch.ts';
export * from './routes.ts';
export * from './events.ts';
export * from './webhooks.ts';
export * from './ssf.ts';
export * from './urls.ts';
export { openApiDocument } from './openapi.ts';
export type { EdgeApp, EdgeClient, EdgeHandler, EdgeHost, EdgeTenant } from './edge.ts';
