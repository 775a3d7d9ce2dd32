/**
 * IdentityStack: the component that maps a validated Model onto the dynamic resources.
 *
 *   DeleteGuard (first: refuses mass deletions in preview already; everything depends on it)
 *   AuthServer ─┬─ Tenant (per tenant: the tenant, its applications, users and assignments, one batch)
 *               │    └─ TenantSecrets (per tenant with confidential apps or proxies: their secrets)
 *               └─ ClientConfigs (every generated client file, written under one directory)
 *
 * Two resources per tenant whatever its size (issue 23): the engine's cost is per resource, and the
 * server takes a tenant's objects in one batch anyway. The request bodies come from the same
 * generator as `idforge apply` (tenantSteps), so the two paths cannot disagree about what a model
 * means; Pulumi only adds the secrets it keeps and the stack's mark.
 */
import type * as pulumi from '@pulumi/pulumi';
// From the SDK's own modules, not its index (program.ts).
import { getProject, getStack } from '@pulumi/pulumi/metadata.js';
import { all as pulumiAll, output as pulumiOutput, secret as pulumiSecret } from '@pulumi/pulumi/output.js';
import { ComponentResource } from '@pulumi/pulumi/resource.js';
import { pulumiManager, SECRET_BYTES, type GitInfo, type Inventory, type PutStep, type TenantBody, type UserBody } from '../contract/index.ts';
import { tenantRenames, type Model } from '../schema/model.ts';
import { byName, compileTenantClientArtifacts, requiredSecrets, tenantInventory, tenantSteps, type Resolved } from '../generators/index.ts';
import type { AdminConnection } from '../admin-client/index.ts';
import type { ApplicationSpecBody } from './application.ts';
import { AuthServer, type LocalServerArgs } from './auth-server.ts';
import { ClientConfigs } from './client-configs.ts';
import { DeleteGuard } from './delete-guard.ts';
import type { UserSpecBody } from './tenant-users.ts';
import { TenantSecrets } from './tenant-secrets.ts';
import { Tenant, type WebhookSpecBody } from './tenant.ts';

export interface IdentityStackArgs {
  readonly model: Model;
  /** Local mode settings of the server this stack deploys. The port defaults to the model's. */
  readonly server: { readonly mode?: 'local'; readonly port?: number; readonly local: LocalServerArgs };
  /** Absolute directory for the client configurations (the layout of `idforge compile --out`). */
  readonly clientConfigDir: string;
  /** Initial passwords per `<tenant>/<userId>`, resolved from the model's references (secrets). */
  readonly passwords?: Readonly<Record<string, pulumi.Input<string>>>;
  /** Webhooks' signing secrets per `<tenant>/<webhook>`, resolved from the model's references (secrets). */
  readonly webhookSecrets?: Readonly<Record<string, pulumi.Input<string>>>;
  /** Per `<tenant>/<userId>`, where an initial password this run does not have should come from. */
  readonly missingPasswords?: Readonly<Record<string, string>>;
  /**
   * Take over tenants, applications, users and assignments that already exist on the server (made
   * by hand or by `idforge apply`) instead of refusing to create them. Default false.
   */
  readonly adopt?: boolean;
  /** Let this run delete a tenant with users, or most of a tenant's applications, users or assignments. Default false. */
  readonly allowDelete?: boolean;
  /** Where the model comes from in Git: every write names the commit in the server's event log. */
  readonly git?: GitInfo;
}

/** The delete guard's view of the model: per tenant, application names and user and assignment counts (generators' tenantInventory, without compiling the tenants). */
export function inventoryOf(model: Model): Inventory {
  return Object.fromEntries(model.tenants.map((t) => [t.name, tenantInventory(t)]));
}

/** Port of a local server when neither the stack nor the model names one. */
export const DEFAULT_PORT = 9080;

/** Placeholder for the client secrets that the Application resources make: stripped before use. */
const PLACEHOLDER = 'x'.repeat(43);

