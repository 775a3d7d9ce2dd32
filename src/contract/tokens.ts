/**
 * Token timing that the server and the generated clients must agree on, and how fast a revocation
 * (an assignment, a user or an application removed, a user disabled) ends access in each pattern.
 *
 * Access tokens are JWTs that APIs verify offline, so nothing can recall one: its lifetime bounds
 * how long a verifier that hears of nothing (a third party's API) accepts it. That lifetime is the
 * industry's usual 5 minutes (Keycloak 5 min, Okta 1 h), because clients keep a margin before expiry
 * (Authlib and Spring Security refresh a token that expires within 60 s) and a shorter token is one
 * they treat as expired on arrival. Revocation no longer rests on it: the server pushes it.
 * - The web template ends the session when the server's back-channel logout token arrives (OpenID
 *   Connect Back-Channel Logout 1.0, sent from a durable outbox): within EVENT_REVOCATION_TARGET.
 * - The API template hears SSF `session-revoked` and refuses the subject's tokens at once.
 * - oauth2-proxy receives no events: it asks the server every `cookieRefresh` seconds (its own
 *   setting, DEFAULT_PROXY_COOKIE_REFRESH), and the refused refresh ends the session.
 * - The SPA learns it at its next renewal (half the token's life).
 * - A third party's offline verifier accepts a token until it expires: at most the lifetime.
 */

/** Seconds within which a revocation should reach the templates that receive events (the bench's target). */
export const EVENT_REVOCATION_TARGET = 5;

/**
 * Default access token lifetime, seconds (`idforge serve --access-token-lifetime`): 5 minutes, so
 * a client with a 60 s expiry margin (Authlib's and Spring Security's default) uses a token for
 * four minutes before refreshing it. It bounds only the offline verifiers that receive no events.
 */
export const DEFAULT_ACCESS_TOKEN_LIFETIME = 300;

/**
 * Default seconds a used refresh token may be used again (`idforge serve --refresh-reuse-grace`):
 * two refreshes in parallel with one token (a duplicated tab, a retried request) both succeed; a
 * use later than this is taken for theft (RFC 9700 §4.14.2). Okta and Cognito allow 0-60 s.
 */
export const DEFAULT_REFRESH_REUSE_GRACE = 5;

/** The longest refresh reuse grace the server takes: Okta's and Cognito's bound. */
export const MAX_REFRESH_REUSE_GRACE = 60;

/**
 * Default seconds between oauth2-proxy's refreshes of a session (`cookieRefresh` in the model,
 * OAUTH2_PROXY_COOKIE_REFRESH). The proxy receives no events, so this check is how it learns of a
 * revocation; it is its own figure, not derived from the token lifetime. 30 s costs one refresh
 * per signed-in user and proxy twice a minute.
 */
export const DEFAULT_PROXY_COOKIE_REFRESH = 30;

/**
 * Seconds an ID token issued to a reverse proxy lives. After a refresh, successful or refused,
 * oauth2-proxy keeps the session only while its ID token verifies (v7's stored-session loader, then
 * the OIDC provider's ValidateSession). An ID token as long-lived as other clients' (1 hour) would
 * keep a revoked person's session until the access token expires. With it shorter than the refresh
 * period, the ID token of the last refresh has expired when the next refresh is due, so the refresh
 * the server refuses also ends the session: access ends within max(cookieRefresh, this) of the
 * removal. The proxy verifies each new ID token as it receives it (every refresh gives one), so 10 s
 * leaves room for a proxy whose clock runs a few seconds ahead of the server's.
 */
export const PROXY_ID_TOKEN_LIFETIME = 10;
