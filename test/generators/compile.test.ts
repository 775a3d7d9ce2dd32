import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileArtifacts, compileClientArtifacts, compilePlan, compileTenantClientArtifacts, type Artifact } from '../../src/generators/index.ts';
import { ApplicationBody, AssignmentBody, TenantBody, UserBody, WebhookBody, stepName } from '../../src/contract/index.ts';
import type { Model } from '../../src/schema/index.ts';
import { fixedSecrets, loadExample } from '../support/model.ts';

const EXAMPLES = [['acme', ['examples/acme.yaml']], ['multi-tenant', ['examples/multi-tenant']]] as const;

async function ajvWithSchemas() {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats.default(ajv);
  for (const f of await readdir('schema')) ajv.addSchema(JSON.parse(await readFile(join('schema', f), 'utf8')), f);
  return ajv;
}

/** Reverse every list of the model: order in the files must not change the output. */
function reversed(model: Model): Model {
  return {
    server: model.server,
    tenants: [...model.tenants].reverse().map((t) => ({
      ...t,
      users: [...t.users].reverse(),
      applications: [...t.applications].reverse(),
      assignments: [...t.assignments].reverse(),
      groups: [...t.groups].reverse(),
      scopes: [...t.scopes].reverse(),
    })),
  };
}