/** The bodies that one tenant's resources take. */
export interface TenantSpecOut {
  readonly tenant: string;
  readonly body: TenantBody;
  readonly applications: Array<{ readonly name: string; readonly body: ApplicationSpecBody }>;
  readonly users: Record<string, UserSpecBody>;
  readonly assignments: Record<string, string[]>;
  readonly webhooks: Record<string, WebhookSpecBody>;
}

/** Pure: per tenant, the bodies that the resources take (from the generator's plan steps). */
export function tenantSpecs(model: Model, marks?: ObjectMarks): TenantSpecOut[] {
  const spec = tenantSpecMaker(model, marks);
  return [...model.tenants].sort(byName).map(spec);
}

/** The stack's marks, written into every object it makes (its name, and its manager's). */
export interface ObjectMarks {
  readonly stack: string;
  readonly manager: string;
}

/**
 * Pure: the maker of one tenant's bodies (one at a time, as IdentityStack makes its resources), each
 * body marked with `marks` as it is built. Members may be undefined: the Tenant resource writes the
 * bodies in JSON's normal form (canonicalJson), which drops them. Why not a normalized copy here, and
 * the marks in another: those copies of every body (100,000 users in a preview of 500 bench tenants)
 * were about 0.3 s of the program's CPU, a third of compiling the tenants (README, "Scale").
 */
function tenantSpecMaker(model: Model, marks: ObjectMarks | Record<string, never> = {}): (t: Model['tenants'][number]) => TenantSpecOut {
  const placeholders: Resolved = {
    secrets: Object.fromEntries(
      requiredSecrets(model).map((n) => [n.key, { clientSecret: PLACEHOLDER, cookieSecret: PLACEHOLDER, sessionSecret: PLACEHOLDER }]),
    ),
  };
  return (t) => {
    const steps = tenantSteps(t, placeholders) as PutStep[];
    let tenantBody: TenantBody | undefined;
    const applications: Array<{ name: string; body: ApplicationSpecBody }> = [];
    const users: Record<string, UserSpecBody> = {};
    const assignments: Record<string, string[]> = {};
    const webhooks: Record<string, WebhookSpecBody> = {};
    for (const s of steps) {
      if (s.kind === 'tenant') tenantBody = { ...s.body, ...marks };
      else if (s.kind === 'application') {
        const { clientSecret: _, ...body } = s.body as ApplicationSpecBody & { clientSecret?: string };
        applications.push({ name: s.application, body: Object.assign(body, marks) as ApplicationSpecBody });
      } else if (s.kind === 'user') {
        const { initialPassword: _, ...body } = s.body as UserBody;
        users[s.user] = Object.assign(body, marks);
      } else if (s.kind === 'assignment') (assignments[s.application] ??= []).push(s.user);
      else if (s.kind === 'webhook') webhooks[s.webhook] = { url: s.body.url, types: [...s.body.types], enabled: s.body.enabled };
    }
    for (const k of Object.keys(assignments)) assignments[k] = [...new Set(assignments[k])].sort();
    return { tenant: t.name, body: tenantBody!, applications, users, assignments, webhooks };
  };
}

export class IdentityStack extends ComponentResource {
  readonly server: AuthServer;
  readonly baseUrl: pulumi.Output<string>;
  readonly issuers: pulumi.Output<Record<string, string>>;
  readonly clientConfigDir: pulumi.Output<string>;
  /** Settles once every resource of the stack is made (they are made a few tenants at a time); the program awaits it. Rejects with what stopped that. */
  readonly ready: Promise<void>;

