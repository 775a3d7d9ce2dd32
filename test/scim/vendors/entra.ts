/**
 * Microsoft Entra ID, as Microsoft's SCIM tutorial and its list of known deviations describe the
 * provisioning service's requests:
 * https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups
 * https://learn.microsoft.com/en-us/entra/identity/app-provisioning/application-provisioning-config-problem-scim-compatibility
 *
 * What it exercises: Test Connection (a `userName eq` query for a random GUID, answered by an empty
 * list); users created with the enterprise extension listed in `schemas`, `meta`, and an empty
 * `roles`; queries by `userName` and by `emails[type eq "work"].value`, and by an enterprise
 * attribute; the manager set with `Add` and a one-element list (`$ref` null, or a URL), by the
 * qualified path and by the bare `manager` of the tutorial's sample; PATCH with capitalised
 * `Replace`/`Add`/`Remove`, `emails[type eq "work"].value`, `userName`; both forms of the
 * `aadOptscim062020` flag: `active` as the string "False" and as a boolean, several attributes
 * replaced one by one with paths and path-less with keys such as `name.givenName` and
 * `urn:...:enterprise:2.0:User:employeeNumber`, a member removed by a value list and by
 * `members[value eq "..."]`; groups created with Microsoft's ADSCIM group schema URI beside the core
 * one, read with `excludedAttributes=members`, renamed, deleted; users deleted.
 * Cross-checked: sign-in follows the group assigned to the application, the email change, the
 * disabling, and the removal from the group.
 */
import { ENTERPRISE, GROUP, LIST, USER, patchOp, scim, type VendorSequence } from './_steps.ts';

const ADSCIM_GROUP = 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group';
const ryan = 'ryan.park@contoso-tenant.test';
const PASSWORD = 'set by the test for Ryan 1';

