/**
 * The console's pages, as functions from data to HTML: Integrations (the tenant's applications),
 * Marketplace (the kinds, then one kind's form), an application (overview and edit or propose), its
 * Users tab, a created application's one-time secret and configuration, and a proposal. Forms are
 * plain HTML: every control has a label, help and errors are tied to it with aria-describedby, and
 * an error summary at the top is announced and links to each field.
 */
import { KINDS, type ApplicationKind, type ApplicationView, type AssignmentView, type UserView } from '../contract/index.ts';
import type { Artifact } from '../generators/index.ts';
import { CONSOLE_PATH } from './client.ts';
import { KIND_FORMS, type FieldErrors, type FieldSpec, type FormValues } from './forms.ts';
import { alert, fileBlock, html, notice, ownerBadge, raw, type Html } from './pages.ts';
import type { Proposal } from './applications.ts';
import { historyPath } from './activity.ts';

const appPath = (name: string) => `${CONSOLE_PATH}/applications/${encodeURIComponent(name)}`;
const isGit = (managedBy: string | undefined) => managedBy === 'idforge';
const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;

/**
 * The notices a console page may show after a redirect, by code: the query string names a code,
 * never the text, so a link cannot make the console say anything of an attacker's choosing.
 */
export const NOTICES = {
  'application-saved': 'Your changes were saved.',
  'secret-shown': 'The client secret was shown once, when the application was made: the server keeps only a hash of it.',
} as const;
export type NoticeCode = keyof typeof NOTICES;

/** The notice a `done` query value names; anything else shows nothing. */
export const noticeOf = (code: unknown): string | undefined =>
  typeof code === 'string' && Object.hasOwn(NOTICES, code) ? NOTICES[code as NoticeCode] : undefined;

export function integrationsView(apps: readonly ApplicationView[], assigned: Readonly<Record<string, number>>, flash?: string): Html {
  const rows = apps.map((a) => html`<tr>
<th scope="row"><a href="${appPath(a.name)}">${a.displayName ?? a.name}</a>${a.displayName === undefined ? '' : html`<br><code>${a.name}</code>`}</th>
<td>${KINDS[a.kind].title}</td>
<td>${a.kind === 'api' ? html`<span class="help">none (an API)</span>` : html`<code>${a.clientId}</code>`}</td>
<td>${a.kind === 'api' ? html`<span class="help">audience</span> <code>${a.identifier}</code>` : html`<ul class="plain">${a.redirectUris.map((u) => html`<li><code>${u}</code></li>`)}</ul>`}</td>
<td>${a.kind === 'api' ? '—' : html`<a href="${appPath(a.name)}/users">${assigned[a.name] ?? 0}<span class="visually-hidden"> users assigned to ${a.name}</span></a>`}</td>
<td>${ownerBadge(a.managedBy)}</td>
</tr>`);
  return html`${flash === undefined ? '' : notice(flash)}
<p>The applications (integrations) of this tenant. Add one from the <a href="${CONSOLE_PATH}/marketplace">Marketplace</a>.
Applications managed in Git are read only here: change them in the model, or propose a change from their page.</p>
${apps.length === 0 ? html`<p>No applications yet.</p>` : html`<table>
<caption>Applications (${apps.length})</caption>
<thead><tr><th scope="col">Application</th><th scope="col">Kind</th><th scope="col">Client ID</th><th scope="col">Redirect URIs</th><th scope="col">Assigned users</th><th scope="col">Owner</th></tr></thead>
<tbody>${rows}</tbody>
</table>`}`;
}

export function marketplaceView(): Html {
  const cards = (Object.keys(KINDS) as ApplicationKind[]).map((k) => html`<li>
<h2 id="kind-${k}">${KINDS[k].title}</h2>
<p>${KINDS[k].description}.</p>
<a class="button" href="${CONSOLE_PATH}/marketplace/${k}" aria-describedby="kind-${k}">Add a ${KINDS[k].title}</a>
</li>`);
  return html`<p>Choose the kind of application to integrate with this tenant.</p>
<ul class="cards">${cards}</ul>`;
}

