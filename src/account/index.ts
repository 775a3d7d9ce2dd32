/**
 * The account page, served on every tenant host at /account/: a person signs in through the tenant
 * itself (OpenID Connect code flow with PKCE, as the console does; the tenant's login policy and
 * second factor apply) and manages their own account:
 *
 * - change their password (the current one required; the tenant's password policy judges the new one);
 * - set up an authenticator app and add passkeys (where the tenant's sign-in offers them);
 * - see their authenticator app and passkeys and remove them (never the last one the tenant's
 *   required second step needs: the directory refuses, in words shown at the factor);
 * - see their sessions and the applications holding their grants, and end them (ending a session or
 *   an application ends its refresh tokens).
 *
 * An app at the edge (src/contract/edge.ts), like the console: it reaches the directory only through
 * the admin API, fixed to the signed-in tenant and to the signed-in person's own user id. Its session
 * is a sealed cookie (30 minutes) naming the person; the person is read back through the admin API on
 * every request, so a disabled or deleted account is signed out at once. Every POST carries a CSRF
 * token bound to the session and must come from the tenant's own origin; every answer to a POST is a
 * redirect (POST-redirect-GET) or the page again with field-level messages. Pages have the console's
 * headers: a strict CSP (own style sheet, own scripts only: the login pages' two for passkeys), no
 * framing, no caching.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import * as oidc from 'openid-client';
import { generateSecret, generateURI } from 'otplib';
import QRCode from 'qrcode';
import { AdminApiError } from '../admin-client/index.ts';
import { RESERVED_TENANTS, type EdgeApp, type EdgeHost, type EdgeTenant, type EventView, type UserFactorsView, type UserSessionsView } from '../contract/index.ts';
import { tenantOrigin } from '../console/client.ts';
import { CONSOLE_HEADERS, STYLE, alert, esc, html, notice, raw, send, signInsTable, utcMinute, type Html } from '../console/pages.ts';
import { relyingParties } from '../console/relying-party.ts';
import { readCookie } from '../console/session.ts';
import { TenantAdmin, adminClientFor } from '../console/tenant-admin.ts';
import { ACCOUNT_CLIENT_ID, ACCOUNT_PATH, ACCOUNT_SCOPES, accountClientMetadata, accountClientSecret, accountRedirectUri, accountSignedOutUri } from './client.ts';

export { ACCOUNT_PATH } from './client.ts';

/** The console's styles, and password fields as wide as its text fields. */
const ACCOUNT_STYLE = `${STYLE}
input[type=password]{display:block;width:100%;max-width:28rem;padding:.45rem;font-size:1rem;border:1px solid #767d88;border-radius:4px}
input[type=password][aria-invalid=true]{border:2px solid #b3261e}`;
const SESSION_COOKIE = 'idforge_account';
const LOGIN_COOKIE = 'idforge_account_login';
/** The key of an authenticator app being set up, between the page that shows it and the code that confirms it. */
const TOTP_COOKIE = 'idforge_account_totp';
const TOTP_SETUP_SECONDS = 10 * 60;
const SESSION_SECONDS = 30 * 60;
const LOGIN_SECONDS = 10 * 60;

interface Session { readonly sub: string; readonly sid: string; readonly exp: number }
interface Login { readonly state: string; readonly nonce: string; readonly verifier: string; readonly exp: number }
/** Bound to the page's session: another session (or person) cannot finish it. */
interface TotpSetup { readonly secret: string; readonly sid: string; readonly exp: number }

/** Notices after a redirect, named by a fixed code (never text from the query string). */
const NOTICES: Readonly<Record<string, string>> = {
  password: 'Your password is changed.',
  totp: 'Your authenticator app is removed. The next sign-in that needs it sets one up again.',
  'totp-added': 'Your authenticator app is set up: sign-ins that ask for a second step accept its codes.',
  'passkey-added': 'Your passkey is added: sign in with it where the sign-in offers passkeys.',
  passkey: 'The passkey is removed. Remove it from your device too (its passkey settings), or it will still be offered there.',
  session: 'The session is ended, with the access of the applications signed in to in it.',
  application: 'The application\'s access is ended: it must ask you to sign in again.',
};

