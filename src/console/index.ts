/**
 * The admin console, served on every tenant host at /console/: sign-in through the tenant's own
 * OpenID Connect (client.ts), then Integrations, Marketplace, an application's page and its Users
 * tab. A client of the admin API like the CLI, only served by the same process: every read and
 * write goes over HTTP through the typed admin client, fixed to the signed-in tenant
 * (tenant-admin.ts); it never opens storage.
 *
 * Who gets in: a person who signs in at the tenant and holds its `admin` scope (granted in the
 * token response, and still held according to the admin API on every request). Everyone else sees
 * a page saying why. Git knows best: objects marked `managedBy: idforge` are read only here, and a
 * change to them comes out as a patch to the model instead.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import * as oidc from 'openid-client';
import { AdminApiError, mapLimit } from '../admin-client/index.ts';
import {
  ADMIN_SCOPE, APPLICATION_KINDS, KINDS, MANAGED_BY_CONSOLE, NAME, RESERVED_TENANTS, USER_ID, isClientKind,
  type ApplicationKind, type ApplicationView, type EdgeApp, type EdgeHost, type EdgeTenant, type UserView,
} from '../contract/index.ts';
import { buildApplication, createdConfigFiles, liveConfigFiles, proposeApplication, proposeAssignments } from './applications.ts';
import { CONSOLE_PATH, CONSOLE_SCOPES, CONSOLE_CLIENT_ID, consoleClientMetadata, consoleClientSecret, consoleRedirectUri, consoleSignedOutUri, tenantOrigin } from './client.ts';
import { apiProblemsToFields, formOfSpec, type FieldErrors, type FormValues } from './forms.ts';
import { CONSOLE_HEADERS, SCRIPT, STYLE, alert, html, page, send, type Html, type Section } from './pages.ts';
import { ConsoleCookies, safeReturnTo, type ConsoleSession } from './session.ts';
import { mountGroups } from './groups.ts';
import { mountPeople } from './people.ts';
import { mountActivity } from './activity.ts';
import { relyingParties } from './relying-party.ts';
import { TenantAdmin, adminClientFor } from './tenant-admin.ts';
import {
  NOTICES, applicationView, createdView, integrationsView, marketplaceView, messageView, newApplicationView, noticeOf, proposalView, refusedView, usersTabView,
  type UsersTabState,
} from './views.ts';
import { modelFileOfLive } from '../generators/index.ts';

export { CONSOLE_PATH } from './client.ts';

interface Ctx {
  readonly tenant: EdgeTenant;
  readonly cookies: ConsoleCookies;
  readonly admin: TenantAdmin;
  readonly origin: string;
}
interface Authed extends Ctx {
  readonly session: ConsoleSession;
  readonly csrf: string;
}

/** Search results shown at once on the Users tab. */
const SEARCH_LIMIT = 20;
/** Up to this many users on the Users tab are read one by one; more, and the user list is read in pages. */
const LOOKUP_LIMIT = 100;

/**
 * The console as an app at the server's edge: the entry point hands it to the server, which routes
 * `/console` on every tenant host to it and answers its OpenID Connect client; it reaches the
 * directory only through the admin API.
 */
export function consoleEdge(): EdgeApp {
  return {
    path: CONSOLE_PATH,
    clientId: CONSOLE_CLIENT_ID,
    client: (tenant, host) => consoleClientMetadata(host, host.address(), tenant),
    handler: (host, tenantOf) => {
      const router = consoleRouter(host, tenantOf);
      return (req, res, next) => router(req as never, res as never, next);
    },
  };
}

