/**
 * Generators never make secrets: they declare what they need, and the caller (the CLI's state
 * file, or Pulumi secrets) supplies stable values. This keeps generation pure and repeatable.
 */
import { KINDS, type SecretKind } from '../contract/index.ts';
import type { Model } from '../schema/model.ts';

export type { SecretKind } from '../contract/index.ts';

export interface SecretNeed {
  /** `<tenant>/<application>` */
  readonly key: string;
  readonly kind: SecretKind;
  /** Where the secret was kept before a declared rename of the tenant or the application (previousName), newest first. */
  readonly previousKeys: readonly string[];
}

/** Per `<tenant>/<application>`, the secrets it needs. */
export type ResolvedSecrets = Readonly<Record<string, Readonly<Partial<Record<SecretKind, string>>>>>;

/** Initial passwords, per `<tenant>/<userId>`, resolved from the model's references at apply time. */
export type ResolvedPasswords = Readonly<Record<string, string>>;

export interface Resolved {
  readonly secrets: ResolvedSecrets;
  readonly passwords?: ResolvedPasswords;
  /** Webhook signing secrets, per `<tenant>/<webhook>`, resolved from the model's references (none: the server keeps or makes one). */
  readonly webhookSecrets?: Readonly<Record<string, string>>;
}

export function appKey(tenant: string, app: string): string {
  return `${tenant}/${app}`;
}

type Renamable = { readonly name: string; readonly previousName?: string | undefined };

/** The `<tenant>/<application>` keys an application had before the renames the model declares (previousName), newest first. */
export function previousAppKeys(tenant: Renamable, app: Renamable): string[] {
  const tenants = [tenant.name, ...(tenant.previousName === undefined ? [] : [tenant.previousName])];
  const apps = [app.name, ...(app.previousName === undefined ? [] : [app.previousName])];
  const key = appKey(tenant.name, app.name);
  return tenants.flatMap((tn) => apps.map((an) => appKey(tn, an))).filter((k) => k !== key);
}

/** The secrets each application's kind keeps (KINDS[kind].secrets; sizes in SECRET_BYTES). */
export function requiredSecrets(model: Model): SecretNeed[] {
  const needs: SecretNeed[] = [];
  for (const t of model.tenants) {
    for (const a of t.applications) {
      const key = appKey(t.name, a.name);
      const previousKeys = previousAppKeys(t, a);
      for (const kind of KINDS[a.kind].secrets) needs.push({ key, kind, previousKeys });
    }
  }
  return needs;
}

export function secretFor(resolved: Resolved, key: string, kind: SecretKind): string {
  const value = resolved.secrets[key]?.[kind];
  if (value === undefined) throw new Error(`no ${kind} resolved for ${key}: resolve requiredSecrets(model) before generating`);
  return value;
}
