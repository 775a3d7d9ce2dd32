/**
 * JumpCloud, its custom SCIM identity-management integration as JumpCloud's support article
 * describes it:
 * https://jumpcloud.com/support/provision-and-manage-users-and-groups-in-apps-using-custom-scim-identity-management-integration
 *
 * JumpCloud documents behaviour, not requests: Test Connection creates a test user and a test
 * group and deletes both; the core attributes only (userName, names, email; no extension schema);
 * empty groups are not created; an existing group whose name matches is taken over; renames and
 * membership changes are synchronised; a group disassociated from the app leaves its members
 * deactivated unless another managed group still holds them; a group deleted in JumpCloud is
 * deleted in the app. The requests are the RFC 7644 forms of those behaviours.
 * Cross-checked: a member let in through the group loses access when removed from it; deactivated
 * users cannot sign in.
 */
import { GROUP, USER, patchOp, scim, type VendorSequence } from './_steps.ts';

const PASSWORD = 'set by the test for Priya 1';
const user = (userName: string, givenName: string, familyName: string) => ({
  schemas: [USER], userName, active: true, displayName: `${givenName} ${familyName}`,
  name: { givenName, familyName }, emails: [{ value: userName, type: 'work', primary: true }],
});

export const jumpcloud: VendorSequence = {
  vendor: 'JumpCloud',
  tenant: 'jumpcloud',
  references: ['https://jumpcloud.com/support/provision-and-manage-users-and-groups-in-apps-using-custom-scim-identity-management-integration'],
  steps: [
    scim('Test Connection: a test user', 'POST', '/Users', user('jc-test-user@jumpcloud-customer.test', 'Test', 'User'), { status: 201 }, { testUser: 'id' }),
    scim('Test Connection: a test group (with the test user: empty groups are not created)', 'POST', '/Groups',
      { schemas: [GROUP], displayName: 'JumpCloud Test Group', members: [{ value: '{testUser}' }] }, { status: 201 }, { testGroup: 'id' }),
    scim('Test Connection: the test group deleted', 'DELETE', '/Groups/{testGroup}', undefined, { status: 204 }),
    scim('Test Connection: the test user deleted', 'DELETE', '/Users/{testUser}', undefined, { status: 204 }),

    scim('provision Priya', 'POST', '/Users', user('priya.nair@jumpcloud-customer.test', 'Priya', 'Nair'), { status: 201, body: { userName: 'priya.nair@jumpcloud-customer.test' } }, { priya: 'id' }),
    scim('provision Tom', 'POST', '/Users', user('tom.berg@jumpcloud-customer.test', 'Tom', 'Berg'), { status: 201 }, { tom: 'id' }),
    { kind: 'setPassword', does: 'the test gives Priya a password (JumpCloud sends none)', user: '{priya}', password: PASSWORD },
    scim('a group of the same name to take over?', 'GET', '/Groups?filter=displayName eq "Engineering"', undefined, { status: 200, body: { totalResults: 0 } }),
    scim('the group, created with its members', 'POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [{ value: '{priya}' }, { value: '{tom}' }] },
      { status: 201, body: { displayName: 'Engineering' } }, { eng: 'id' }),
    { kind: 'admin', does: 'the admin API sees both members', path: '/groups/{eng}', expect: { status: 200, body: { managedBy: 'scim' } } },
    { kind: 'assign', does: 'the operator assigns the group to the portal', group: '{eng}' },
    { kind: 'signIn', does: 'Priya signs in', email: 'priya.nair@jumpcloud-customer.test', password: PASSWORD, outcome: 'signed-in', sub: '{priya}' },
    scim('the group renamed in JumpCloud', 'PATCH', '/Groups/{eng}', patchOp({ op: 'replace', path: 'displayName', value: 'Platform Engineering' }),
      { status: 200, body: { displayName: 'Platform Engineering' } }),
    scim('Priya leaves the group', 'PATCH', '/Groups/{eng}', patchOp({ op: 'remove', path: 'members[value eq "{priya}"]' }), { status: 200, body: { members: [{ value: '{tom}' }] } }),
    { kind: 'admin', does: 'the admin API sees Tom only', path: '/groups/{eng}', expect: { status: 200, body: { displayName: 'Platform Engineering', members: ['{tom}'] } } },
    { kind: 'signIn', does: 'out of the assigned group, Priya is no longer let in', email: 'priya.nair@jumpcloud-customer.test', password: PASSWORD, outcome: 'not-assigned' },
    scim('she joins again', 'PATCH', '/Groups/{eng}', patchOp({ op: 'add', path: 'members', value: [{ value: '{priya}' }] }), { status: 200 }),
    { kind: 'signIn', does: 'and is let in', email: 'priya.nair@jumpcloud-customer.test', password: PASSWORD, outcome: 'signed-in', sub: '{priya}' },
    scim('the group disassociated from the app: its members deactivated', 'PATCH', '/Users/{priya}', patchOp({ op: 'replace', path: 'active', value: false }),
      { status: 200, body: { active: false } }),
    scim('(Tom too)', 'PATCH', '/Users/{tom}', patchOp({ op: 'replace', path: 'active', value: false }), { status: 200, body: { active: false } }),
    { kind: 'admin', does: 'the admin API sees Priya disabled', path: '/users/{priya}', expect: { status: 200, body: { disabled: true, managedBy: 'scim' } } },
    { kind: 'signIn', does: 'a deactivated user cannot sign in', email: 'priya.nair@jumpcloud-customer.test', password: PASSWORD, outcome: 'refused' },
    scim('the group deleted in JumpCloud', 'DELETE', '/Groups/{eng}', undefined, { status: 204 }),
    scim('gone', 'GET', '/Groups?filter=displayName eq "Platform Engineering"', undefined, { status: 200, body: { totalResults: 0 } }),
  ],
};