function describedBy(id: string, errors: readonly string[] | undefined): string {
  return [`${id}-help`, ...(errors === undefined ? [] : [`${id}-error`])].join(' ');
}

function field(f: FieldSpec, values: FormValues, errors: FieldErrors, apis: readonly string[], opts: { readonly readonlyName: boolean; readonly disabled: boolean }): Html {
  const id = `f-${f.key}`;
  const errs = errors[f.key];
  const v = values[f.key];
  const value = typeof v === 'string' ? v : (v?.[0] ?? '');
  const invalid = errs === undefined ? '' : raw(' aria-invalid="true"');
  const req = f.required ? raw(' required aria-required="true"') : '';
  const dis = opts.disabled ? raw(' disabled') : '';
  const help = html`<p class="help" id="${id}-help">${f.help}</p>`;
  const errorText = errs === undefined ? '' : html`<p class="field-error" id="${id}-error">${errs.join(' ')}</p>`;
  const label = html`<label for="${id}">${f.label}${f.required ? html` <span aria-hidden="true">*</span>` : ''}</label>`;
  switch (f.input) {
    case 'checkbox':
      return html`<div><label class="check" for="${id}"><input type="checkbox" id="${id}" name="${f.key}"${value === 'on' ? raw(' checked') : ''}${dis} aria-describedby="${describedBy(id, errs)}"> ${f.label}</label>${help}${errorText}</div>`;
    case 'select':
      return html`<div>${label}<select id="${id}" name="${f.key}"${dis} aria-describedby="${describedBy(id, errs)}">${(f.options ?? []).map((o) => html`<option value="${o.value}"${o.value === value ? raw(' selected') : ''}>${o.label}</option>`)}</select>${help}${errorText}</div>`;
    case 'apis': {
      const chosen = typeof v === 'string' ? [v] : (v ?? []);
      return html`<fieldset aria-describedby="${describedBy(id, errs)}"><legend>${f.label}</legend>
${apis.length === 0 ? html`<p>This tenant has no protected APIs yet.</p>` : apis.map((a, i) => html`<label for="${id}-${i}"><input type="checkbox" id="${id}-${i}" name="${f.key}" value="${a}"${chosen.includes(a) ? raw(' checked') : ''}${dis}> ${a}</label>`)}
${help}${errorText}</fieldset>`;
    }
    case 'routes':
      return html`<div>${label}<textarea id="${id}" name="${f.key}" rows="4"${invalid}${dis} aria-describedby="${describedBy(id, errs)}" spellcheck="false">${value}</textarea>${help}${errorText}</div>`;
    default: {
      const ro = f.key === 'name' && opts.readonlyName ? raw(' readonly') : '';
      return html`<div>${label}<input type="${f.input === 'url' ? 'url' : 'text'}" id="${id}" name="${f.key}" value="${value}"${f.placeholder === undefined ? '' : raw(` placeholder="${f.placeholder.replace(/"/g, '&quot;')}"`)}${req}${invalid}${ro}${dis} aria-describedby="${describedBy(id, errs)}" autocomplete="off" spellcheck="false">${help}${errorText}</div>`;
    }
  }
}

/** Every problem once, at the top, each linking to its field. */
function errorSummary(kind: ApplicationKind, errors: FieldErrors): Html {
  const entries = Object.entries(errors);
  if (entries.length === 0) return html``;
  const labels = new Map(KIND_FORMS[kind].map((f) => [f.key, f.label]));
  return alert(html`<p><strong>The application was not saved.</strong> Fix these and try again:</p>
<ul>${entries.flatMap(([k, msgs]) => msgs.map((m) => (k === 'form' ? html`<li>${m}</li>` : html`<li><a href="#f-${k}">${labels.get(k) ?? k}</a>: ${m}</li>`)))}</ul>`);
}

export interface FormOptions {
  readonly action: string;
  readonly csrf: string;
  readonly submit: string;
  readonly editing: boolean;
  /** Names of the tenant's apis (an SPA's audience choices). */
  readonly apis: readonly string[];
}

