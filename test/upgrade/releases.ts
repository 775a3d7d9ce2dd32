/**
 * The earlier releases whose databases the current code must open, one per schema version they
 * left behind (CHANGELOG.md lists what an upgrade from each changes). Their fixtures are made by
 * `node bin/run.js tsx scripts/upgrade-fixtures.ts` from the git history: the release's own code
 * serves the database, applies the model and signs people in.
 */
export interface Release {
  /** Folder below test/upgrade/fixtures/. */
  readonly name: string;
  readonly commit: string;
  readonly date: string;
  /** The schema version its databases carry (both backends). */
  readonly schema: number;
  /** SCIM (tokens, users, groups and group assignments) exists in it. */
  readonly scim: boolean;
  /**
   * What `idforge plan` of the model that made the database prints after the upgrade, past its
   * `Server ...` line: the upgrade's documented changes (CHANGELOG.md).
   */
  readonly plan: string;
}

export const RELEASES: readonly Release[] = [
  {
    name: 'schema-1',
    commit: 'de6b9a2e409bbc4f3b4b733c44af5a0f600a417b',
    date: '2026-11-22',
    schema: 1,
    scim: false,
    // Its objects carry no model entry (last-applied) and no manager yet: unchanged, and apply records
    // them; the web app gains the back-channel logout URI the model now registers by default.
    plan: '  ~ application acme/portal (backchannelLogoutUri, lastApplied)\n'
      + 'Plan: 0 to create, 1 to change, 0 to delete, 17 unchanged.\n'
      + '10 objects unchanged but for the model entry they were applied from, which apply records (kept by the server for idforge export).\n',
  },
  {
    name: 'schema-2',
    commit: '1b0effcbff5bfc89dc891f44073415779821510d',
    date: '2026-11-25',
    schema: 2,
    scim: true,
    // It kept managers and model entries already: nothing to record; the web app gains the
    // back-channel logout URI the model now registers by default.
    plan: '  ~ application acme/portal (backchannelLogoutUri)\n'
      + 'Plan: 0 to create, 1 to change, 0 to delete, 17 unchanged.\n',
  },
];

/** The tenant the fixtures add to examples/acme.yaml: every sign-in method, a second step required. */
export const GLOBEX_YAML = `  - name: globex
    displayName: Globex
    login:
      methods: [password, totp, passkey]
      requireSecondFactor: true
    users:
      - id: u-carol
        email: carol@globex.example
        displayName: Carol
        password: { env: GLOBEX_CAROL_PASSWORD }
      - id: u-dave
        email: dave@globex.example
        displayName: Dave
        password: { env: GLOBEX_DAVE_PASSWORD }
    applications:
      - name: board
        kind: spa
        displayName: Board
        origin: http://board.localhost:5174
        scopes: [openid, profile, email]
        offline: true
    assignments:
      - application: board
        users: [u-carol, u-dave]
`;

export const PASSWORDS = {
  ACME_ALICE_PASSWORD: 'alice-fixture-password',
  ACME_BOB_PASSWORD: 'bob-fixture-password',
  GLOBEX_CAROL_PASSWORD: 'carol-fixture-password',
  GLOBEX_DAVE_PASSWORD: 'dave-fixture-password',
} as const;

/** What the fixture's manifest.json records beside the database. */
export interface Manifest {
  readonly release: string;
  readonly commit: string;
  readonly backend: 'sqlite' | 'postgres';
  /** When it was made (epoch ms): the upgrade test runs its clock from just after it, so tokens made then are still alive. */
  readonly madeAt: number;
  /** The port the model named (the test rewrites it). */
  readonly port: number;
  /** Public clients people signed in to: tenant → application → client id and redirect URI. */
  readonly clients: Readonly<Record<string, { readonly clientId: string; readonly redirectUri: string; readonly scope: string }>>;
  readonly people: {
    readonly alice: { readonly email: string; readonly password: string; readonly refreshToken: string };
    readonly bob: { readonly email: string; readonly password: string };
    readonly carol: { readonly email: string; readonly password: string; readonly totpSecret: string };
    readonly dave: { readonly email: string; readonly password: string; readonly totpSecret: string; readonly passkey: { readonly credentialId: string; readonly privateKey: string; readonly userId: string } };
  };
  /**
   * What the release's own server said when started on its database after the current code had
   * migrated it (it must stop, not serve): the refused downgrade, seen with the real older code.
   */
  readonly refusal: string;
  /** SCIM objects made through /scim/v2 (releases with SCIM). */
  readonly scim?: { readonly userId: string; readonly groupId: string; readonly tokenId: string; readonly token: string };
}