export const entra: VendorSequence = {
  vendor: 'Microsoft Entra ID',
  tenant: 'entra',
  references: [
    'https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups',
    'https://learn.microsoft.com/en-us/entra/identity/app-provisioning/application-provisioning-config-problem-scim-compatibility',
  ],
  steps: [
    scim('Test Connection: a random GUID as userName', 'GET', '/Users?filter=userName eq "6f1b2c1e-93a0-4c4e-8d2a-0f5e1d7c9b42"', undefined,
      { status: 200, body: { schemas: [LIST], totalResults: 0, Resources: [] } }),
    scim('the manager first: is she there?', 'GET', '/Users?filter=userName eq "mona.field@contoso-tenant.test"', undefined, { status: 200, body: { totalResults: 0 } }),
    scim('create the manager', 'POST', '/Users', {
      schemas: [USER, ENTERPRISE], externalId: 'a4f0c0de-1d2e-4f5a-9b7c-3e2d1c0b9a88', userName: 'mona.field@contoso-tenant.test', active: true,
      displayName: 'Mona Field', emails: [{ primary: true, type: 'work', value: 'mona.field@contoso-tenant.test' }],
      meta: { resourceType: 'User' }, name: { formatted: 'Mona Field', familyName: 'Field', givenName: 'Mona' }, roles: [],
      [ENTERPRISE]: { department: 'Research', employeeNumber: '0007' },
    }, { status: 201, body: { schemas: [USER, ENTERPRISE], [ENTERPRISE]: { department: 'Research', employeeNumber: '0007' } }, absent: ['roles'] }, { mona: 'id' }),
    scim('create Ryan, with the enterprise extension and an empty roles list', 'POST', '/Users', {
      schemas: [USER, ENTERPRISE], externalId: '3c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f', userName: ryan, active: true,
      emails: [{ primary: true, type: 'work', value: ryan }], meta: { resourceType: 'User' },
      name: { formatted: 'Ryan Park', familyName: 'Park', givenName: 'Ryan' }, roles: [],
      [ENTERPRISE]: { employeeNumber: '1042', department: 'Research', costCenter: 'CC-310', organization: 'Contoso', division: 'Labs' },
    }, {
      status: 201,
      body: { schemas: [USER, ENTERPRISE], userName: ryan, active: true, [ENTERPRISE]: { employeeNumber: '1042', department: 'Research', costCenter: 'CC-310', organization: 'Contoso', division: 'Labs' } },
    }, { ryan: 'id' }),
    scim('the manager reference: Add, a list of one, $ref null', 'PATCH', '/Users/{ryan}', patchOp(
      { op: 'Add', path: `${ENTERPRISE}:manager`, value: [{ $ref: null, value: '{mona}' }] },
    ), { status: 200, body: { [ENTERPRISE]: { manager: { value: '{mona}' } } }, absent: [`${ENTERPRISE}.manager.displayName`] }),
    scim("the tutorial's sample form: bare `manager`, with a $ref", 'PATCH', '/Users/{ryan}', patchOp(
      { op: 'Add', path: 'manager', value: [{ $ref: '{base}/Users/{mona}', value: '{mona}' }] },
    ), { status: 200, body: { [ENTERPRISE]: { manager: { value: '{mona}', $ref: '{base}/Users/{mona}' } } } }),
    scim("the manager's name, asked for", 'GET', `/Users/{ryan}?attributes=${ENTERPRISE}:manager.displayName,${ENTERPRISE}:manager.value`, undefined,
      { status: 200, body: { schemas: [USER, ENTERPRISE], id: '{ryan}', [ENTERPRISE]: { manager: { value: '{mona}', displayName: 'Mona Field' } } }, absent: ['userName'] }),
    scim('query by userName', 'GET', `/Users?filter=userName eq "${ryan}"`, undefined, { status: 200, body: { totalResults: 1, Resources: [{ id: '{ryan}' }] } }),
    scim('query by the work email (uniqueness on emails[type eq "work"])', 'GET', `/Users?filter=emails[type eq "work"].value eq "${ryan}"`, undefined,
      { status: 200, body: { totalResults: 1, Resources: [{ id: '{ryan}' }] } }),
    scim('query by an enterprise attribute', 'GET', `/Users?filter=${ENTERPRISE}:department eq "research" and ${ENTERPRISE}:employeeNumber eq "1042"`, undefined,
      { status: 200, body: { totalResults: 1, Resources: [{ id: '{ryan}' }] } }),
    { kind: 'setPassword', does: 'the test gives Ryan a password (Entra sends none)', user: '{ryan}', password: PASSWORD },

    scim('groups: is it there? (members excluded)', 'GET', '/Groups?excludedAttributes=members&filter=displayName eq "Research Team"', undefined, { status: 200, body: { totalResults: 0 } }),
    scim('create the group, with the ADSCIM schema URI and meta', 'POST', '/Groups', {
      schemas: [GROUP, ADSCIM_GROUP], externalId: '9b8a7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d', displayName: 'Research Team', meta: { resourceType: 'Group' },
    }, { status: 201, body: { schemas: [GROUP], displayName: 'Research Team', externalId: '9b8a7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d' } }, { team: 'id' }),
    scim('Update Group [Add Members]', 'PATCH', '/Groups/{team}', patchOp({ op: 'Add', path: 'members', value: [{ $ref: null, value: '{ryan}' }] }), { status: 200 }),
    scim('Get Group, members excluded', 'GET', '/Groups/{team}?excludedAttributes=members', undefined,
      { status: 200, body: { id: '{team}', displayName: 'Research Team' }, absent: ['members'] }),
    { kind: 'assign', does: 'the operator assigns the group to the portal', group: '{team}' },
    { kind: 'signIn', does: 'Ryan signs in', email: ryan, password: PASSWORD, outcome: 'signed-in', sub: '{ryan}' },

    scim('Update User [Multi-valued properties]: work email and family name', 'PATCH', '/Users/{ryan}', patchOp(
      { op: 'Replace', path: 'emails[type eq "work"].value', value: 'ryan.park-lee@contoso-tenant.test' },
      { op: 'Replace', path: 'name.familyName', value: 'Park-Lee' },
    ), { status: 200, body: { emails: [{ value: 'ryan.park-lee@contoso-tenant.test', type: 'work', primary: true }], name: { familyName: 'Park-Lee' } } }),
    { kind: 'admin', does: 'the admin API sees the new sign-in address', path: '/users/{ryan}', expect: { status: 200, body: { email: 'ryan.park-lee@contoso-tenant.test', managedBy: 'scim' } } },
    { kind: 'signIn', does: 'the old address no longer signs in', email: ryan, password: PASSWORD, outcome: 'refused' },
    { kind: 'signIn', does: 'the new one does', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'signed-in', sub: '{ryan}' },
    scim('Update User [Single-valued properties]: userName', 'PATCH', '/Users/{ryan}', patchOp({ op: 'Replace', path: 'userName', value: 'ryan.park-lee@contoso-tenant.test' }),
      { status: 200, body: { userName: 'ryan.park-lee@contoso-tenant.test' } }),
    scim('several attributes, without the flag: one Replace each, an enterprise one by its qualified path', 'PATCH', '/Users/{ryan}', patchOp(
      { op: 'Replace', path: 'displayName', value: 'Ryan Park-Lee' },
      { op: 'Replace', path: 'name.givenName', value: 'Ryan J.' },
      { op: 'Replace', path: 'externalId', value: 'rpark' },
      { op: 'Replace', path: `${ENTERPRISE}:employeeNumber`, value: '1043' },
    ), { status: 200, body: { displayName: 'Ryan Park-Lee', externalId: 'rpark', name: { givenName: 'Ryan J.' }, [ENTERPRISE]: { employeeNumber: '1043', department: 'Research' } } }),
    scim('several attributes, with the flag: one path-less replace keyed by paths', 'PATCH', '/Users/{ryan}', patchOp(
      { op: 'replace', path: 'emails[type eq "work"].value', value: 'ryan.park-lee@contoso-tenant.test' },
      { op: 'replace', value: { displayName: 'Ryan P. Lee', 'name.givenName': 'Ryan', 'name.familyName': 'Lee', [`${ENTERPRISE}:employeeNumber`]: '1044' } },
    ), { status: 200, body: { displayName: 'Ryan P. Lee', name: { givenName: 'Ryan', familyName: 'Lee' }, [ENTERPRISE]: { employeeNumber: '1044', costCenter: 'CC-310' } } }),
    scim('a new attribute added, without the flag', 'PATCH', '/Users/{ryan}', patchOp({ op: 'Add', path: 'nickName', value: 'RJ' }), { status: 200, body: { nickName: 'RJ' } }),

    scim('disable, without the flag: "False" as a string', 'PATCH', '/Users/{ryan}', patchOp({ op: 'Replace', path: 'active', value: 'False' }), { status: 200, body: { active: false } }),
    { kind: 'admin', does: 'the admin API sees the user disabled', path: '/users/{ryan}', expect: { status: 200, body: { disabled: true } } },
    { kind: 'signIn', does: 'a disabled user cannot sign in', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'refused' },
    scim('enable, with the flag: a boolean', 'PATCH', '/Users/{ryan}', patchOp({ op: 'replace', path: 'active', value: true }), { status: 200, body: { active: true } }),
    { kind: 'signIn', does: 'enabled again', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'signed-in', sub: '{ryan}' },

    scim('Update Group [Remove Members], without the flag: a value list', 'PATCH', '/Groups/{team}', patchOp({ op: 'Remove', path: 'members', value: [{ $ref: null, value: '{ryan}' }] }), { status: 200 }),
    { kind: 'admin', does: 'the admin API sees the group empty', path: '/groups/{team}', expect: { status: 200, body: { members: [] } } },
    { kind: 'signIn', does: 'removed from the assigned group, Ryan is no longer let in', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'not-assigned' },
    scim('added back', 'PATCH', '/Groups/{team}', patchOp({ op: 'Add', path: 'members', value: [{ $ref: null, value: '{ryan}' }] }), { status: 200 }),
    { kind: 'signIn', does: 'and let in again', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'signed-in', sub: '{ryan}' },
    scim('removed with the flag: a filtered path', 'PATCH', '/Groups/{team}', patchOp({ op: 'remove', path: 'members[value eq "{ryan}"]' }), { status: 200 }),
    { kind: 'signIn', does: 'out again', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'not-assigned' },
    scim('Update Group [Non-member attributes]', 'PATCH', '/Groups/{team}', patchOp({ op: 'Replace', path: 'displayName', value: 'Research Team (EU)' }),
      { status: 200, body: { displayName: 'Research Team (EU)' } }),
    scim('Get Group by displayName', 'GET', '/Groups?excludedAttributes=members&filter=displayName eq "Research Team (EU)"', undefined,
      { status: 200, body: { totalResults: 1, Resources: [{ id: '{team}' }] } }),

    scim('the manager leaves: Remove by the qualified path', 'PATCH', '/Users/{ryan}', patchOp({ op: 'Remove', path: `${ENTERPRISE}:manager` }),
      { status: 200, body: { [ENTERPRISE]: { department: 'Research' } }, absent: [`${ENTERPRISE}.manager`] }),
    scim('Delete Group', 'DELETE', '/Groups/{team}', undefined, { status: 204 }),
    scim('Delete User', 'DELETE', '/Users/{ryan}', undefined, { status: 204 }),
    scim('Get User: not found', 'GET', '/Users/{ryan}', undefined, { status: 404 }),
    { kind: 'signIn', does: 'a deleted user cannot sign in', email: 'ryan.park-lee@contoso-tenant.test', password: PASSWORD, outcome: 'refused' },
  ],
};
