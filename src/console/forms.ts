/**
 * The Marketplace's forms, one row of fields per application kind (the kinds table names the kinds;
 * this says which of the model's fields a person fills in for each). A form's values become the
 * model's application spec, so the model's own validation judges them and its problems come back
 * to the field they are about; so do the admin API's problems, by the body field they name.
 */
import { NAME_RULES, type ApplicationKind, type Path } from '../contract/index.ts';
import type { TenantSpecInput } from '../generators/index.ts';

type AppInput = NonNullable<TenantSpecInput['applications']>[number];

export type FieldInput = 'text' | 'url' | 'list' | 'checkbox' | 'select' | 'apis' | 'routes';

export interface FieldSpec {
  /** The model's field name in the application spec. */
  readonly key: string;
  readonly label: string;
  readonly help: string;
  readonly input: FieldInput;
  readonly required?: boolean;
  readonly options?: readonly { readonly value: string; readonly label: string }[];
  /** Shown empty when the model's default applies. */
  readonly placeholder?: string;
}

const NAME_FIELD: FieldSpec = { key: 'name', label: 'Name', help: `Identifies the application in the tenant (and its client id unless you set one); it ${NAME_RULES.name}.`, input: 'text', required: true };
const DISPLAY_NAME: FieldSpec = { key: 'displayName', label: 'Display name', help: 'Shown to people on the sign-in page. Optional.', input: 'text' };
const CLIENT_ID: FieldSpec = { key: 'clientId', label: 'Client ID', help: `The OAuth client_id. Default: the name. It ${NAME_RULES.userId}.`, input: 'text' };
const scopes = (dflt: string): FieldSpec => ({
  key: 'scopes', label: 'Scopes', help: `Scopes the app requests, separated by spaces; openid is required. Default: ${dflt}.`, input: 'list', placeholder: dflt,
});
/** The model's `pkce` (src/contract/pkce.ts): only confidential clients may make it optional. */
const PKCE: FieldSpec = {
  key: 'pkce', label: 'PKCE',
  help: 'Required (the default): every sign-in request carries a PKCE challenge. Optional: for OpenID Connect libraries that send a nonce but no PKCE (RFC 9700 §2.1.1 lets confidential clients use the nonce instead); requests without PKCE must then carry a nonce.',
  input: 'select',
  // Required is the empty value: left out of the spec, so the model's default applies.
  options: [{ value: '', label: 'Required' }, { value: 'optional', label: 'Optional, nonce instead' }],
};
const origin = (what: string, uri: string): FieldSpec => ({
  key: 'origin', label: 'Origin', help: `Public origin of the ${what}, e.g. https://${what === 'proxy' ? 'wiki' : 'app'}.example.com (https, except on localhost). Registered redirect URI: ${uri}.`, input: 'url', required: true,
});

/** The fields of each kind, in the order the form shows them. */
export const KIND_FORMS: Readonly<Record<ApplicationKind, readonly FieldSpec[]>> = {
  web: [
    NAME_FIELD, DISPLAY_NAME, origin('web app', '<origin>/connect/<provider>/callback'),
    { key: 'provider', label: 'Provider name', help: "The name in the app's login routes /connect/<provider>. Default: the tenant's name.", input: 'text' },
    { key: 'callback', label: 'Callback path', help: 'Where the app sends the person after sign-in (it answers with tokens, raw response and profile). Default: /hello.', input: 'text', placeholder: '/hello' },
    scopes('openid profile email'), CLIENT_ID, PKCE,
  ],
  proxy: [
    NAME_FIELD, DISPLAY_NAME, origin('proxy', '<origin>/oauth2/callback'),
    { key: 'upstream', label: 'Upstream', help: 'The app behind the proxy, e.g. http://127.0.0.1:8080. It receives X-Forwarded-User and X-Forwarded-Email.', input: 'url', required: true },
    { key: 'emailDomains', label: 'Email domains', help: 'Email domains let through, separated by spaces. Default: * (any).', input: 'list', placeholder: '*' },
    scopes('openid email profile'), CLIENT_ID, PKCE,
  ],
  spa: [
    NAME_FIELD, DISPLAY_NAME, origin('single-page app', '<origin> (its root)'),
    { key: 'audience', label: 'APIs it calls', help: 'Protected APIs of this tenant whose access tokens the app requests.', input: 'apis' },
    scopes('openid profile email'),
    { key: 'offline', label: 'Refresh tokens (scope offline)', help: 'Lets the app keep people signed in with refresh tokens.', input: 'checkbox' },
    { key: 'cacheType', label: 'User cache', help: 'Where the app keeps the signed-in user. Default: in memory (lost on reload).', input: 'select', options: [{ value: 'in_memory', label: 'In memory' }, { value: 'session_storage', label: 'Session storage' }] },
    CLIENT_ID,
  ],
  api: [
    NAME_FIELD, DISPLAY_NAME,
    { key: 'audience', label: 'Audience (identifier)', help: 'The aud value the API accepts in access tokens, e.g. https://orders.example.com.', input: 'text', required: true },
    { key: 'routes', label: 'Protected routes', help: 'One route per line: a path, then the scopes it requires, e.g. "/admin admin". Scopes must be defined by the tenant.', input: 'routes' },
    { key: 'publicRoutes', label: 'Public routes', help: 'Paths that need no token, separated by spaces. Default: /.', input: 'list', placeholder: '/' },
  ],
};

