/**
 * The console's People pages: the tenant's people, listed in pages and searched; a person's page
 * with what they can sign in with and the actions an administrator takes: disable and enable, unlock
 * a lockout, reset their factors, send a recovery link or an invitation; and a form that makes a
 * person. Every action is one admin API call (the directory core judges it, as at every other door).
 *
 * Who owns a person decides what the console may do: people Git owns (the model, through `idforge
 * apply` or Pulumi) and people SCIM provisions are read only here, except for the two actions that
 * change nothing of what their owner declares: a recovery link and an unlock. A Git-owned person's
 * page proposes a change instead (name, email, disabled): a patch of the lines their entry was
 * declared on, as an application's page does, for the repository, not a change of the server.
 */
import type { Request, Response, Router } from 'express';
import express from 'express';
import { AdminApiError } from '../admin-client/index.ts';
import { MANAGED_BY_CONSOLE, MAX_PEOPLE_QUERY, USER_ID, UserBody as UserBodySchema, type EdgeTenant, type EventView, type UserBody, type UserView } from '../contract/index.ts';
import { entryPatch, modelYaml } from '../generators/index.ts';
import type { Proposal } from './applications.ts';
import { proposalView } from './views.ts';
import { historyPath } from './activity.ts';
import { CONSOLE_PATH } from './client.ts';
import { CONSOLE_HEADERS, alert, html, notice, raw, signInsTable, type Html, type Section } from './pages.ts';
import type { TenantAdmin } from './tenant-admin.ts';

/** What the console's router lends these pages: the signed-in administrator, and its page frame. */
export interface PeopleHost {
  readonly authed: (handler: (req: Request, res: Response, a: { readonly admin: TenantAdmin; readonly csrf: string; readonly tenant: EdgeTenant }) => Promise<unknown>) => (req: Request, res: Response) => Promise<void>;
  readonly show: (res: Response, status: number, a: never, title: string, section: Section, body: Html) => void;
}
type Admin = Parameters<Parameters<PeopleHost['authed']>[0]>[2];

const PEOPLE = `${CONSOLE_PATH}/people`;
const personPath = (id: string) => `${PEOPLE}/${encodeURIComponent(id)}`;
/** People on one page of the list or of a search's matches. */
const PAGE = 50;

const NOTICES: Readonly<Record<string, string>> = {
  created: 'The person is made. Send them an invitation to choose a password, or tell them to use "Forgot password?".',
  disabled: 'The person is disabled: their sessions and tokens ended, and they cannot sign in.',
  enabled: 'The person is enabled: they can sign in again.',
  unlocked: 'The lock is lifted: they can try to sign in again.',
  'not-locked': 'The account was not locked; its failure count starts afresh.',
  reset: 'Their authenticator app and passkeys are removed and their sessions ended: they set them up again at their next sign-in.',
  recovery: 'A recovery link is on its way to them (it works once, for 30 minutes).',
  invitation: 'An invitation is on its way to them (it works once, for 7 days).',
  'sent-recently': 'A link was mailed to them moments ago; that one stands.',
};

/** The owner label of what Git declares (the model, through idforge apply or Pulumi). */
export const GIT = 'Managed in Git';

/** What a proposal may change of a Git-owned person. */
interface PersonChange {
  readonly email: string;
  readonly displayName: string;
  readonly disabled: boolean;
}

/**
 * A proposed change of a Git-owned person: their last-applied entry with the three fields replaced
 * and every other kept, as a patch of the lines it was declared on; without those lines (applied by
 * Pulumi, or before apply recorded them), the changed entry alone, to put in place of theirs.
 */
export function proposePerson(u: UserView, c: PersonChange): Proposal {
  const last = u.lastApplied;
  const before: Record<string, unknown> = last?.entry !== undefined ? { ...last.entry } : { id: u.id, email: u.email, ...(u.displayName === undefined ? {} : { displayName: u.displayName }), ...(u.disabled ? { disabled: true } : {}) };
  const after: Record<string, unknown> = { ...before, email: c.email };
  if (c.displayName === '') delete after.displayName;
  else after.displayName = c.displayName;
  if (c.disabled) after.disabled = true;
  else delete after.disabled;
  // The entry's own field order: kept keys where they were, new ones after.
  const ordered = Object.fromEntries([...Object.keys(before), ...Object.keys(after)].filter((k, i, all) => all.indexOf(k) === i && after[k] !== undefined).map((k) => [k, after[k]]));
  const patch = last?.source === undefined ? undefined : entryPatch(last.source, before, ordered);
  if (patch === undefined) return { patch: undefined, snippet: modelYaml(ordered) };
  return { patch, snippet: modelYaml(ordered), against: { file: last!.source!.file, path: last!.source!.path, line: last!.source!.line } };
}