export function applicationForm(kind: ApplicationKind, values: FormValues, errors: FieldErrors, o: FormOptions): Html {
  const fields = KIND_FORMS[kind].map((f) => field(f, values, errors, o.apis, { readonlyName: o.editing, disabled: false }));
  return html`${errorSummary(kind, errors)}
<form method="post" action="${o.action}" novalidate>
${csrfField(o.csrf)}
<p class="help">Fields marked * are required. The same rules apply here as in a model in Git.</p>
${fields}
<button type="submit">${o.submit}</button> <a class="button secondary" href="${CONSOLE_PATH}/">Cancel</a>
</form>`;
}

export function newApplicationView(kind: ApplicationKind, values: FormValues, errors: FieldErrors, o: FormOptions): Html {
  return html`<p>${KINDS[kind].description}.</p>${applicationForm(kind, values, errors, o)}`;
}

/** After creating: the secret, shown this once, and the files `idforge compile` writes. */
export function createdView(app: ApplicationView, clientSecret: string | undefined, files: readonly Artifact[], tenant: string, secrets: Readonly<Record<string, string>>): Html {
  const secret = clientSecret === undefined ? '' : html`<div class="warning" role="status"><p><strong>Copy the client secret now: it is shown only this once.</strong>
The server keeps only a hash of it. It is also in the configuration files below.</p></div>
<dl class="facts"><dt>client_id</dt><dd><code>${app.kind === 'api' ? '' : app.clientId}</code></dd><dt>client_secret</dt><dd><code id="client-secret">${clientSecret}</code></dd></dl>
${fileBlock('state', 'idforge-state.json', `${JSON.stringify({ version: 1, secrets: { [`${tenant}/${app.name}`]: secrets } }, null, 2)}\n`, 'application/json')}
<p class="help">Keep <code>idforge-state.json</code> out of Git: to move this tenant into Git later (<code>idforge export</code>), merge it into <code>.idforge/state.json</code>, so <code>idforge apply</code> keeps this secret instead of replacing it.</p>`;
  return html`${notice(html`Application <strong>${app.displayName ?? app.name}</strong> was added. It is marked as made in the console.`)}
${secret}
<h2>Client configuration</h2>
<p>Ready to run: the same files <code>idforge compile</code> writes for a ${KINDS[app.kind].title}.</p>
${files.map((f, i) => fileBlock(`file-${i}`, f.path, f.content))}
<p><a class="button" href="${appPath(app.name)}/users">Assign users</a> <a class="button secondary" href="${CONSOLE_PATH}/">Back to Integrations</a></p>`;
}

function tabs(app: ApplicationView, current: 'overview' | 'users', count: number | undefined): Html {
  const tab = (which: 'overview' | 'users', href: string, label: string) =>
    html`<li><a href="${href}"${which === current ? raw(' aria-current="page"') : ''}>${label}</a></li>`;
  return html`<nav aria-label="Application"><ul class="tabs">${tab('overview', appPath(app.name), 'Overview')}${app.kind === 'api' ? '' : tab('users', `${appPath(app.name)}/users`, `Users (${count ?? 0})`)}<li><a href="${historyPath('application', app.name)}">History</a></li></ul></nav>`;
}

function gitNote(what: string): Html {
  return html`<div class="notice" role="note"><p><span class="badge git">Managed in Git</span> This ${what} was created by <code>idforge apply</code> or Pulumi from the model in Git,
so it is read only here: the next apply would undo a change made on the server. Make the change below and choose <strong>Propose this change</strong>
to get the patch to the model instead.</p></div>`;
}

