/**
 * The console's Activity page: the tenant's event log (src/contract/events.ts) newest first, read
 * through the admin API like everything else here, filtered by kind of event, by who (a person, a
 * manager, a Git commit), by object and by day. Each application's page links to its own history
 * (`?object=application:<name>`). A change made from Git names its commit, branch and model path.
 */
import type { Request, Response, Router } from 'express';
import { EVENT_OBJECT_KINDS, EVENT_TYPES, parseEventQuery, type EdgeTenant, type EventView } from '../contract/index.ts';
import { CONSOLE_PATH } from './client.ts';
import { alert, html, type Html, type Section } from './pages.ts';
import type { TenantAdmin } from './tenant-admin.ts';

export const ACTIVITY_PATH = `${CONSOLE_PATH}/activity`;
/** The history of one object, e.g. `historyPath('application', 'portal')`. */
export const historyPath = (kind: string, name: string) => `${ACTIVITY_PATH}?object=${encodeURIComponent(`${kind}:${name}`)}`;

/** What the console's router lends this page: the signed-in administrator, and its page frame. */
export interface ActivityHost {
  readonly authed: (handler: (req: Request, res: Response, a: { readonly admin: TenantAdmin; readonly tenant: EdgeTenant }) => Promise<unknown>) => (req: Request, res: Response) => Promise<void>;
  readonly show: (res: Response, status: number, a: never, title: string, section: Section, body: Html) => void;
}
type Admin = Parameters<Parameters<ActivityHost['authed']>[0]>[2];

const PAGE = 50;
/** The kinds of event offered in the filter: every kind the log has, and each kind's events. */
const KINDS = [...new Set(EVENT_TYPES.map((t) => t.slice(0, t.indexOf('.'))))];

const str = (v: unknown) => (typeof v === 'string' ? v.trim().slice(0, 300) : '');

function who(e: EventView): Html {
  const git = e.actor.git;
  return html`${e.actor.who === undefined ? '' : html`<span class="who">${e.actor.who}</span>`}${e.actor.manager === undefined ? '' : html` <span class="badge">${e.actor.manager}</span>`}${git === undefined ? '' : html`<br><code title="${git.commit}">${git.commit.slice(0, 12)}</code>${git.branch === undefined ? '' : html` on ${git.branch}`}${git.path === undefined ? '' : html` <code>${git.path}</code>`}`}`;
}

function what(e: EventView): Html {
  const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));
  const items = [
    ...e.changes.map((c) => (c.redacted ? html`<li>${c.field} changed (not shown)</li>` : html`<li>${c.field}: ${show(c.before)} → ${show(c.after)}</li>`)),
    ...Object.entries(e.details ?? {}).map(([k, v]) => html`<li>${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}</li>`),
  ];
  return items.length === 0 ? html`` : html`<ul class="changes">${items}</ul>`;
}

export function activityView(events: readonly EventView[], filter: Record<string, string>, next: string | null, problem?: string): Html {
  const q = (extra: Record<string, string>) => new URLSearchParams(Object.entries({ ...filter, ...extra }).filter(([, v]) => v !== '')).toString();
  const rows = events.map((e) => html`<tr>
<td><time datetime="${e.time}">${e.time.replace('T', ' ').slice(0, 19)}</time></td>
<td><code>${e.type}</code></td>
<td><a href="${`${ACTIVITY_PATH}?${q({ object: `${e.object.kind}:${e.object.name}`, cursor: '' })}`}">${e.object.kind} ${e.object.name}</a></td>
<td>${who(e)}</td>
<td>${what(e)}</td>
</tr>`);
  return html`${problem === undefined ? '' : alert(problem)}
<form method="get" action="${ACTIVITY_PATH}" class="filters" role="search" aria-label="Filter the activity">
<label>Kind <select name="type"><option value="">every kind</option>${KINDS.map((k) => html`<option value="${`${k}.*`}"${filter.type === `${k}.*` ? html` selected` : ''}>${k}</option>`)}</select></label>
<label>Who, manager or commit <input name="actor" value="${filter.actor ?? ''}" autocomplete="off"></label>
<label>Object <input name="object" value="${filter.object ?? ''}" placeholder="application:portal" autocomplete="off"></label>
<label>Since <input type="date" name="day" value="${filter.day ?? ''}"></label>
<button type="submit">Filter</button> <a href="${ACTIVITY_PATH}">Clear</a>
</form>
${events.length === 0 ? html`<p>No activity${Object.values(filter).some((v) => v !== '') ? ' matches these filters' : ' yet'}.</p>` : html`<table class="activity">
<caption>Newest first. Changes made from Git name their commit; secrets and passwords are never shown.</caption>
<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Event</th><th scope="col">Object</th><th scope="col">By</th><th scope="col">What</th></tr></thead>
<tbody>${rows}</tbody></table>`}
${next === null ? '' : html`<p><a class="button secondary" href="${`${ACTIVITY_PATH}?${q({ cursor: next })}`}">Older</a></p>`}`;
}

export function mountActivity(router: Router, host: ActivityHost): void {
  const show = host.show as (res: Response, status: number, a: Admin, title: string, section: Section, body: Html) => void;
  router.get(ACTIVITY_PATH, host.authed(async (req, res, a) => {
    const filter = { type: str(req.query.type), actor: str(req.query.actor), object: str(req.query.object), day: str(req.query.day) };
    const since = /^\d{4}-\d\d-\d\d$/.test(filter.day) ? `${filter.day}T00:00:00Z` : '';
    const query = { type: filter.type, actor: filter.actor, object: filter.object, since, order: 'desc' };
    const { problems } = parseEventQuery(query);
    const kind = filter.object.split(':')[0]!;
    if (problems.length > 0 || (filter.object !== '' && !(EVENT_OBJECT_KINDS as readonly string[]).includes(kind))) {
      return show(res, 400, a, 'Activity', 'activity', activityView([], filter, null, `Those filters cannot be read: ${problems.map((p) => p.message).join('; ') || `'${kind}' is no kind of object`}.`));
    }
    const cursor = str(req.query.cursor);
    const page = await a.admin.call('listEvents', {}, { query: { ...query, limit: PAGE, ...(cursor === '' ? {} : { cursor }) } });
    show(res, 200, a, filter.object === '' ? 'Activity' : `History of ${filter.object.replace(':', ' ')}`, 'activity', activityView(page.items, filter, page.nextCursor));
  }));
}
