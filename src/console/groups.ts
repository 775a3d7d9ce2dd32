/**
 * The console's Groups pages: the tenant's groups; a group's page where an administrator renames it,
 * adds and removes members, and assigns it to applications (its members may then sign in there; a
 * member who leaves, or a group unassigned, loses their grants at those applications); and a form
 * that makes a group. Every change is one admin API call: a group's PUT carries its whole state
 * (name and members), and a group assignment has its own PUT and DELETE.
 *
 * Groups Git owns (the model) or SCIM provisions are read only here, as people are (people.ts). A
 * Git-owned group's page proposes a change instead (name, members): its declared entry, changed,
 * for the repository (a tenant's groups are declared in its entry, whose lines apply does not keep).
 */
import type { Request, Response, Router } from 'express';
import express from 'express';
import { AdminApiError } from '../admin-client/index.ts';
import { MANAGED_BY_CONSOLE, USER_ID, type ApplicationView, type GroupBody, type GroupView } from '../contract/index.ts';
import { CONSOLE_PATH } from './client.ts';
import { CONSOLE_HEADERS, alert, html, notice, type Html, type Section } from './pages.ts';
import { modelYaml } from '../generators/index.ts';
import type { Proposal } from './applications.ts';
import { GIT, ownerOf, refusalAt, textField, type PeopleHost } from './people.ts';
import { proposalView } from './views.ts';

/** Member ids as people type them: one per line, or separated by commas or spaces; each once, in order. */
const idsOf = (text: string): string[] => [...new Set(text.split(/[\s,]+/).filter((x) => x !== ''))];

/**
 * A proposed change of a Git-owned group: its entry as the tenant last declared it, with the new
 * name and members and every other field kept (its scopes); from the live group when the tenant's
 * entry names none.
 */
export function proposeGroup(g: GroupView, declared: Readonly<Record<string, unknown>> | undefined, change: { readonly displayName: string; readonly members: readonly string[] }): Proposal {
  const before: Record<string, unknown> = declared !== undefined ? { ...declared } : { name: g.id, displayName: g.displayName, members: [...g.members] };
  const after: Record<string, unknown> = { ...before, displayName: change.displayName, members: [...change.members] };
  return { patch: undefined, snippet: modelYaml(after) };
}

type Admin = Parameters<Parameters<PeopleHost['authed']>[0]>[2];

const GROUPS = `${CONSOLE_PATH}/groups`;
const groupPath = (id: string) => `${GROUPS}/${encodeURIComponent(id)}`;
const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;

const NOTICES: Readonly<Record<string, string>> = {
  created: 'The group is made. Add its members, and assign it to applications.',
  renamed: 'The group is renamed.',
  'member-added': 'The member is added.',
  'member-removed': 'The member is removed: they lost the access the group gave them.',
  assigned: "The group is assigned: its members may sign in to the application.",
  unassigned: "The group's assignment is removed: members without another way in lost their access there.",
};

/** The group as a PUT body: its whole state, with the console as owner when it has none. */
const bodyOf = (g: GroupView, change: Partial<Pick<GroupBody, 'displayName' | 'members'>>): GroupBody => {
  const { id: _id, createdAt: _c, updatedAt: _u, ...body } = g;
  return { ...body, ...change, managedBy: body.managedBy ?? MANAGED_BY_CONSOLE };
};