describe.each(EXAMPLES)('compiling the %s example', (name, paths) => {
  it('matches the reviewed output, file by file', async () => {
    const model = await loadExample(...paths);
    const { artifacts } = compileArtifacts(model, fixedSecrets(model));
    for (const a of artifacts) await expect(a.content).toMatchFileSnapshot(`__snapshots__/${name}/${a.path}`);
  });

  it("is each tenant's client files put together (the Pulumi program compiles them a tenant at a time)", async () => {
    const model = await loadExample(...paths);
    const resolved = fixedSecrets(model);
    const byTenant = model.tenants.flatMap((t) => compileTenantClientArtifacts(model, t, resolved));
    const byPath = (a: Artifact, b: Artifact) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    expect(byTenant.sort(byPath)).toEqual(compileClientArtifacts(model, resolved));
    // Each tenant's needs only its own secrets: the others' left out, the same files.
    for (const t of model.tenants) {
      const own = { secrets: Object.fromEntries(Object.entries(resolved.secrets).filter(([k]) => k.startsWith(`${t.name}/`))) };
      expect(compileTenantClientArtifacts(model, t, own)).toEqual(compileTenantClientArtifacts(model, t, resolved));
    }
  });

  it('is byte-identical across runs; a reordered model differs only in the declared order it records', async () => {
    const model = await loadExample(...paths);
    const resolved = fixedSecrets(model);
    const first = compileArtifacts(model, resolved).artifacts;
    expect(compileArtifacts(model, resolved).artifacts).toEqual(first);
    // Steps, client configs and every served field are the same; only lastApplied (the entries as
    // declared, in the declared order, which export gives back) follows the new order.
    const withoutOrder = (artifacts: readonly Artifact[]) => artifacts.map((a) => {
      if (a.path !== 'plan.json') return a;
      const plan = JSON.parse(a.content) as { steps: { body?: { lastApplied?: unknown } }[] };
      for (const st of plan.steps) delete st.body?.lastApplied;
      return { ...a, content: JSON.stringify(plan) };
    });
    expect(withoutOrder(compileArtifacts(reversed(model), resolved).artifacts)).toEqual(withoutOrder(first));
  });

  it('writes JSON that validates against the published schemas', async () => {
    const model = await loadExample(...paths);
    const ajv = await ajvWithSchemas();
    const schemaFor = (a: Artifact) =>
      a.path === 'plan.json' ? 'plan.schema.json' : a.path.endsWith('/spa-config.json') ? 'spa-config.schema.json' : a.path.endsWith('/api-config.json') ? 'api-config.schema.json' : a.path.endsWith('/grant.json') ? 'grant-config.schema.json' : a.path.endsWith('/backchannel-logout.json') ? 'backchannel-logout.schema.json' : undefined;
    const json = compileArtifacts(model, fixedSecrets(model)).artifacts.filter((a) => a.path.endsWith('.json'));
    expect(json.length).toBeGreaterThan(2);
    for (const a of json) {
      const schema = schemaFor(a);
      expect(schema, a.path).toBeDefined();
      const validate = ajv.getSchema(schema!)!;
      expect(validate(JSON.parse(a.content)), `${a.path}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });

  it('plans bodies that the admin API accepts', async () => {
    const model = await loadExample(...paths);
    const bodies = { tenant: TenantBody, application: ApplicationBody, user: UserBody, assignment: AssignmentBody, webhook: WebhookBody };
    for (const step of compilePlan(model, fixedSecrets(model)).steps) {
      if (step.op !== 'put') continue;
      const r = bodies[step.kind].safeParse(step.body);
      expect(r.success, `${stepName(step)}: ${r.error?.message}`).toBe(true);
    }
  });
});

describe('the acme example', () => {
  it('validates against the model JSON Schema that editors use', async () => {
    const ajv = await ajvWithSchemas();
    const validate = ajv.getSchema('idforge-model.schema.json')!;
    for (const f of ['examples/acme.yaml', 'examples/multi-tenant/globex.yaml', 'examples/multi-tenant/server.yaml', 'examples/multi-tenant/initech.json']) {
      const text = await readFile(f, 'utf8');
      expect(text.startsWith(f.endsWith('.json') ? '{\n  "$schema"' : '# yaml-language-server: $schema=')).toBe(true);
      expect(validate(parse(text)), `${f}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });

  it('gives the SPA exactly the contract parameters', async () => {
    const model = await loadExample('examples/acme.yaml');
    const spa = compileArtifacts(model, fixedSecrets(model)).artifacts.find((a) => a.path === 'acme/dashboard/spa-config.json')!;
    const config = JSON.parse(spa.content) as Record<string, unknown>;
    expect(Object.keys(config).sort()).toEqual(['audience', 'cache_type', 'client_id', 'redirect_uri', 'scope', 'wellknown_endpoint']);
    expect(config).toMatchObject({
      wellknown_endpoint: 'http://acme.localhost:9080/oauth2/.well-known/openid-configuration',
      redirect_uri: 'http://dashboard.localhost:5173',
      audience: ['http://orders-api.localhost:4000'],
      cache_type: 'session_storage',
    });
    expect(String(config.scope).split(' ')).toContain('offline');
    expect(spa.secret).toBe(false);
  });

  it('registers the contract redirect URI shape for each client kind', async () => {
    const model = await loadExample('examples/acme.yaml');
    const apps = Object.fromEntries(
      compilePlan(model, fixedSecrets(model))
        .steps.filter((s) => s.op === 'put' && s.kind === 'application')
        .map((s) => [(s as { application: string }).application, (s as { body: ApplicationBody }).body]),
    );
    expect(apps.portal).toMatchObject({ kind: 'web', redirectUris: ['http://portal.localhost:3000/connect/acme/callback'] });
    expect(apps.wiki).toMatchObject({ kind: 'proxy', redirectUris: ['http://wiki.localhost:4180/oauth2/callback'] });
    expect(apps.dashboard).toMatchObject({ kind: 'spa', redirectUris: ['http://dashboard.localhost:5173', 'http://dashboard.localhost:5173/'], offline: true });
    expect(apps.dashboard).not.toHaveProperty('clientSecret');
    expect(apps['orders-api']).toEqual({
      kind: 'api', displayName: 'Orders API', identifier: 'http://orders-api.localhost:4000', scopes: ['admin'], managedBy: 'idforge',
      // The entry as declared (normal form: defaults left out), kept by the server for export.
      lastApplied: { entry: { kind: 'api', displayName: 'Orders API', audience: 'http://orders-api.localhost:4000', origin: 'http://orders-api.localhost:4000', routes: [{ path: '/whoami' }, { path: '/admin', scopes: ['admin'] }] }, index: 3 },
    });
  });

  it('expands groups into assignments and leaves bob off the wiki', async () => {
    const model = await loadExample('examples/acme.yaml');
    const assignments = compilePlan(model, fixedSecrets(model))
      .steps.filter((s) => s.kind === 'assignment')
      .map((s) => stepName(s));
    expect(assignments).toEqual(['acme/dashboard/u-alice', 'acme/dashboard/u-bob', 'acme/portal/u-alice', 'acme/portal/u-bob', 'acme/wiki/u-alice']);
  });

  it('orders the plan so every reference exists before it is used', async () => {
    const model = await loadExample('examples/acme.yaml');
    const kinds = compilePlan(model, fixedSecrets(model)).steps.map((s) => (s.kind === 'application' ? `application:${(s as { body: ApplicationBody }).body.kind === 'api' ? 'api' : 'client'}` : s.kind));
    const firstOf = (k: string) => kinds.indexOf(k);
    const lastOf = (k: string) => kinds.lastIndexOf(k);
    expect(firstOf('tenant')).toBe(0);
    expect(lastOf('application:api')).toBeLessThan(firstOf('application:client'));
    expect(lastOf('application:client')).toBeLessThan(firstOf('user'));
    expect(lastOf('user')).toBeLessThan(firstOf('assignment'));
  });

  it('refuses to generate without a resolved secret instead of making one up', async () => {
    const model = await loadExample('examples/acme.yaml');
    expect(() => compileArtifacts(model, { secrets: {} })).toThrow(/no clientSecret resolved for acme\/portal/);
  });
});

describe('stable JSON', () => {
  it('writes what JSON.stringify writes for the same value with sorted keys', async () => {
    const fc = (await import('fast-check')).default;
    const { stableJson } = await import('../../src/generators/_serialize.ts');
    // JS objects put integer-like keys first whatever the insertion order, so the oracle
    // (JSON.stringify of a key-sorted copy) only holds for other keys: prefix those.
    const prefixed = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(prefixed) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [`k${k}`, prefixed(x)])) : v;
    const sorted = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(sorted) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])])) : v;
    fc.assert(
      fc.property(fc.jsonValue().map(prefixed), (v) => {
        expect(stableJson(v)).toBe(`${JSON.stringify(sorted(v), null, 2)}\n`);
      }),
      { numRuns: 500 },
    );
    fc.assert(fc.property(fc.jsonValue(), (v) => {
        expect(JSON.parse(stableJson(v))).toEqual(JSON.parse(JSON.stringify(v)));
      }), { numRuns: 500 });
  });
});