/** What a form posted (or what an edit form starts from): strings, and lists for multi-valued fields. */
export type FormValues = Readonly<Record<string, string | readonly string[]>>;

const str = (v: string | readonly string[] | undefined): string => (typeof v === 'string' ? v : (v?.[0] ?? '')).trim();
const words = (v: string) => v.split(/[\s,]+/).filter((w) => w !== '');

/** The form's values as the model's application spec (empty fields left out, so defaults apply). */
export function specOfForm(kind: ApplicationKind, values: FormValues): Record<string, unknown> {
  const spec: Record<string, unknown> = { name: str(values.name), kind };
  for (const f of KIND_FORMS[kind]) {
    if (f.key === 'name') continue;
    const v = values[f.key];
    switch (f.input) {
      case 'text':
      case 'url':
      case 'select':
        if (str(v) !== '') spec[f.key] = str(v);
        break;
      case 'list':
        if (words(str(v)).length > 0) spec[f.key] = words(str(v));
        break;
      case 'checkbox':
        if (str(v) === 'on') spec[f.key] = true;
        break;
      case 'apis': {
        const list = (typeof v === 'string' ? [v] : (v ?? [])).filter((x) => x !== '');
        if (list.length > 0) spec[f.key] = [...list];
        break;
      }
      case 'routes': {
        const routes = str(v).split('\n').map((l) => words(l)).filter((w) => w.length > 0).map(([path, ...sc]) => ({ path: path!, scopes: sc }));
        if (routes.length > 0) spec[f.key] = routes;
        break;
      }
    }
  }
  return spec;
}

/** An application spec (as exported from the live state) as form values, for the edit form. */
export function formOfSpec(app: AppInput): Record<string, string | string[]> {
  const a = app as Record<string, unknown>;
  const out: Record<string, string | string[]> = {};
  for (const f of KIND_FORMS[app.kind]) {
    const v = a[f.key];
    if (v === undefined) continue;
    if (f.input === 'list') out[f.key] = (v as string[]).join(' ');
    else if (f.input === 'apis') out[f.key] = [...(v as string[])];
    else if (f.input === 'checkbox') out[f.key] = v === true ? 'on' : '';
    else if (f.input === 'routes') out[f.key] = (v as { path: string; scopes: string[] }[]).map((r) => [r.path, ...r.scopes].join(' ')).join('\n');
    else out[f.key] = String(v);
  }
  return out;
}

/** Admin API body fields → the form field a person changes to fix them. */
const BODY_FIELD: Readonly<Record<string, string>> = {
  redirectUris: 'origin', postLogoutRedirectUris: 'origin', clientId: 'clientId', scopes: 'scopes', displayName: 'displayName', identifier: 'audience', audience: 'audience',
};

/** Problems per field; `form` for those that name no field of this form. */
export type FieldErrors = Record<string, string[]>;

function add(errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).includes(message) || errors[field]!.push(message);
}

/** A model problem at `tenants[0].applications[index].<field>...` → that field; others of this app → form. */
export function modelProblemsToFields(kind: ApplicationKind, index: number, problems: readonly { path: Path; message: string }[]): FieldErrors {
  const errors: FieldErrors = {};
  const keys = new Set(KIND_FORMS[kind].map((f) => f.key));
  for (const p of problems) {
    const [t, ti, apps, ai, field] = p.path;
    if (t !== 'tenants' || ti !== 0 || apps !== 'applications' || ai !== index) continue;
    add(errors, typeof field === 'string' && keys.has(field) ? field : 'form', p.message);
  }
  return errors;
}

/** The admin API's problems (body paths such as `redirectUris[0]`) → fields. */
export function apiProblemsToFields(kind: ApplicationKind, problems: readonly { path: string; message: string }[]): FieldErrors {
  const errors: FieldErrors = {};
  const keys = new Set(KIND_FORMS[kind].map((f) => f.key));
  for (const p of problems) {
    const head = /^[A-Za-z]+/.exec(p.path)?.[0] ?? '';
    const field = BODY_FIELD[head] ?? head;
    add(errors, keys.has(field) ? field : field === 'clientId' ? 'name' : 'form', p.message);
  }
  return errors;
}