export function mountGroups(router: Router, host: PeopleHost): void {
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const show = host.show as (res: Response, status: number, a: Admin, title: string, section: Section, body: Html) => void;
  const redirect = (res: Response, to: string) => res.set(CONSOLE_HEADERS).redirect(303, to);
  const clients = async (a: Admin) => ((await a.admin.listAll('listApplications', {})) ?? []).filter((x) => x.kind !== 'api');

  router.get(GROUPS, host.authed(async (req, res, a) => {
    const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? req.query.cursor : undefined;
    const p = await a.admin.call('listGroups', {}, { query: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } });
    const rows = p.items.map((g) => html`<tr><th scope="row"><a href="${groupPath(g.id)}">${g.displayName}</a></th><td><code>${g.id}</code></td>
<td>${g.memberCount}</td><td>${ownerOf(g).label}</td></tr>`);
    show(res, 200, a, 'Groups', 'groups', html`${typeof req.query.done === 'string' && NOTICES[req.query.done] !== undefined ? notice(NOTICES[req.query.done]!) : ''}
<p><a class="button secondary" href="${GROUPS}/new">Add a group</a></p>
${p.items.length === 0 ? html`<p>No groups yet.</p>` : html`<table><caption>Groups</caption>
<thead><tr><th scope="col">Group</th><th scope="col">Id</th><th scope="col">Members</th><th scope="col">Owner</th></tr></thead><tbody>${rows}</tbody></table>`}
${p.nextCursor === null ? '' : html`<p><a href="${GROUPS}?cursor=${encodeURIComponent(p.nextCursor)}">Next page</a></p>`}`);
  }));

  const newGroupView = (csrf: string, v: Readonly<Record<string, string>>, errors: Readonly<Record<string, string>>) => {
    const field = (id: string, label: string, help: string) => textField(id, label, help, v[id], errors[id]);
    return html`${Object.keys(errors).length === 0 ? '' : alert('The group was not made. See the messages below.')}
<form method="post" action="${GROUPS}/new">${csrfField(csrf)}
${field('id', 'Id', 'Letters, digits, dots, dashes and underscores; it never changes.')}
${field('displayName', 'Name', 'Unique in the tenant, whatever its capitals.')}
<button type="submit">Add group</button></form>`;
  };

  router.get(`${GROUPS}/new`, host.authed(async (_req, res, a) => show(res, 200, a, 'Add a group', 'groups', newGroupView(a.csrf, {}, {}))));
  router.post(`${GROUPS}/new`, form, host.authed(async (req, res, a) => {
    const v = { id: String(req.body?.id ?? '').trim(), displayName: String(req.body?.displayName ?? '').trim() };
    const errors: Record<string, string> = {};
    if (!USER_ID.test(v.id)) errors.id = 'Enter an id: letters, digits, dots, dashes and underscores.';
    if (v.displayName === '') errors.displayName = 'Enter the group\'s name.';
    if (Object.keys(errors).length === 0 && (await a.admin.find('getGroup', { group: v.id })) !== undefined) errors.id = `There is a group with the id ${v.id} already.`;
    if (Object.keys(errors).length === 0) {
      try {
        await a.admin.call('putGroup', { group: v.id }, { body: { displayName: v.displayName, members: [], managedBy: MANAGED_BY_CONSOLE } });
        return redirect(res, `${groupPath(v.id)}?done=created`);
      } catch (err) {
        const r = refusalAt(err, ['id', 'displayName']);
        errors[r.field] = r.message;
      }
    }
    show(res, 400, a, 'Add a group', 'groups', newGroupView(a.csrf, v, errors));
  }));

  const groupPage = async (res: Response, a: Admin, status: number, g: GroupView, flash?: Html) => {
    const apps = await clients(a);
    const assigned = new Set((await a.admin.call('listTenantGroupAssignments', {})).items.filter((x) => x.group === g.id).map((x) => x.application));
    show(res, status, a, g.displayName, 'groups', groupView(a.csrf, g, apps, assigned, flash));
  };

  router.get(`${GROUPS}/:id`, host.authed(async (req, res, a) => {
    const g = await a.admin.find('getGroup', { group: String(req.params.id) });
    if (g === undefined) return show(res, 404, a, 'No such group', 'groups', html`<p>There is no such group in this tenant.</p><p><a href="${GROUPS}">All groups</a></p>`);
    await groupPage(res, a, 200, g, typeof req.query.done === 'string' && NOTICES[req.query.done] !== undefined ? notice(NOTICES[req.query.done]!) : undefined);
  }));

  /** One change of a group the console may change; a refusal comes back on the group's page, in words. */
  const change = (name: string, run: (a: Admin, g: GroupView, body: Readonly<Record<string, unknown>>) => Promise<string | { refused: string }>) =>
    router.post(`${GROUPS}/:id/${name}`, form, host.authed(async (req: Request, res: Response, a) => {
      const g = await a.admin.find('getGroup', { group: String(req.params.id) });
      if (g === undefined) return show(res, 404, a, 'No such group', 'groups', html`<p>There is no such group in this tenant.</p>`);
      if (!ownerOf(g).editable) return groupPage(res, a, 409, g, alert(`${ownerOf(g).label}: this group is read only here. Change it where it is managed.`));
      try {
        const done = await run(a, g, (req.body ?? {}) as Record<string, unknown>);
        if (typeof done === 'string') return redirect(res, `${groupPath(g.id)}?done=${done}`);
        return groupPage(res, a, 400, g, alert(done.refused));
      } catch (err) {
        if (!(err instanceof AdminApiError) || err.status >= 500 || err.status === 0) throw err;
        return groupPage(res, a, 400, g, alert(`Nothing was changed: ${err.body?.message ?? 'the server refused'}.`));
      }
    }));

  /** The group's entry in its tenant's last-applied model entry, if the tenant was applied from one. */
  const declaredGroup = async (a: Admin, id: string): Promise<Record<string, unknown> | undefined> => {
    const t = await a.admin.find('getTenant', {});
    const groups = (t?.lastApplied?.entry as { groups?: readonly Record<string, unknown>[] } | undefined)?.groups ?? [];
    return groups.find((x) => x.name === id);
  };
  router.post(`${GROUPS}/:id/propose`, form, host.authed(async (req: Request, res: Response, a) => {
    const g = await a.admin.find('getGroup', { group: String(req.params.id) });
    if (g === undefined) return show(res, 404, a, 'No such group', 'groups', html`<p>There is no such group in this tenant.</p>`);
    if (ownerOf(g).label !== GIT) return redirect(res, groupPath(g.id));
    const b = (req.body ?? {}) as Record<string, unknown>;
    const displayName = String(b.displayName ?? '').trim();
    const members = idsOf(String(b.members ?? ''));
    const bad = members.filter((m) => !USER_ID.test(m));
    if (displayName === '' || bad.length > 0) {
      return groupPage(res, a, 400, g, alert(displayName === '' ? 'Nothing was proposed: enter the group\'s name.' : `Nothing was proposed: “${bad[0]}” is not a person's id.`));
    }
    redirect(res, `${groupPath(g.id)}/proposal?${new URLSearchParams({ displayName, members: members.join(' ') }).toString()}`);
  }));
  router.get(`${GROUPS}/:id/proposal`, host.authed(async (req: Request, res: Response, a) => {
    const g = await a.admin.find('getGroup', { group: String(req.params.id) });
    if (g === undefined) return show(res, 404, a, 'No such group', 'groups', html`<p>There is no such group in this tenant.</p>`);
    const displayName = typeof req.query.displayName === 'string' ? req.query.displayName.trim() : '';
    const members = idsOf(typeof req.query.members === 'string' ? req.query.members : '');
    if (ownerOf(g).label !== GIT || displayName === '' || members.some((m) => !USER_ID.test(m))) return redirect(res, groupPath(g.id));
    show(res, 200, a, 'Proposed change', 'groups', proposalView(`Group ${g.displayName}`, groupPath(g.id), proposeGroup(g, await declaredGroup(a, g.id), { displayName, members })));
  }));

  change('rename', async (a, g, b) => {
    const to = String(b.displayName ?? '').trim();
    if (to === '') return { refused: 'Nothing was changed: enter the new name.' };
    await a.admin.call('putGroup', { group: g.id }, { body: bodyOf(g, { displayName: to }) });
    return 'renamed';
  });
  change('members/add', async (a, g, b) => {
    const id = String(b.userId ?? '').trim();
    if ((id === '' || !USER_ID.test(id)) || (await a.admin.find('getUser', { userId: id })) === undefined) {
      return { refused: `Nothing was changed: there is no person with the id “${id}”. Find their id on the People page.` };
    }
    await a.admin.call('putGroup', { group: g.id }, { body: bodyOf(g, { members: [...g.members, id] }) });
    return 'member-added';
  });
  change('members/remove', async (a, g, b) => {
    await a.admin.call('putGroup', { group: g.id }, { body: bodyOf(g, { members: g.members.filter((m) => m !== String(b.userId ?? '')) }) });
    return 'member-removed';
  });
  change('applications/add', async (a, g, b) => {
    await a.admin.call('putGroupAssignment', { application: String(b.application ?? ''), group: g.id }, { body: { managedBy: MANAGED_BY_CONSOLE } });
    return 'assigned';
  });
  change('applications/remove', async (a, g, b) => {
    await a.admin.call('deleteGroupAssignment', { application: String(b.application ?? ''), group: g.id });
    return 'unassigned';
  });
}

