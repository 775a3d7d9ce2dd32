/**
 * The interaction pages oidc-provider sends people to: sign-in (driven by the tenant's login
 * policy, step by step), the passkey offer after sign-in, and the "not assigned" page. Mounted on
 * tenant hosts at /interaction/:uid; the passkey helper scripts at /static/login/.
 *
 * CSRF: every form carries a token = HMAC(tenant key, interaction uid). The uid appears only in
 * the victim's own URL and the interaction cookie binds it to that browser, so a forged form
 * cannot carry a valid pair.
 *
 * Guessing: every factor's attempt passes the GuessingDefence first (throttle.ts) and every
 * failure is counted there, so no factor can be brute-forced around the others' limits.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { endpointUrl, issuerUrl } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { DatabaseFault } from '../errors.ts';
import { isAssigned } from '../accounts.ts';
import type { TenantRecord, UserRecord } from '../storage/types.ts';
import { renderPasskeyRegistration, verifyPasskeyRegistration } from './factor-passkey.ts';
import { FACTORS, policyFor } from './factors.ts';
import { PAGE_HEADERS, escapeHtml, renderPage } from './pages.ts';
import { mountRecovery } from './recovery.ts';
import { mountLoginStatic } from './static.ts';
import { GuessingDefence } from './throttle.ts';
import { normalizeEmail, type FactorContext, type LoginPolicy } from './types.ts';

interface Locals {
  readonly tenant: TenantRecord;
  readonly provider: Provider;
}

/**
 * Progress through a multi-step policy, kept with the interaction (same lifetime). `used`: the
 * factors already passed (never offered again); `done`: all steps passed, the passkey offer shows.
 */
interface Progress {
  readonly userId: string;
  readonly step: number;
  readonly used?: readonly string[];
  readonly done?: boolean;
}
const PROGRESS_MODEL = 'LoginProgress';

/** Which factors the current step offers: the policy's, minus any the person already passed. */
const offered = (policy: LoginPolicy, progress: Progress | undefined) =>
  (policy.steps[progress?.step ?? 0] ?? []).filter((id) => !(progress?.used ?? []).includes(id) && FACTORS.has(id));

const listOr = (words: readonly string[]) =>
  words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;

