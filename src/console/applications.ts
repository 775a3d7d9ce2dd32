/**
 * From a Marketplace (or edit) form to what the console sends, shows or proposes. The form's values
 * become the model's application spec and go through the same doors as a model in Git: the model's
 * validation (schema and checks, judged within the live tenant, so names, client ids, audiences and
 * scopes are checked against what exists), the generators (the admin API body that `idforge apply`
 * would PUT, and the client configuration files `idforge compile` writes), and then the admin API's
 * own rules when the body is sent. Nothing here touches storage.
 */
import { randomBytes } from 'node:crypto';
import { KINDS, MANAGED_BY_CONSOLE, SECRET_BYTES, type ApplicationBody, type EntrySource, type ApplicationKind, type ApplicationView, type ServerAddress } from '../contract/index.ts';
import {
  entryPatch, assignmentsPatch, compileClientArtifacts, modelFileOfLive, modelYaml, serverSpecOf, tenantSteps, unifiedDiff,
  type Artifact, type ExportNote, type ModelFileInput, type Resolved, type TenantSpecInput,
} from '../generators/index.ts';
import { ServerSpec, TenantSpec, assembleModel, validateSources, type Model } from '../schema/index.ts';
import type { LiveTenantState } from '../admin-client/index.ts';
import { KIND_FORMS, modelProblemsToFields, specOfForm, type FieldErrors, type FormValues } from './forms.ts';

type AppInput = NonNullable<TenantSpecInput['applications']>[number];

export interface BuiltApplication {
  readonly name: string;
  readonly kind: ApplicationKind;
  /** The admin API body (managedBy set; no clientSecret when editing: the server keeps its own). */
  readonly body: ApplicationBody;
  /** The model that compiles this application (its tenant with it and the apis it names). */
  readonly model: Model;
  readonly resolved: Resolved;
  /** The live tenant as a model file, before and after the change (for a proposal). */
  readonly before: ModelFileInput;
  readonly after: ModelFileInput;
  readonly notes: readonly ExportNote[];
}

const key = (p: { path: readonly (string | number)[]; message: string }) => `${JSON.stringify(p.path)} ${p.message}`;

const CONSOLE_FILE = 'console.yaml';

/** What a related path names, in the console's words (the model's problems point at a file the console never shows). */
function nameAt(file: ModelFileInput, path: readonly (string | number)[]): string {
  const [, , list, i] = path;
  const t = file.tenants?.[0];
  if (list === 'applications' && typeof i === 'number') return `application "${t?.applications?.[i]?.name ?? i}"`;
  if (list === 'users' && typeof i === 'number') return `user "${t?.users?.[i]?.id ?? i}"`;
  if (list === 'scopes') return 'the tenant\'s scopes';
  return 'this tenant';
}

/** The model's checks of the live tenant as a model, each problem's place said by name, not as a position in a file. */
function validate(file: ModelFileInput) {
  const result = validateSources([{ file: CONSOLE_FILE, content: JSON.stringify(file) }]);
  if (result.ok) return result;
  const withoutPlace = (message: string) => {
    const at = message.lastIndexOf(` at ${CONSOLE_FILE}:`);
    return at < 0 ? message : message.slice(0, at);
  };
  return { ...result, problems: result.problems.map((p) => (p.related === undefined ? p : { ...p, message: `${withoutPlace(p.message)} by ${nameAt(file, p.related)}` })) };
}

/** Secrets the console makes for a new application, as the CLI's state file would (sizes from the kinds table). */
function makeSecrets(tenant: string, name: string, kind: ApplicationKind): Resolved {
  const secrets = Object.fromEntries(KINDS[kind].secrets.map((k) => [k, randomBytes(SECRET_BYTES[k]).toString('base64url')]));
  return { secrets: { [`${tenant}/${name}`]: secrets } };
}

/** The model holding one application of the live tenant (and the apis it names), ready for the generators. */
function modelFor(addr: ServerAddress, before: ModelFileInput, app: AppInput): Model {
  const t = before.tenants![0]!;
  const audience = app.kind === 'spa' ? (app.audience ?? []) : [];
  const apis = (t.applications ?? []).filter((a) => a.kind === 'api' && audience.includes(a.name));
  const tenant = TenantSpec.parse({ name: t.name, displayName: t.displayName, scopes: t.scopes, applications: [app, ...apis] });
  return assembleModel(ServerSpec.parse(serverSpecOf(addr)), [tenant]);
}

