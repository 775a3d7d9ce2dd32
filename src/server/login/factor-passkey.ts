/**
 * Passkeys (WebAuthn) with @simplewebauthn/server. Discoverable credentials with user
 * verification required: the authenticator checks a PIN or fingerprint, so a passkey is two
 * factors by itself and signs a person in alone. Relying party id = the tenant's host name, so a
 * passkey of acme.localhost is useless at globex.localhost. Registration happens after a full
 * sign-in (routes.ts offers it); credentials are stored per user.
 *
 * The browser side is the page's small script (static.ts) around @simplewebauthn/browser; the
 * options travel in a JSON data block (not executed: the CSP allows only our own script files)
 * and the result comes back in the ordinary form POST, so CSRF protection and the step logic are
 * the same as for every other factor.
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { UserRecord } from '../storage/types.ts';
import { escapeHtml } from './pages.ts';
import { DatabaseFault } from '../errors.ts';
import type { FactorContext, LoginFactor } from './types.ts';

const CHALLENGE_MODEL = 'PasskeyChallenge';
/** The browser's prompt and our stored challenge expire together. */
const TIMEOUT_SECONDS = 300;

export const PASSKEY_FAILED = 'The passkey could not be verified. Try again, or choose another way to sign in.';

const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

/** JSON for a <script type="application/json"> block: `<` escaped so the data cannot end the element. */
const jsonBlock = (id: string, value: unknown) =>
  `<script type="application/json" id="${id}">${JSON.stringify(value).replace(/</g, '\\u003c')}</script>`;

export const PASSKEY_SCRIPTS = `<script src="/static/login/simplewebauthn-browser.js" defer></script>
<script src="/static/login/passkey.js" defer></script>`;

/** A challenge outstanding under `key` (an interaction's, or a person's on the account page), for the prompt's lifetime. */
export async function rememberChallenge(storage: FactorContext['storage'], tenant: string, key: string, challenge: string): Promise<void> {
  await storage.grants.upsert(tenant, CHALLENGE_MODEL, key, { challenge }, TIMEOUT_SECONDS);
}

/** The stored challenge, consumed: each challenge verifies at most one response. */
export async function takeChallenge(storage: FactorContext['storage'], tenant: string, key: string): Promise<string | undefined> {
  const p = await storage.grants.find(tenant, CHALLENGE_MODEL, key);
  await storage.grants.destroy(tenant, CHALLENGE_MODEL, key);
  return typeof p?.challenge === 'string' ? p.challenge : undefined;
}

const remember = (ctx: FactorContext, purpose: 'auth' | 'register', challenge: string) => rememberChallenge(ctx.storage, ctx.tenant, `${ctx.uid}:${purpose}`, challenge);
const take = (ctx: FactorContext, purpose: 'auth' | 'register') => takeChallenge(ctx.storage, ctx.tenant, `${ctx.uid}:${purpose}`);

function parse<T>(text: string | undefined): T | undefined {
  try {
    const v: unknown = JSON.parse(text ?? '');
    return v !== null && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string' ? (v as T) : undefined;
  } catch {
    return undefined;
  }
}

const button = (action: 'authenticate' | 'register', options: string, label: string) =>
  `<input type="hidden" name="credential" value="">
<button type="button" data-passkey="${action}" data-options="${options}" hidden>${escapeHtml(label)}</button>
<p class="detail" id="passkey-status" role="status" aria-live="polite"></p>
<noscript><p class="detail">Passkeys need JavaScript in this browser. Choose another way to sign in.</p></noscript>`;

export const passkeyFactor: LoginFactor = {
  id: 'passkey',
  label: 'Passkey',
  identifies: true,
  multiFactor: true,
  accountOf: () => undefined,
  async renderFields(ctx) {
    const allow = ctx.user === undefined ? [] : (await ctx.storage.users.listPasskeys(ctx.tenant, ctx.user.id)).map((p) => ({ id: p.credentialId, transports: [...p.transports] }));
    const options = await generateAuthenticationOptions({ rpID: ctx.rpId, allowCredentials: allow, userVerification: 'required', timeout: TIMEOUT_SECONDS * 1000 });
    await remember(ctx, 'auth', options.challenge);
    return `<p>Use the passkey saved on this device or your phone (fingerprint, face or PIN).</p>
${jsonBlock('passkey-auth-options', options)}
${button('authenticate', 'passkey-auth-options', 'Sign in with a passkey')}
${PASSKEY_SCRIPTS}`;
  },
  async verify(ctx, form) {
    const fail = (reason: string) => ({ ok: false as const, message: PASSKEY_FAILED, reason });
    const response = parse<AuthenticationResponseJSON>(form.credential);
    if (response === undefined) return fail('no credential in the form');
    const challenge = await take(ctx, 'auth');
    if (challenge === undefined) return fail('no challenge outstanding');
    const stored = await ctx.storage.users.getPasskey(ctx.tenant, response.id);
    if (stored === undefined) return fail('unknown credential');
    let result;
    try {
      result = await verifyAuthenticationResponse({
        response, expectedChallenge: challenge, expectedOrigin: ctx.origin, expectedRPID: ctx.rpId, requireUserVerification: true,
        credential: { id: stored.credentialId, publicKey: Buffer.from(stored.publicKey, 'base64url'), counter: stored.counter, transports: [...stored.transports] as never },
      });
    } catch (err) {
      return fail(`verification error: ${(err as Error).message}`);
    }
    if (!result.verified) return fail('signature not verified');
    const handle = response.response.userHandle;
    if (handle !== undefined && handle !== b64url(stored.userId)) return fail('user handle does not match the credential');
    await ctx.storage.users.updatePasskeyCounter(ctx.tenant, stored.credentialId, result.authenticationInfo.newCounter);
    const user = await ctx.storage.users.get(ctx.tenant, stored.userId);
    if (user === undefined || user.body.disabled) return fail('user gone or disabled');
    return { ok: true, user };
  },
};