/** Who keeps a person, in the console's words; only the console's own people (and nobody's) change here. */
export function ownerOf(u: Pick<UserView, 'managedBy' | 'manager'>): { readonly label: string; readonly editable: boolean } {
  const m = u.manager ?? '';
  if (u.managedBy === 'idforge' || m.startsWith('apply:') || m.startsWith('pulumi:')) return { label: GIT, editable: false };
  if (u.managedBy === 'scim' || m === 'scim') return { label: 'Provisioned by SCIM', editable: false };
  if (u.managedBy === MANAGED_BY_CONSOLE) return { label: 'Made in the console', editable: true };
  return { label: 'No owner', editable: true };
}

/** A labelled text field with its help, and its error tied to it (aria-describedby, aria-invalid). */
export function textField(id: string, label: string, help: string, value: string | undefined, error: string | undefined): Html {
  return html`<label for="${id}">${label}</label>
<p id="${id}-help" class="help">${help}</p>
<input id="${id}" name="${id}" type="text" value="${value ?? ''}" aria-describedby="${id}-help${error === undefined ? '' : ` ${id}-error`}"${error === undefined ? '' : html` aria-invalid="true"`}>
${error === undefined ? '' : html`<p id="${id}-error" class="field-error">${error}</p>`}`;
}

/**
 * An admin API refusal a person can act on (a 4xx): the field it names (one of `fields`, else the
 * first) and its words as a sentence. Anything else (a fault, a bug) is thrown on.
 */
export function refusalAt(err: unknown, fields: readonly string[]): { readonly field: string; readonly message: string } {
  if (!(err instanceof AdminApiError) || err.status >= 500 || err.status === 0) throw err;
  const path = err.body?.path ?? '';
  return { field: fields.includes(path) ? path : fields[0]!, message: `${(err.body?.message ?? 'refused').replace(/^./, (c) => c.toUpperCase())}.` };
}