/** Field-level messages of the page, by field. */
type Errors = Readonly<Partial<Record<'currentPassword' | 'newPassword' | 'confirm' | 'totp' | 'passkey' | 'session' | 'application', string>>>;

export function accountEdge(): EdgeApp {
  return {
    path: ACCOUNT_PATH,
    clientId: ACCOUNT_CLIENT_ID,
    client: (tenant, host) => accountClientMetadata(host, host.address(), tenant),
    handler: (host, tenantOf) => {
      const router = accountRouter(host, tenantOf);
      return (req, res, next) => router(req as never, res as never, next);
    },
  };
}

const now = () => Math.floor(Date.now() / 1000);

export function accountRouter(host: EdgeHost, tenantOf: (res: Response) => EdgeTenant): Router {
  const router = express.Router({ strict: true });
  const form = express.urlencoded({ extended: false, limit: '32kb' });
  const adminClient = adminClientFor(() => host.adminCredentials());
  const rpConfig = relyingParties(host, ACCOUNT_CLIENT_ID, (tenant) => accountClientSecret(host, tenant));

  const cookie = (res: Response, name: string, value: string, maxAge: number, sameSite: 'Lax' | 'Strict') =>
    res.append('set-cookie', [`${name}=${value}`, `Path=${ACCOUNT_PATH}`, `Max-Age=${maxAge}`, 'HttpOnly', `SameSite=${sameSite}`,
      ...(host.address().scheme === 'https' ? ['Secure'] : [])].join('; '));
  const sealed = <T>(tenant: string, name: string, v: T) => host.seal(JSON.stringify(v), `account:${tenant}:${name}`);
  const opened = <T extends { exp: number }>(req: Request, tenant: string, name: string): T | undefined => {
    const v = readCookie(req, name);
    if (v === undefined || v === '') return undefined;
    try {
      const o = JSON.parse(host.unseal(v, `account:${tenant}:${name}`)) as T;
      return o.exp > now() ? o : undefined;
    } catch {
      return undefined;
    }
  };
  const csrfOf = (tenant: string, s: Session) => createHmac('sha256', host.derive(`account-csrf:${tenant}`)).update(s.sid).digest('base64url');

  const frame = (tenant: EdgeTenant, title: string, body: Html, csrf?: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · ${esc(tenant.displayName)}</title>
<link rel="stylesheet" href="${ACCOUNT_PATH}/static/account.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><p class="brand"><span class="tenant">${esc(tenant.displayName)}</span> account</p>
${csrf === undefined ? '' : html`<form method="post" action="${ACCOUNT_PATH}/logout" class="signout"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="secondary">Sign out</button></form>`.text}
</header>
<main id="main" tabindex="-1">
<h1>${esc(title)}</h1>
${body.text}
</main>
</body></html>`;
  const show = (res: Response, status: number, tenant: EdgeTenant, title: string, body: Html, csrf?: string) => send(res, status, frame(tenant, title, body, csrf));

  /** An unexpected failure becomes a page in words and one log line, never a stack trace. */
  const safely = (handler: (req: Request, res: Response) => Promise<unknown>) => async (req: Request, res: Response) => {
    try {
      await handler(req, res);
    } catch (err) {
      host.log(`account: ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`);
      if (res.headersSent) return;
      const status = err instanceof AdminApiError && (err.status === 503 || err.status === 507) ? err.status : 500;
      show(res, status, tenantOf(res), 'Something went wrong', alert('Your account page could not complete this request because of a problem on our side, not because of anything you entered. Try again in a moment.'));
    }
  };

  router.get(`${ACCOUNT_PATH}/static/account.css`, (_req, res) => {
    res.set({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }).send(ACCOUNT_STYLE);
  });
  router.use(ACCOUNT_PATH, (_req: Request, res: Response, next: () => void) => {
    const tenant = tenantOf(res);
    if (RESERVED_TENANTS.includes(tenant.name)) return show(res, 404, tenant, 'No account page here', html`<p>The server's own tenant has no people, so no account page.</p>`);
    next();
  });
  router.get(ACCOUNT_PATH, (_req, res) => res.redirect(308, `${ACCOUNT_PATH}/`));

  const login = async (res: Response, tenant: EdgeTenant) => {
    const rnd = () => randomBytes(32).toString('base64url');
    const t: Login = { state: rnd(), nonce: rnd(), verifier: rnd(), exp: now() + LOGIN_SECONDS };
    cookie(res, LOGIN_COOKIE, sealed(tenant.name, LOGIN_COOKIE, t), LOGIN_SECONDS, 'Lax');
    const url = oidc.buildAuthorizationUrl(await rpConfig(tenant.name), {
      redirect_uri: accountRedirectUri(host.address(), tenant.name), scope: ACCOUNT_SCOPES.join(' '), state: t.state, nonce: t.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(t.verifier), code_challenge_method: 'S256',
    });
    res.set(CONSOLE_HEADERS).redirect(303, url.href);
  };

  router.get(`${ACCOUNT_PATH}/callback`, safely(async (req, res) => {
    const tenant = tenantOf(res);
    const t = opened<Login>(req, tenant.name, LOGIN_COOKIE);
    cookie(res, LOGIN_COOKIE, '', 0, 'Lax');
    const again = html`<p><a href="${ACCOUNT_PATH}/">Sign in again</a></p>`;
    if (t === undefined) return show(res, 400, tenant, 'Sign-in expired', html`<p>This sign-in took too long or was already used.</p>${again}`);
    const current = new URL(accountRedirectUri(host.address(), tenant.name));
    current.search = new URL(req.originalUrl, 'http://x').search;
    let sub: string;
    try {
      const tokens = await oidc.authorizationCodeGrant(await rpConfig(tenant.name), current, { pkceCodeVerifier: t.verifier, expectedState: t.state, expectedNonce: t.nonce });
      sub = String(tokens.claims()?.sub ?? '');
    } catch (err) {
      const e = err as { error?: string; error_description?: string };
      return show(res, 400, tenant, 'Sign-in did not complete', html`${alert(`Signing in did not complete${e.error === undefined ? '' : ` (${e.error})`}.`)}${again}`);
    }
    const s: Session = { sub, sid: randomBytes(32).toString('base64url'), exp: now() + SESSION_SECONDS };
    cookie(res, SESSION_COOKIE, sealed(tenant.name, SESSION_COOKIE, s), SESSION_SECONDS, 'Strict');
    res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/`);
  }));

  interface Who { readonly tenant: EdgeTenant; readonly admin: TenantAdmin; readonly session: Session; readonly csrf: string; readonly email: string }

  /** The signed-in person, still enabled according to the admin API; POSTs also pass the CSRF check. */
  const signedIn = (handler: (req: Request, res: Response, w: Who) => Promise<unknown>) => safely(async (req, res) => {
    const tenant = tenantOf(res);
    const session = opened<Session>(req, tenant.name, SESSION_COOKIE);
    const admin = new TenantAdmin(adminClient(), tenant.name);
    const user = session === undefined ? undefined : await admin.find('getUser', { userId: session.sub });
    if (session === undefined || user === undefined || user.disabled) {
      if (session !== undefined) cookie(res, SESSION_COOKIE, '', 0, 'Strict');
      if (req.method === 'GET') return login(res, tenant);
      return show(res, 403, tenant, 'Session expired', html`<p>Your session on this page has ended, so nothing was changed.</p><p><a href="${ACCOUNT_PATH}/">Sign in again</a></p>`);
    }
    const w: Who = { tenant, admin, session, csrf: csrfOf(tenant.name, session), email: user.email };
    if (req.method === 'POST') {
      const origin = req.headers.origin;
      const given = Buffer.from(typeof req.body?.csrf === 'string' ? req.body.csrf : '');
      const want = Buffer.from(w.csrf);
      if ((origin !== undefined && origin !== tenantOrigin(host.address(), tenant.name)) || given.length !== want.length || !timingSafeEqual(given, want)) {
        return show(res, 403, tenant, 'Request refused', html`<p>The form could not be verified (it may come from another site, or from an old page), so nothing was changed. Go back, reload the page and try again.</p>`);
      }
    }
    return handler(req, res, w);
  });

  const overview = async (res: Response, w: Who, status: number, errors: Errors = {}, noticeCode?: string) => {
    const [factors, sessions, signIns] = await Promise.all([
      w.admin.call('getUserFactors', me(w)), w.admin.call('listUserSessions', me(w)),
      // The event log's sign-ins of this person, newest first.
      w.admin.call('listEvents', {}, { query: { type: 'login.success', object: `user:${w.session.sub}`, order: 'desc', limit: RECENT_SIGN_INS } }),
    ]);
    show(res, status, w.tenant, 'Your account', accountView(w, factors, sessions, signIns.items, errors, noticeCode), w.csrf);
  };

  router.get(`${ACCOUNT_PATH}/`, signedIn(async (req, res, w) => {
    const code = typeof req.query.done === 'string' && Object.hasOwn(NOTICES, req.query.done) ? req.query.done : undefined;
    await overview(res, w, 200, {}, code);
  }));

  /** Runs an admin API change for the person; a refusal the person can act on comes back as a field's message. */
  const attempt = async (res: Response, w: Who, field: keyof Errors, done: keyof typeof NOTICES, run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (err) {
      if (!(err instanceof AdminApiError) || err.status < 400 || err.status >= 500) throw err;
      const path = err.body?.path;
      const target: keyof Errors = path === 'newPassword' || path === 'currentPassword' ? path : field;
      return overview(res, w, err.status === 429 ? 429 : 400, { [target]: sentence(err.body?.message ?? 'this change was refused', target) });
    }
    res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/?done=${done}`);
  };
  const me = (w: Who) => ({ userId: w.session.sub });

  router.post(`${ACCOUNT_PATH}/password`, form, signedIn(async (req, res, w) => {
    const b = req.body as Record<string, unknown>;
    const text = (k: string) => (typeof b[k] === 'string' ? b[k] : '');
    if (text('currentPassword') === '') return overview(res, w, 400, { currentPassword: 'Enter your current password.' });
    if (text('newPassword') !== text('confirm')) return overview(res, w, 400, { confirm: 'The two new passwords differ: type the same password twice.' });
    return attempt(res, w, 'newPassword', 'password', () => w.admin.call('changeUserPassword', me(w), {
      body: { currentPassword: text('currentPassword'), newPassword: text('newPassword'), clientAddress: req.ip ?? 'unknown' },
    }));
  }));
  /** Setting up an authenticator app: its key as a QR code (inline SVG: the page's CSP loads no images) and as text, then a code it shows. */
  const totpSetupPage = async (res: Response, w: Who, status: number, secret: string, error?: string) => {
    const uri = generateURI({ issuer: w.tenant.displayName, label: w.email, secret });
    const svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 1, width: 200 });
    show(res, status, w.tenant, 'Set up an authenticator app', html`${error === undefined ? '' : alert('Nothing was set up. See the message below.')}
<p>Scan this QR code with your authenticator app, or type the key into it. Then enter the code it shows.</p>
<figure class="qr" role="img" aria-label="QR code that adds ${w.email} at ${w.tenant.displayName} to an authenticator app">${raw(svg)}</figure>
<p>Key: <code id="totp-secret">${secret}</code></p>
<form method="post" action="${ACCOUNT_PATH}/totp">${raw(`<input type="hidden" name="csrf" value="${esc(w.csrf)}">`)}
<label for="code">Code the app shows (6 digits)</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required${error === undefined ? '' : raw(' aria-invalid="true" aria-describedby="code-error"')}>
${error === undefined ? '' : html`<p id="code-error" class="field-error">${error}</p>`}
<button type="submit">Finish setup</button>
</form>
<p><a href="${ACCOUNT_PATH}/">Back to your account</a></p>`, w.csrf);
  };
  router.get(`${ACCOUNT_PATH}/totp`, signedIn(async (req, res, w) => {
    if ((await w.admin.call('getUserFactors', me(w))).totp !== null) return res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/`);
    const pending = opened<TotpSetup>(req, w.tenant.name, TOTP_COOKIE);
    const secret = pending !== undefined && pending.sid === w.session.sid ? pending.secret : generateSecret();
    cookie(res, TOTP_COOKIE, sealed(w.tenant.name, TOTP_COOKIE, { secret, sid: w.session.sid, exp: now() + TOTP_SETUP_SECONDS } satisfies TotpSetup), TOTP_SETUP_SECONDS, 'Strict');
    return totpSetupPage(res, w, 200, secret);
  }));
  router.post(`${ACCOUNT_PATH}/totp`, form, signedIn(async (req, res, w) => {
    const pending = opened<TotpSetup>(req, w.tenant.name, TOTP_COOKIE);
    if (pending === undefined || pending.sid !== w.session.sid) {
      return show(res, 400, w.tenant, 'The setup expired', html`<p>The key shown for this setup is no longer valid, so nothing was set up.</p><p><a href="${ACCOUNT_PATH}/totp">Start again</a></p>`, w.csrf);
    }
    const code = String(req.body?.code ?? '').replace(/\s+/g, '');
    if (!/^\d{6}$/.test(code)) return totpSetupPage(res, w, 400, pending.secret, 'Enter the 6 digits the app shows.');
    try {
      await w.admin.call('enrolUserTotp', me(w), { body: { secret: pending.secret, code } });
    } catch (err) {
      if (!(err instanceof AdminApiError) || err.status !== 400) throw err;
      return totpSetupPage(res, w, 400, pending.secret, 'That code does not match the key: check that the app shows this key and that its clock is right, then enter its new code.');
    }
    cookie(res, TOTP_COOKIE, '', 0, 'Strict');
    res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/?done=totp-added`);
  }));
  /**
   * Adding a passkey: the admin API's WebAuthn options in a JSON block (data, not script), and the
   * login pages' two scripts from the tenant host (CSP `script-src 'self'`) that hand them to the
   * browser and put its answer in the form, which posts as every other form here (CSRF included).
   */
  const passkeyPage = async (res: Response, w: Who, status: number, error?: string) => {
    const { options } = await w.admin.call('startUserPasskeyEnrolment', me(w));
    show(res, status, w.tenant, 'Add a passkey', html`${error === undefined ? '' : alert(error)}
<p>A passkey signs you in with this device's fingerprint, face or PIN, or with your phone, instead of a password.</p>
${raw(`<script type="application/json" id="passkey-register-options">${JSON.stringify(options).replace(/</g, '\\u003c')}</script>`)}
<form method="post" action="${ACCOUNT_PATH}/passkeys">${raw(`<input type="hidden" name="csrf" value="${esc(w.csrf)}">`)}
<input type="hidden" name="credential" value="">
<button type="button" data-passkey="register" data-options="passkey-register-options" hidden>Create the passkey</button>
<p class="detail" id="passkey-status" role="status" aria-live="polite"></p>
<noscript><p class="detail">Adding a passkey needs JavaScript in this browser.</p></noscript>
</form>
<p><a href="${ACCOUNT_PATH}/">Back to your account</a></p>
${raw('<script src="/static/login/simplewebauthn-browser.js" defer></script>\n<script src="/static/login/passkey.js" defer></script>')}`, w.csrf);
  };
  router.get(`${ACCOUNT_PATH}/passkeys`, signedIn(async (_req, res, w) => {
    if (!(await w.admin.call('getUserFactors', me(w))).passkeysAllowed) return res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/`);
    return passkeyPage(res, w, 200);
  }));
  router.post(`${ACCOUNT_PATH}/passkeys`, form, signedIn(async (req, res, w) => {
    let credential: unknown;
    try {
      credential = JSON.parse(String(req.body?.credential ?? ''));
    } catch {
      credential = undefined;
    }
    try {
      await w.admin.call('enrolUserPasskey', me(w), { body: { credential: credential as never } });
    } catch (err) {
      if (!(err instanceof AdminApiError) || err.status !== 400) throw err;
      return passkeyPage(res, w, 400, 'The passkey was not saved: the request was incomplete, expired or could not be verified. Try again.');
    }
    res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/?done=passkey-added`);
  }));
  router.post(`${ACCOUNT_PATH}/totp/remove`, form, signedIn((_req, res, w) => attempt(res, w, 'totp', 'totp', () => w.admin.call('deleteUserTotp', me(w)))));
  router.post(`${ACCOUNT_PATH}/passkeys/remove`, form, signedIn((req, res, w) => attempt(res, w, 'passkey', 'passkey', () =>
    w.admin.call('deleteUserPasskey', { ...me(w), credentialId: String(req.body?.id ?? '') }))));
  router.post(`${ACCOUNT_PATH}/sessions/end`, form, signedIn((req, res, w) => attempt(res, w, 'session', 'session', () =>
    w.admin.call('deleteUserSession', { ...me(w), sessionId: String(req.body?.id ?? '') }))));
  router.post(`${ACCOUNT_PATH}/applications/end`, form, signedIn((req, res, w) => attempt(res, w, 'application', 'application', () =>
    w.admin.call('revokeUserApplication', { ...me(w), application: String(req.body?.application ?? '') }))));

  /** Signs out of the account page and of the tenant (RP-initiated logout, which asks the person to confirm). */
  router.post(`${ACCOUNT_PATH}/logout`, form, signedIn(async (_req, res, w) => {
    cookie(res, SESSION_COOKIE, '', 0, 'Strict');
    const url = oidc.buildEndSessionUrl(await rpConfig(w.tenant.name), { client_id: ACCOUNT_CLIENT_ID, post_logout_redirect_uri: accountSignedOutUri(host.address(), w.tenant.name) });
    res.set(CONSOLE_HEADERS).redirect(303, url.href);
  }));
  router.post(`${ACCOUNT_PATH}/sessions/end-all`, form, signedIn(async (_req, res, w) => {
    await w.admin.call('deleteUserSessions', { userId: w.session.sub });
    cookie(res, SESSION_COOKIE, '', 0, 'Strict');
    res.set(CONSOLE_HEADERS).redirect(303, `${ACCOUNT_PATH}/signed-out`);
  }));
  router.get(`${ACCOUNT_PATH}/signed-out`, (_req, res) => {
    show(res, 200, tenantOf(res), 'Signed out', html`<p>You are signed out.</p><p><a href="${ACCOUNT_PATH}/">Sign in to your account</a></p>`);
  });
  return router;
}