function groupView(csrf: string, g: GroupView, apps: readonly ApplicationView[], assigned: ReadonlySet<string>, flash: Html | undefined): Html {
  const owner = ownerOf(g);
  const post = (path: string, fields: Readonly<Record<string, string>>, label: string, cls = 'secondary', aria?: string) => html`<form method="post" action="${groupPath(g.id)}/${path}" class="inline">${csrfField(csrf)}
${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button type="submit" class="${cls}"${aria === undefined ? '' : html` aria-label="${aria}"`}>${label}</button></form>`;
  const members = g.members.length === 0 ? html`<p>No members yet.</p>` : html`<table><caption>Members (${g.members.length})</caption>
<thead><tr><th scope="col">Person</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${g.members.map((m) => html`<tr><td><a href="${CONSOLE_PATH}/people/${encodeURIComponent(m)}"><code>${m}</code></a></td>
<td>${owner.editable ? post('members/remove', { userId: m }, 'Remove', 'danger', `Remove ${m}`) : ''}</td></tr>`)}</tbody></table>`;
  const applications = apps.length === 0 ? html`<p>No applications to assign.</p>` : html`<table><caption>Applications</caption>
<thead><tr><th scope="col">Application</th><th scope="col">Assigned</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${apps.map((x) => html`<tr><td>${x.displayName ?? x.name}</td><td>${assigned.has(x.name) ? 'Yes' : 'No'}</td>
<td>${!owner.editable ? '' : assigned.has(x.name) ? post('applications/remove', { application: x.name }, 'Unassign', 'danger', `Unassign ${x.displayName ?? x.name}`)
    : post('applications/add', { application: x.name }, 'Assign', 'secondary', `Assign to ${x.displayName ?? x.name}`)}</td></tr>`)}</tbody></table>`;
  return html`${flash ?? ''}
<dl class="facts"><dt>Id</dt><dd><code>${g.id}</code></dd><dt>Owner</dt><dd>${owner.label}</dd></dl>
${owner.editable ? html`<form method="post" action="${groupPath(g.id)}/rename">${csrfField(csrf)}
<label for="displayName">Name</label><input id="displayName" name="displayName" type="text" value="${g.displayName}">
<button type="submit">Rename</button></form>` : html`<p class="warning">${owner.label}: this group is read only here.</p>`}
${owner.label === GIT ? html`<h2>Propose a change</h2>
<p class="help">This group is declared in Git: the console writes its changed entry for your repository, and <code>idforge apply</code> or Pulumi makes it.</p>
<form method="post" action="${groupPath(g.id)}/propose">${csrfField(csrf)}
<label for="displayName">Name</label><input id="displayName" name="displayName" type="text" value="${g.displayName}">
<label for="members">Members (ids, one per line)</label><textarea id="members" name="members" rows="4">${g.members.join('\n')}</textarea>
<button type="submit" class="secondary">Propose the change</button></form>` : ''}
<h2>Members</h2>
${members}
${owner.editable ? html`<form method="post" action="${groupPath(g.id)}/members/add">${csrfField(csrf)}
<label for="userId">Add a member by id</label><input id="userId" name="userId" type="text">
<button type="submit">Add member</button></form>` : ''}
<h2>Applications</h2>
${applications}
<p><a href="${GROUPS}">All groups</a></p>`;
}