export function mountPeople(router: Router, host: PeopleHost): void {
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const show = host.show as (res: Response, status: number, a: Admin, title: string, section: Section, body: Html) => void;
  const redirect = (res: Response, to: string) => res.set(CONSOLE_HEADERS).redirect(303, to);

  router.get(PEOPLE, host.authed(async (req, res, a) => {
    const q = typeof req.query.q === 'string' ? req.query.q.trim().slice(0, MAX_PEOPLE_QUERY) : '';
    const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? req.query.cursor : undefined;
    // The directory searches itself (listUsers' q): one request a page, at any size.
    const p = await a.admin.call('listUsers', {}, { query: { limit: PAGE, ...(q === '' ? {} : { q }), ...(cursor === undefined ? {} : { cursor }) } });
    show(res, 200, a, 'People', 'people', peopleView(p.items, q, p.nextCursor, typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined));
  }));

  router.get(`${PEOPLE}/new`, host.authed(async (_req, res, a) => show(res, 200, a, 'Add a person', 'people', newPersonView(a.csrf, {}, {}))));

  router.post(`${PEOPLE}/new`, form, host.authed(async (req, res, a) => {
    const v = { id: String(req.body?.id ?? '').trim(), email: String(req.body?.email ?? '').trim(), displayName: String(req.body?.displayName ?? '').trim() };
    const errors: Record<string, string> = {};
    if (!USER_ID.test(v.id)) errors.id = 'Enter an id: letters, digits, dots, dashes and underscores (it becomes the person\'s `sub` and never changes).';
    if (v.email === '') errors.email = 'Enter the email address the person signs in with.';
    if (Object.keys(errors).length === 0 && (await a.admin.find('getUser', { userId: v.id })) !== undefined) errors.id = `There is a person with the id ${v.id} already.`;
    if (Object.keys(errors).length === 0) {
      try {
        await a.admin.call('putUser', { userId: v.id }, { body: { email: v.email, ...(v.displayName === '' ? {} : { displayName: v.displayName }), managedBy: MANAGED_BY_CONSOLE } });
        return redirect(res, `${personPath(v.id)}?done=created`);
      } catch (err) {
        const r = refusalAt(err, ['id', 'email', 'displayName']);
        errors[r.field] = r.message;
      }
    }
    show(res, 400, a, 'Add a person', 'people', newPersonView(a.csrf, v, errors));
  }));

  const person = async (a: Admin, id: string) => a.admin.find('getUser', { userId: id });
  /** What the person's page shows besides the person: factors, sessions, the applications they are assigned to, their last sign-ins. */
  const around = async (a: Admin, u: UserView): Promise<Around> => {
    const [factors, sessions, assignments, signIns] = await Promise.all([
      a.admin.call('getUserFactors', { userId: u.id }),
      a.admin.call('listUserSessions', { userId: u.id }),
      a.admin.call('listUserAssignments', { userId: u.id }),
      a.admin.call('listEvents', {}, { query: { type: 'login.success', object: `user:${u.id}`, order: 'desc', limit: RECENT_SIGN_INS } }),
    ]);
    return { factors, sessions: sessions.sessions.length, assigned: assignments.items.map((x) => x.application), signIns: signIns.items };
  };

  router.get(`${PEOPLE}/:id`, host.authed(async (req, res, a) => {
    const u = await person(a, String(req.params.id));
    if (u === undefined) return show(res, 404, a, 'No such person', 'people', html`<p>There is no such person in this tenant.</p><p><a href="${PEOPLE}">All people</a></p>`);
    show(res, 200, a, u.displayName ?? u.email, 'people', personView(a.csrf, u, await around(a, u), typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined));
  }));

  /** One action on a person: refused with a message on the person's page when the directory or the owner says no. */
  const action = (name: string, needsEditable: boolean, run: (a: Admin, u: UserView) => Promise<string>) =>
    router.post(`${PEOPLE}/:id/${name}`, form, host.authed(async (req, res, a) => {
      const u = await person(a, String(req.params.id));
      if (u === undefined) return show(res, 404, a, 'No such person', 'people', html`<p>There is no such person in this tenant.</p>`);
      const refuse = async (status: number, why: string) => {
        show(res, status, a, u.displayName ?? u.email, 'people', html`${alert(why)}${personView(a.csrf, u, await around(a, u), undefined)}`);
      };
      if (needsEditable && !ownerOf(u).editable) return refuse(409, `${ownerOf(u).label}: this person is read only here. Change them where they are managed.`);
      try {
        return redirect(res, `${personPath(u.id)}?done=${await run(a, u)}`);
      } catch (err) {
        if (!(err instanceof AdminApiError) || err.status >= 500 || err.status === 0) throw err;
        return refuse(err.status === 502 ? 502 : 409, `Nothing was done: ${err.body?.message ?? 'the server refused'}.`);
      }
    }));

  const bodyOf = (u: UserView, disabled: boolean): UserBody => {
    const { id: _id, hasPassword: _p, createdAt: _c, updatedAt: _u, ...body } = u;
    return { ...body, disabled, managedBy: body.managedBy ?? MANAGED_BY_CONSOLE };
  };
  action('disable', true, async (a, u) => (await a.admin.call('putUser', { userId: u.id }, { body: bodyOf(u, true) }), 'disabled'));
  action('enable', true, async (a, u) => (await a.admin.call('putUser', { userId: u.id }, { body: bodyOf(u, false) }), 'enabled'));
  action('unlock', false, async (a, u) => ((await a.admin.call('unlockUser', { userId: u.id })).wasLocked ? 'unlocked' : 'not-locked'));
  action('reset-factors', true, async (a, u) => (await a.admin.call('resetUserFactors', { userId: u.id }), 'reset'));
  /** The proposal's fields, from a form or from the proposal page's address; the contract's user rules judge them. */
  const proposedOf = (src: Readonly<Record<string, unknown>>, u: UserView): { change: PersonChange; errors: Record<string, string> } => {
    const text = (k: string) => (typeof src[k] === 'string' ? (src[k] as string).trim() : '');
    const change: PersonChange = { email: text('email'), displayName: text('displayName'), disabled: text('disabled') === '1' };
    const errors: Record<string, string> = {};
    if (change.email === '') errors.email = 'Enter the email address the person signs in with.';
    const judged = UserBodySchema.safeParse({ email: change.email, ...(change.displayName === '' ? {} : { displayName: change.displayName }), disabled: change.disabled });
    if (!judged.success) {
      for (const issue of judged.error.issues) {
        const field = String(issue.path[0] ?? 'email');
        errors[field] ??= `${issue.message.replace(/^./, (c) => c.toUpperCase())}.`;
      }
    }
    if (u.lastApplied === undefined && u.managedBy === undefined) errors.email ??= 'This person is not declared in a model.';
    return { change, errors };
  };
  router.post(`${PEOPLE}/:id/propose`, form, host.authed(async (req, res, a) => {
    const u = await person(a, String(req.params.id));
    if (u === undefined) return show(res, 404, a, 'No such person', 'people', html`<p>There is no such person in this tenant.</p>`);
    if (ownerOf(u).label !== GIT) return redirect(res, personPath(u.id));
    const { change, errors } = proposedOf(req.body as Record<string, unknown>, u);
    if (Object.keys(errors).length > 0) {
      return show(res, 400, a, u.displayName ?? u.email, 'people', html`${alert('Nothing was proposed. See the messages below.')}${personView(a.csrf, u, await around(a, u), undefined, { change, errors })}`);
    }
    redirect(res, `${personPath(u.id)}/proposal?${new URLSearchParams({ email: change.email, displayName: change.displayName, ...(change.disabled ? { disabled: '1' } : {}) }).toString()}`);
  }));
  router.get(`${PEOPLE}/:id/proposal`, host.authed(async (req, res, a) => {
    const u = await person(a, String(req.params.id));
    if (u === undefined) return show(res, 404, a, 'No such person', 'people', html`<p>There is no such person in this tenant.</p>`);
    if (ownerOf(u).label !== GIT) return redirect(res, personPath(u.id));
    const { change, errors } = proposedOf(req.query as Record<string, unknown>, u);
    if (Object.keys(errors).length > 0) return redirect(res, personPath(u.id));
    show(res, 200, a, 'Proposed change', 'people', proposalView(`${u.displayName ?? u.email}`, personPath(u.id), proposePerson(u, change)));
  }));

  action('recovery', false, async (a, u) => ((await a.admin.call('sendRecovery', { userId: u.id })).sent ? 'recovery' : 'sent-recently'));
  // An invitation is the recovery of someone who has no password yet (people an identity provider
  // provisions over SCIM usually have none), so it is allowed wherever recovery is.
  action('invitation', false, async (a, u) => ((await a.admin.call('inviteUser', { userId: u.id })).sent ? 'invitation' : 'sent-recently'));
}

