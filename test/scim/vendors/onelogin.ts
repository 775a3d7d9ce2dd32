/**
 * OneLogin, its SCIM provisioner as OneLogin's developer guide describes it:
 * https://developers.onelogin.com/scim/implement-scim-api (the calls and their order: the initial
 * connection, Get User by userName, Create User, Get User by ID, Update User, Get Groups, Create
 * Group, Patch Group, Delete User) and https://developers.onelogin.com/scim/define-user-schema (the
 * SCIM JSON template a OneLogin admin edits: what the user's body holds).
 *
 * What it exercises: the initial connection's query for a userName known not to exist; a user
 * created from an enterprise template (the extension listed in `schemas`, department and manager
 * under its URN); updates as whole-resource PUTs; groups listed, created, and their membership
 * changed by PATCH (add with `display`, remove by a value list); users deleted. Two refusals, both
 * loud: OneLogin's SCIM 1.1 templates (`urn:scim:schemas:core:1.0`) are not SCIM 2.0, and the 1.1
 * enterprise `manager.managerId`, if kept in a 2.0 template, names no sub-attribute of the 2.0
 * manager (value, $ref, displayName): the admin maps it to `value` instead.
 * Cross-checked: the group assigned to the application lets its member in; removal ends it; a
 * deleted user cannot sign in.
 */
import { ENTERPRISE, ERROR, GROUP, LIST, USER, patchOp, scim, type VendorSequence } from './_steps.ts';

const omar = 'omar.haddad@onelogin-customer.test';
const PASSWORD = 'set by the test for Omar 1';

/** The body OneLogin's enterprise template renders for Omar. */
const omarBody = (title: string, department: string, manager: Record<string, unknown> = { value: 'ext-mgr-2291' }) => ({
  schemas: [USER, ENTERPRISE],
  userName: omar,
  name: { familyName: 'Haddad', givenName: 'Omar', formatted: 'Omar Haddad' },
  emails: [{ value: omar, type: 'work', primary: true }],
  title,
  [ENTERPRISE]: { department, manager },
});

export const onelogin: VendorSequence = {
  vendor: 'OneLogin',
  tenant: 'onelogin',
  references: ['https://developers.onelogin.com/scim/implement-scim-api', 'https://developers.onelogin.com/scim/define-user-schema'],
  steps: [
    scim('initial connection: a userName that does not exist', 'GET', '/Users?filter=userName eq "onelogin-connection-check@invalid.test"', undefined,
      { status: 200, body: { schemas: [LIST], totalResults: 0, Resources: [] } }),
    scim('provisioning: Get User by userName', 'GET', `/Users?filter=userName eq "${omar}"`, undefined, { status: 200, body: { totalResults: 0 } }),
    scim('a SCIM 1.1 template is not SCIM 2.0: refused, with a reason', 'POST', '/Users', {
      schemas: ['urn:scim:schemas:core:1.0'], userName: omar, name: { givenName: 'Omar', familyName: 'Haddad', formatted: 'Omar Haddad' },
    }, { status: 400, body: { schemas: [ERROR], scimType: 'invalidSyntax' } }),
    scim('Create User from the enterprise template', 'POST', '/Users', omarBody('Account Executive', 'Sales'),
      { status: 201, body: { schemas: [USER, ENTERPRISE], userName: omar, title: 'Account Executive', [ENTERPRISE]: { department: 'Sales', manager: { value: 'ext-mgr-2291' } } } },
      { omar: 'id' }),
    scim('Get User by ID', 'GET', '/Users/{omar}', undefined, { status: 200, body: { id: '{omar}', [ENTERPRISE]: { department: 'Sales' } } }),
    scim('Update User: the whole template again, new title and department', 'PUT', '/Users/{omar}', omarBody('Senior Account Executive', 'Enterprise Sales'),
      { status: 200, body: { title: 'Senior Account Executive', [ENTERPRISE]: { department: 'Enterprise Sales', manager: { value: 'ext-mgr-2291' } } } }),
    scim('a template that kept SCIM 1.1\'s manager.managerId: refused, naming the sub-attributes there are', 'PUT', '/Users/{omar}',
      omarBody('Senior Account Executive', 'Enterprise Sales', { managerId: 'ext-mgr-2291', displayName: 'Dana Chief' }),
      { status: 400, body: { schemas: [ERROR], scimType: 'invalidSyntax', detail: `'${ENTERPRISE}:manager' has no sub-attribute "managerId"; it has value, $ref, displayName` } }),
    scim('unchanged by the refusal', 'GET', '/Users/{omar}', undefined, { status: 200, body: { [ENTERPRISE]: { manager: { value: 'ext-mgr-2291' } } } }),
    { kind: 'setPassword', does: 'the test gives Omar a password (the template sends none)', user: '{omar}', password: PASSWORD },

    scim('Get Groups', 'GET', '/Groups', undefined, { status: 200, body: { totalResults: 0 } }),
    scim('Create Group', 'POST', '/Groups', { schemas: [GROUP], displayName: 'Field Sales' }, { status: 201, body: { displayName: 'Field Sales' } }, { sales: 'id' }),
    scim('Patch Group: add Omar', 'PATCH', '/Groups/{sales}', patchOp({ op: 'add', path: 'members', value: [{ value: '{omar}', display: omar }] }),
      { status: 200, body: { members: [{ value: '{omar}' }] } }),
    { kind: 'assign', does: 'the operator assigns the group to the portal', group: '{sales}' },
    { kind: 'signIn', does: 'Omar signs in', email: omar, password: PASSWORD, outcome: 'signed-in', sub: '{omar}' },
    scim('Patch Group: remove Omar', 'PATCH', '/Groups/{sales}', patchOp({ op: 'remove', path: 'members', value: [{ value: '{omar}' }] }), { status: 200 }),
    { kind: 'signIn', does: 'removed from the assigned group, Omar is no longer let in', email: omar, password: PASSWORD, outcome: 'not-assigned' },
    scim('Patch Group: add him back', 'PATCH', '/Groups/{sales}', patchOp({ op: 'add', path: 'members', value: [{ value: '{omar}', display: omar }] }), { status: 200 }),
    scim('Delete User', 'DELETE', '/Users/{omar}', undefined, { status: 204 }),
    scim('the group no longer lists him', 'GET', '/Groups/{sales}', undefined, { status: 200, body: { id: '{sales}' }, absent: ['members'] }),
    { kind: 'signIn', does: 'a deleted user cannot sign in', email: omar, password: PASSWORD, outcome: 'refused' },
  ],
};
