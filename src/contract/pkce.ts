/**
 * Whether a client must send PKCE (RFC 7636), one rule run by every door: the model loader (the
 * application's `pkce`), the admin API and the Pulumi providers (the body's `pkce`), the console
 * (its form becomes a model spec), and the server at the authorization endpoint.
 *
 * RFC 9700 §2.1.1: "Public clients MUST use PKCE [RFC7636] to this end ... For confidential
 * clients, the use of PKCE [RFC7636] is RECOMMENDED ... With additional precautions, described in
 * Section 4.5.3.2, confidential OpenID Connect [OpenID.Core] clients MAY use the nonce parameter
 * and the respective Claim in the ID Token instead. In any case, the PKCE challenge or OpenID
 * Connect nonce MUST be transaction-specific and securely bound to the client and the user agent
 * in which the transaction was started."
 *
 * So `required` (the default) for every client, and `optional` only for a confidential client
 * (web, proxy), for OpenID Connect libraries that send a nonce but no PKCE by default (Authlib,
 * go-oidc with x/oauth2, Nimbus). Such a client must then send a nonce in every authorization
 * request without PKCE, and that request must be an OpenID Connect one (scope openid): without an
 * ID token there is no nonce to check, so a plain OAuth request of that client still needs PKCE.
 * PKCE sent by such a client is enforced as for any other (a code_verifier without a challenge is
 * refused: RFC 9700 §4.8.2, PKCE downgrade).
 */
import { APPLICATION_KINDS, KINDS, type ApplicationKind } from './kinds.ts';
import { problem, type Path, type Problem } from './problems.ts';

export const PKCE_POLICIES = ['required', 'optional'] as const;
export type PkcePolicy = (typeof PKCE_POLICIES)[number];
/** PKCE for every client unless the model or the body says `optional`. */
export const DEFAULT_PKCE: PkcePolicy = 'required';

const CONFIDENTIAL = APPLICATION_KINDS.filter((k) => KINDS[k].confidential);

/** The rule on the field: `optional` only for confidential clients. `path` is where `pkce` sits. */
export function checkPkcePolicy(kind: ApplicationKind, pkce: PkcePolicy | undefined, path: Path): Problem[] {
  if (pkce !== 'optional' || KINDS[kind].confidential) return [];
  return [problem('pkce-required', path,
    `pkce: optional is allowed only for confidential clients (${CONFIDENTIAL.join(', ')}): kind ${kind} is ${KINDS[kind].client ? 'a public client, and public clients must use PKCE (RFC 9700 §2.1.1)' : 'not a client'}`)];
}

/** What an authorization request carries, as far as this rule is concerned. */
export interface AuthorizationRequestFacts {
  readonly codeChallenge: boolean;
  readonly nonce: boolean;
  /** Scope openid: an OpenID Connect request, whose ID token carries the nonce back. */
  readonly openid: boolean;
}

/**
 * Why the server refuses an authorization request of a client with this policy (as the OAuth
 * `error_description` of an `invalid_request`), or undefined when the request may go on.
 */
export function pkceRefusal(policy: PkcePolicy | undefined, request: AuthorizationRequestFacts): string | undefined {
  if (request.codeChallenge) return undefined;
  if ((policy ?? DEFAULT_PKCE) === 'required') return 'PKCE is required: send code_challenge and code_challenge_method=S256';
  if (!request.openid) return 'PKCE is required in requests without scope openid: send code_challenge and code_challenge_method=S256';
  if (!request.nonce) return 'send a nonce (or PKCE): without PKCE, this client must bind the ID token to the request with a nonce (RFC 9700 §2.1.1)';
  return undefined;
}
