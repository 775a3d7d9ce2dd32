/**
 * People signing in over HTTP, as browsers would (cookies, forms, redirects): with a password, with
 * a password and an authenticator app (TOTP, enrolled on the first sign-in), and with a passkey held
 * by a software authenticator (WebAuthn "none" attestation, ES256), so no browser is needed. Used
 * to fill the upgrade fixtures through the servers of earlier releases (scripts/upgrade-fixtures.ts)
 * and to sign the same people in again after the upgrade (upgrade.test.ts).
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import * as oidc from 'openid-client';
import { generate } from 'otplib';
import { Browser, relyingParty } from '../server/_support.ts';

/** A passkey as the software authenticator keeps it. */
export interface SoftPasskey {
  readonly credentialId: string;
  /** PKCS#8, base64url. */
  readonly privateKey: string;
  readonly userId: string;
}

/** Where a sign-in ends: the tokens of the code flow, with the ID token's claims. */
export interface SignedIn {
  readonly sub: string;
  readonly accessToken: string;
  readonly refreshToken: string | undefined;
}

export interface SignInTarget {
  /** The tenant's issuer, e.g. http://acme.localhost:9080/oauth2/ */
  readonly issuer: string;
  /** A public client (SPA) of the tenant, and its registered redirect URI. */
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
}

const b64 = (b: Uint8Array | Buffer) => Buffer.from(b).toString('base64url');
const unescape = (s: string) => s.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");
const title = (html: string) => /<h1[^>]*>([\s\S]*?)<\/h1>/.exec(html)?.[1]?.trim() ?? '';
const jsonBlock = (html: string, id: string) => {
  const m = new RegExp(`<script type="application/json" id="${id}">([\\s\\S]*?)</script>`).exec(html);
  if (m === null) throw new Error(`no ${id} on the page:\n${html}`);
  return JSON.parse(m[1]!) as Record<string, unknown>;
};

/** One person's sign-in through the pages, step by step. */
export class SignIn {
  readonly browser = new Browser();
  #verifier = '';
  #state = '';
  #page: { url: string; html: string } | undefined;
  #callback: URL | undefined;
  #config: oidc.Configuration | undefined;

  constructor(readonly target: SignInTarget) {}

