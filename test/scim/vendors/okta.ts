/**
 * Okta, as its SCIM 2.0 reference describes its requests:
 * https://developer.okta.com/docs/reference/scim/scim-20/ (and the lifecycle it walks through,
 * https://developer.okta.com/docs/concepts/scim/).
 *
 * What it exercises: the existence check by `userName eq` with `startIndex=1&count=100`; a create
 * carrying `password`, `locale`, `externalId` and an empty read-only `groups`; profile updates as
 * whole-resource PUTs that repeat `id`, `meta`, `groups` and emails' `display` (App Integration Wizard
 * apps send every update so, the password included); deactivation and reactivation as a path-less
 * PATCH `{"active": ...}`; Group Push: a group created with `members: []`, a membership PATCH that
 * removes by `members[value eq "..."]` and adds members with `display`, a rename as a path-less
 * `replace` that repeats the group's `id`, a full membership push with `replace` on `members`, and
 * the group's deletion. Okta never DELETEs users. Cross-checked: the pushed group, assigned to the
 * application, lets its member in; a password pushed by PUT is the one that signs in; an email
 * change moves the sign-in address; a deactivated user cannot sign in; a member pushed out of the
 * group loses access.
 */
import { GROUP, LIST, USER, patchOp, scim, type VendorSequence } from './_steps.ts';

const kim = { userName: 'kim.lee@okta-customer.test', password: 'Okta pushed this one 1' };

/** The user as Okta's profile holds it; PUTs send it whole. */
const kimProfile = (over: Record<string, unknown> = {}) => ({
  schemas: [USER],
  id: '{kim}',
  userName: kim.userName,
  name: { givenName: 'Kim', middleName: '', familyName: 'Lee' },
  emails: [{ primary: true, value: kim.userName, type: 'work', display: kim.userName }],
  displayName: 'Kim Lee',
  active: true,
  groups: [],
  meta: { resourceType: 'User' },
  ...over,
});