/**
 * Builds (does not send) the application a form describes. `editing`: the live application it
 * replaces (its name cannot change). Problems come back per field, in the model's words.
 */
export function buildApplication(
  addr: ServerAddress, live: LiveTenantState, kind: ApplicationKind, values: FormValues, editing?: ApplicationView,
): { ok: false; errors: FieldErrors } | ({ ok: true } & BuiltApplication) {
  const { file: before, notes } = modelFileOfLive(addr, live);
  const spec = specOfForm(kind, values);
  if (editing !== undefined) spec.name = editing.name;
  const app = spec as AppInput;
  const apps = [...(before.tenants![0]!.applications ?? [])];
  const existing = apps.findIndex((a) => a.name === editing?.name);
  const index = existing >= 0 ? existing : apps.length;
  apps[index] = app;
  const after: ModelFileInput = { ...before, tenants: [{ ...before.tenants![0]!, applications: apps }] };

  // Only what this change brings: problems the live tenant already had are not this form's.
  const was = validate(before);
  const had = new Set((was.ok ? [] : was.problems).map(key));
  const checked = validate(after);
  const fresh = (checked.ok ? [] : checked.problems).filter((p) => !had.has(key(p)));
  if (fresh.length > 0) {
    const errors = modelProblemsToFields(kind, index, fresh);
    const elsewhere = fresh.filter((p) => !(p.path[0] === 'tenants' && p.path[2] === 'applications' && p.path[3] === index));
    for (const p of elsewhere) if (!(errors.form ??= []).includes(p.message)) errors.form.push(p.message);
    return { ok: false, errors };
  }
  const tenant = live.tenant.name;
  const name = String(spec.name);
  let model: Model;
  try {
    model = modelFor(addr, before, app);
  } catch (err) {
    return { ok: false, errors: { form: [`the application cannot be compiled: ${(err as Error).message}`] } };
  }
  const resolved = makeSecrets(tenant, name, kind);
  const step = tenantSteps(model.tenants[0]!, resolved).find((s) => s.kind === 'application' && s.application === name);
  if (step === undefined || step.kind !== 'application' || step.op !== 'put') return { ok: false, errors: { form: ['the application cannot be compiled'] } };
  const body = { ...step.body, managedBy: editing === undefined ? MANAGED_BY_CONSOLE : editing.managedBy } as ApplicationBody & { clientSecret?: string };
  // Editing keeps the secret the server holds: a body without one leaves it as it is.
  if (editing !== undefined) delete body.clientSecret;
  return { ok: true, name, kind, body, model, resolved, before, after, notes };
}

/** The files `idforge compile` writes for this application, below `<tenant>/<app>/`. */
export function configFiles(b: Pick<BuiltApplication, 'model' | 'resolved' | 'name'>): Artifact[] {
  const prefix = `${b.model.tenants[0]!.name}/${b.name}/`;
  return compileClientArtifacts(b.model, b.resolved).filter((a) => a.path.startsWith(prefix)).map((a) => ({ ...a, path: a.path.slice(prefix.length) }));
}

/** Client configuration of an application just made, from its live state and the secrets made with it. */
export function createdConfigFiles(addr: ServerAddress, live: LiveTenantState, name: string, secrets: Readonly<Record<string, string>>): Artifact[] | undefined {
  const { file } = modelFileOfLive(addr, live);
  const app = file.tenants![0]!.applications?.find((a) => a.name === name);
  if (app === undefined) return undefined;
  try {
    return configFiles({ model: modelFor(addr, file, app), resolved: { secrets: { [`${live.tenant.name}/${name}`]: { ...secrets } } }, name });
  } catch {
    return undefined;
  }
}

/** Client configuration of an existing public application (no secret), from its live state. */
export function liveConfigFiles(addr: ServerAddress, live: LiveTenantState, name: string): Artifact[] | undefined {
  const { file } = modelFileOfLive(addr, live);
  const app = file.tenants![0]!.applications?.find((a) => a.name === name);
  if (app === undefined || KINDS[app.kind].confidential) return undefined;
  try {
    return configFiles({ model: modelFor(addr, file, app), resolved: { secrets: {} }, name });
  } catch {
    return undefined;
  }
}

