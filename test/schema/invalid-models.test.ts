/**
 * Each invalid model must produce the exact message a person reads, located to line:col.
 * The snapshots are the product's wording: review a changed one as you would a UI text.
 */
import { describe, expect, it } from 'vitest';
import { formatProblems, validateSources } from '../../src/schema/index.ts';

function check(text: string | Uint8Array, file = 'model.yaml'): string {
  const result = validateSources([{ file, content: text }]);
  if (result.ok) throw new Error('expected the model to be invalid');
  return formatProblems(result.problems);
}

/** A valid tenant to break one thing at a time; `extra` is spliced into the tenant's mapping. */
function tenant(extra: string, apps = '', users = USERS): string {
  return `tenants:
  - name: acme
    displayName: Acme
    scopes:
      - name: admin
${users}    applications:
      - name: orders-api
        kind: api
        audience: https://orders.acme.example
        routes:
          - path: /admin
            scopes: [admin]
${apps}${extra}`;
}
const USERS = `    users:
      - id: u-alice
        email: alice@acme.example
        scopes: [admin]
`;

describe('YAML and file-level problems', () => {
  it('reports a syntax error at its line', () => {
    expect(check('tenants:\n  - name: acme\n   displayName: Acme\n')).toMatchInlineSnapshot(`"model.yaml:3:1  Sequence item without - indicator"`);
  });
  it('reports a duplicate key', () => {
    expect(check('tenants: []\nserver: {}\ntenants: []\n')).toMatchInlineSnapshot(`"model.yaml:3:1  duplicate key: each key may appear once in a mapping"`);
  });
  it('refuses an alias bomb without expanding it', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) levels.push(`l${i}: &l${i} [${Array(10).fill(i === 1 ? '*a' : `*l${i - 1}`).join(', ')}]`);
    expect(check(`${levels.join('\n')}\n`)).toMatchInlineSnapshot(`"model.yaml  too many alias expansions (more than 100): refusing a document that may be an alias bomb"`);
  });
  it('refuses deeply nested flow collections', () => {
    expect(check(`tenants: ${'['.repeat(10_000)}`)).toMatchInlineSnapshot(`"model.yaml:1:74  nesting deeper than 64 levels"`);
  });
  it('refuses deeply nested block mappings', () => {
    expect(check(Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i)}k:`).join('\n'))).toMatchInlineSnapshot(`"model.yaml:65:65  nesting deeper than 64 levels"`);
  });
  it('refuses binary data', () => {
    expect(check(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]), 'logo.yaml')).toMatchInlineSnapshot(`"logo.yaml  file holds binary data (a NUL byte), not YAML or JSON text"`);
  });
  it('refuses text that is not UTF-8', () => {
    expect(check(new Uint8Array([0x74, 0x65, 0x6e, 0xe9, 0x0a]))).toMatchInlineSnapshot(`"model.yaml  file is not valid UTF-8 text"`);
  });
  it('refuses a file over the size limit without parsing it', () => {
    expect(check(new Uint8Array(16 * 1024 * 1024 + 1).fill(0x20))).toMatchInlineSnapshot(`"model.yaml  file is 16.0 MiB; a model file may hold at most 16 MiB (split the model into a directory of files)"`);
  });
  it('refuses tabs as indentation', () => {
    expect(check('tenants:\n\t- name: acme\n')).toMatchInlineSnapshot(`"model.yaml:2:1  Tabs are not allowed as indentation"`);
  });
  it('refuses unknown tags instead of turning them into strings', () => {
    expect(check('tenants: !!js/function "function () {}"\n')).toMatchInlineSnapshot(`"model.yaml:1:10  unsupported tag: Unresolved tag: tag:yaml.org,2002:js/function"`);
  });
  it('refuses an empty file', () => {
    expect(check('# only a comment\n')).toMatchInlineSnapshot(`"model.yaml  file is empty: expected a mapping with 'tenants' (and optionally 'server')"`);
  });
  it('refuses a top level that is not a mapping', () => {
    expect(check('- tenants\n')).toMatchInlineSnapshot(`"model.yaml:1:1  the top level must be a mapping with 'tenants' (and optionally 'server')"`);
  });
  it('locates problems in JSON files too', () => {
    expect(check('{\n  "tenants": [\n    {"name": "acme", "displayName": 7}\n  ]\n}\n', 'model.json')).toMatchInlineSnapshot(`"model.json:3:37  'displayName' must be a string, not an integer  (at tenants[0].displayName)"`);
  });
});

describe('shape problems', () => {
  it('names an unknown top-level field and suggests the right one', () => {
    expect(check('tenant:\n  - name: acme\n')).toMatchInlineSnapshot(`"model.yaml:1:1  unknown field 'tenant' (did you mean 'tenants'?)  (at tenant)"`);
  });
  it('names a misspelt field inside a tenant', () => {
    expect(check(tenant('    aplications: []\n'))).toMatchInlineSnapshot(`"model.yaml:17:5  unknown field 'aplications' (did you mean 'applications'?)  (at tenants[0].aplications)"`);
  });
  it('names a missing required field', () => {
    expect(check('tenants:\n  - name: acme\n')).toMatchInlineSnapshot(`"model.yaml:2:5  missing required field 'displayName'  (at tenants[0].displayName)"`);
  });
  it('rejects an uppercase tenant name', () => {
    expect(check('tenants:\n  - name: Acme\n    displayName: Acme\n')).toMatchInlineSnapshot(`"model.yaml:2:11  'name' must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters  (at tenants[0].name)"`);
  });
  it('rejects a tenant name longer than a DNS label', () => {
    expect(check(`tenants:\n  - name: ${'a'.repeat(64)}\n    displayName: Acme\n`)).toMatchInlineSnapshot(`"model.yaml:2:11  'name' must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters  (at tenants[0].name)"`);
  });
  it('rejects a non-ASCII tenant name', () => {
    expect(check('tenants:\n  - name: zürich\n    displayName: Zürich\n')).toMatchInlineSnapshot(`"model.yaml:2:11  'name' must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters  (at tenants[0].name)"`);
  });
  it('rejects a tenant name with a dot', () => {
    expect(check('tenants:\n  - name: acme.eu\n    displayName: Acme\n')).toMatchInlineSnapshot(`"model.yaml:2:11  'name' must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1 to 63 characters  (at tenants[0].name)"`);
  });
  it('rejects the wrong type for a list', () => {
    expect(check('tenants:\n  name: acme\n')).toMatchInlineSnapshot(`"model.yaml:2:3  'tenants' must be a list, not a mapping  (at tenants)"`);
  });
  it('rejects an unknown application kind and suggests none when nothing is close', () => {
    expect(check(tenant('', '      - name: shop\n        kind: mainframe\n        origin: https://shop.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:18:15  unknown kind "mainframe": expected one of web, proxy, spa, api  (at tenants[0].applications[1].kind)"`);
  });
  it('rejects an application without a kind', () => {
    expect(check(tenant('', '      - name: shop\n        origin: https://shop.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:17:9  missing 'kind': one of web, proxy, spa, api  (at tenants[0].applications[1].kind)"`);
  });
  it('rejects a field that belongs to another kind', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        upstream: http://127.0.0.1:8080\n'))).toMatchInlineSnapshot(`"model.yaml:20:9  unknown field 'upstream'  (at tenants[0].applications[1].upstream)"`);
  });
  it('rejects an unknown response value and suggests the right one', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        response: [tokens, profiles]\n'))).toMatchInlineSnapshot(`"model.yaml:20:28  each entry of 'response' must be one of tokens, raw, profile, not "profiles" (did you mean 'profile'?)  (at tenants[0].applications[1].response[1])"`);
  });
  it('rejects an unknown cache type', () => {
    expect(check(tenant('', '      - name: ui\n        kind: spa\n        origin: https://ui.acme.example\n        cacheType: local_storage\n'))).toMatchInlineSnapshot(`"model.yaml:20:20  'cacheType' must be one of in_memory, session_storage, not "local_storage"  (at tenants[0].applications[1].cacheType)"`);
  });
  it('rejects an invalid email', () => {
    expect(check(tenant('', '', '    users:\n      - id: u-alice\n        email: alice-at-acme\n'))).toMatchInlineSnapshot(`"model.yaml:8:16  'email' must be an email address  (at tenants[0].users[0].email)"`);
  });
  it('rejects a plain-text password', () => {
    expect(check(tenant('', '', '    users:\n      - id: u-alice\n        email: alice@acme.example\n        password: hunter2hunter2\n'))).toMatchInlineSnapshot(`"model.yaml:9:19  'password' must be a reference such as {env: VAR_NAME} or {config: key}, never the secret itself  (at tenants[0].users[0].password)"`);
  });
  it('rejects a user id with a slash', () => {
    expect(check(tenant('', '', '    users:\n      - id: acme/alice\n        email: alice@acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:7:13  'id' must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", "@", "+", "~" or "-"  (at tenants[0].users[0].id)"`);
  });
  it('rejects a callback that is not a path', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        callback: hello\n'))).toMatchInlineSnapshot(`"model.yaml:20:19  'callback' must be a path starting with '/', without query or fragment  (at tenants[0].applications[1].callback)"`);
  });
  it('rejects a port out of range', () => {
    expect(check('server:\n  port: 70000\ntenants: []\n')).toMatchInlineSnapshot(`"model.yaml:2:9  'port' must be at most 65535  (at server.port)"`);
  });
  it('rejects an unknown scheme', () => {
    expect(check('server:\n  scheme: ftp\ntenants: []\n')).toMatchInlineSnapshot(`"model.yaml:2:11  'scheme' must be one of http, https, not "ftp"  (at server.scheme)"`);
  });
  it('rejects an empty response list', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        response: []\n'))).toMatchInlineSnapshot(`"model.yaml:20:19  'response' must have at least 1 entry  (at tenants[0].applications[1].response)"`);
  });
});

