/**
 * The shape of a vendor's request sequence (test/scim/vendors.test.ts replays each against a real
 * server). A sequence is what one identity provider sends over a provisioning lifecycle, written
 * from that vendor's published SCIM reference (cited beside each sequence): the requests are ours,
 * built to the forms the reference describes, never copied from it.
 *
 * Values flow between steps by name: `keep` stores a value of an answer (a dotted path into its
 * body), and `{name}` inside a path, a body or an expectation stands for it. `{base}` is the
 * tenant's SCIM base URL.
 *
 * Besides SCIM requests, a sequence has steps of the people around the identity provider: the
 * tenant's operator assigns a group to the application (`assign`); the test looks through the
 * admin API (`admin`); a person signs in to the application (`signIn`). `setPassword` is the test
 * giving a person a password through SCIM where the vendor does not send one (Entra ID, Google,
 * JumpCloud synchronise no passwords by default), so the sign-in checks can run.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Expectation {
  readonly status: number;
  /** What the answer's body must contain (vitest `toMatchObject`, after `{name}` substitution). */
  readonly body?: unknown;
  /** Dotted paths that must be absent from the answer's body (`password`, `Resources.0.members`). */
  readonly absent?: readonly string[];
}

export interface ScimStep {
  readonly kind: 'scim';
  /** What the identity provider is doing, in our words. */
  readonly does: string;
  readonly method: Method;
  /** Under the SCIM base URL, e.g. `/Users?filter=...` (filters written plainly: the runner encodes the query). */
  readonly path: string;
  readonly body?: unknown;
  readonly expect: Expectation;
  /** Values of the answer to remember: name → dotted path into the body (`id`, `Resources.0.id`). */
  readonly keep?: Readonly<Record<string, string>>;
}

/** The tenant's operator assigns a group, or one user, (`{name}` of its id) to the application `portal` (admin API). */
export interface AssignStep {
  readonly kind: 'assign';
  readonly does: string;
  readonly group?: string;
  readonly user?: string;
}

/** A look through the admin API: GET `path` (under /admin/v1/tenants/{tenant}). */
export interface AdminStep {
  readonly kind: 'admin';
  readonly does: string;
  readonly path: string;
  readonly expect: Expectation;
}

/** The test sets a person's password through SCIM (PATCH replace password), for the sign-in checks. */
export interface SetPasswordStep {
  readonly kind: 'setPassword';
  readonly does: string;
  readonly user: string;
  readonly password: string;
}

/**
 * A person signs in to the application `portal` (authorization code flow in a browser-like agent):
 * `signed-in` (and the ID token's `sub`), `not-assigned` (the service says so; the app gets
 * access_denied) or `refused` (the login form answers "Invalid email or password.": a disabled
 * user, or an address that is no longer anyone's).
 */
export interface SignInStep {
  readonly kind: 'signIn';
  readonly does: string;
  readonly email: string;
  readonly password: string;
  readonly outcome: 'signed-in' | 'not-assigned' | 'refused';
  /** For `signed-in`: the `sub` expected (`{name}`). */
  readonly sub?: string;
}

export type Step = ScimStep | AssignStep | AdminStep | SetPasswordStep | SignInStep;

export interface VendorSequence {
  readonly vendor: string;
  /** The tenant the sequence runs in (a DNS label). */
  readonly tenant: string;
  /** The published references the requests were written from. */
  readonly references: readonly string[];
  readonly steps: readonly Step[];
}

export const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** A PatchOp message. */
export const patchOp = (...Operations: readonly Record<string, unknown>[]) => ({ schemas: [PATCH_OP], Operations });

/** A SCIM step. */
export const scim = (does: string, method: Method, path: string, body: unknown, expect: Expectation, keep?: Record<string, string>): ScimStep => ({
  kind: 'scim', does, method, path, ...(body === undefined ? {} : { body }), expect, ...(keep === undefined ? {} : { keep }),
});