export function consoleRouter(ctx: EdgeHost, tenantOf: (res: Response) => EdgeTenant): Router {
  // Strict: /console and /console/ are different paths (the first redirects to the second).
  const router = express.Router({ strict: true });
  const form = express.urlencoded({ extended: false, limit: '256kb' });
  const adminClient = adminClientFor(() => ctx.adminCredentials());
  const secure = () => ctx.address().scheme === 'https';

  /** openid-client's view of each tenant (discovery once per tenant and process, over HTTP like any client). */
  const rpConfig = relyingParties(ctx, CONSOLE_CLIENT_ID, (tenant) => consoleClientSecret(ctx, tenant));

  const base = (res: Response): Ctx => {
    const tenant = tenantOf(res);
    return {
      tenant,
      cookies: new ConsoleCookies(ctx, tenant.name, secure()),
      admin: new TenantAdmin(adminClient(), tenant.name),
      origin: tenantOrigin(ctx.address(), tenant.name),
    };
  };

  const show = (res: Response, status: number, c: Ctx & { session?: ConsoleSession; csrf?: string }, title: string, section: Section, body: Html) =>
    send(res, status, page({
      title, tenantName: c.tenant.displayName, section, body,
      user: c.session === undefined || c.csrf === undefined ? undefined : { email: c.session.email, csrf: c.csrf },
    }));

  /** An unexpected failure (the admin API unreachable, a bug) becomes a page in words and one log line. */
  const safely = (handler: (req: Request, res: Response) => Promise<unknown>) => async (req: Request, res: Response) => {
    try {
      await handler(req, res);
    } catch (err) {
      ctx.log(`console: ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`);
      if (res.headersSent) return;
      const c = base(res);
      // The admin API's database faults (503, 507) keep their status; an unreachable admin API is a 502.
      show(res, err instanceof AdminApiError ? (err.status === 0 ? 502 : err.status === 503 || err.status === 507 ? err.status : 500) : 500, c, 'Something went wrong', 'none',
        alert('The console could not complete this request because of a problem on the server, not because of anything you entered. Nothing more was changed; try again in a moment.'));
    }
  };

  // Styles and the one optional script: same origin, so the CSP allows nothing else.
  router.get(`${CONSOLE_PATH}/static/console.css`, (_req, res) => {
    res.set({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }).send(STYLE);
  });
  router.get(`${CONSOLE_PATH}/static/console.js`, (_req, res) => {
    res.set({ 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }).send(SCRIPT);
  });

  router.use(CONSOLE_PATH, (_req: Request, res: Response, next: NextFunction) => {
    const tenant = tenantOf(res);
    if (RESERVED_TENANTS.includes(tenant.name)) {
      return send(res, 404, page({ title: 'No console here', tenantName: tenant.displayName, section: 'none', body: messageView("The server's own tenant has no admin console.") }));
    }
    next();
  });

  router.get(CONSOLE_PATH, (_req, res) => res.redirect(308, `${CONSOLE_PATH}/`));

  router.get(`${CONSOLE_PATH}/login`, safely(async (req, res) => {
    const c = base(res);
    const t = c.cookies.startLogin(res, safeReturnTo(req.query.returnTo));
    const config = await rpConfig(c.tenant.name);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: consoleRedirectUri(ctx.address(), c.tenant.name),
      scope: CONSOLE_SCOPES.join(' '),
      state: t.state,
      nonce: t.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(t.verifier),
      code_challenge_method: 'S256',
      ...(req.query.prompt === 'login' ? { prompt: 'login' } : {}),
    });
    res.set(CONSOLE_HEADERS).redirect(303, url.href);
  }));

  router.get(`${CONSOLE_PATH}/callback`, safely(async (req, res) => {
    const c = base(res);
    const t = c.cookies.login(req);
    c.cookies.endLogin(res);
    const again = { href: `${CONSOLE_PATH}/login`, label: 'Sign in again' };
    if (t === undefined) return show(res, 400, c, 'Sign-in expired', 'none', messageView('This sign-in took too long or was already used.', again));
    const config = await rpConfig(c.tenant.name);
    const current = new URL(consoleRedirectUri(ctx.address(), c.tenant.name));
    current.search = new URL(req.originalUrl, 'http://x').search;
    let tokens;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: t.verifier, expectedState: t.state, expectedNonce: t.nonce });
    } catch (err) {
      const e = err as { error?: string; error_description?: string; message?: string };
      const why = e.error === undefined ? (e.message ?? 'unknown error') : `${e.error}${e.error_description ? `: ${e.error_description}` : ''}`;
      return show(res, 400, c, 'Sign-in did not complete', 'none', html`${alert(html`Signing in to the console did not complete (${why}).`)}${messageView('', again)}`);
    }
    const claims = tokens.claims();
    const sub = String(claims?.sub ?? '');
    const email = String(claims?.email ?? sub);
    const granted = (tokens.scope ?? '').split(' ');
    const user = await c.admin.find('getUser', { userId: sub });
    const refused = user === undefined || user.disabled ? 'disabled' : !granted.includes(ADMIN_SCOPE) || !user.scopes.includes(ADMIN_SCOPE) ? 'scope' : undefined;
    if (refused !== undefined) {
      ctx.log(JSON.stringify({ audit: 'console.refused', tenant: c.tenant.name, user: sub, reason: refused }));
      return show(res, 403, c, 'Not an administrator', 'none', refusedView(email, c.tenant.displayName, refused));
    }
    const started = await c.admin.call('createConsoleSession', {}, { body: { userId: sub } });
    c.cookies.startSession(res, started);
    ctx.log(JSON.stringify({ audit: 'console.signin', tenant: c.tenant.name, user: sub }));
    res.set(CONSOLE_HEADERS).redirect(303, t.returnTo);
  }));

  /**
   * The signed-in administrator: the server's console session, read through the admin API on every
   * request (sign-out, a scope removed, an account disabled or deleted end it at once); POSTs also
   * pass the CSRF check.
   */
  const authed = (handler: (req: Request, res: Response, a: Authed) => Promise<unknown>) => safely(async (req, res) => {
    const c = base(res);
    const presented = c.cookies.presented(req);
    let held;
    try {
      held = presented === undefined ? undefined : await c.admin.find('getConsoleSession', { sessionId: presented.sid });
    } catch (err) {
      if (!(err instanceof AdminApiError) || err.status !== 403 || presented === undefined) throw err;
      // The session ended because of its user: say why (and offer another account).
      c.cookies.endSession(res);
      const user = await c.admin.find('getUser', { userId: presented.sub });
      return show(res, 403, c, 'Not an administrator', 'none', refusedView(user?.email ?? presented.sub, c.tenant.displayName, user === undefined || user.disabled ? 'disabled' : 'scope'));
    }
    if (presented === undefined || held === undefined) {
      if (presented !== undefined) c.cookies.endSession(res);
      if (req.method === 'GET') return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/login?returnTo=${encodeURIComponent(req.path)}`);
      return show(res, 403, c, 'Session expired', 'none', messageView('Your console session has ended, so nothing was changed. Sign in again and repeat the change.', { href: `${CONSOLE_PATH}/login`, label: 'Sign in' }));
    }
    const session: ConsoleSession = { sub: held.userId, email: held.email, sid: presented.sid };
    const a: Authed = { ...c, admin: c.admin.actingAs(held.userId), session, csrf: c.cookies.csrfToken(session) };
    if (req.method === 'POST' && !c.cookies.csrfOk(req, session, c.origin)) {
      return show(res, 403, a, 'Request refused', 'none', messageView('The form could not be verified (it may come from another site, or from an old page), so nothing was changed. Go back, reload the page and try again.'));
    }
    return handler(req, res, a);
  });

  /**
   * Sign-out ends the console session on the server, then the sign-in session at the tenant it
   * came from: the browser goes on to the tenant's end-session endpoint (RP-initiated logout),
   * which asks the person to confirm and returns to /console/signed-out.
   */
  router.post(`${CONSOLE_PATH}/logout`, form, authed(async (_req, res, a) => {
    await a.admin.call('deleteConsoleSession', { sessionId: a.session.sid });
    a.cookies.endSession(res);
    ctx.log(JSON.stringify({ audit: 'console.signout', tenant: a.tenant.name, user: a.session.sub }));
    const config = await rpConfig(a.tenant.name);
    const url = oidc.buildEndSessionUrl(config, { client_id: CONSOLE_CLIENT_ID, post_logout_redirect_uri: consoleSignedOutUri(ctx.address(), a.tenant.name) });
    res.set(CONSOLE_HEADERS).redirect(303, url.href);
  }));

  router.get(`${CONSOLE_PATH}/signed-out`, (_req, res) => {
    const c = base(res);
    show(res, 200, c, 'Signed out', 'none', messageView('You are signed out of the admin console.', { href: `${CONSOLE_PATH}/login`, label: 'Sign in' }));
  });

  const notFound = (res: Response, a: Authed, what: string) =>
    show(res, 404, a, 'Not found', 'none', messageView(what, { href: `${CONSOLE_PATH}/`, label: 'Back to Integrations' }));

  const live = async (a: Authed) => {
    const l = await a.admin.live();
    if (l === undefined) throw new Error(`tenant ${a.tenant.name} vanished`);
    return l;
  };

  const apiNames = (apps: readonly ApplicationView[]) => apps.filter((x) => x.kind === 'api').map((x) => x.name);

  router.get(`${CONSOLE_PATH}/`, authed(async (req, res, a) => {
    const l = await live(a);
    const counts = Object.fromEntries(Object.entries(l.assignments).map(([k, v]) => [k, v.length]));
    show(res, 200, a, 'Integrations', 'integrations', integrationsView(l.applications, counts, noticeOf(req.query.done)));
  }));

  // People and Groups: the directory's people and groups, and an administrator's actions on them.
  mountPeople(router, { authed, show: show as never });
  mountGroups(router, { authed, show: show as never });
  // Activity: the tenant's event log, and each object's history (activity.ts).
  mountActivity(router, { authed, show: show as never });

  router.get(`${CONSOLE_PATH}/marketplace`, authed(async (_req, res, a) => {
    show(res, 200, a, 'Marketplace', 'marketplace', marketplaceView());
  }));

  const kindOf = (req: Request): ApplicationKind | undefined =>
    (APPLICATION_KINDS as readonly string[]).includes(String(req.params.kind)) ? (req.params.kind as ApplicationKind) : undefined;

  router.get(`${CONSOLE_PATH}/marketplace/:kind`, authed(async (req, res, a) => {
    const kind = kindOf(req);
    if (kind === undefined) return notFound(res, a, 'There is no such kind of application.');
    const apps = (await a.admin.listAll('listApplications', {})) ?? [];
    show(res, 200, a, `Add a ${KINDS[kind].title}`, 'marketplace',
      newApplicationView(kind, {}, {}, { action: `${CONSOLE_PATH}/marketplace/${kind}`, csrf: a.csrf, submit: `Add ${KINDS[kind].title}`, editing: false, apis: apiNames(apps) }));
  }));

  const formValues = (req: Request): FormValues => req.body as FormValues;
  /** A form's values in an address (the CSRF token and the button left out). */
  const formQuery = (values: FormValues): string => new URLSearchParams(Object.entries(values).flatMap(([k, v]) =>
    (k === 'csrf' || k === 'op' ? [] : (typeof v === 'string' ? [v] : Array.isArray(v) ? v : []).filter((x) => typeof x === 'string').map((x) => [k, x])))).toString();
  /** An address's values as form values: strings and lists of strings, nothing else. */
  const queryValues = (req: Request): FormValues => Object.fromEntries(Object.entries(req.query).flatMap(([k, v]): [string, string | string[]][] =>
    (typeof v === 'string' ? [[k, v]] : Array.isArray(v) && v.every((x) => typeof x === 'string') ? [[k, v as string[]]] : [])));

  /** The admin API's refusal of a body, as field errors; anything else is rethrown. */
  const refusalErrors = (kind: ApplicationKind, err: unknown): FieldErrors => {
    if (!(err instanceof AdminApiError) || err.status === 0 || err.status >= 500 || err.body === undefined) throw err;
    const problems = err.body.problems ?? [{ path: err.body.path, message: err.body.message }];
    return apiProblemsToFields(kind, problems);
  };

  router.post(`${CONSOLE_PATH}/marketplace/:kind`, form, authed(async (req, res, a) => {
    const kind = kindOf(req);
    if (kind === undefined) return notFound(res, a, 'There is no such kind of application.');
    const values = formValues(req);
    const l = await live(a);
    const opts = { action: `${CONSOLE_PATH}/marketplace/${kind}`, csrf: a.csrf, submit: `Add ${KINDS[kind].title}`, editing: false, apis: apiNames(l.applications) };
    const again = (errors: FieldErrors) => show(res, 400, a, `Add a ${KINDS[kind].title}`, 'marketplace', newApplicationView(kind, values, errors, opts));
    const built = buildApplication(ctx.address(), l, kind, values);
    if (!built.ok) return again(built.errors);
    if (l.applications.some((x) => x.name === built.name)) return again({ name: [`an application named '${built.name}' already exists in this tenant`] });
    let result;
    try {
      result = await a.admin.call('putApplication', { application: built.name }, { body: built.body });
    } catch (err) {
      return again(refusalErrors(kind, err));
    }
    ctx.log(JSON.stringify({ audit: 'console.application.created', tenant: a.tenant.name, user: a.session.sub, application: result.resource.name }));
    // Post, redirect, get: the secrets wait (sealed, bound to this session) for the one page that
    // shows them, so a reload never posts the form again.
    a.cookies.holdCreated(res, a.session, built.name, built.resolved.secrets[`${a.tenant.name}/${built.name}`] ?? {});
    res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(built.name)}/created`);
  }));

  router.get(`${CONSOLE_PATH}/applications/:app/created`, authed(async (req, res, a) => {
    const name = appParam(req);
    const app = name === undefined ? undefined : await a.admin.find('getApplication', { application: name });
    if (app === undefined) return notFound(res, a, 'This tenant has no such application.');
    const created = a.cookies.takeCreated(req, res, a.session, app.name);
    // Shown once: a second visit (a reload, the back button) goes to the application's page.
    if (created === undefined) return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}?done=secret-shown`);
    const l = await live(a);
    const secret = KINDS[app.kind].confidential ? created.secrets.clientSecret : undefined;
    show(res, 200, a, `${KINDS[app.kind].title} added`, 'integrations',
      createdView(app, secret, createdConfigFiles(ctx.address(), l, app.name, created.secrets) ?? [], a.tenant.name, created.secrets));
  }));

  const appParam = (req: Request) => (NAME.test(String(req.params.app)) ? String(req.params.app) : undefined);

  const showApplication = async (res: Response, a: Authed, app: ApplicationView, status: number, values: FormValues, errors: FieldErrors, flash?: string) => {
    const l = await live(a);
    show(res, status, a, app.displayName ?? app.name, 'integrations', applicationView(
      app, l.assignments[app.name]?.length, values, errors,
      { action: `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}`, csrf: a.csrf, apis: apiNames(l.applications) },
      liveConfigFiles(ctx.address(), l, app.name), flash,
    ));
  };

  router.get(`${CONSOLE_PATH}/applications/:app`, authed(async (req, res, a) => {
    const name = appParam(req);
    const app = name === undefined ? undefined : await a.admin.find('getApplication', { application: name });
    if (app === undefined) return notFound(res, a, 'This tenant has no such application.');
    const l = await live(a);
    const spec = modelFileOfLive(ctx.address(), l).file.tenants![0]!.applications!.find((x) => x.name === app.name)!;
    const flash = req.query.saved === '1' ? NOTICES['application-saved'] : noticeOf(req.query.done);
    await showApplication(res, a, app, 200, formOfSpec(spec), {}, flash);
  }));

  /** The edit form's values judged as a save would be (a dry run for a Git-managed application): the built application, or the page with its errors shown. */
  const judgeEdit = async (res: Response, a: Authed, app: ApplicationView, values: FormValues, dryRun: boolean) => {
    const l = await live(a);
    const built = buildApplication(ctx.address(), l, app.kind, values, app);
    if (!built.ok) {
      await showApplication(res, a, app, 400, values, built.errors);
      return undefined;
    }
    try {
      await a.admin.call('putApplication', { application: app.name }, { body: built.body, query: { dryRun } });
    } catch (err) {
      await showApplication(res, a, app, 400, values, refusalErrors(app.kind, err));
      return undefined;
    }
    return built;
  };

  router.post(`${CONSOLE_PATH}/applications/:app`, form, authed(async (req, res, a) => {
    const name = appParam(req);
    const app = name === undefined ? undefined : await a.admin.find('getApplication', { application: name });
    if (app === undefined) return notFound(res, a, 'This tenant has no such application.');
    const values = formValues(req);
    const git = app.managedBy === 'idforge';
    // A proposal changes nothing, but the admin API still judges the body (dry run): the same rules as a save.
    if ((await judgeEdit(res, a, app, values, git)) === undefined) return;
    if (!git) {
      ctx.log(JSON.stringify({ audit: 'console.application.updated', tenant: a.tenant.name, user: a.session.sub, application: app.name }));
      return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}?saved=1`);
    }
    // Post, redirect, get: the proposal is a page of its own, made from the values in its address.
    res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}/proposal?${formQuery(values)}`);
  }));

  router.get(`${CONSOLE_PATH}/applications/:app/proposal`, authed(async (req, res, a) => {
    const name = appParam(req);
    const app = name === undefined ? undefined : await a.admin.find('getApplication', { application: name });
    if (app === undefined) return notFound(res, a, 'This tenant has no such application.');
    if (app.managedBy !== 'idforge') return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}`);
    const built = await judgeEdit(res, a, app, queryValues(req), true);
    if (built === undefined) return;
    show(res, 200, a, 'Proposed change', 'integrations',
      proposalView(`Application ${app.displayName ?? app.name}`, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}`, proposeApplication(app, built, a.tenant.name)));
  }));

  // The Users tab. Pending adds and removes travel in the form itself (hidden fields), so nothing
  // is stored between steps and a failed save loses nothing: the page comes back with them.
  const ids = (v: unknown): string[] => [...new Set((typeof v === 'string' ? [v] : Array.isArray(v) ? v : []).filter((x): x is string => typeof x === 'string' && USER_ID.test(x)))];

  const usersTab = async (req: Request, res: Response, a: Authed, app: ApplicationView, state: UsersTabState, status: number, failure?: Html, flash?: string) => {
    const assignments = (await a.admin.listAll('listAssignments', { application: app.name })) ?? [];
    const q = state.q.trim().toLowerCase();
    const shown = [...new Set([...assignments.map((x) => x.userId), ...state.add, ...state.remove])];
    // The whole user list only to search it (the admin API has no search), or when it is cheaper than one GET per user shown.
    const all = q !== '' || shown.length > LOOKUP_LIMIT ? ((await a.admin.listAll('listUsers', {})) ?? []) : undefined;
    const byId = new Map<string, UserView>(
      all !== undefined ? all.map((u) => [u.id, u])
        : (await mapLimit(shown, 8, (id) => a.admin.find('getUser', { userId: id }))).flatMap((u) => (u === undefined ? [] : [[u.id, u] as const])),
    );
    const results = q === '' || all === undefined ? undefined : all.filter((u) => u.id.toLowerCase().includes(q) || u.email.toLowerCase().includes(q)).slice(0, SEARCH_LIMIT);
    show(res, status, a, `${app.displayName ?? app.name}: users`, 'integrations', usersTabView(app, assignments, byId, state, results, a.csrf, failure, flash));
  };

  const clientApp = async (req: Request, a: Authed) => {
    const name = appParam(req);
    const app = name === undefined ? undefined : await a.admin.find('getApplication', { application: name });
    return app !== undefined && isClientKind(app.kind) ? app : undefined;
  };

  router.get(`${CONSOLE_PATH}/applications/:app/users`, authed(async (req, res, a) => {
    const app = await clientApp(req, a);
    if (app === undefined) return notFound(res, a, 'This tenant has no such application with users.');
    const saved = typeof req.query.saved === 'string' ? Number(req.query.saved) : undefined;
    await usersTab(req, res, a, app, { add: [], remove: [], q: '' }, 200, undefined,
      saved === undefined || !Number.isInteger(saved) ? undefined : `Saved: ${saved} change${saved === 1 ? '' : 's'} applied together.`);
  }));

  router.get(`${CONSOLE_PATH}/applications/:app/users/proposal`, authed(async (req, res, a) => {
    const app = await clientApp(req, a);
    if (app === undefined) return notFound(res, a, 'This tenant has no such application with users.');
    const add = ids(req.query.add);
    const remove = ids(req.query.remove).filter((x) => !add.includes(x));
    const l = await live(a);
    show(res, 200, a, 'Proposed change', 'integrations',
      proposalView(`The assignments of ${app.displayName ?? app.name}`, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}/users`, proposeAssignments(ctx.address(), l, app.name, add, remove)));
  }));

  router.post(`${CONSOLE_PATH}/applications/:app/users`, form, authed(async (req, res, a) => {
    const app = await clientApp(req, a);
    if (app === undefined) return notFound(res, a, 'This tenant has no such application with users.');
    const body = req.body as Record<string, unknown>;
    let add = ids(body.add);
    let remove = ids(body.remove);
    const q = typeof body.q === 'string' ? body.q.slice(0, 200) : '';
    const op = typeof body.op === 'string' ? body.op : 'search';
    const [verb, id = ''] = op.split(/:(.*)/s) as [string, string?];
    if (verb === 'add' && USER_ID.test(id) && !add.includes(id)) add = [...add, id];
    if (verb === 'undo-add') add = add.filter((x) => x !== id);
    if (verb === 'remove' && USER_ID.test(id) && !remove.includes(id)) remove = [...remove, id];
    if (verb === 'undo-remove') remove = remove.filter((x) => x !== id);
    // An id both added and removed cancels out.
    const both = add.filter((x) => remove.includes(x));
    add = add.filter((x) => !both.includes(x));
    remove = remove.filter((x) => !both.includes(x));
    const state: UsersTabState = { add, remove, q };
    if (verb !== 'save' && verb !== 'propose') return usersTab(req, res, a, app, state, 200);
    if (add.length + remove.length === 0) return usersTab(req, res, a, app, state, 200, undefined, 'There are no changes to save.');

    const git = app.managedBy === 'idforge';
    if (verb === 'propose' || git) {
      const q = new URLSearchParams([...add.map((x) => ['add', x]), ...remove.map((x) => ['remove', x])]);
      return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}/users/proposal?${q}`);
    }
    // Git's assignments stay Git's: a remove of one is refused before anything is sent.
    const assignments = (await a.admin.listAll('listAssignments', { application: app.name })) ?? [];
    const locked = remove.filter((x) => assignments.find((y) => y.userId === x)?.managedBy === 'idforge');
    if (locked.length > 0) {
      return usersTab(req, res, a, app, state, 409, alert(html`<p><strong>Nothing was saved.</strong> These assignments are managed in Git and can only be removed in the model: ${locked.join(', ')}.</p>`));
    }
    try {
      const r = await a.admin.call('changeAssignments', { application: app.name }, { body: { add, remove, managedBy: MANAGED_BY_CONSOLE } });
      ctx.log(JSON.stringify({ audit: 'console.assignments.changed', tenant: a.tenant.name, user: a.session.sub, application: app.name, add, remove }));
      const changed = r.results.filter((x) => x.outcome !== 'unchanged').length;
      return res.set(CONSOLE_HEADERS).redirect(303, `${CONSOLE_PATH}/applications/${encodeURIComponent(app.name)}/users?saved=${changed}`);
    } catch (err) {
      if (!(err instanceof AdminApiError) || err.status === 0 || err.status >= 500) throw err;
      const problems = err.body?.problems ?? [{ path: err.body?.path ?? '', message: err.body?.message ?? err.message }];
      const entry = (path: string) => {
        const m = /^(add|remove)\[(\d+)\]$/.exec(path);
        return m === null ? undefined : { op: m[1]!, id: (m[1] === 'add' ? add : remove)[Number(m[2])] };
      };
      return usersTab(req, res, a, app, state, err.status, alert(html`<p><strong>Nothing was saved</strong>: the changes apply together, and this one failed. Your changes are still listed below; fix them and save again.</p>
<ul>${problems.map((p) => {
        const e = entry(p.path);
        return e === undefined ? html`<li>${p.message}</li>` : html`<li>Could not ${e.op === 'add' ? 'add' : 'remove'} <code>${e.id ?? ''}</code>: ${p.message}</li>`;
      })}</ul>`));
    }
  }));

  router.use(CONSOLE_PATH, authed(async (_req, res, a) => notFound(res, a, 'The console has no such page.')));
  return router;
}