describe('semantic problems', () => {
  it('rejects a duplicate tenant', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: A\n  - name: acme\n    displayName: B\n')).toMatchInlineSnapshot(`"model.yaml:4:11  tenant "acme" is already defined at model.yaml:2:11  (at tenants[1].name)"`);
  });
  it('rejects duplicate application names', () => {
    expect(check(tenant('', '      - name: orders-api\n        kind: api\n        audience: https://other.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:17:15  application "orders-api" is already defined at model.yaml:11:15  (at tenants[0].applications[1].name)"`);
  });
  it('rejects duplicate user ids and emails', () => {
    expect(check(tenant('', '', `${USERS}      - id: u-alice\n        email: ALICE@acme.example\n`))).toMatchInlineSnapshot(`
      "model.yaml:10:13  user id "u-alice" is already defined at model.yaml:7:13  (at tenants[0].users[1].id)
      model.yaml:11:16  email "alice@acme.example" is already defined at model.yaml:8:16  (at tenants[0].users[1].email)"
    `);
  });
  it('rejects an assignment to an application that does not exist', () => {
    expect(check(tenant('    assignments:\n      - application: portl\n        users: [u-alice]\n', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:21:22  application "portl" is not defined in tenant 'acme' (did you mean 'portal'?)  (at tenants[0].assignments[0].application)"`);
  });
  it('rejects an assignment of a user that does not exist', () => {
    expect(check(tenant('    assignments:\n      - application: portal\n        users: [u-alise]\n', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:22:17  user "u-alise" is not defined in tenant 'acme' (did you mean 'u-alice'?)  (at tenants[0].assignments[0].users[0])"`);
  });
  it('rejects an assignment of a group that does not exist', () => {
    expect(check(tenant('    assignments:\n      - application: portal\n        groups: [staff]\n', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:22:18  group "staff" is not defined in tenant 'acme'  (at tenants[0].assignments[0].groups[0])"`);
  });
  it('rejects assigning users to an api', () => {
    expect(check(tenant('    assignments:\n      - application: orders-api\n        users: [u-alice]\n'))).toMatchInlineSnapshot(`"model.yaml:18:22  'orders-api' is an api: users are assigned to the applications they sign in to (web, proxy, spa), not to APIs  (at tenants[0].assignments[0].application)"`);
  });
  it('rejects an assignment that names nobody', () => {
    expect(check(tenant('    assignments:\n      - application: portal\n', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:21:9  assignment of 'portal' names no users and no groups  (at tenants[0].assignments[0])"`);
  });
  it('rejects a user listed twice in one assignment', () => {
    expect(check(tenant('    assignments:\n      - application: portal\n        users: [u-alice, u-alice]\n', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:22:26  user "u-alice" is listed twice  (at tenants[0].assignments[0].users[1])"`);
  });
  it('rejects a group member that does not exist', () => {
    expect(check(tenant('    groups:\n      - name: staff\n        members: [u-bob]\n'))).toMatchInlineSnapshot(`"model.yaml:19:19  user "u-bob" is not defined in tenant 'acme'  (at tenants[0].groups[0].members[0])"`);
  });
  it('rejects a scope that the tenant does not define', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        scopes: [openid, billing]\n'))).toMatchInlineSnapshot(`"model.yaml:20:26  scope "billing" is not defined in tenant 'acme'  (at tenants[0].applications[1].scopes[1])"`);
  });
  it('rejects a user scope that the tenant does not define', () => {
    expect(check(tenant('', '', '    users:\n      - id: u-alice\n        email: alice@acme.example\n        scopes: [admn]\n'))).toMatchInlineSnapshot(`"model.yaml:9:18  scope "admn" is not defined in tenant 'acme' (did you mean 'admin'?)  (at tenants[0].users[0].scopes[0])"`);
  });
  it('rejects redefining a built-in scope', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: Acme\n    scopes:\n      - name: openid\n')).toMatchInlineSnapshot(`"model.yaml:5:15  scope 'openid' is built in and must not be redefined  (at tenants[0].scopes[0].name)"`);
  });
  it('rejects a client without openid', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        scopes: [profile]\n'))).toMatchInlineSnapshot(`"model.yaml:20:17  scopes must include 'openid': sign-in is OpenID Connect  (at tenants[0].applications[1].scopes)"`);
  });
  it('rejects a secret in an spa', () => {
    expect(check(tenant('', '      - name: ui\n        kind: spa\n        origin: https://ui.acme.example\n        clientSecret: s3cr3t\n'))).toMatchInlineSnapshot(`"model.yaml:20:23  a single-page app is a public client and never has a client secret  (at tenants[0].applications[1].clientSecret)"`);
  });
  it('rejects a secret in a web app', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        clientSecret: s3cr3t\n'))).toMatchInlineSnapshot(`"model.yaml:20:23  client secrets never belong in the model (it lives in Git): idforge generates them and keeps them out of Git  (at tenants[0].applications[1].clientSecret)"`);
  });
  it('rejects an spa audience that is not an application', () => {
    expect(check(tenant('', '      - name: ui\n        kind: spa\n        origin: https://ui.acme.example\n        audience: [order-api]\n'))).toMatchInlineSnapshot(`"model.yaml:20:20  audience "order-api" is not an application of tenant 'acme' (did you mean 'orders-api'?)  (at tenants[0].applications[1].audience[0])"`);
  });
  it('rejects an spa audience that is not an api', () => {
    expect(check(tenant('', '      - name: ui\n        kind: spa\n        origin: https://ui.acme.example\n        audience: [ui]\n'))).toMatchInlineSnapshot(`"model.yaml:20:20  audience "ui" is a spa application; an audience must name an api application  (at tenants[0].applications[1].audience[0])"`);
  });
  it('rejects offline listed as a scope instead of the flag', () => {
    expect(check(tenant('', '      - name: ui\n        kind: spa\n        origin: https://ui.acme.example\n        scopes: [openid, offline]\n'))).toMatchInlineSnapshot(`"model.yaml:20:17  scope 'offline' asks for refresh tokens: set 'offline: true' instead of listing it  (at tenants[0].applications[1].scopes)"`);
  });
  it('rejects plain http outside localhost', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: http://shop.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:19:17  "http://shop.acme.example" must use https: plain http is allowed only for localhost, *.localhost and loopback addresses  (at tenants[0].applications[1].origin)"`);
  });
  it('rejects a wildcard redirect URI', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["https://*.acme.example/cb"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  redirect URIs are matched exactly: wildcards are not allowed in "https://*.acme.example/cb"  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('rejects a redirect URI with a fragment', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["https://shop.acme.example/cb#top"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  "https://shop.acme.example/cb#top" must not contain a fragment (#...)  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('rejects a relative redirect URI', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["/connect/acme/callback"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  "/connect/acme/callback" is not an absolute URL  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('rejects a custom-scheme redirect URI', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["javascript:alert(1)"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  "javascript:alert(1)" must use https (or http on localhost), not javascript  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('rejects an origin with a path', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example/app\n'))).toMatchInlineSnapshot(`"model.yaml:19:17  "https://shop.acme.example/app" must be an origin (scheme, host and port) without a path or query  (at tenants[0].applications[1].origin)"`);
  });
  it('rejects credentials in a redirect URI', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["https://user:pw@shop.acme.example/cb"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  "https://user:pw@shop.acme.example/cb" must not contain credentials  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('says that the scheme is missing from an origin written without one', () => {
    expect(check(tenant('', '      - name: portal\n        kind: web\n        origin: portal.localhost:3000\n'))).toMatchInlineSnapshot(`"model.yaml:19:17  "portal.localhost:3000" has no scheme: write http://portal.localhost:3000  (at tenants[0].applications[1].origin)"`);
  });
  it('rejects a redirect URI with dot segments, which browsers would resolve elsewhere', () => {
    expect(check(tenant('', '      - name: shop\n        kind: web\n        origin: https://shop.acme.example\n        redirectUris: ["https://shop.acme.example/../cb"]\n'))).toMatchInlineSnapshot(`"model.yaml:20:24  "https://shop.acme.example/../cb" must not contain "." or ".." path segments: redirect URIs are compared as written  (at tenants[0].applications[1].redirectUris[0])"`);
  });
  it('refuses a previousName that is still in the model', () => {
    expect(check(tenant('', '      - name: shop\n        kind: api\n        audience: https://shop.acme.example\n        previousName: orders-api\n'))).toMatchInlineSnapshot(`"model.yaml:20:23  application 'orders-api' is still in the model: a rename leaves its old name behind  (at tenants[0].applications[1].previousName)"`);
  });
  it('refuses a tenant previousName that is another tenant of the model, or given twice', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: Acme\n  - name: globex\n    displayName: Globex\n    previousName: acme\n  - name: initech\n    displayName: Initech\n    previousName: old\n  - name: umbrella\n    displayName: Umbrella\n    previousName: old\n')).toMatchInlineSnapshot(`
      "model.yaml:6:19  tenant 'acme' is still in the model: a rename leaves its old name behind  (at tenants[1].previousName)
      model.yaml:12:19  'old' is already the previous name of another tenant at model.yaml:9:19  (at tenants[3].previousName)"
    `);
  });
  it('refuses the reserved tenant name of the server itself', () => {
    expect(check('tenants:\n  - name: system\n    displayName: Mine now\n')).toMatchInlineSnapshot(`"model.yaml:2:11  tenant name 'system' is reserved for the server's own tenant, which issues admin tokens: choose another name  (at tenants[0].name)"`);
  });
  it('rejects a web app audience that is not an api, as for an spa', () => {
    expect(check(tenant('', '      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n        audience: [portal]\n'))).toMatchInlineSnapshot(`"model.yaml:20:20  audience "portal" is a web application; an audience must name an api application  (at tenants[0].applications[1].audience[0])"`);
  });
  it('rejects a proxy audience that is not an application', () => {
    expect(check(tenant('', '      - name: wiki\n        kind: proxy\n        origin: https://wiki.acme.example\n        upstream: http://127.0.0.1:4181\n        audience: [order-api]\n'))).toMatchInlineSnapshot(`"model.yaml:21:20  audience "order-api" is not an application of tenant 'acme' (did you mean 'orders-api'?)  (at tenants[0].applications[1].audience[0])"`);
  });
  it('lets a web app or a proxy name one api only: it holds one access token per session', () => {
    expect(check(tenant('', '      - name: reports-api\n        kind: api\n        audience: https://reports.acme.example\n      - name: portal\n        kind: web\n        origin: https://portal.acme.example\n        audience: [orders-api, reports-api]\n'))).toMatchInlineSnapshot(`"model.yaml:23:19  'audience' must have at most 1 entry  (at tenants[0].applications[2].audience)"`);
  });
  it('refuses two apis with one audience in a tenant', () => {
    expect(check(tenant('', '      - name: orders-v2\n        kind: api\n        audience: https://orders.acme.example\n'))).toMatchInlineSnapshot(`"model.yaml:19:19  audience "https://orders.acme.example" is already the audience of api 'orders-api': each api needs an audience of its own at model.yaml:13:19  (at tenants[0].applications[1].audience)"`);
  });
  it('rejects a proxy upstream that is not a URL', () => {
    expect(check(tenant('', '      - name: wiki\n        kind: proxy\n        origin: https://wiki.acme.example\n        upstream: wiki-backend\n'))).toMatchInlineSnapshot(`"model.yaml:20:19  "wiki-backend" is not an absolute http(s) URL  (at tenants[0].applications[1].upstream)"`);
  });
  it('rejects an api route that is both public and protected', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: Acme\n    applications:\n      - name: api\n        kind: api\n        audience: https://api.acme.example\n        publicRoutes: [/, /whoami]\n        routes:\n          - path: /whoami\n')).toMatchInlineSnapshot(`"model.yaml:10:19  route /whoami is also listed in publicRoutes: a route is either public or protected  (at tenants[0].applications[0].routes[0].path)"`);
  });
  it('rejects an api route scope the tenant does not define', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: Acme\n    applications:\n      - name: api\n        kind: api\n        audience: https://api.acme.example\n        routes:\n          - path: /whoami\n          - path: /admin\n            scopes: [admin]\n')).toMatchInlineSnapshot(`"model.yaml:11:22  scope "admin" is not defined in tenant 'acme'  (at tenants[0].applications[0].routes[1].scopes[0])"`);
  });
  it('rejects http for a server that is not on localhost', () => {
    expect(check('server:\n  baseDomain: id.acme.example\n  scheme: http\ntenants: []\n')).toMatchInlineSnapshot(`"model.yaml:3:11  scheme http is allowed only when baseDomain is localhost; 'id.acme.example' needs https  (at server.scheme)"`);
  });
  it('reports every problem of a model at once, in reading order', () => {
    expect(
      check(
        'tenants:\n  - name: acme\n    displayName: Acme\n    users:\n      - id: u1\n        email: nope\n    applications:\n      - name: ui\n        kind: spa\n        origin: http://ui.example.com\n        audience: [api]\n    assignments:\n      - application: ui\n        users: [u2]\n',
      ),
    ).toMatchInlineSnapshot(`
      "model.yaml:6:16  'email' must be an email address  (at tenants[0].users[0].email)
      model.yaml:10:17  "http://ui.example.com" must use https: plain http is allowed only for localhost, *.localhost and loopback addresses  (at tenants[0].applications[0].origin)
      model.yaml:11:20  audience "api" is not an application of tenant 'acme'  (at tenants[0].applications[0].audience[0])
      model.yaml:14:17  user "u2" is not defined in tenant 'acme'  (at tenants[0].assignments[0].users[0])"
    `);
  });
  it('does not call a broken user undefined where it is referenced', () => {
    expect(check('tenants:\n  - name: acme\n    displayName: Acme\n    users:\n      - id: u1\n        email: nope\n    groups:\n      - name: staff\n        members: [u1]\n')).toMatchInlineSnapshot(`"model.yaml:6:16  'email' must be an email address  (at tenants[0].users[0].email)"`);
  });
  it('locates semantic problems that follow a broken entry of the same list', () => {
    expect(
      check('tenants:\n  - name: acme\n    displayName: Acme\n    applications:\n      - name: bad\n        kind: nope\n      - name: ui\n        kind: spa\n        origin: http://ui.example.com\n'),
    ).toMatchInlineSnapshot(`
      "model.yaml:6:15  unknown kind "nope": expected one of web, proxy, spa, api  (at tenants[0].applications[0].kind)
      model.yaml:9:17  "http://ui.example.com" must use https: plain http is allowed only for localhost, *.localhost and loopback addresses  (at tenants[0].applications[1].origin)"
    `);
  });
});

describe('models split across files', () => {
  it('names both files when the server section is defined twice', () => {
    const r = validateSources([
      { file: 'a.yaml', content: 'server:\n  port: 8080\n' },
      { file: 'b.yaml', content: 'tenants: []\nserver:\n  port: 9090\n' },
    ]);
    expect(r.ok ? '' : formatProblems(r.problems)).toMatchInlineSnapshot(`"b.yaml:3:3  the server section is already defined in a.yaml:2:3; define it in one file only  (at server)"`);
  });
  it('names the first file of a tenant defined twice', () => {
    const r = validateSources([
      { file: 'a.yaml', content: 'tenants:\n  - name: acme\n    displayName: A\n' },
      { file: 'b.yaml', content: 'tenants:\n  - name: globex\n    displayName: G\n  - name: acme\n    displayName: B\n' },
    ]);
    expect(r.ok ? '' : formatProblems(r.problems)).toMatchInlineSnapshot(`"b.yaml:4:11  tenant "acme" is already defined at a.yaml:2:11  (at tenants[2].name)"`);
  });
});

describe('login policy', () => {
  const login = (body: string) => `tenants:\n  - name: acme\n    displayName: Acme\n    login:\n${body}`;
  it('refuses a second factor required with none allowed after a password', () => {
    expect(check(login('      methods: [password]\n      requireSecondFactor: true\n'))).toMatchInlineSnapshot(`"model.yaml:6:28  a second factor is required, but nothing can follow a password: allow totp or otp as well (a passkey alone counts as two factors)  (at tenants[0].login.requireSecondFactor)"`);
  });
  it('refuses otp required as a second factor after itself', () => {
    expect(check(login('      methods: [otp]\n      requireSecondFactor: true\n'))).toMatchInlineSnapshot(`"model.yaml:6:28  a second factor is required, but nothing can follow an emailed code (otp): allow totp as well, or password for the code to follow  (at tenants[0].login.requireSecondFactor)"`);
  });
  it('refuses totp alone: it identifies nobody', () => {
    expect(check(login('      methods: [totp]\n      requireSecondFactor: true\n'))).toMatchInlineSnapshot(`"model.yaml:5:16  login methods must include password, otp or passkey: totp only confirms a person another method identified  (at tenants[0].login.methods)"`);
  });
  it('refuses totp that nothing would ever ask for', () => {
    expect(check(login('      methods: [password, totp]\n'))).toMatchInlineSnapshot(`"model.yaml:5:16  totp only confirms a person after another method: set 'requireSecondFactor: true' or remove totp  (at tenants[0].login.methods)"`);
  });
  it('refuses an unknown method', () => {
    expect(check(login('      methods: [password, sms]\n'))).toMatchInlineSnapshot(`"model.yaml:5:27  each entry of 'methods' must be one of password, otp, passkey, totp, not "sms"  (at tenants[0].login.methods[1])"`);
  });
  it('refuses a method listed twice', () => {
    expect(check(login('      methods: [password, password]\n'))).toMatchInlineSnapshot(`"model.yaml:5:27  login method 'password' is listed twice  (at tenants[0].login.methods[1])"`);
  });
  it('refuses an empty method list', () => {
    expect(check(login('      methods: []\n'))).toMatchInlineSnapshot(`"model.yaml:5:16  'methods' must have at least 1 entry  (at tenants[0].login.methods)"`);
  });
});