/** The admin API's words for the person: "newPassword must be ..." reads "The new password must be ...". */
function sentence(message: string, field: keyof Errors): string {
  if (message === 'currentPassword is not the current password') return 'That is not your current password.';
  const names: Readonly<Record<string, string>> = { newPassword: 'The new password', currentPassword: 'The current password' };
  const named = names[field];
  if (named !== undefined && message.startsWith(`${field} `)) return `${named} ${message.slice(field.length + 1)}.`;
  return `${message[0]!.toUpperCase()}${message.slice(1)}.`;
}

const when = (iso: string | null) => (iso === null ? 'unknown' : utcMinute(iso));

/** Sign-ins the account page lists. */
const RECENT_SIGN_INS = 10;

function accountView(w: { readonly email: string; readonly csrf: string }, f: UserFactorsView, s: UserSessionsView, signIns: readonly EventView[], errors: Errors, noticeCode: string | undefined): Html {
  const csrf = html`<input type="hidden" name="csrf" value="${w.csrf}">`;
  const fieldError = (field: keyof Errors) => (errors[field] === undefined ? '' : html`<p id="${field}-error" class="field-error">${errors[field]}</p>`);
  const invalid = (field: keyof Errors) => (errors[field] === undefined ? '' : raw(` aria-invalid="true" aria-describedby="${field}-error"`));
  const anyError = Object.values(errors).some((e) => e !== undefined);
  const password = !f.hasPassword ? html`<p>You sign in without a password.</p>` : html`<form method="post" action="${ACCOUNT_PATH}/password">${csrf}
<input type="hidden" name="username" autocomplete="username" value="${w.email}">
<label for="currentPassword">Current password</label>
<input id="currentPassword" name="currentPassword" type="password" autocomplete="current-password" required${invalid('currentPassword')}>
${fieldError('currentPassword')}
<label for="newPassword">New password</label>
<input id="newPassword" name="newPassword" type="password" autocomplete="new-password" required${invalid('newPassword')}>
${fieldError('newPassword')}
<label for="confirm">New password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required${invalid('confirm')}>
${fieldError('confirm')}
<button type="submit">Change password</button>
</form>`;
  const totp = f.totp === null
    ? html`<p>No authenticator app is set up.${f.secondFactorRequired ? ' One is set up at the next sign-in that asks for it, or here.' : ''}</p>
<p><a class="button secondary" href="${ACCOUNT_PATH}/totp">Set up an authenticator app</a></p>`
    : html`<p>Set up ${when(f.totp.createdAt)}.</p>
<form method="post" action="${ACCOUNT_PATH}/totp/remove">${csrf}<button type="submit" class="danger">Remove the authenticator app</button></form>${fieldError('totp')}`;
  const add = f.passkeysAllowed ? html`<p><a class="button secondary" href="${ACCOUNT_PATH}/passkeys">Add a passkey</a></p>` : '';
  const passkeys = f.passkeys.length === 0 ? html`<p>You have no passkeys.</p>${add}` : html`<table>
<caption>Your passkeys</caption>
<thead><tr><th scope="col">Passkey</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${f.passkeys.map((p, i) => html`<tr><td>Passkey ${i + 1} <code>${p.id.slice(0, 10)}…</code></td><td>${when(p.createdAt)}</td>
<td><form method="post" action="${ACCOUNT_PATH}/passkeys/remove">${csrf}<input type="hidden" name="id" value="${p.id}"><button type="submit" class="danger" aria-label="Remove passkey ${i + 1}">Remove</button></form></td></tr>`)}</tbody>
</table>${fieldError('passkey')}${add}`;
  const sessions = s.sessions.length === 0 ? html`<p>No sessions.</p>` : html`<table>
<caption>Where you are signed in</caption>
<thead><tr><th scope="col">Signed in</th><th scope="col">Applications</th><th scope="col">Ends</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${s.sessions.map((x, i) => html`<tr><td>${when(x.signedInAt)}</td><td>${x.applications.join(', ') || 'none yet'}</td><td>${when(x.expiresAt)}</td>
<td><form method="post" action="${ACCOUNT_PATH}/sessions/end">${csrf}<input type="hidden" name="id" value="${x.id}"><button type="submit" class="danger" aria-label="End session ${i + 1}">End</button></form></td></tr>`)}</tbody>
</table>${fieldError('session')}`;
  const everywhere = html`<form method="post" action="${ACCOUNT_PATH}/sessions/end-all">${csrf}<button type="submit" class="danger">Sign out everywhere</button></form>
<p class="help">Ends every session and every application's access, this page's too.</p>`;
  const apps = s.applications.filter((a) => a.application !== null);
  const applications = apps.length === 0 ? html`<p>No application holds access for you.</p>` : html`<table>
<caption>Applications with access</caption>
<thead><tr><th scope="col">Application</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${apps.map((a) => html`<tr><td>${a.name}</td><td>${when(a.since)}</td>
<td><form method="post" action="${ACCOUNT_PATH}/applications/end">${csrf}<input type="hidden" name="application" value="${a.application!}"><button type="submit" class="danger" aria-label="End access of ${a.name}">End access</button></form></td></tr>`)}</tbody>
</table>${fieldError('application')}`;
  const recent = html`${signInsTable(signIns, 'Your last')}
<p class="help">A sign-in you do not recognise? Change your password and sign out everywhere.</p>`;
  return html`<p>Signed in as <strong>${w.email}</strong>.</p>
${anyError ? alert('Nothing was changed. See the message below.') : ''}${noticeCode === undefined ? '' : notice(NOTICES[noticeCode]!)}
<h2>Password</h2>
${password}
<h2>Authenticator app</h2>
${totp}
<h2>Passkeys</h2>
${passkeys}
<h2>Sessions</h2>
${sessions}
${everywhere}
<h2>Applications</h2>
${applications}
<h2>Recent sign-ins</h2>
${recent}`;
}
