/**
 * Token timing that the server and the generated clients must agree on.
 *
 * Removing an assignment, a user or an application must end that user's access everywhere within
 * REVOCATION_DEADLINE. The server revokes refresh tokens at once, but an access token is a JWT
 * that APIs verify offline, so it stays valid until it expires: its lifetime is the bound. Every
 * generated client refreshes well before that (the web template and the SPA at half the token's
 * life, oauth2-proxy at its cookie refresh period), and the refresh is where a revoked user is
 * turned away.
 */

/** Seconds within which a revocation reaches every pattern (the integration contract's bound). */
export const REVOCATION_DEADLINE = 60;

/**
 * Default access token lifetime, seconds (`idforge serve --access-token-lifetime`). 50 s plus the
 * 5 s clock tolerance the API template allows stays inside REVOCATION_DEADLINE. The price is one
 * refresh per signed-in user and application about every 25 s.
 */
export const DEFAULT_ACCESS_TOKEN_LIFETIME = 50;

/**
 * Default seconds a used refresh token may be used again (`idforge serve --refresh-reuse-grace`):
 * two refreshes in parallel with one token (a duplicated tab, a retried request) both succeed; a
 * use later than this is taken for theft (RFC 9700 §4.14.2). Okta and Cognito allow 0-60 s.
 */
export const DEFAULT_REFRESH_REUSE_GRACE = 5;

/** Default seconds between oauth2-proxy's refreshes of a session (half the access token's life). */
export const DEFAULT_PROXY_COOKIE_REFRESH = Math.floor(DEFAULT_ACCESS_TOKEN_LIFETIME / 2);
