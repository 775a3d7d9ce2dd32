/**
 * Google Workspace, automated user provisioning of a custom SAML app:
 * https://support.google.com/a/answer/7365072 (About automated user provisioning),
 * https://support.google.com/a/topic/6400789 (automated user provisioning for SAML apps).
 *
 * Google documents what it synchronises and when, not its requests: users only (no groups for
 * custom apps), created when they come into the app's scope, their attributes updated when they
 * change in the directory (the primary email, the userName mapped to it, names), suspended users
 * deactivated, and a user who leaves the scope suspended or deleted as the admin chose. The
 * requests here are the RFC 7644 forms of those behaviours (§3.3 create, §3.4.2 list and filter,
 * §3.5.2 PATCH, §3.6 delete), with nothing vendor-specific: an identity provider that reads the
 * RFC plainly. Including `emails[primary eq true].value` as the path of an address change.
 * Cross-checked: the address change moves the sign-in address; suspension stops sign-in and
 * reinstatement restores it; deletion ends the account.
 */
import { LIST, USER, patchOp, scim, type VendorSequence } from './_steps.ts';

const lena = 'lena.fischer@workspace-customer.test';
const PASSWORD = 'set by the test for Lena 1';

export const google: VendorSequence = {
  vendor: 'Google Workspace',
  tenant: 'google',
  references: ['https://support.google.com/a/answer/7365072', 'https://support.google.com/a/topic/6400789', 'https://www.rfc-editor.org/rfc/rfc7644'],
  steps: [
    scim('the admin saves the endpoint and token: a first page of users', 'GET', '/Users?startIndex=1&count=1', undefined,
      { status: 200, body: { schemas: [LIST], totalResults: 0, Resources: [] } }),
    scim('in scope: is she there?', 'GET', `/Users?filter=userName eq "${lena}"`, undefined, { status: 200, body: { totalResults: 0 } }),
    scim('create her', 'POST', '/Users', {
      schemas: [USER], userName: lena, externalId: '108374620193847561234', active: true,
      name: { givenName: 'Lena', familyName: 'Fischer' }, displayName: 'Lena Fischer',
      emails: [{ value: lena, type: 'work', primary: true }],
    }, { status: 201, body: { userName: lena, externalId: '108374620193847561234', active: true } }, { lena: 'id' }),
    { kind: 'setPassword', does: 'the test gives Lena a password (Google sends none: she would sign in with SAML)', user: '{lena}', password: PASSWORD },
    { kind: 'assign', does: 'the operator assigns Lena to the portal', user: '{lena}' },
    { kind: 'signIn', does: 'Lena signs in', email: lena, password: PASSWORD, outcome: 'signed-in', sub: '{lena}' },

    scim('her name changes in the directory', 'PATCH', '/Users/{lena}', patchOp(
      { op: 'replace', path: 'name.familyName', value: 'Fischer-Wolf' },
      { op: 'replace', path: 'displayName', value: 'Lena Fischer-Wolf' },
    ), { status: 200, body: { name: { givenName: 'Lena', familyName: 'Fischer-Wolf' }, displayName: 'Lena Fischer-Wolf' } }),
    scim('and so does her primary address, and the userName mapped to it', 'PATCH', '/Users/{lena}', patchOp(
      { op: 'replace', path: 'emails[primary eq true].value', value: 'lena.fischer-wolf@workspace-customer.test' },
      { op: 'replace', path: 'userName', value: 'lena.fischer-wolf@workspace-customer.test' },
    ), { status: 200, body: { userName: 'lena.fischer-wolf@workspace-customer.test', emails: [{ value: 'lena.fischer-wolf@workspace-customer.test', primary: true, type: 'work' }] } }),
    { kind: 'admin', does: 'the admin API sees the new sign-in address', path: '/users/{lena}', expect: { status: 200, body: { email: 'lena.fischer-wolf@workspace-customer.test', displayName: 'Lena Fischer-Wolf' } } },
    { kind: 'signIn', does: 'the old address no longer signs in', email: lena, password: PASSWORD, outcome: 'refused' },
    { kind: 'signIn', does: 'the new one does', email: 'lena.fischer-wolf@workspace-customer.test', password: PASSWORD, outcome: 'signed-in', sub: '{lena}' },

    scim('suspended in Workspace: deactivated', 'PATCH', '/Users/{lena}', patchOp({ op: 'replace', path: 'active', value: false }), { status: 200, body: { active: false } }),
    { kind: 'signIn', does: 'a suspended user cannot sign in', email: 'lena.fischer-wolf@workspace-customer.test', password: PASSWORD, outcome: 'refused' },
    scim('reinstated', 'PATCH', '/Users/{lena}', patchOp({ op: 'replace', path: 'active', value: true }), { status: 200, body: { active: true } }),
    { kind: 'signIn', does: 'and back in', email: 'lena.fischer-wolf@workspace-customer.test', password: PASSWORD, outcome: 'signed-in', sub: '{lena}' },
    scim('she leaves the scope, and the admin chose deletion', 'DELETE', '/Users/{lena}', undefined, { status: 204 }),
    scim('gone', 'GET', `/Users?filter=userName eq "lena.fischer-wolf@workspace-customer.test"`, undefined, { status: 200, body: { totalResults: 0 } }),
    { kind: 'admin', does: 'gone from the admin API too', path: '/users/{lena}', expect: { status: 404 } },
    { kind: 'signIn', does: 'a deleted user cannot sign in', email: 'lena.fischer-wolf@workspace-customer.test', password: PASSWORD, outcome: 'refused' },
  ],
};