export function applicationView(
  app: ApplicationView, count: number | undefined, values: FormValues, errors: FieldErrors, o: Omit<FormOptions, 'submit' | 'editing'>,
  files: readonly Artifact[] | undefined, flash?: string,
): Html {
  const git = isGit(app.managedBy);
  const facts = html`<dl class="facts">
<dt>Kind</dt><dd>${KINDS[app.kind].title} <span class="help">(${app.kind})</span></dd>
${app.kind === 'api' ? html`<dt>Audience</dt><dd><code>${app.identifier}</code></dd><dt>Scopes</dt><dd>${app.scopes.join(' ') || '—'}</dd>` : html`<dt>client_id</dt><dd><code>${app.clientId}</code></dd>
<dt>Redirect URIs</dt><dd><ul class="plain">${app.redirectUris.map((u) => html`<li><code>${u}</code></li>`)}</ul></dd>
<dt>Scopes</dt><dd>${app.scopes.join(' ')}</dd>
<dt>client_secret</dt><dd>${KINDS[app.kind].confidential ? 'kept by the server as a hash; shown once when the application was added' : 'none (a public client)'}</dd>`}
<dt>Owner</dt><dd>${ownerBadge(app.managedBy)}</dd>
</dl>`;
  const config = files === undefined ? '' : html`<h2>Client configuration</h2><p>The files <code>idforge compile</code> writes for it.</p>${files.map((f, i) => fileBlock(`file-${i}`, f.path, f.content))}`;
  return html`${flash === undefined ? '' : notice(flash)}
${tabs(app, 'overview', count)}
${git ? gitNote('application') : ''}
${facts}
<h2>${git ? 'Propose a change' : 'Edit'}</h2>
${applicationForm(app.kind, values, errors, { ...o, editing: true, submit: git ? 'Propose this change' : 'Save changes' })}
${config}`;
}

export interface UsersTabState {
  readonly add: readonly string[];
  readonly remove: readonly string[];
  readonly q: string;
}

export function usersTabView(
  app: ApplicationView, assignments: readonly AssignmentView[], users: ReadonlyMap<string, UserView>, state: UsersTabState,
  results: readonly UserView[] | undefined, csrf: string, failure: Html | undefined, flash?: string,
): Html {
  const git = isGit(app.managedBy);
  const label = (id: string) => {
    const u = users.get(id);
    return u === undefined ? html`<code>${id}</code> <span class="help">(no such user)</span>` : html`${u.email} <span class="help">(<code>${id}</code>)</span>`;
  };
  const current = new Set(assignments.map((a) => a.userId));
  const rows = assignments.map((a) => {
    const removing = state.remove.includes(a.userId);
    const locked = !git && isGit(a.managedBy);
    return html`<tr>
<th scope="row">${label(a.userId)}</th>
<td>${ownerBadge(a.managedBy)}</td>
<td>${removing ? html`<span class="pending">Will be removed</span> <button type="submit" class="secondary" name="op" value="undo-remove:${a.userId}">Keep<span class="visually-hidden"> ${a.userId}</span></button>`
      : locked ? html`<span class="help">Managed in Git</span>`
        : html`<button type="submit" class="danger" name="op" value="remove:${a.userId}">Remove<span class="visually-hidden"> ${a.userId}</span></button>`}</td>
</tr>`;
  });
  const adding = state.add.map((id) => html`<tr>
<th scope="row">${label(id)}</th>
<td><span class="pending">Will be added</span></td>
<td><button type="submit" class="secondary" name="op" value="undo-add:${id}">Undo<span class="visually-hidden"> adding ${id}</span></button></td>
</tr>`);
  const hidden = [...state.add.map((id) => html`<input type="hidden" name="add" value="${id}">`), ...state.remove.map((id) => html`<input type="hidden" name="remove" value="${id}">`)];
  const found = results === undefined ? '' : results.length === 0
    ? html`<p role="status">No user matches “${state.q}”.</p>`
    : html`<table><caption>Users matching “${state.q}”</caption>
<thead><tr><th scope="col">User</th><th scope="col">Action</th></tr></thead>
<tbody>${results.map((u) => html`<tr><th scope="row">${u.email} <span class="help">(<code>${u.id}</code>)</span></th><td>${
      current.has(u.id) && !state.remove.includes(u.id) ? html`<span class="help">Assigned</span>` : state.add.includes(u.id) ? html`<span class="pending">Will be added</span>`
        : html`<button type="submit" name="op" value="add:${u.id}">Add assignment<span class="visually-hidden"> for ${u.email}</span></button>`}</td></tr>`)}</tbody></table>`;
  const pending = state.add.length + state.remove.length;
  return html`${flash === undefined ? '' : notice(flash)}
${tabs(app, 'users', assignments.length)}
${git ? gitNote('application and its assignments') : ''}
${failure ?? ''}
<form method="post" action="${appPath(app.name)}/users">
${csrfField(csrf)}
${hidden}
<h2 id="search-heading">Add assignment</h2>
<div class="search"><div><label for="q">Search users by email or id</label>
<input type="search" id="q" name="q" value="${state.q}" autocomplete="off" spellcheck="false" aria-describedby="q-help"></div>
<button type="submit" name="op" value="search">Search</button></div>
<p class="help" id="q-help">Only assigned users can sign in to ${app.displayName ?? app.name}. Changes take effect when you save.</p>
${found}
<h2>Assigned users</h2>
<table><caption>Users assigned to ${app.displayName ?? app.name}${pending > 0 ? `, with ${pending} unsaved change${pending === 1 ? '' : 's'}` : ''}</caption>
<thead><tr><th scope="col">User</th><th scope="col">Owner</th><th scope="col">Action</th></tr></thead>
<tbody>${rows}${adding}${rows.length + adding.length === 0 ? html`<tr><td colspan="3">Nobody is assigned yet.</td></tr>` : ''}</tbody></table>
<p>${pending === 0 ? 'No unsaved changes.' : html`<strong>${pending} unsaved change${pending === 1 ? '' : 's'}.</strong>`}</p>
<button type="submit" name="op" value="${git ? 'propose' : 'save'}"${pending === 0 ? raw(' aria-disabled="true"') : ''}>${git ? 'Propose this change' : 'Save'}</button>
<a class="button secondary" href="${appPath(app.name)}/users">Discard changes</a>
</form>`;
}