/** Where a passkey is made and used: the tenant's origin, and its host name as the relying party id. */
export interface PasskeyParty {
  readonly rpName: string;
  readonly rpId: string;
  readonly origin: string;
}

/**
 * Registration options for a person (the one rule of how passkeys are made: discoverable, user
 * verification required, no attestation, none of their existing credentials again). The caller keeps
 * the challenge.
 */
export async function passkeyRegistrationOptions(party: PasskeyParty, storage: FactorContext['storage'], tenant: string, user: UserRecord) {
  const existing = await storage.users.listPasskeys(tenant, user.id);
  return generateRegistrationOptions({
    rpName: party.rpName,
    rpID: party.rpId,
    userName: user.body.email,
    userDisplayName: user.body.displayName ?? user.body.email,
    // The user handle is the user id: sign-in by passkey alone finds the account from it.
    userID: Buffer.from(user.id, 'utf8'),
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: [...p.transports] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    timeout: TIMEOUT_SECONDS * 1000,
  });
}

export const PASSKEY_NOT_SAVED = {
  incomplete: 'The passkey was not saved: the request was incomplete or expired. Try again.',
  unverified: 'The passkey was not saved: it could not be verified. Try again.',
} as const;

/**
 * Verifies a registration response against the challenge it answers and stores the passkey; the
 * words for the person when it is refused (undefined: saved). A database failure is thrown, never
 * taken for a rejected passkey.
 */
export async function savePasskeyRegistration(
  party: PasskeyParty, storage: FactorContext['storage'], audit: FactorContext['settings']['audit'], tenant: string, user: UserRecord,
  credential: unknown, challenge: string | undefined, via: 'sign-in' | 'account',
): Promise<string | undefined> {
  const response = typeof credential === 'string' ? parse<RegistrationResponseJSON>(credential) : credential !== null && typeof credential === 'object' && typeof (credential as { id?: unknown }).id === 'string' ? credential as RegistrationResponseJSON : undefined;
  if (response === undefined || challenge === undefined) return PASSKEY_NOT_SAVED.incomplete;
  try {
    const r = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: party.origin, expectedRPID: party.rpId, requireUserVerification: true });
    if (!r.verified) return PASSKEY_NOT_SAVED.unverified;
    const c = r.registrationInfo.credential;
    await storage.users.putPasskey(tenant, {
      credentialId: c.id, userId: user.id, publicKey: Buffer.from(c.publicKey).toString('base64url'), counter: c.counter,
      transports: c.transports ?? [], createdAt: Math.floor(Date.now() / 1000),
    });
    audit({ audit: 'passkey.registered', tenant, user: user.id, credential: c.id, via });
    return undefined;
  } catch (err) {
    // The database failing to store it is no rejected passkey: the caller says what it is.
    if (err instanceof DatabaseFault) throw err;
    audit({ audit: 'passkey.rejected', tenant, user: user.id, error: (err as Error).message, via });
    return PASSKEY_NOT_SAVED.unverified;
  }
}

const partyOf = (ctx: FactorContext): PasskeyParty => ({ rpName: ctx.tenantDisplayName, rpId: ctx.rpId, origin: ctx.origin });

/** The registration form shown after sign-in. */
export async function renderPasskeyRegistration(ctx: FactorContext, user: UserRecord): Promise<string> {
  const options = await passkeyRegistrationOptions(partyOf(ctx), ctx.storage, ctx.tenant, user);
  await remember(ctx, 'register', options.challenge);
  return `${jsonBlock('passkey-register-options', options)}
${button('register', 'passkey-register-options', 'Add a passkey')}
${PASSKEY_SCRIPTS}`;
}

export async function verifyPasskeyRegistration(ctx: FactorContext, user: UserRecord, credential: string | undefined): Promise<string | undefined> {
  const challenge = await take(ctx, 'register');
  return savePasskeyRegistration(partyOf(ctx), ctx.storage, ctx.settings.audit, ctx.tenant, user, credential, challenge, 'sign-in');
}
