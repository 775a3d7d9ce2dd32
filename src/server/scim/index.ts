/** The tenant's SCIM 2.0 service provider (RFC 7643, RFC 7644) and the admin API's SCIM token operations. */
export { SCIM_PATH, scimRouter } from './router.ts';
export { SCIM_DEFAULTS, scimSettings, type ScimOptions, type ScimSettings } from './options.ts';
export { createScimToken, deleteScimToken, listScimTokens } from './tokens.ts';
