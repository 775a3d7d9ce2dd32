/**
 * The console's cookies and its CSRF defence. The cookies are sealed with the master key
 * (AES-256-GCM, bound to the tenant and the cookie's purpose), so a cookie of one tenant never
 * opens at another and nobody can forge or read one.
 *
 * - `idforge_console_login`: one sign-in in progress (state, nonce, PKCE verifier), 10 minutes,
 *   SameSite=Lax because the browser comes back to /console/callback from the sign-in pages.
 * - `idforge_console`: the id of the administrator's console session, which the server keeps
 *   (admin API `console-sessions`): sign-out, the user's disablement, removal or loss of the admin
 *   scope, and the tenant's deletion end it there, whatever the browser still holds. At most 8
 *   hours, SameSite=Strict.
 * - `idforge_console_created`: an application just made and its secrets, for the one page that
 *   shows them after the POST redirects there (so a reload never posts the form again); bound to
 *   the session, 5 minutes, cleared once read. SameSite=Strict.
 * All HttpOnly, Path=/console, Secure whenever the server's public scheme is https.
 *
 * CSRF: every form carries HMAC(tenant's console key, session id), checked on every POST with the
 * Origin header (when the browser sends one, it must be the tenant's own origin).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { EdgeHost } from '../contract/index.ts';
import { CONSOLE_PATH } from './client.ts';

export const SESSION_COOKIE = 'idforge_console';
export const LOGIN_COOKIE = 'idforge_console_login';
export const CREATED_COOKIE = 'idforge_console_created';
const LOGIN_SECONDS = 10 * 60;
/** A created application's secrets wait this long for the page that shows them once. */
const CREATED_SECONDS = 5 * 60;

/** An application just created, and its secrets, between the POST that made it and the page that shows them once. */
export interface CreatedApplication {
  readonly application: string;
  readonly secrets: Readonly<Record<string, string>>;
  /** The session it was made in: no other session opens it. */
  readonly sid: string;
  readonly exp: number;
}

/** A signed-in administrator, as the server's console session answers. */
export interface ConsoleSession {
  readonly sub: string;
  readonly email: string;
  /** The session's id (a bearer secret the server knows by its hash): what the CSRF token is bound to. */
  readonly sid: string;
}

/** What the session cookie holds: the server's session id, and whose it is (to say why, once it ended). */
interface SessionCookie {
  readonly sid: string;
  readonly sub: string;
  /** Epoch seconds. */
  readonly exp: number;
}

export interface LoginTransaction {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  /** A /console/ path to return to after sign-in. */
  readonly returnTo: string;
  readonly exp: number;
}

const now = () => Math.floor(Date.now() / 1000);

/** One cookie's value from the request's Cookie header. */
export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export class ConsoleCookies {
  constructor(
    private readonly master: Pick<EdgeHost, 'seal' | 'unseal' | 'derive'>,
    private readonly tenant: string,
    private readonly secure: boolean,
  ) {}

  #set(res: Response, name: string, value: string, maxAge: number, sameSite: 'Lax' | 'Strict'): void {
    const attrs = [`${name}=${value}`, `Path=${CONSOLE_PATH}`, `Max-Age=${maxAge}`, 'HttpOnly', `SameSite=${sameSite}`, ...(this.secure ? ['Secure'] : [])];
    res.append('set-cookie', attrs.join('; '));
  }

  #open<T extends { exp: number }>(req: Request, name: string): T | undefined {
    const raw = readCookie(req, name);
    if (raw === undefined || raw === '') return undefined;
    try {
      const v = JSON.parse(this.master.unseal(raw, `console:${this.tenant}:${name}`)) as T;
      return typeof v.exp === 'number' && v.exp > now() ? v : undefined;
    } catch {
      return undefined;
    }
  }

  /** The console session the browser presents (whether the server still knows it is the server's to say). */
  presented(req: Request): { readonly sid: string; readonly sub: string } | undefined {
    const c = this.#open<SessionCookie>(req, SESSION_COOKIE);
    return c === undefined ? undefined : { sid: c.sid, sub: c.sub };
  }

  /** Hands the browser the server's session id, until the session's own expiry. */
  startSession(res: Response, s: { readonly id: string; readonly userId: string; readonly expiresAt: string }): void {
    const exp = Math.floor(Date.parse(s.expiresAt) / 1000);
    const c: SessionCookie = { sid: s.id, sub: s.userId, exp };
    this.#set(res, SESSION_COOKIE, this.master.seal(JSON.stringify(c), `console:${this.tenant}:${SESSION_COOKIE}`), Math.max(0, exp - now()), 'Strict');
  }

  endSession(res: Response): void {
    this.#set(res, SESSION_COOKIE, '', 0, 'Strict');
  }

  login(req: Request): LoginTransaction | undefined {
    return this.#open<LoginTransaction>(req, LOGIN_COOKIE);
  }

  startLogin(res: Response, returnTo: string): LoginTransaction {
    const rnd = () => randomBytes(32).toString('base64url');
    const t: LoginTransaction = { state: rnd(), nonce: rnd(), verifier: rnd(), returnTo, exp: now() + LOGIN_SECONDS };
    this.#set(res, LOGIN_COOKIE, this.master.seal(JSON.stringify(t), `console:${this.tenant}:${LOGIN_COOKIE}`), LOGIN_SECONDS, 'Lax');
    return t;
  }

  endLogin(res: Response): void {
    this.#set(res, LOGIN_COOKIE, '', 0, 'Lax');
  }

  /** Keeps a created application's secrets for the page the POST redirects to. */
  holdCreated(res: Response, session: ConsoleSession, application: string, secrets: Readonly<Record<string, string>>): void {
    const c: CreatedApplication = { application, secrets, sid: session.sid, exp: now() + CREATED_SECONDS };
    this.#set(res, CREATED_COOKIE, this.master.seal(JSON.stringify(c), `console:${this.tenant}:${CREATED_COOKIE}`), CREATED_SECONDS, 'Strict');
  }

  /** The created application's secrets, once: the cookie is cleared as it is read. */
  takeCreated(req: Request, res: Response, session: ConsoleSession, application: string): CreatedApplication | undefined {
    const c = this.#open<CreatedApplication>(req, CREATED_COOKIE);
    if (c === undefined) return undefined;
    this.#set(res, CREATED_COOKIE, '', 0, 'Strict');
    return c.sid === session.sid && c.application === application ? c : undefined;
  }

  csrfToken(session: ConsoleSession): string {
    return createHmac('sha256', this.master.derive(`console-csrf:${this.tenant}`)).update(session.sid).digest('base64url');
  }

  /** The form's token matches the session's, and the request comes from the tenant's own pages. */
  csrfOk(req: Request, session: ConsoleSession, origin: string): boolean {
    const sent = req.headers.origin;
    if (sent !== undefined && sent !== origin) return false;
    const given = Buffer.from(typeof req.body?.csrf === 'string' ? req.body.csrf : '');
    const want = Buffer.from(this.csrfToken(session));
    return given.length === want.length && timingSafeEqual(given, want);
  }
}

/** Only a path inside the console, never another origin (an open redirect after sign-in). */
export function safeReturnTo(value: unknown): string {
  return typeof value === 'string' && /^\/console(\/[A-Za-z0-9._~%/-]*)?$/.test(value) && !value.includes('//') && !value.includes('..') ? value : `${CONSOLE_PATH}/`;
}
