/**
 * The pages of password links (directory/password-links.ts) on the tenant host:
 *
 * - `/interaction/<uid>/forgot`: "Forgot password?" from the sign-in page. One email field; the
 *   answer is the same page, in the same words and without waiting for the mail server, whether or
 *   not the address has an account. The guessing defence's locks and backoff hold here as at sign-in.
 * - `/password/<token>`: the mailed link (recovery or invitation). Opening it changes nothing (mail
 *   scanners open links); the form sets the password, judged by the tenant's password policy, and
 *   answers with a redirect to `/password/done` (POST-redirect-GET). A link that is no link (mistyped,
 *   used, expired) counts as a failed guess from that address.
 *
 * Nobody is signed in here: the person signs in afterwards with the new password, and a required
 * second factor is asked for as always. CSRF: the forgot form is bound to its interaction as every
 * sign-in form; the link's form to the link itself (an HMAC of its stored id).
 */
import type { Request, Response, Router } from 'express';
import express from 'express';
import type Provider from 'oidc-provider';
import type { ServerContext } from '../_context.ts';
import { openPasswordLink, PASSWORD_LINK_PATH, redeemPasswordLink, sendPasswordLink, lifetimeOf, type OpenLink } from '../directory/password-links.ts';
import { DatabaseFault, ServerError } from '../errors.ts';
import type { TenantRecord } from '../storage/types.ts';
import { policyFor } from './factors.ts';
import { duration } from './mail-templates.ts';
import { escapeHtml, renderPage } from './pages.ts';
import type { GuessingDefence } from './throttle.ts';
import { normalizeEmail } from './types.ts';

interface Locals {
  readonly tenant: TenantRecord;
  readonly provider: Provider;
}

/** What the interaction router lends these pages, so that they read and defend as its own do. */
export interface RecoveryHelpers {
  readonly defence: GuessingDefence;
  /** An HMAC of `binding` under the tenant's CSRF key, and its check. */
  readonly csrf: (tenant: string, binding: string) => string;
  readonly csrfOk: (tenant: string, binding: string, given: unknown) => boolean;
  readonly send: (res: Response, status: number, html: string) => void;
  readonly messages: (error?: string, notice?: string) => string;
  /** Runs a handler; an unexpected error or a database fault becomes a page in words. */
  readonly safely: (handler: (req: Request, res: Response) => Promise<unknown>) => (req: Request, res: Response) => Promise<void>;
}

const INVALID_LINK = 'This link does not work: it may be incomplete, already used, or expired. Ask for a new one: on the sign-in page, choose "Forgot password?".';
const linkBinding = (link: OpenLink) => `password-link:${link.id}`;
/** Interaction ids as oidc-provider makes them; a `uid` in a query string is used only when it looks like one. */
const UID = /^[A-Za-z0-9_-]{1,64}$/;