  /** Opens the authorization endpoint; the sign-in page is shown. */
  async start(): Promise<this> {
    this.#config = await relyingParty(this.target.issuer, this.target.clientId);
    this.#verifier = oidc.randomPKCECodeVerifier();
    this.#state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(this.#config, {
      // As openid-client repeats the callback URL at the token endpoint (an origin gets its slash).
      redirect_uri: new URL(this.target.redirectUri).href, scope: this.target.scope, state: this.#state,
      code_challenge: await oidc.calculatePKCECodeChallenge(this.#verifier), code_challenge_method: 'S256',
    });
    this.#land(await this.browser.follow(url.href, this.target.redirectUri));
    return this;
  }

  /** The page now shown (its h1), or 'back at the client'. */
  get where(): string {
    return this.#callback !== undefined ? 'back at the client' : title(this.#page?.html ?? '');
  }

  get html(): string {
    return this.#page?.html ?? '';
  }

  async password(email: string, password: string): Promise<this> {
    return this.#submit('/login', { factor: 'password', email, password }, (html) => /name="factor" value="password"/.test(html));
  }

  /** Enrols the authenticator app shown on the page; returns its secret (base32). */
  async enrolTotp(): Promise<string> {
    const secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(this.html)?.[1];
    if (secret === undefined) throw new Error(`no TOTP enrolment on the page:\n${this.html}`);
    await this.totp(secret);
    return secret;
  }

  async totp(secret: string): Promise<this> {
    const code = await generate({ secret, epoch: Math.floor(Date.now() / 1000) });
    return this.#submit('/login', { factor: 'totp', code }, (html) => /name="factor" value="totp"/.test(html));
  }

  /** On "Add a passkey?": registers a new passkey of `userId` with the software authenticator. */
  async addPasskey(userId: string): Promise<SoftPasskey> {
    const options = jsonBlock(this.html, 'passkey-register-options') as { challenge: string; rp: { id: string } };
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const credentialId = randomBytes(16);
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(new Map<number, number | Uint8Array>([
      [1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')],
    ]));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credentialId.length);
    // rpIdHash, flags UP|UV|AT, sign count 0, then the attested credential: AAGUID (none), id, key.
    const authData = Buffer.concat([rpIdHash(options.rp.id), Buffer.from([0x45]), Buffer.alloc(4), Buffer.alloc(16), idLength, credentialId, Buffer.from(cose)]);
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin: this.#origin(), crossOrigin: false }));
    const attestation = isoCBOR.encode(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', new Uint8Array(authData)]]) as never);
    const credential = {
      id: b64(credentialId), rawId: b64(credentialId), type: 'public-key', authenticatorAttachment: 'platform', clientExtensionResults: {},
      response: { clientDataJSON: b64(clientData), attestationObject: b64(attestation), transports: ['internal'] },
    };
    await this.#submit('/passkey', { credential: JSON.stringify(credential) }, () => true);
    return { credentialId: b64(credentialId), privateKey: b64(privateKey.export({ format: 'der', type: 'pkcs8' })), userId };
  }

  /** Signs in with the passkey alone (the first step's passkey form). */
  async passkey(key: SoftPasskey): Promise<this> {
    const options = jsonBlock(this.html, 'passkey-auth-options') as { challenge: string; rpId: string };
    const authData = Buffer.concat([rpIdHash(options.rpId), Buffer.from([0x05]), Buffer.alloc(4)]);
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: this.#origin(), crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), privateKeyOf(key));
    const credential = {
      id: key.credentialId, rawId: key.credentialId, type: 'public-key', authenticatorAttachment: 'platform', clientExtensionResults: {},
      response: { clientDataJSON: b64(clientData), authenticatorData: b64(authData), signature: b64(signature), userHandle: b64(Buffer.from(key.userId)) },
    };
    return this.#submit('/login', { factor: 'passkey', credential: JSON.stringify(credential) }, (html) => /name="factor" value="passkey"/.test(html));
  }

  /** "Not now" on the passkey offer. */
  async notNow(): Promise<this> {
    return this.#submit('/finish', {}, () => true);
  }

  /** Back at the client: redeems the code. */
  async tokens(): Promise<SignedIn> {
    if (this.#callback === undefined) throw new Error(`the sign-in did not come back to the client; it shows '${this.where}':\n${this.html}`);
    const tokens = await oidc.authorizationCodeGrant(this.#config!, this.#callback, { pkceCodeVerifier: this.#verifier, expectedState: this.#state });
    return { sub: String(tokens.claims()?.sub), accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
  }

  #origin(): string {
    return new URL(this.#page!.url).origin;
  }

  /** Submits the form whose action has `action` and (when several) whose fields `pick` accepts. */
  async #submit(action: string, fields: Record<string, string>, pick: (formHtml: string) => boolean): Promise<this> {
    const page = this.#page;
    if (page === undefined) throw new Error('no page to submit on');
    const forms = [...page.html.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].filter((m) => m[1]!.includes(action) && pick(m[2]!));
    if (forms.length === 0) throw new Error(`no form for ${action} on '${this.where}':\n${page.html}`);
    const form = forms[0]!;
    const values = new URLSearchParams();
    for (const m of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) values.set(m[1]!, unescape(m[2]!));
    for (const [k, v] of Object.entries(fields)) values.set(k, v);
    const to = new URL(unescape(form[1]!), page.url).href;
    this.#land(await this.browser.follow(to, this.target.redirectUri, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(page.url).origin }, body: values.toString(),
    }));
    return this;
  }

  #land(step: { url: string; html?: string }): void {
    if (step.html === undefined) {
      this.#callback = new URL(step.url);
      this.#page = undefined;
    } else {
      this.#page = { url: step.url, html: step.html };
    }
  }
}

const rpIdHash = (rpId: string) => createHash('sha256').update(rpId).digest();
const privateKeyOf = (key: SoftPasskey): KeyObject => createPrivateKey({ key: Buffer.from(key.privateKey, 'base64url'), format: 'der', type: 'pkcs8' });

/** A refresh of `refreshToken` at the tenant's token endpoint: the grant and session made before still hold. */
export async function refresh(target: SignInTarget, refreshToken: string): Promise<SignedIn> {
  const config = await relyingParty(target.issuer, target.clientId);
  const tokens = await oidc.refreshTokenGrant(config, refreshToken);
  return { sub: String(tokens.claims()?.sub ?? ''), accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
}