export function interactionRouter(ctx: ServerContext): Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '64kb' });
  const defence = new GuessingDefence(ctx.storage.throttle, ctx.login);
  mountLoginStatic(router, ctx.log);

  const csrf = (tenant: string, uid: string) =>
    createHmac('sha256', ctx.master.derive(`csrf:${tenant}`)).update(uid).digest('base64url');
  const csrfOk = (tenant: string, uid: string, given: unknown) => {
    const a = Buffer.from(csrf(tenant, uid));
    const b = Buffer.from(typeof given === 'string' ? given : '');
    return a.length === b.length && timingSafeEqual(a, b);
  };

  const send = (res: Response, status: number, html: string) => {
    res.status(status).set(PAGE_HEADERS).type('html').send(html);
  };

  const clientLabel = async (provider: Provider, clientId: string) => {
    const client = await provider.Client.find(clientId);
    return client?.clientName ?? clientId;
  };

  /**
   * Where a person the application refuses can act: the application's own address, a post-logout
   * redirect URI it registered (the model registers its origin), preferring the one on the origin
   * the sign-in came from. Undefined when it registered none: then the application hears
   * access_denied, as OAuth has it.
   */
  const homeOf = async (provider: Provider, clientId: string, redirectUri: unknown): Promise<string | undefined> => {
    const client = await provider.Client.find(clientId);
    const homes = client?.postLogoutRedirectUris ?? [];
    const from = typeof redirectUri === 'string' ? URL.parse(redirectUri)?.origin : undefined;
    return homes.find((u) => URL.parse(u)?.origin === from) ?? homes[0];
  };

  const factorContext = (l: Locals, uid: string, user: UserRecord | undefined): FactorContext => {
    const origin = new URL(issuerUrl(ctx.address(), l.tenant.name)).origin;
    return {
      storage: ctx.storage, master: ctx.master, settings: ctx.login, tenant: l.tenant.name, tenantDisplayName: l.tenant.body.displayName, tenantMail: l.tenant.body.mail,
      uid, origin, rpId: new URL(origin).hostname, user,
    };
  };

  const hidden = (l: Locals, uid: string) => `<input type="hidden" name="csrf" value="${escapeHtml(csrf(l.tenant.name, uid))}">`;

  const cancelForm = (l: Locals, uid: string) => `
<form method="post" action="/interaction/${encodeURIComponent(uid)}/deny">
${hidden(l, uid)}
<input type="hidden" name="reason" value="cancel">
<button type="submit" class="secondary">Cancel</button>
</form>`;

  /** Errors: role=alert (assertive live region); notices: role=status (polite). */
  const messages = (error?: string, notice?: string) =>
    `${error === undefined ? '' : `<p class="error" aria-live="assertive" role="alert">${escapeHtml(error)}</p>`}
${notice === undefined ? '' : `<p class="notice" aria-live="polite" role="status">${escapeHtml(notice)}</p>`}`;

  const loginPage = async (
    res: Response, status: number, l: Locals, uid: string, stepFactors: readonly string[],
    fctx: FactorContext, appName: string, error?: string, previous: Record<string, string> = {}, notice?: string,
  ) => {
    const factors = stepFactors.map((id) => FACTORS.get(id)).filter((f) => f !== undefined);
    const sections: string[] = [];
    for (const f of factors) {
      // A heading per method when there is a choice, or to name the second step's method.
      sections.push(`<section>
${factors.length > 1 || fctx.user !== undefined ? `<h2>${escapeHtml(f.label)}</h2>` : ''}
<form method="post" action="/interaction/${encodeURIComponent(uid)}/login">
${hidden(l, uid)}
<input type="hidden" name="factor" value="${escapeHtml(f.id)}">
${await f.renderFields(fctx, previous)}
</form>
</section>`);
    }
    const intro = fctx.user === undefined
      ? `<p>to continue to <strong>${escapeHtml(appName)}</strong></p>`
      : `<p>First step done for <strong>${escapeHtml(fctx.user.body.email)}</strong>. To continue to <strong>${escapeHtml(appName)}</strong>, ${escapeHtml(l.tenant.body.displayName)} also asks for a second step: ${escapeHtml(listOr(factors.map((f) => f.label.toLowerCase())))}.</p>`;
    send(res, status, renderPage({
      title: fctx.user === undefined ? 'Sign in' : 'Confirm it is you',
      tenantName: l.tenant.body.displayName,
      body: `${intro}
${messages(error, notice)}
${sections.join('\n')}
${cancelForm(l, uid)}`,
    }));
  };

  const passkeyOfferPage = async (res: Response, status: number, l: Locals, uid: string, user: UserRecord, appName: string, error?: string) => {
    const fctx = factorContext(l, uid, user);
    send(res, status, renderPage({
      title: 'Add a passkey?',
      tenantName: l.tenant.body.displayName,
      body: `<p>You are signed in as <strong>${escapeHtml(user.body.email)}</strong>.</p>
<p>Next time you can sign in with a passkey instead: your device's fingerprint, face or screen lock, nothing to type or remember.</p>
${messages(error)}
<form method="post" action="/interaction/${encodeURIComponent(uid)}/passkey">
${hidden(l, uid)}
${await renderPasskeyRegistration(fctx, user)}
</form>
<form method="post" action="/interaction/${encodeURIComponent(uid)}/finish">
${hidden(l, uid)}
<button type="submit" class="secondary">Not now, continue to ${escapeHtml(appName)}</button>
</form>`,
    }));
  };

  /**
   * `then`: what "Return to" does for the person, said before they press it: with a home, going
   * there (signed out of the tenant first when they hold a session, so the application's sign-in
   * asks who they are again); without one, the application is told access_denied.
   */
  const deniedPage = (res: Response, l: Locals, uid: string, user: UserRecord, appName: string, then: 'home' | 'sign-out' | 'client') => {
    const tenant = escapeHtml(l.tenant.body.displayName);
    const next = then === 'sign-out'
      ? `<p>To use ${escapeHtml(appName)} with another account, return to it: you will be signed out of ${tenant} first, then sign in there with that account.</p>`
      : then === 'home' ? `<p>To use ${escapeHtml(appName)} with another account, return to it and sign in there with that account.</p>` : '';
    send(res, 403, renderPage({
      title: 'Access denied',
      tenantName: l.tenant.body.displayName,
      body: `<p class="error" role="alert">You are signed in as <strong>${escapeHtml(user.body.email)}</strong>, but you are not assigned to <strong>${escapeHtml(appName)}</strong>, so you cannot use it.</p>
<p>Ask an administrator of ${tenant} to assign you to this application.</p>
${next}
<form method="post" action="/interaction/${encodeURIComponent(uid)}/deny">
${hidden(l, uid)}
<input type="hidden" name="reason" value="unassigned">
<button type="submit">Return to ${escapeHtml(appName)}</button>
</form>`,
    }));
  };

  const expired = (res: Response, l: Locals) =>
    send(res, 400, renderPage({
      title: 'Sign-in expired',
      tenantName: l.tenant.body.displayName,
      body: '<p>This sign-in page has expired or was already used. Go back to the application and start again.</p>',
    }));

  /**
   * An unexpected error (a secret that no longer unseals, a database failure) becomes a page in
   * words and one JSON log line; the person never sees a stack trace or a JSON error.
   */
  const safely = (handler: (req: Request, res: Response) => Promise<unknown>) => async (req: Request, res: Response) => {
    try {
      await handler(req, res);
    } catch (err) {
      const l = res.locals as Locals;
      const fault = err instanceof DatabaseFault ? err : undefined;
      ctx.login.audit({ audit: 'login.error', tenant: l.tenant?.name, path: req.path, error: fault === undefined ? (err as Error).message : `database ${fault.kind}: ${fault.detail}` });
      if (res.headersSent) return;
      if (fault !== undefined) {
        // Nothing the person did: the service cannot reach or write its database now. Say when to come back.
        res.setHeader('retry-after', String(fault.retryAfterSeconds));
        send(res, fault.status, renderPage({
          title: fault.kind === 'disk_full' ? 'Sign-in cannot be saved' : 'Sign-in unavailable',
          tenantName: l.tenant?.body.displayName ?? '',
          body: `<p class="error" aria-live="assertive" role="alert">${fault.kind === 'disk_full'
            ? 'Sign-in cannot be completed right now: the service has no room left to store it. Nothing you entered was wrong. Try again later.'
            : 'Sign-in is unavailable for a moment: the service cannot reach its database. Nothing you entered was wrong. Try again in a few seconds.'}</p>`,
        }));
        return;
      }
      send(res, 500, renderPage({
        title: 'Something went wrong',
        tenantName: l.tenant?.body.displayName ?? '',
        body: '<p class="error" aria-live="assertive" role="alert">Sign-in failed because of a problem on our side, not because of anything you entered. Go back to the application and try again in a moment.</p>',
      }));
    }
  };

  const refused = (res: Response, l: Locals) =>
    send(res, 403, renderPage({ title: 'Request refused', tenantName: l.tenant.body.displayName, body: '<p>The form could not be verified. Go back and try again.</p>' }));

  /** The interaction behind a POST, its form, and the person's progress; undefined when answered already. */
  const posted = async (req: Request, res: Response) => {
    const l = res.locals as Locals;
    let details;
    try {
      details = await l.provider.interactionDetails(req, res);
    } catch (err) {
      // A database that cannot answer is no expired page: `safely` says what it is.
      if (err instanceof DatabaseFault) throw err;
      expired(res, l);
      return undefined;
    }
    const body = (req.body ?? {}) as Record<string, string>;
    if (details.uid !== req.params.uid || !csrfOk(l.tenant.name, details.uid, body.csrf)) {
      refused(res, l);
      return undefined;
    }
    const clientId = String(details.params.client_id ?? '');
    const progress = (await ctx.storage.grants.find(l.tenant.name, PROGRESS_MODEL, details.uid)) as Progress | undefined;
    const user = progress === undefined ? undefined : await ctx.storage.users.get(l.tenant.name, progress.userId);
    return { l, uid: details.uid, body, clientId, appName: await clientLabel(l.provider, clientId), progress, user };
  };

  /** All steps passed: the assignment decides before a session exists; an unassigned person is told why. */
  const finish = async (req: Request, res: Response, l: Locals, uid: string, clientId: string, user: UserRecord, appName: string) => {
    await ctx.storage.grants.destroy(l.tenant.name, PROGRESS_MODEL, uid);
    if (!(await isAssigned(ctx, l.tenant.name, clientId, user.id))) {
      // No session was made for them: nothing to sign out of.
      const details = await l.provider.interactionDetails(req, res);
      return deniedPage(res, l, uid, user, appName, (await homeOf(l.provider, clientId, details.params.redirect_uri)) === undefined ? 'client' : 'home');
    }
    ctx.login.audit({ audit: 'login.success', tenant: l.tenant.name, user: user.id, client: clientId });
    await l.provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
  };

  router.get('/interaction/:uid', safely(async (req: Request, res: Response) => {
    const l = res.locals as Locals;
    let details;
    try {
      details = await l.provider.interactionDetails(req, res);
    } catch (err) {
      if (err instanceof DatabaseFault) throw err;
      return expired(res, l);
    }
    const uid = details.uid;
    const clientId = String(details.params.client_id ?? '');
    const appName = await clientLabel(l.provider, clientId);
    if (details.prompt.name === 'consent') {
      // Reached when the client asked for prompt=consent, or when loadExistingGrant refused
      // (the signed-in user is not assigned).
      const accountId = details.session?.accountId;
      const user = accountId === undefined ? undefined : await ctx.storage.users.get(l.tenant.name, accountId);
      if (user !== undefined && !(await isAssigned(ctx, l.tenant.name, clientId, user.id))) {
        return deniedPage(res, l, uid, user, appName, (await homeOf(l.provider, clientId, details.params.redirect_uri)) === undefined ? 'client' : 'sign-out');
      }
      // The tenant's applications are first-party: the assignment is the consent, and
      // loadExistingGrant has already put in the grant what this user may be given. So
      // prompt=consent (which some client libraries always send) shows no screen: the person
      // signs in if needed and goes straight back to the application.
      if (user !== undefined && !user.body.disabled && details.grantId !== undefined) {
        return l.provider.interactionFinished(req, res, { consent: { grantId: details.grantId } }, { mergeWithLastSubmission: true });
      }
      return l.provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'consent could not be established' }, { mergeWithLastSubmission: false });
    }
    const progress = (await ctx.storage.grants.find(l.tenant.name, PROGRESS_MODEL, uid)) as Progress | undefined;
    const user = progress === undefined ? undefined : await ctx.storage.users.get(l.tenant.name, progress.userId);
    if (progress?.done === true && user !== undefined) return passkeyOfferPage(res, 200, l, uid, user, appName);
    const policy = policyFor(l.tenant.body);
    await loginPage(res, 200, l, uid, offered(policy, user === undefined ? undefined : progress), factorContext(l, uid, user), appName);
  }));

  router.post('/interaction/:uid/login', form, safely(async (req: Request, res: Response) => {
    const p = await posted(req, res);
    if (p === undefined) return;
    const { l, uid, body, clientId, appName, user: prior } = p;
    const progress = prior === undefined ? undefined : p.progress;
    if (progress?.done === true) return res.redirect(303, `/interaction/${encodeURIComponent(uid)}`);
    const policy = policyFor(l.tenant.body);
    const step = offered(policy, progress);
    const fctx = factorContext(l, uid, prior);
    const factor = step.includes(String(body.factor)) ? FACTORS.get(String(body.factor)) : undefined;
    if (factor === undefined) return loginPage(res, 400, l, uid, step, fctx, appName, 'Choose a sign-in method.');
    const refill: Record<string, string> = body.email === undefined ? {} : { email: String(body.email) };

    const keys = { account: prior === undefined ? factor.accountOf(body) : normalizeEmail(prior.body.email), address: req.ip ?? req.socket.remoteAddress ?? 'unknown' };
    // Check, verify and record as one step per throttle key: see GuessingDefence.serialize.
    type Attempt = { readonly answered: true } | { readonly answered: false; readonly user: UserRecord };
    const attempt = await defence.serialize(l.tenant.name, keys, async (): Promise<Attempt> => {
      const refusal = await defence.check(l.tenant.name, keys, factor.id);
      if (refusal !== undefined) {
        await loginPage(res, 429, l, uid, step, fctx, appName, refusal, refill);
        return { answered: true };
      }
      const outcome = await factor.verify(fctx, body);
      if (outcome.ok === 'pending') {
        await loginPage(res, 200, l, uid, step, fctx, appName, undefined, { ...outcome.previous }, outcome.notice);
        return { answered: true };
      }
      if (outcome.ok === false || (prior !== undefined && outcome.user.id !== prior.id)) {
        const reason = outcome.ok === false ? outcome.reason : 'factor belongs to another user';
        const locked = await defence.failure(l.tenant.name, keys, factor.id, reason);
        const message = locked ?? (outcome.ok === false ? outcome.message : 'Sign-in failed.');
        await loginPage(res, locked === undefined ? 401 : 429, l, uid, step, fctx, appName, message, refill);
        return { answered: true };
      }
      await defence.success(l.tenant.name, { ...keys, account: normalizeEmail(outcome.user.body.email) });
      return { answered: false, user: outcome.user };
    });
    if (attempt.answered) return;
    const user = attempt.user;
    const used = [...(progress?.used ?? []), factor.id];
    const stepIndex = progress?.step ?? 0;
    if (!factor.multiFactor && stepIndex + 1 < policy.steps.length) {
      await ctx.storage.grants.upsert(l.tenant.name, PROGRESS_MODEL, uid, { userId: user.id, step: stepIndex + 1, used } satisfies Progress, 3600);
      return res.redirect(303, `/interaction/${encodeURIComponent(uid)}`);
    }
    // Signed in. Offer a passkey where the policy allows them and the person has none yet, but
    // never to someone who could not use the application anyway.
    if (policy.offerPasskey && (await isAssigned(ctx, l.tenant.name, clientId, user.id)) && (await ctx.storage.users.listPasskeys(l.tenant.name, user.id)).length === 0) {
      await ctx.storage.grants.upsert(l.tenant.name, PROGRESS_MODEL, uid, { userId: user.id, step: stepIndex, used, done: true } satisfies Progress, 3600);
      return res.redirect(303, `/interaction/${encodeURIComponent(uid)}`);
    }
    await finish(req, res, l, uid, clientId, user, appName);
  }));

  router.post('/interaction/:uid/passkey', form, safely(async (req: Request, res: Response) => {
    const p = await posted(req, res);
    if (p === undefined) return;
    if (p.progress?.done !== true || p.user === undefined) return res.redirect(303, `/interaction/${encodeURIComponent(p.uid)}`);
    const error = await verifyPasskeyRegistration(factorContext(p.l, p.uid, p.user), p.user, p.body.credential);
    if (error !== undefined) return passkeyOfferPage(res, 400, p.l, p.uid, p.user, p.appName, error);
    await finish(req, res, p.l, p.uid, p.clientId, p.user, p.appName);
  }));

  router.post('/interaction/:uid/finish', form, safely(async (req: Request, res: Response) => {
    const p = await posted(req, res);
    if (p === undefined) return;
    if (p.progress?.done !== true || p.user === undefined) return res.redirect(303, `/interaction/${encodeURIComponent(p.uid)}`);
    await finish(req, res, p.l, p.uid, p.clientId, p.user, p.appName);
  }));

  router.post('/interaction/:uid/deny', form, safely(async (req: Request, res: Response) => {
    const p = await posted(req, res);
    if (p === undefined) return;
    await ctx.storage.grants.destroy(p.l.tenant.name, PROGRESS_MODEL, p.uid);
    if (p.body.reason === 'unassigned') {
      // Back where the person can act, not to an error the application may show as a dead end
      // (oauth2-proxy answers access_denied with a bare 403 page): the application's home, through
      // the tenant's sign-out (RP-initiated logout) when they hold a session there, so that the
      // application's next sign-in asks who they are and they can use another account.
      const details = await p.l.provider.interactionDetails(req, res);
      const home = await homeOf(p.l.provider, p.clientId, details.params.redirect_uri);
      if (home !== undefined) {
        await (await p.l.provider.Interaction.find(p.uid))?.destroy();
        if (details.session?.accountId === undefined) return res.redirect(303, home);
        const signOut = new URL(endpointUrl(ctx.address(), p.l.tenant.name, 'endSession'));
        signOut.search = new URLSearchParams({ client_id: p.clientId, post_logout_redirect_uri: home }).toString();
        return res.redirect(303, signOut.href);
      }
    }
    const description = p.body.reason === 'unassigned'
      ? 'the user is not assigned to this application'
      : 'the user cancelled the sign-in';
    await p.l.provider.interactionFinished(req, res, { error: 'access_denied', error_description: description }, { mergeWithLastSubmission: false });
  }));

  // "Forgot password?" and the mailed links that set a password: recovery.ts, with this router's defences.
  mountRecovery(router, ctx, { defence, csrf, csrfOk, send, messages, safely });

  return router;
}
