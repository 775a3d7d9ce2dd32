/**
 * The application kinds, one row each: what the contract says about each kind of integration, in
 * one table that every part asks instead of switching on `kind` (the model, the admin API, the
 * server's client registration, the generators, the Pulumi providers, scaffolding, the console).
 *
 * Adding a kind: a row here, its body variant in bodies.ts, its model spec in src/schema/model.ts,
 * one generator in src/generators (KIND_GENERATORS) and one template in templates/<kind>.
 */

export const APPLICATION_KINDS = ['web', 'proxy', 'spa', 'api'] as const;
export type ApplicationKind = (typeof APPLICATION_KINDS)[number];
export type ClientKind = Exclude<ApplicationKind, 'api'>;
export type ConfidentialKind = 'web' | 'proxy';

/** Secrets idforge makes for applications; never written into the model. */
export type SecretKind = 'clientSecret' | 'sessionSecret' | 'cookieSecret';

/**
 * Bytes of each secret, written URL-safe base64 without padding: client and session secrets 256
 * bits; the proxy's cookie secret exactly 16 bytes, as the contract requires (oauth2-proxy accepts
 * 16, 24 or 32 bytes for AES).
 */
export const SECRET_BYTES: Readonly<Record<SecretKind, number>> = { clientSecret: 32, sessionSecret: 32, cookieSecret: 16 };

/** oidc-provider client registration facts fixed by the kind (RFC 7591 names). */
export interface ClientRegistration {
  readonly grant_types: readonly string[];
  readonly response_types: readonly string[];
  readonly token_endpoint_auth_method: 'client_secret_basic' | 'none';
  readonly application_type: 'web';
}

export interface KindFacts {
  readonly kind: ApplicationKind;
  /** Its name in the console's Marketplace and in docs. */
  readonly title: string;
  /** One line: what it is and which real part plays it. */
  readonly description: string;
  /** An OAuth client people sign in to (redirect URIs, assignable); false for a resource server. */
  readonly client: boolean;
  /** Holds a client secret (confidential client, RFC 6749 §2.1). */
  readonly confidential: boolean;
  /** The redirect URIs the contract registers for an app at `origin` (no trailing slash). */
  readonly redirectUris: (origin: string, opts: { readonly provider: string }) => string[];
  /** The secrets idforge keeps for it. */
  readonly secrets: readonly SecretKind[];
  readonly registration: ClientRegistration | undefined;
  /**
   * How many api applications the model may name as its `audience`: the APIs its access tokens
   * are JWTs for (RFC 8707). A web app or a proxy holds one access token per session, so one API;
   * an SPA asks for a token per API; a resource server names none.
   */
  readonly maxAudiences: number;
  /**
   * Refresh tokens. `always`: idforge asks for `offline` for it, because refreshing is how its
   * session learns that access was revoked (the proxy's cookie refresh, the web app's session
   * check); `optional`: when the model says `offline: true`; `never`: not a client.
   */
  readonly refreshTokens: 'always' | 'optional' | 'never';
}

/** Code flow with a client secret (HTTP Basic at the token endpoint); refresh tokens when granted. */
const CONFIDENTIAL_CLIENT: ClientRegistration = {
  grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic', application_type: 'web',
};

export const KINDS: Readonly<Record<ApplicationKind, KindFacts>> = {
  web: {
    kind: 'web',
    title: 'Web App',
    description: 'server-side web app using the grant login helper (confidential client)',
    client: true,
    confidential: true,
    redirectUris: (origin, { provider }) => [`${origin}/connect/${provider}/callback`],
    secrets: ['clientSecret', 'sessionSecret'],
    registration: CONFIDENTIAL_CLIENT,
    maxAudiences: 1,
    refreshTokens: 'always',
  },
  proxy: {
    kind: 'proxy',
    title: 'Reverse proxy',
    description: 'oauth2-proxy in front of an app (confidential client)',
    client: true,
    confidential: true,
    redirectUris: (origin) => [`${origin}/oauth2/callback`],
    secrets: ['clientSecret', 'cookieSecret'],
    registration: CONFIDENTIAL_CLIENT,
    maxAudiences: 1,
    refreshTokens: 'always',
  },
  spa: {
    kind: 'spa',
    title: 'Single-page app',
    description: 'browser app with code + PKCE (public client, no secret)',
    client: true,
    confidential: false,
    // The SPA's root; browsers and libraries write it with or without the slash.
    redirectUris: (origin) => [origin, `${origin}/`],
    secrets: [],
    // RFC 7591 ties response type id_token to the implicit grant, which RFC 9700 says not to use: code only.
    registration: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'web' },
    maxAudiences: Number.POSITIVE_INFINITY,
    refreshTokens: 'optional',
  },
  api: {
    kind: 'api',
    title: 'Protected API',
    description: 'resource server verifying JWT access tokens (scp claim) against the tenant JWKS',
    client: false,
    confidential: false,
    redirectUris: () => [],
    secrets: [],
    registration: undefined,
    maxAudiences: 0,
    refreshTokens: 'never',
  },
};

export const isClientKind = (kind: string): kind is ClientKind => kind in KINDS && KINDS[kind as ApplicationKind].client;
export const isConfidentialKind = (kind: string): kind is ConfidentialKind => kind in KINDS && KINDS[kind as ApplicationKind].confidential;
