/**
 * The interaction pages oidc-provider sends people to: sign-in (driven by the tenant's login
 * policy) and the "not assigned" page. Mounted on tenant hosts at /interaction/:uid.
 *
 * CSRF: every form carries a token = HMAC(tenant key, interaction uid). The uid appears only in
 * the victim's own URL and the interaction cookie binds it to that browser, so a forged form
 * cannot carry a valid pair.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import type { ServerContext } from '../_context.ts';
import { isAssigned } from '../accounts.ts';
import type { TenantRecord, UserRecord } from '../storage/types.ts';
import { FACTORS, policyFor, type FactorContext } from './factors.ts';
import { PAGE_HEADERS, escapeHtml, renderPage } from './pages.ts';

interface Locals {
  readonly tenant: TenantRecord;
  readonly provider: Provider;
}

/** Progress through a multi-step policy, kept with the interaction (same lifetime). */
interface Progress {
  readonly userId: string;
  readonly step: number;
}
const PROGRESS_MODEL = 'LoginProgress';

export function interactionRouter(ctx: ServerContext): Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '16kb' });

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

  const loginPage = (
    res: Response, status: number, l: Locals, uid: string, stepFactors: readonly string[],
    fctx: FactorContext, appName: string, message?: string, previous: Record<string, string> = {},
  ) => {
    const forms = stepFactors.map((id) => FACTORS.get(id)).filter((f) => f !== undefined).map((f) => `
<form method="post" action="/interaction/${encodeURIComponent(uid)}/login">
<input type="hidden" name="csrf" value="${escapeHtml(csrf(l.tenant.name, uid))}">
<input type="hidden" name="factor" value="${escapeHtml(f.id)}">
${f.renderFields(fctx, previous)}
<button type="submit">Sign in</button>
</form>`).join('\n');
    send(res, status, renderPage({
      title: 'Sign in',
      tenantName: l.tenant.body.displayName,
      body: `<p>to continue to <strong>${escapeHtml(appName)}</strong></p>
${message === undefined ? '' : `<p class="error" role="alert">${escapeHtml(message)}</p>`}
${forms}
<form method="post" action="/interaction/${encodeURIComponent(uid)}/deny">
<input type="hidden" name="csrf" value="${escapeHtml(csrf(l.tenant.name, uid))}">
<input type="hidden" name="reason" value="cancel">
<button type="submit" style="background:#888">Cancel</button>
</form>`,
    }));
  };

  const deniedPage = (res: Response, l: Locals, uid: string, user: UserRecord, appName: string) => {
    send(res, 403, renderPage({
      title: 'Access denied',
      tenantName: l.tenant.body.displayName,
      body: `<p class="error" role="alert">You are signed in as <strong>${escapeHtml(user.body.email)}</strong>, but you are not assigned to <strong>${escapeHtml(appName)}</strong>, so you cannot use it.</p>
<p>Ask an administrator of ${escapeHtml(l.tenant.body.displayName)} to assign you to this application.</p>
<form method="post" action="/interaction/${encodeURIComponent(uid)}/deny">
<input type="hidden" name="csrf" value="${escapeHtml(csrf(l.tenant.name, uid))}">
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

  router.get('/interaction/:uid', async (req: Request, res: Response) => {
    const l = res.locals as Locals;
    let details;
    try {
      details = await l.provider.interactionDetails(req, res);
    } catch {
      return expired(res, l);
    }
    const uid = details.uid;
    const clientId = String(details.params.client_id ?? '');
    const appName = await clientLabel(l.provider, clientId);
    if (details.prompt.name === 'consent') {
      // Only reached when loadExistingGrant refused: the signed-in user is not assigned.
      const accountId = details.session?.accountId;
      const user = accountId === undefined ? undefined : await ctx.storage.getUser(l.tenant.name, accountId);
      if (user !== undefined && !(await isAssigned(ctx, l.tenant.name, clientId, user.id))) return deniedPage(res, l, uid, user, appName);
      return l.provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'consent could not be established' }, { mergeWithLastSubmission: false });
    }
    const progress = (await ctx.storage.findArtifact(l.tenant.name, PROGRESS_MODEL, uid)) as Progress | undefined;
    const user = progress === undefined ? undefined : await ctx.storage.getUser(l.tenant.name, progress.userId);
    const policy = policyFor(l.tenant.name);
    const step = policy.steps[progress?.step ?? 0] ?? policy.steps[0]!;
    loginPage(res, 200, l, uid, step, { storage: ctx.storage, tenant: l.tenant.name, user }, appName);
  });

  router.post('/interaction/:uid/login', form, async (req: Request, res: Response) => {
    const l = res.locals as Locals;
    let details;
    try {
      details = await l.provider.interactionDetails(req, res);
    } catch {
      return expired(res, l);
    }
    const uid = details.uid;
    const body = (req.body ?? {}) as Record<string, string>;
    if (uid !== req.params.uid || !csrfOk(l.tenant.name, uid, body.csrf)) {
      return send(res, 403, renderPage({ title: 'Request refused', tenantName: l.tenant.body.displayName, body: '<p>The form could not be verified. Go back and try again.</p>' }));
    }
    const clientId = String(details.params.client_id ?? '');
    const appName = await clientLabel(l.provider, clientId);
    const policy = policyFor(l.tenant.name);
    const progress = (await ctx.storage.findArtifact(l.tenant.name, PROGRESS_MODEL, uid)) as Progress | undefined;
    const stepIndex = progress?.step ?? 0;
    const step = policy.steps[stepIndex] ?? [];
    const prior = progress === undefined ? undefined : await ctx.storage.getUser(l.tenant.name, progress.userId);
    const fctx: FactorContext = { storage: ctx.storage, tenant: l.tenant.name, user: prior };
    const factor = step.includes(String(body.factor)) ? FACTORS.get(String(body.factor)) : undefined;
    if (factor === undefined) return loginPage(res, 400, l, uid, step, fctx, appName, 'Choose a sign-in method.');

    const outcome = await factor.verify(fctx, body);
    if (!outcome.ok || (prior !== undefined && outcome.user.id !== prior.id)) {
      const message = outcome.ok ? 'Sign-in failed.' : outcome.message;
      return loginPage(res, 401, l, uid, step, fctx, appName, message, { email: String(body.email ?? '') });
    }
    const user = outcome.user;
    if (stepIndex + 1 < policy.steps.length) {
      await ctx.storage.upsertArtifact(l.tenant.name, PROGRESS_MODEL, uid, { userId: user.id, step: stepIndex + 1 }, 3600);
      return res.redirect(303, `/interaction/${encodeURIComponent(uid)}`);
    }
    await ctx.storage.destroyArtifact(l.tenant.name, PROGRESS_MODEL, uid);
    // Assignment decides before a session exists: an unassigned person is told why, then sent back.
    if (!(await isAssigned(ctx, l.tenant.name, clientId, user.id))) return deniedPage(res, l, uid, user, appName);
    await l.provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
  });

  router.post('/interaction/:uid/deny', form, async (req: Request, res: Response) => {
    const l = res.locals as Locals;
    let details;
    try {
      details = await l.provider.interactionDetails(req, res);
    } catch {
      return expired(res, l);
    }
    const body = (req.body ?? {}) as Record<string, string>;
    if (details.uid !== req.params.uid || !csrfOk(l.tenant.name, details.uid, body.csrf)) {
      return send(res, 403, renderPage({ title: 'Request refused', tenantName: l.tenant.body.displayName, body: '<p>The form could not be verified. Go back and try again.</p>' }));
    }
    await ctx.storage.destroyArtifact(l.tenant.name, PROGRESS_MODEL, details.uid);
    const description = body.reason === 'unassigned'
      ? 'the user is not assigned to this application'
      : 'the user cancelled the sign-in';
    await l.provider.interactionFinished(req, res, { error: 'access_denied', error_description: description }, { mergeWithLastSubmission: false });
  });

  return router;
}
