/**
 * OpenID Connect Back-Channel Logout 1.0: a web application registers a `backchannel_logout_uri`
 * and the server POSTs a logout token there (`logout_token=<JWT>`, form-encoded) when the person's
 * session with it ends: at a sign-out at the server (RP-initiated logout), and when their access
 * is revoked (their assignment, the person or the application removed, the person disabled). The
 * application ends its own session for the token's `sid`, or every session of its `sub`.
 */

/** Where the web template takes logout tokens, below its origin: the model's default for web apps. */
export const BACKCHANNEL_LOGOUT_PATH = '/backchannel-logout';

/** The logout token's one event (spec §2.4), and its JOSE `typ` (§2.4, RFC 8725 §3.11). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
export const LOGOUT_TOKEN_TYP = 'logout+jwt';

/** A logout token is good for this long after `iat` (oidc-provider's own logout tokens: 120 s). */
export const LOGOUT_TOKEN_LIFETIME = 120;

/** The default back-channel logout URI of a web app at `origin` (no trailing slash). */
export const defaultBackchannelLogoutUri = (origin: string): string => `${origin}${BACKCHANNEL_LOGOUT_PATH}`;