export const okta: VendorSequence = {
  vendor: 'Okta',
  tenant: 'okta',
  references: ['https://developer.okta.com/docs/reference/scim/scim-20/', 'https://developer.okta.com/docs/concepts/scim/'],
  steps: [
    scim('assignment: is the user there already?', 'GET', `/Users?filter=userName eq "${kim.userName}"&startIndex=1&count=100`, undefined,
      { status: 200, body: { schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] } }),
    scim('create the user with its application profile and a password', 'POST', '/Users', {
      schemas: [USER], userName: kim.userName, name: { givenName: 'Kim', familyName: 'Lee' },
      emails: [{ primary: true, value: kim.userName, type: 'work' }], displayName: 'Kim Lee', locale: 'en-US',
      externalId: '00uq4kim7Okta1d', groups: [], password: kim.password, active: true,
    }, { status: 201, body: { schemas: [USER], userName: kim.userName, externalId: '00uq4kim7Okta1d', locale: 'en-US', active: true }, absent: ['password', 'groups'] },
    { kim: 'id' }),
    scim('a second assignee', 'POST', '/Users', {
      schemas: [USER], userName: 'ana.ruiz@okta-customer.test', name: { givenName: 'Ana', familyName: 'Ruiz' },
      emails: [{ primary: true, value: 'ana.ruiz@okta-customer.test', type: 'work' }], displayName: 'Ana Ruiz', active: true, groups: [],
    }, { status: 201 }, { ana: 'id' }),
    scim('does the user still exist?', 'GET', '/Users/{kim}', undefined, { status: 200, body: { id: '{kim}', userName: kim.userName, name: { givenName: 'Kim', familyName: 'Lee' } } }),
    scim('import: users page by page', 'GET', '/Users?startIndex=1&count=100', undefined, { status: 200, body: { totalResults: 2, startIndex: 1, itemsPerPage: 2 } }),

    scim('Group Push: create the group, empty', 'POST', '/Groups', { schemas: [GROUP], displayName: 'Support', members: [] },
      { status: 201, body: { schemas: [GROUP], displayName: 'Support' }, absent: ['members'] }, { support: 'id' }),
    scim('membership update: remove one who is not there, add Kim with her display name', 'PATCH', '/Groups/{support}', patchOp(
      { op: 'remove', path: 'members[value eq "{ana}"]' },
      { op: 'add', path: 'members', value: [{ value: '{kim}', display: kim.userName }] },
    ), { status: 200, body: { members: [{ value: '{kim}', type: 'User', $ref: '{base}/Users/{kim}' }] }, absent: ['members.0.display'] }),
    scim('the group name, repeated with the id after every membership update', 'PATCH', '/Groups/{support}', patchOp(
      { op: 'replace', value: { id: '{support}', displayName: 'Support Team' } },
    ), { status: 200, body: { id: '{support}', displayName: 'Support Team' } }),
    scim('import: groups page by page', 'GET', '/Groups?startIndex=1&count=100', undefined, { status: 200, body: { totalResults: 1, Resources: [{ id: '{support}' }] } }),
    scim('does the group still exist? (members with their display, asked for)', 'GET', '/Groups/{support}?attributes=displayName,members.value,members.display', undefined,
      { status: 200, body: { displayName: 'Support Team', members: [{ value: '{kim}', display: 'Kim Lee' }] } }),
    { kind: 'assign', does: 'the operator assigns the pushed group to the portal', group: '{support}' },
    { kind: 'signIn', does: 'Kim signs in with the password Okta set', email: kim.userName, password: kim.password, outcome: 'signed-in', sub: '{kim}' },

    scim('profile update: GET, then PUT the whole user back (middle name added)', 'PUT', '/Users/{kim}',
      kimProfile({ name: { givenName: 'Kim', middleName: 'Soo', familyName: 'Lee' } }),
      { status: 200, body: { id: '{kim}', name: { middleName: 'Soo' }, emails: [{ value: kim.userName, display: kim.userName }], groups: [{ value: '{support}', type: 'direct' }] } }),
    scim('password sync in an App Integration Wizard app: a PUT with the password', 'PUT', '/Users/{kim}',
      kimProfile({ name: { givenName: 'Kim', middleName: 'Soo', familyName: 'Lee' }, password: 'Okta pushed a new one 2' }),
      { status: 200, absent: ['password'] }),
    { kind: 'signIn', does: 'the old password no longer works', email: kim.userName, password: kim.password, outcome: 'refused' },
    { kind: 'signIn', does: 'the pushed password does', email: kim.userName, password: 'Okta pushed a new one 2', outcome: 'signed-in', sub: '{kim}' },
    scim('Kim changes her address: userName and email in one PUT', 'PUT', '/Users/{kim}',
      kimProfile({ userName: 'kim.lee-park@okta-customer.test', emails: [{ primary: true, value: 'kim.lee-park@okta-customer.test', type: 'work' }] }),
      { status: 200, body: { userName: 'kim.lee-park@okta-customer.test' } }),
    { kind: 'admin', does: 'the admin API sees the new sign-in address', path: '/users/{kim}', expect: { status: 200, body: { email: 'kim.lee-park@okta-customer.test', managedBy: 'scim', disabled: false } } },
    { kind: 'signIn', does: 'the old address no longer signs in', email: kim.userName, password: 'Okta pushed a new one 2', outcome: 'refused' },
    { kind: 'signIn', does: 'the new one does', email: 'kim.lee-park@okta-customer.test', password: 'Okta pushed a new one 2', outcome: 'signed-in', sub: '{kim}' },

    scim('deactivation (unassigned, suspended or deactivated in Okta)', 'PATCH', '/Users/{kim}', patchOp({ op: 'replace', value: { active: false } }),
      { status: 200, body: { active: false } }),
    { kind: 'admin', does: 'the admin API sees the user disabled', path: '/users/{kim}', expect: { status: 200, body: { disabled: true } } },
    { kind: 'signIn', does: 'a deactivated user cannot sign in', email: 'kim.lee-park@okta-customer.test', password: 'Okta pushed a new one 2', outcome: 'refused' },
    scim('reactivation', 'PATCH', '/Users/{kim}', patchOp({ op: 'replace', value: { active: true } }), { status: 200, body: { active: true } }),
    { kind: 'signIn', does: 'and she is back', email: 'kim.lee-park@okta-customer.test', password: 'Okta pushed a new one 2', outcome: 'signed-in', sub: '{kim}' },

    scim('full membership push: Ana replaces Kim', 'PATCH', '/Groups/{support}', patchOp(
      { op: 'replace', path: 'members', value: [{ value: '{ana}', display: 'ana.ruiz@okta-customer.test' }] },
    ), { status: 200, body: { members: [{ value: '{ana}' }] } }),
    { kind: 'admin', does: 'the admin API sees the group with Ana only', path: '/groups/{support}', expect: { status: 200, body: { displayName: 'Support Team', members: ['{ana}'], managedBy: 'scim' } } },
    { kind: 'signIn', does: 'Kim, pushed out of the group, is no longer let in', email: 'kim.lee-park@okta-customer.test', password: 'Okta pushed a new one 2', outcome: 'not-assigned' },
    scim('unlink the pushed group, deleting it in the app', 'DELETE', '/Groups/{support}', undefined, { status: 204 }),
    scim('it is gone', 'GET', '/Groups/{support}', undefined, { status: 404 }),
  ],
};
