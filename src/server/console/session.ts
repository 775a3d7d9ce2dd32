/**
 * The console's cookies and its CSRF defence. No server-side session store: both cookies are
 * sealed with the master key (AES-256-GCM, bound to the tenant and the cookie's purpose), so a
 * cookie of one tenant never opens at another and nobody can forge or read one.
 *
 * - `idforge_console_login`: one sign-in in progress (state, nonce, PKCE verifier), 10 minutes,
 *   SameSite=Lax because the browser comes back to /console/callback from the sign-in pages.
 * - `idforge_console`: the signed-in administrator, 8 hours, SameSite=Strict.
 * Both HttpOnly, Path=/console, Secure whenever the server's public scheme is https.
 *
 * CSRF: every form carries HMAC(tenant's console key, session id), checked on every POST with the
 * Origin header (when the browser sends one, it must be the tenant's own origin).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { MasterKey } from '../_crypto.ts';
import { CONSOLE_PATH } from './client.ts';

export const SESSION_COOKIE = 'idforge_console';
export const LOGIN_COOKIE = 'idforge_console_login';
/** A signed-in administrator stays signed in this long (then signs in again, usually silently). */
export const SESSION_SECONDS = 8 * 60 * 60;
const LOGIN_SECONDS = 10 * 60;

export interface ConsoleSession {
  readonly sub: string;
  readonly email: string;
  /** Random per sign-in: what the CSRF token is bound to. */
  readonly sid: string;
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

function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export class ConsoleCookies {
  constructor(
    private readonly master: MasterKey,
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

  session(req: Request): ConsoleSession | undefined {
    return this.#open<ConsoleSession>(req, SESSION_COOKIE);
  }

  startSession(res: Response, who: { sub: string; email: string }): ConsoleSession {
    const s: ConsoleSession = { sub: who.sub, email: who.email, sid: randomBytes(16).toString('base64url'), exp: now() + SESSION_SECONDS };
    this.#set(res, SESSION_COOKIE, this.master.seal(JSON.stringify(s), `console:${this.tenant}:${SESSION_COOKIE}`), SESSION_SECONDS, 'Strict');
    return s;
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