  constructor(name: string, args: IdentityStackArgs, opts?: pulumi.ComponentResourceOptions) {
    super('idforge:index:IdentityStack', name, {}, opts);
    const { model } = args;
    // Written into every object this stack makes, so it can take back its own after a crash.
    const stack = `${getProject()}/${getStack()}`;
    // The stack is the objects' named manager (src/contract/managers.ts): another manager's write that would change them is refused.
    const manager = pulumiManager(stack);
    // Each tenant's bodies are compiled as its resources are made (below), marked with the stack.
    const markedSpecOf = tenantSpecMaker(model, { stack, manager });
    // First of all, the delete guard: every other resource depends on it, so a change that would
    // delete too much fails the preview (and the up) before anything is touched.
    const renamedApps = Object.fromEntries(model.tenants.map((t) => [t.name, Object.fromEntries(t.applications.flatMap((a) => (a.previousName === undefined ? [] : [[a.name, a.previousName]])))]));
    const previousTenant = tenantRenames(model);
    const guard = new DeleteGuard('delete-guard', { inventory: inventoryOf(model), renamed: Object.fromEntries(previousTenant), renamedApps, allow: args.allowDelete ?? false }, { parent: this });
    const child = { parent: this, dependsOn: [guard] };
    const adopt = args.adopt ? { adopt: true } : {};

    this.server = new AuthServer(
      'server',
      {
        mode: args.server.mode ?? 'local',
        scheme: model.server.scheme as 'http',
        baseDomain: model.server.baseDomain,
        port: args.server.port ?? model.server.port ?? DEFAULT_PORT,
        local: args.server.local,
        tenants: model.tenants.map((t) => t.name).sort(),
      },
      child,
    );
    // The credentials file, not the credentials: no admin secret in any other resource's state, and
    // a restart on another port does not leave stale URLs behind (see AdminConnection).
    const connection: pulumi.Output<AdminConnection> = this.server.credentialsFile.apply((credentialsFile) => ({ credentialsFile }));

    // Declared renames (previousName) of tenants: their resources answer to their old names too, so
    // the engine updates them instead of creating new ones and deleting the old.
    const aliasesOf = (previousKeys: readonly string[]): pulumi.CustomResourceOptions =>
      previousKeys.length === 0 ? {} : { aliases: previousKeys.map((k) => ({ name: k })) };
    // Per tenant, its client files (by path), each compiled as soon as its tenant's secrets are known:
    // while the engine still works on the other tenants, not all at the end of the command, when the
    // program alone stood between the last tenant and the client files (~0.4 s at 500 bench tenants).
    const tenantFiles: pulumi.Output<Record<string, string>>[] = [];
    const tenantFilesOf = (t: Model['tenants'][number], secrets: Resolved['secrets']) =>
      Object.fromEntries(compileTenantClientArtifacts(model, t, { secrets }).map((a) => [a.path, a.content]));

    // The tenants' resources are made a few tenants at a time, each group handed to the SDK (and so to
    // the engine) before the next is built: the engine and the provider host work on the first
    // tenants while the program builds the rest. Built all at once, the program spent its first 2 to
    // 3 s of a 500-tenant preview constructing before the engine had anything to do (README, "Scale").
    const built = (async () => {
      const provisioned: pulumi.Resource[] = [];
      for (const [i, modelTenant] of [...model.tenants].sort(byName).entries()) {
        if (i > 0 && i % TENANTS_PER_TURN === 0) await new Promise((r) => setImmediate(r));
        const spec = markedSpecOf(modelTenant);
        const t = spec.tenant;
        const was = previousTenant.get(t);
        const needs = requiredSecrets({ ...model, tenants: [modelTenant] });
        const previousApp = new Map(modelTenant.applications.flatMap((a) => (a.previousName === undefined ? [] : [[a.name, a.previousName] as const])));
        const appOf = (key: string) => key.slice(t.length + 1);
        let values: pulumi.Output<Record<string, string>> | undefined;
        if (needs.length > 0) {
          const sizes = Object.fromEntries(needs.map((n) => [`${appOf(n.key)}/${n.kind}`, SECRET_BYTES[n.kind]]));
          const moved = Object.fromEntries(needs.flatMap((n) => {
            const from = previousApp.get(appOf(n.key));
            return from === undefined ? [] : [[`${appOf(n.key)}/${n.kind}`, `${from}/${n.kind}`]];
          }));
          values = new TenantSecrets(`${t}/secrets`, { sizes, ...(Object.keys(moved).length > 0 ? { moved } : {}) }, { ...child, ...aliasesOf(was === undefined ? [] : [`${was}/secrets`]) }).values;
          tenantFiles.push(values.apply((v) => {
            // Every secret of the tenant's applications by `<tenant>/<application>` and kind.
            const out: Record<string, Record<string, string>> = {};
            for (const [k, value] of Object.entries(v)) {
              const cut = k.lastIndexOf('/');
              (out[`${t}/${k.slice(0, cut)}`] ??= {})[k.slice(cut + 1)] = value;
            }
            return tenantFilesOf(modelTenant, out as Resolved['secrets']);
          }));
        } else tenantFiles.push(pulumiOutput(tenantFilesOf(modelTenant, {})));
        const clientSecrets = values?.apply((v) => Object.fromEntries(Object.entries(v).filter(([k]) => k.endsWith('/clientSecret')).map(([k, value]) => [k.slice(0, -'/clientSecret'.length), value])));
        const passwords: Record<string, pulumi.Input<string>> = {};
        const missingPasswords: Record<string, string> = {};
        for (const id of Object.keys(spec.users)) {
          const pw = args.passwords?.[`${t}/${id}`];
          if (pw !== undefined) passwords[id] = pw;
          const from = args.missingPasswords?.[`${t}/${id}`];
          if (from !== undefined) missingPasswords[id] = from;
        }
        const webhookSecrets: Record<string, pulumi.Input<string>> = {};
        for (const w of Object.keys(spec.webhooks)) {
          const secret = args.webhookSecrets?.[`${t}/${w}`];
          if (secret !== undefined) webhookSecrets[w] = secret;
        }
        const tenant = new Tenant(
          t,
          {
            connection,
            name: t,
            ...(was === undefined ? {} : { previousName: was }),
            body: spec.body,
            applications: Object.fromEntries(spec.applications.map((a) => [a.name, a.body])),
            ...(previousApp.size > 0 ? { renamedApplications: Object.fromEntries(previousApp) } : {}),
            ...(clientSecrets === undefined ? {} : { clientSecrets }),
            users: spec.users,
            ...(Object.keys(passwords).length > 0 ? { initialPasswords: pulumiSecret(passwords) } : {}),
            ...(Object.keys(missingPasswords).length > 0 ? { missingPasswords } : {}),
            assignments: spec.assignments,
            // Only for a tenant that declares webhooks: the state of others stays as it was.
            ...(Object.keys(spec.webhooks).length === 0 ? {} : { webhooks: spec.webhooks }),
            ...(Object.keys(webhookSecrets).length === 0 ? {} : { webhookSecrets: pulumiSecret(webhookSecrets) }),
            unmanaged: modelTenant.unmanaged ?? 'remove',
            ...adopt,
            ...(args.git === undefined ? {} : { git: args.git }),
          },
          { ...child, ...aliasesOf(was === undefined ? [] : [was]) },
        );
        provisioned.push(tenant);
      }

      // Every client file, once each tenant's are made; a secret as a whole (ClientConfigs).
      const files = pulumiAll(tenantFiles).apply((all) => Object.assign({}, ...all) as Record<string, string>);
      // Written only once the server has accepted every change: a refused up leaves the old configs.
      return new ClientConfigs('client-configs', { dir: args.clientConfigDir, files }, { parent: this, dependsOn: [guard, ...provisioned] });
    })();

    this.baseUrl = this.server.baseUrl;
    this.issuers = this.server.issuers;
    this.clientConfigDir = pulumiOutput(built.then((configs) => configs.dir));
    this.ready = built.then(() => {
      this.registerOutputs({ baseUrl: this.baseUrl, issuers: this.issuers, clientConfigDir: this.clientConfigDir });
    });
  }
}

/** How many tenants' resources IdentityStack makes before it lets the SDK send them. */
const TENANTS_PER_TURN = 10;