describe('the proxy image', () => {
  it('is the same oauth2-proxy release that scripts/ensure-tools.sh builds for the tests', async () => {
    const { OAUTH2_PROXY_IMAGE, OAUTH2_PROXY_VERSION } = await import('../../src/generators/index.ts');
    const pinned = Object.fromEntries(
      (await readFile('scripts/tool-versions.env', 'utf8'))
        .split('\n')
        .filter((l) => /^[A-Z0-9_]+=/.test(l))
        .map((l) => l.split('=', 2) as [string, string]),
    );
    expect(OAUTH2_PROXY_VERSION).toBe(pinned.OAUTH2_PROXY_VERSION);
    expect(OAUTH2_PROXY_IMAGE).toBe(pinned.OAUTH2_PROXY_IMAGE);
  });
});

describe('the proxy compose file', () => {
  it('publishes the port when nothing is local, and shares the host network when the issuer is on localhost', async () => {
    const { validateSources } = await import('../../src/schema/index.ts');
    const model = (baseDomain: string) => {
      const r = validateSources([
        {
          file: 'm.yaml',
          content: `server:\n  baseDomain: ${baseDomain}\ntenants:\n  - name: acme\n    displayName: Acme\n    applications:\n      - name: wiki\n        kind: proxy\n        origin: https://wiki.acme.example:8443\n        upstream: http://10.0.0.5:8080\n`,
        },
      ]);
      if (!r.ok) throw new Error(JSON.stringify(r.problems));
      return r.model;
    };
    const compose = (m: Model) => parse(compileArtifacts(m, fixedSecrets(m)).artifacts.find((a) => a.path === 'acme/wiki/docker-compose.yml')!.content);
    expect(compose(model('id.acme.example')).services['wiki-oauth2-proxy']).toMatchObject({ ports: ['8443:8443'] });
    expect(compose(model('id.acme.example')).services['wiki-oauth2-proxy']).not.toHaveProperty('network_mode');
    expect(compose(model('localhost')).services['wiki-oauth2-proxy']).toMatchObject({ network_mode: 'host' });
  });
});