const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;

function peopleView(people: readonly UserView[], q: string, next: string | null, flash: string | undefined): Html {
  const rows = people.map((u) => html`<tr>
<th scope="row"><a href="${personPath(u.id)}">${u.displayName ?? u.email}</a></th><td>${u.email}</td><td><code>${u.id}</code></td>
<td>${u.disabled ? 'Disabled' : 'Active'}</td><td>${ownerOf(u).label}</td></tr>`);
  const more = next === null ? '' : html`<p><a href="${PEOPLE}?${new URLSearchParams({ ...(q === '' ? {} : { q }), cursor: next }).toString()}">Next page</a></p>`;
  return html`${flash === undefined ? '' : notice(flash)}
<form method="get" action="${PEOPLE}" class="search" role="search">
<div><label for="q">Search by name, email or id</label><input id="q" name="q" type="search" value="${q}"></div>
<button type="submit">Search</button>
</form>
<p><a class="button secondary" href="${PEOPLE}/new">Add a person</a></p>
${people.length === 0 ? html`<p>${q === '' ? 'No people yet.' : `No one matches “${q}”.`}</p>` : html`<table>
<caption>${q === '' ? 'People' : `People matching “${q}”`}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Owner</th></tr></thead>
<tbody>${rows}</tbody>
</table>`}
${more}`;
}

function newPersonView(csrf: string, v: Readonly<Record<string, string>>, errors: Readonly<Record<string, string>>): Html {
  const field = (id: string, label: string, help: string) => textField(id, label, help, v[id], errors[id]);
  return html`${Object.keys(errors).length === 0 ? '' : alert('The person was not made. See the messages below.')}
<form method="post" action="${PEOPLE}/new">${csrfField(csrf)}
${field('id', 'Id', 'Stable and opaque: the token\'s sub and the proxy\'s X-Forwarded-User. It never changes.')}
${field('email', 'Email', 'The address they sign in with and receive mail at.')}
${field('displayName', 'Name (optional)', 'Shown in ID tokens and in the console.')}
<button type="submit">Add person</button>
</form>`;
}