export function mountRecovery(router: Router, ctx: ServerContext, h: RecoveryHelpers): void {
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const address = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';
  const page = (res: Response, status: number, l: Locals, title: string, body: string) =>
    h.send(res, status, renderPage({ title, tenantName: l.tenant.body.displayName, body }));

  const forgotPage = (res: Response, status: number, l: Locals, uid: string, email: string, error?: string, notice?: string) =>
    page(res, status, l, 'Forgot password?', `<p>Enter the email address of your account. We will email you a link to choose a new password.</p>
${h.messages(error, notice)}
<form method="post" action="/interaction/${encodeURIComponent(uid)}/forgot">
<input type="hidden" name="csrf" value="${escapeHtml(h.csrf(l.tenant.name, uid))}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required${notice === undefined ? ' autofocus' : ''} value="${escapeHtml(email)}"${error === undefined ? '' : ' aria-invalid="true" aria-describedby="email-error"'}>
${error === undefined ? '' : `<p id="email-error" class="detail">${escapeHtml(error)}</p>`}
<button type="submit">Email me a link</button>
</form>
<p><a href="/interaction/${encodeURIComponent(uid)}">Back to sign-in</a></p>`);

  /** The interaction behind the page, or undefined when it expired (answered). */
  const interaction = async (req: Request, res: Response): Promise<{ l: Locals; uid: string } | undefined> => {
    const l = res.locals as Locals;
    try {
      const details = await l.provider.interactionDetails(req, res);
      if (details.uid !== req.params.uid) throw new Error('another interaction');
      return { l, uid: details.uid };
    } catch (err) {
      if (err instanceof DatabaseFault) throw err;
      page(res, 400, l, 'Sign-in expired', '<p>This sign-in page has expired or was already used. Go back to the application and start again.</p>');
      return undefined;
    }
  };

  router.get('/interaction/:uid/forgot', h.safely(async (req, res) => {
    const i = await interaction(req, res);
    if (i === undefined) return;
    if (!policyFor(i.l.tenant.body).steps[0]!.includes('password')) return res.redirect(303, `/interaction/${encodeURIComponent(i.uid)}`);
    forgotPage(res, 200, i.l, i.uid, '');
  }));

  router.post('/interaction/:uid/forgot', form, h.safely(async (req, res) => {
    const i = await interaction(req, res);
    if (i === undefined) return;
    const { l, uid } = i;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!h.csrfOk(l.tenant.name, uid, body.csrf)) return page(res, 403, l, 'Request refused', '<p>The form could not be verified. Go back and try again.</p>');
    const typed = typeof body.email === 'string' ? body.email.trim() : '';
    if (typed === '') return forgotPage(res, 400, l, uid, '', 'Enter your email address.');
    const keys = { account: normalizeEmail(typed), address: address(req) };
    await h.defence.serialize(l.tenant.name, keys, async () => {
      const refusal = await h.defence.check(l.tenant.name, keys, 'recovery');
      if (refusal !== undefined) return forgotPage(res, 429, l, uid, typed, refusal);
      const user = await ctx.storage.users.getByEmail(l.tenant.name, typed);
      // Sent only where a password signs people in; the answer is the same either way.
      if (user !== undefined && !user.body.disabled && policyFor(l.tenant.body).steps[0]!.includes('password')) {
        await sendPasswordLink(ctx, l.tenant, user, 'recovery', { uid, awaitDelivery: false });
        ctx.login.audit({ audit: 'recovery.requested', tenant: l.tenant.name, user: user.id, address: keys.address });
      } else {
        ctx.login.audit({ audit: 'recovery.requested', tenant: l.tenant.name, user: null, account: keys.account, address: keys.address });
      }
      forgotPage(res, 200, l, uid, typed, undefined,
        `If ${typed} has an account here, we sent it a link to choose a new password. It expires in ${duration(lifetimeOf('recovery'))}.`);
    });
  }));

  const linkPage = (res: Response, status: number, l: Locals, token: string, link: OpenLink, error?: { field: 'password' | 'confirm'; message: string }) => {
    const invalid = (field: string) => (error?.field === field ? ` aria-invalid="true" aria-describedby="${field}-error"` : '');
    const note = (field: string) => (error?.field === field ? `<p id="${field}-error" class="detail">${escapeHtml(error.message)}</p>` : '');
    const policy = l.tenant.body.passwordPolicy;
    page(res, status, l, link.kind === 'invitation' ? 'Choose your password' : 'Choose a new password', `<p>For <strong>${escapeHtml(link.user.body.email)}</strong>.</p>
<p class="detail">At least ${policy?.minLength ?? 8} characters. A few unrelated words make a password that is long and easy to remember; common passwords are refused.</p>
${h.messages(error === undefined ? undefined : 'The password was not set. See below.')}
<form method="post" action="${PASSWORD_LINK_PATH}/${encodeURIComponent(token)}">
<input type="hidden" name="csrf" value="${escapeHtml(h.csrf(l.tenant.name, linkBinding(link)))}">
<input type="hidden" name="username" autocomplete="username" value="${escapeHtml(link.user.body.email)}">
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required autofocus${invalid('password')}>
${note('password')}
<label for="confirm">New password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required${invalid('confirm')}>
${note('confirm')}
<button type="submit">Set password</button>
</form>`);
  };

  /** The link behind the request; a bad one is answered (and counted against the address). */
  const openLink = async (req: Request, res: Response, l: Locals): Promise<OpenLink | undefined> => {
    const keys = { account: undefined, address: address(req) };
    const token = String(req.params.token);
    const refusal = await h.defence.check(l.tenant.name, keys, 'password-link');
    if (refusal !== undefined) {
      page(res, 429, l, 'Try again later', `<p class="error" role="alert">${escapeHtml(refusal)}</p>`);
      return undefined;
    }
    const link = await openPasswordLink(ctx, l.tenant.name, token);
    if (link === undefined) {
      const locked = await h.defence.failure(l.tenant.name, keys, 'password-link', 'unknown, used or expired link');
      page(res, locked === undefined ? 400 : 429, l, 'Link not valid', `<p class="error" role="alert">${escapeHtml(locked ?? INVALID_LINK)}</p>`);
    }
    return link;
  };

  router.get(`${PASSWORD_LINK_PATH}/done`, h.safely(async (req, res) => {
    const l = res.locals as Locals;
    const uid = typeof req.query.uid === 'string' && UID.test(req.query.uid) ? req.query.uid : undefined;
    const next = uid !== undefined
      ? `<p><a href="/interaction/${encodeURIComponent(uid)}">Continue signing in</a></p>`
      : `<p>Sign in to the applications of ${escapeHtml(l.tenant.body.displayName)} with it, or manage your account at <a href="/account/">your account page</a>.</p>`;
    page(res, 200, l, 'Password set', `<p class="notice" role="status">Your password is set.</p>
${next}`);
  }));

  router.get(`${PASSWORD_LINK_PATH}/:token`, h.safely(async (req, res) => {
    const l = res.locals as Locals;
    const link = await openLink(req, res, l);
    if (link !== undefined) linkPage(res, 200, l, String(req.params.token), link);
  }));

  router.post(`${PASSWORD_LINK_PATH}/:token`, form, h.safely(async (req, res) => {
    const l = res.locals as Locals;
    const token = String(req.params.token);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const first = await openLink(req, res, l);
    if (first === undefined) return;
    if (!h.csrfOk(l.tenant.name, linkBinding(first), body.csrf)) return page(res, 403, l, 'Request refused', '<p>The form could not be verified. Go back and try again.</p>');
    const password = typeof body.password === 'string' ? body.password : '';
    if (password !== body.confirm) return linkPage(res, 400, l, token, first, { field: 'confirm', message: 'The two passwords differ: type the same password twice.' });
    const keys = { account: normalizeEmail(first.user.body.email), address: address(req) };
    await h.defence.serialize(l.tenant.name, keys, async () => {
      // Read again under the person's keys: of two submissions of one link, the second finds it used.
      const link = await openLink(req, res, l);
      if (link === undefined) return;
      try {
        await redeemPasswordLink(ctx, l.tenant.name, link, password);
      } catch (err) {
        if (!(err instanceof ServerError) || err.status !== 400) throw err;
        // The policy's words, as every door says them, for the person: "Password must be ...".
        return linkPage(res, 400, l, token, link, { field: 'password', message: `P${err.message.slice(1)}` });
      }
      await h.defence.success(l.tenant.name, keys);
      ctx.login.audit({ audit: 'password.set', via: link.kind, tenant: l.tenant.name, user: link.user.id, address: keys.address });
      res.redirect(303, `${PASSWORD_LINK_PATH}/done${link.uid === undefined ? '' : `?uid=${encodeURIComponent(link.uid)}`}`);
    });
  }));
}