export interface Proposal {
  /**
   * A unified diff for `git apply`: of the model file the entry was applied from, or else of the
   * exported tenant; undefined when neither can be made (the changed entry alone is then the proposal).
   */
  readonly patch: string | undefined;
  /** The changed entry alone, as YAML. */
  readonly snippet: string;
  /** The file and the entry the patch is against, when apply recorded them; otherwise the patch is of the export. */
  readonly against?: Pick<EntrySource, 'file' | 'path' | 'line'>;
}

/** A change to Git-owned objects as a patch to the model (of the exported tenant), instead of a change to the server. */
function exportPatch(tenant: string, before: ModelFileInput, after: ModelFileInput, notes: readonly ExportNote[], entry: unknown): Proposal {
  const file = `${tenant}.yaml`;
  return {
    patch: unifiedDiff(modelYaml(before, notes), modelYaml(after, notes), { from: `a/${file}`, to: `b/${file}` }),
    snippet: modelYaml(entry),
  };
}

/**
 * A proposed change of a Git-managed application: its last-applied entry with the form's fields
 * replaced and every other field kept, as a patch of the lines it was declared on (or, without
 * those, of the exported tenant).
 */
export function proposeApplication(app: ApplicationView, b: Pick<BuiltApplication, 'before' | 'after' | 'notes'>, tenant: string): Proposal {
  const formEntry = b.after.tenants![0]!.applications!.find((x) => x.name === app.name)! as Record<string, unknown>;
  const last = app.lastApplied;
  if (last === undefined) return exportPatch(tenant, b.before, b.after, b.notes, formEntry);
  const formKeys = new Set(KIND_FORMS[app.kind].map((f) => f.key));
  const entry: Record<string, unknown> = Object.fromEntries(Object.entries(last.entry).filter(([k]) => !formKeys.has(k) || k === 'name'));
  for (const k of formKeys) if (k !== 'name' && formEntry[k] !== undefined) entry[k] = formEntry[k];
  // The entry's own field order: kept keys where they were, the form's new ones after.
  const ordered = Object.fromEntries([...Object.keys(last.entry), ...Object.keys(entry)].filter((k, i, all) => all.indexOf(k) === i && entry[k] !== undefined).map((k) => [k, entry[k]]));
  const patch = last.source === undefined ? undefined : entryPatch(last.source, last.entry, ordered);
  if (patch === undefined) {
    const apps = b.before.tenants![0]!.applications!.map((x) => (x.name === app.name ? ordered as AppInput : x));
    return exportPatch(tenant, b.before, { ...b.before, tenants: [{ ...b.before.tenants![0]!, applications: apps }] }, b.notes, ordered);
  }
  return { patch, snippet: modelYaml(ordered), against: { file: last.source!.file, path: last.source!.path, line: last.source!.line } };
}

/**
 * A proposed change of an application's assignments (users added and removed): a patch of the
 * tenant's declared `assignments` list, or of the exported tenant when apply recorded no lines.
 */
export function proposeAssignments(addr: ServerAddress, live: LiveTenantState, application: string, add: readonly string[], remove: readonly string[]): Proposal {
  const { file: before, notes } = modelFileOfLive(addr, live);
  const t = before.tenants![0]!;
  const declared = (t.assignments ?? []).find((e) => e.application === application);
  const current = (live.assignments[application] ?? []).map((x) => x.userId);
  // The declared users with the change; users who hold access through a group keep it until the group changes.
  const base = declared?.users ?? (declared === undefined ? current : []);
  const users = [...new Set([...base.filter((x) => !remove.includes(x)), ...add.filter((x) => !base.includes(x))])].sort();
  const entry = { application, ...(users.length > 0 ? { users } : {}), ...(declared?.groups === undefined ? {} : { groups: declared.groups }) };
  const source = live.tenant.lastApplied?.source;
  const patch = source === undefined ? undefined : assignmentsPatch(source, application, users);
  if (patch !== undefined) return { patch, snippet: modelYaml(entry), against: { file: source!.file, path: source!.path, line: source!.line } };
  const entries = [...(t.assignments ?? [])];
  const i = entries.findIndex((e) => e.application === application);
  const empty = users.length === 0 && declared?.groups === undefined;
  if (empty) {
    if (i >= 0) entries.splice(i, 1);
  } else if (i >= 0) entries[i] = entry;
  else entries.push(entry);
  const { assignments: _, ...rest } = t;
  const after: ModelFileInput = { ...before, tenants: [{ ...rest, ...(entries.length > 0 ? { assignments: entries } : {}) }] };
  return exportPatch(live.tenant.name, before, after, notes, entry);
}