/** Sign-ins a person's page lists. */
const RECENT_SIGN_INS = 10;

interface Around {
  readonly factors: { readonly hasPassword: boolean; readonly totp: unknown; readonly passkeys: readonly unknown[] };
  readonly sessions: number;
  /** Applications the person is assigned to directly (groups assigned to an application let their members in too). */
  readonly assigned: readonly string[];
  readonly signIns: readonly EventView[];
}


/** The proposal form of a Git-owned person, with what was typed and its messages when refused. */
function proposeForm(csrf: string, u: UserView, typed: { change: PersonChange; errors: Readonly<Record<string, string>> } | undefined): Html {
  const v = typed?.change ?? { email: u.email, displayName: u.displayName ?? '', disabled: u.disabled };
  const errors = typed?.errors ?? {};
  return html`<h2>Propose a change</h2>
<p class="help">This person is declared in Git: the console writes the change as a patch of their entry for your repository, and <code>idforge apply</code> or Pulumi makes it.</p>
<form method="post" action="${personPath(u.id)}/propose">${csrfField(csrf)}
${textField('email', 'Email', 'The address they sign in with and receive mail at.', v.email, errors.email)}
${textField('displayName', 'Name (optional)', 'Shown in ID tokens and in the console.', v.displayName, errors.displayName)}
<p><label><input type="checkbox" name="disabled" value="1"${v.disabled ? raw(' checked') : ''}> Disabled: they cannot sign in</label></p>
<button type="submit" class="secondary">Propose the change</button>
</form>`;
}

function personView(csrf: string, u: UserView, around: Around, flash: string | undefined, typed?: { change: PersonChange; errors: Readonly<Record<string, string>> }): Html {
  const { factors: f, sessions, assigned, signIns } = around;
  const owner = ownerOf(u);
  const button = (name: string, label: string, cls = 'secondary') => html`<form method="post" action="${personPath(u.id)}/${name}" class="inline">${csrfField(csrf)}<button type="submit" class="${cls}">${label}</button></form>`;
  return html`${flash === undefined ? '' : notice(flash)}
<dl class="facts">
<dt>Email</dt><dd>${u.email}</dd><dt>Id</dt><dd><code>${u.id}</code></dd>
<dt>Status</dt><dd>${u.disabled ? 'Disabled' : 'Active'}</dd><dt>Owner</dt><dd>${owner.label}</dd>
<dt>Password</dt><dd>${f.hasPassword ? 'Set' : 'None yet'}</dd>
<dt>Authenticator app</dt><dd>${f.totp === null ? 'None' : 'Set up'}</dd>
<dt>Passkeys</dt><dd>${f.passkeys.length}</dd><dt>Sessions</dt><dd>${sessions}</dd>
</dl>
${owner.editable ? '' : html`<p class="warning">${owner.label}: this person is read only here. You can send a recovery link (an invitation to someone without a password) and lift a lockout; anything else changes where they are managed.</p>`}
<h2>Actions</h2>
${f.hasPassword && !u.disabled ? button('recovery', 'Send a recovery link') : ''}
${!f.hasPassword && !u.disabled ? button('invitation', 'Send an invitation') : ''}
${button('unlock', 'Unlock')}
${owner.editable ? button('reset-factors', 'Reset factors', 'danger') : ''}
${owner.editable ? (u.disabled ? button('enable', 'Enable') : button('disable', 'Disable', 'danger')) : ''}
${owner.label === GIT ? proposeForm(csrf, u, typed) : ''}
<h2>Applications</h2>
${assigned.length === 0 ? html`<p>Not assigned to any application directly.</p>` : html`<ul class="assigned">${assigned.map((n) => html`<li><a href="${CONSOLE_PATH}/applications/${n}">${n}</a></li>`)}</ul>`}
<h2>Recent sign-ins</h2>
${signInsTable(signIns, 'Last')}
<p><a href="${historyPath('user', u.id)}">Everything that happened to this person</a> · <a href="${PEOPLE}">All people</a></p>`;
}