export function proposalView(what: string, back: string, p: Proposal): Html {
  const intro = p.patch === undefined
    ? html`The lines it was declared on were not recorded (it was applied by Pulumi, or before <code>idforge apply</code> recorded them): put the changed entry below in place of its entry in your model`
    : p.against === undefined
    ? html`Here is the change as a patch to the model, exported from the live tenant (<code>idforge export</code>; the file it was applied from is not recorded): apply it to your model file (paths in your repository may differ)`
    : html`Here is the change as a patch to <code>${p.against.file}</code> (<code>${p.against.path}</code>, line ${p.against.line}), as it was last applied: <code>git apply proposed-change.patch</code> in your repository (if the file has changed there since, git refuses the patch: put the changed entry below in its place)`;
  return html`<p>${what} is managed in Git, so the server was not changed. ${intro}, review, and let <code>idforge apply</code> or Pulumi make it.</p>
${p.patch === undefined ? '' : p.patch === '' ? html`<p role="status">The change leaves the model as it is.</p>` : fileBlock('patch', 'proposed-change.patch', p.patch, 'text/x-diff')}
${fileBlock('snippet', 'changed-entry.yaml', p.snippet, 'text/yaml')}
<p><a class="button secondary" href="${back}">Back</a></p>`;
}

export function refusedView(email: string, tenantName: string, reason: 'scope' | 'disabled'): Html {
  return html`${alert(html`You are signed in as <strong>${email}</strong>, but ${reason === 'disabled' ? 'this account is disabled' : html`you do not hold the <code>admin</code> scope of ${tenantName}`}, so you cannot use its admin console.`)}
<p>The admin console is for the tenant's administrators: people who hold the tenant's <code>admin</code> scope.
Ask an administrator of ${tenantName} to give it to you (in the model: <code>scopes: [admin]</code> on your user).</p>
<p><a class="button" href="${CONSOLE_PATH}/login?prompt=login">Sign in as someone else</a></p>`;
}

export function messageView(text: Html | string, link?: { href: string; label: string }): Html {
  return html`<p>${text}</p>${link === undefined ? '' : html`<p><a class="button" href="${link.href}">${link.label}</a></p>`}`;
}
