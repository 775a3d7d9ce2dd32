/**
 * The SCIM schemas this server serves (RFC 7643), as one table of attributes per resource type. The
 * table is the one source for: the /Schemas documents, what a request may write (names resolved
 * without regard to case, types checked, read-only attributes refused), which comparisons ignore
 * case (filters, sorting, uniqueness), and what is returned (`returned`).
 *
 * Only attributes this server keeps are published, so a client never sends one that is silently
 * dropped. Users: the whole core User schema (RFC 7643 §4.1) and the enterprise extension (§4.3).
 * Groups: displayName and members (users; nested groups are not supported).
 *
 * Extension attributes are rows like any other, marked with the extension's URN (`schema`). On the
 * wire and in storage they sit in an object under that URN (§3.3); inside this module's callers
 * (values, PATCH, filters) they are handled `flatten`ed, by their plain names, which the table
 * keeps unique across a resource type's schemas (checked when this module loads).
 */

export const URN = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  enterpriseUser: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  searchRequest: 'urn:ietf:params:scim:api:messages:2.0:SearchRequest',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
} as const;

export type AttrType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'binary' | 'complex';
export type Mutability = 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
export type Returned = 'always' | 'never' | 'default' | 'request';

export interface Attr {
  readonly name: string;
  readonly type: AttrType;
  readonly description: string;
  readonly multiValued?: boolean;
  readonly required?: boolean;
  /** Default false for strings: compared, sorted and kept unique without regard to case. */
  readonly caseExact?: boolean;
  readonly mutability?: Mutability;
  readonly returned?: Returned;
  readonly uniqueness?: 'none' | 'server' | 'global';
  readonly canonicalValues?: readonly string[];
  readonly referenceTypes?: readonly string[];
  readonly subAttributes?: readonly Attr[];
  /** Longest string value accepted (characters). Default 1024. */
  readonly maxLength?: number;
  /** The schema extension the attribute belongs to (its URN); undefined for the resource type's own schema and the common attributes. */
  readonly schema?: string;
}

const str = (name: string, description: string, extra: Partial<Attr> = {}): Attr => ({ name, type: 'string', description, ...extra });
const primary: Attr = { name: 'primary', type: 'boolean', description: "Whether this value is the preferred one; 'true' at most once" };
const display = (what: string): Attr => str('display', `A human-readable name for the ${what}`);

/** A multi-valued attribute of typed values (emails, phoneNumbers, roles, ...), as RFC 7643 §2.4 shapes them. */
const typedValues = (name: string, description: string, types: readonly string[] | undefined, extra: Partial<Attr> = {}, value: Partial<Attr> = {}): Attr => ({
  name, type: 'complex', multiValued: true, description, ...extra,
  subAttributes: [
    str('value', `The ${name} value`, { required: true, ...value }),
    display(name.replace(/s$/, '')),
    str('type', 'A label for the function of the value', types === undefined ? {} : { canonicalValues: types }),
    primary,
  ],
});

/** Attributes every resource has (RFC 7643 §3.1). */
export const COMMON: readonly Attr[] = [
  str('id', 'Identifier of the resource, assigned by the server; stable for its lifetime', { caseExact: true, mutability: 'readOnly', returned: 'always', uniqueness: 'server' }),
  str('externalId', "The resource's identifier in the provisioning client's system", { caseExact: true, maxLength: 256 }),
  {
    name: 'meta', type: 'complex', mutability: 'readOnly', description: 'Resource metadata',
    subAttributes: [
      str('resourceType', 'The resource type', { caseExact: true, mutability: 'readOnly' }),
      { name: 'created', type: 'dateTime', mutability: 'readOnly', description: 'When the resource was added' },
      { name: 'lastModified', type: 'dateTime', mutability: 'readOnly', description: 'When the resource was last changed' },
      { name: 'location', type: 'reference', referenceTypes: ['uri'], caseExact: true, mutability: 'readOnly', description: 'The URI of the resource' },
      str('version', 'The version (entity tag) of the resource', { caseExact: true, mutability: 'readOnly' }),
    ],
  },
];

export const USER_ATTRIBUTES: readonly Attr[] = [
  str('userName', 'Unique identifier of the user for the provisioning client, unique in the tenant without regard to case. Kept as given; the user signs in with their email (see emails).', {
    required: true, uniqueness: 'server', maxLength: 256,
  }),
  {
    name: 'name', type: 'complex', description: "The components of the user's name",
    subAttributes: [
      str('formatted', 'The full name, formatted for display'),
      str('familyName', 'The family name'),
      str('givenName', 'The given name'),
      str('middleName', 'The middle name(s)'),
      str('honorificPrefix', 'The honorific prefix(es), e.g. Ms.'),
      str('honorificSuffix', 'The honorific suffix(es), e.g. III'),
    ],
  },
  str('displayName', 'The name of the user, suitable for display; the name in ID tokens', { maxLength: 128 }),
  str('nickName', 'The casual way to address the user'),
  { name: 'profileUrl', type: 'reference', referenceTypes: ['external'], description: "A URI of the user's online profile" },
  str('title', "The user's title, e.g. Vice President"),
  str('userType', "The relationship between the organization and the user, e.g. Employee"),
  str('preferredLanguage', "The user's preferred written or spoken language"),
  str('locale', "The user's default location, for localizing items such as currency"),
  str('timezone', "The user's time zone, in IANA Time Zone database format"),
  { name: 'active', type: 'boolean', description: "Whether the user may sign in. An inactive user's sessions and tokens end at once." },
  str('password', "The user's password: set, never returned. Hashed with argon2id.", { mutability: 'writeOnly', returned: 'never', caseExact: true }),
  typedValues('emails', "Email addresses of the user. Required: the primary one (or the only one) is the address the user signs in with, unique in the tenant.",
    ['work', 'home', 'other'], { required: true }),
  typedValues('phoneNumbers', 'Phone numbers of the user', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
  typedValues('ims', 'Instant messaging addresses of the user', ['aim', 'gtalk', 'icq', 'xmpp', 'msn', 'skype', 'qq', 'yahoo']),
  typedValues('photos', "URLs of photos of the user", ['photo', 'thumbnail'], {}, { type: 'reference', referenceTypes: ['external'], caseExact: true }),
  {
    name: 'addresses', type: 'complex', multiValued: true, description: 'Physical mailing addresses of the user',
    subAttributes: [
      str('formatted', 'The full mailing address, formatted for display'),
      str('streetAddress', 'The full street address'),
      str('locality', 'The city or locality'),
      str('region', 'The state or region'),
      str('postalCode', 'The zip code or postal code'),
      str('country', 'The country name (ISO 3166-1 alpha-2)'),
      str('type', 'A label for the function of the address', { canonicalValues: ['work', 'home', 'other'] }),
      primary,
    ],
  },
  {
    name: 'groups', type: 'complex', multiValued: true, mutability: 'readOnly', description: 'The groups the user is a member of; change them through the groups',
    subAttributes: [
      str('value', 'The id of the group', { mutability: 'readOnly', caseExact: true }),
      { name: '$ref', type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly', caseExact: true, description: 'The URI of the group' },
      str('display', 'The display name of the group', { mutability: 'readOnly' }),
      str('type', 'How the user is a member: directly', { mutability: 'readOnly', canonicalValues: ['direct'] }),
    ],
  },
  // Kept and returned as written. They grant nothing here: access to applications follows
  // assignments and groups, scopes follow the model (a role named "admin" is a label, not a scope).
  typedValues('entitlements', 'Entitlements of the user, kept as written; they grant nothing here (access follows assignments and groups)', undefined),
  typedValues('roles', 'Roles of the user, kept as written; they grant nothing here (access follows assignments and groups)', undefined),
  typedValues('x509Certificates', 'X.509 certificates of the user (DER, base64-encoded), kept as written; not used to sign in', undefined, {},
    // A certificate of 4096-bit RSA with the usual extensions is about 2,000 base64 characters.
    { type: 'binary', maxLength: 8192 }),
];

/**
 * The enterprise User extension (RFC 7643 §4.3). `manager.displayName` is read-only (§4.3): the
 * server fills it in from the user that `manager.value` names, when that user is in the tenant.
 */
export const ENTERPRISE_USER_ATTRIBUTES: readonly Attr[] = ([
  str('employeeNumber', 'A number or other identifier assigned to the person by the organization, e.g. in order of hire'),
  str('costCenter', 'The name of a cost center'),
  str('organization', 'The name of an organization'),
  str('division', 'The name of a division'),
  str('department', 'The name of a department'),
  {
    name: 'manager', type: 'complex', description: "The user's manager: another user of the tenant, by id",
    subAttributes: [
      str('value', 'The id of the manager (a user of this tenant)', { caseExact: true }),
      { name: '$ref', type: 'reference', referenceTypes: ['User'], caseExact: true, description: 'The URI of the manager' },
      // Returned on request (`attributes=...:manager.displayName`): a client that compares what it
      // wrote with what it reads back (scim2-tester does) never sees a value it did not write.
      str('displayName', "The manager's displayName, filled in by the server from the user named by value; returned when asked for", { mutability: 'readOnly', returned: 'request' }),
    ],
  },
] satisfies Attr[]).map((a): Attr => ({ ...a, schema: URN.enterpriseUser }));

export const GROUP_ATTRIBUTES: readonly Attr[] = [
  str('displayName', 'The name of the group, unique in the tenant without regard to case', { required: true, uniqueness: 'server', maxLength: 256 }),
  {
    name: 'members', type: 'complex', multiValued: true, description: "The group's members: users of the tenant. A member who leaves loses the group's access to applications.",
    subAttributes: [
      str('value', 'The id of the member user', { mutability: 'immutable', caseExact: true, required: true }),
      { name: '$ref', type: 'reference', referenceTypes: ['User'], mutability: 'immutable', caseExact: true, description: 'The URI of the member' },
      str('type', 'The type of member: User (groups cannot be members)', { mutability: 'immutable', canonicalValues: ['User'] }),
      // RFC 7643 §2.4's default sub-attribute (§8.4's example sends it): accepted, and answered
      // with the member's current name rather than the one a client once sent.
      // Returned on request (`attributes=members.display`), as manager.displayName.
      str('display', "The member's displayName (else userName), filled in by the server; returned when asked for", { mutability: 'readOnly', returned: 'request' }),
    ],
  },
];

export type ResourceKind = 'User' | 'Group';

/** A schema extension of a resource type (RFC 7643 §3.3): its attributes sit under its URN. */
export interface ExtensionSpec {
  readonly schema: string;
  readonly name: string;
  readonly description: string;
  /** Whether every resource must carry it (ResourceTypes `schemaExtensions[].required`). */
  readonly required: boolean;
  readonly attributes: readonly Attr[];
}

/** A schema URI a client may list in `schemas` that names no attribute here: accepted, not echoed. */
export interface ToleratedSchema {
  readonly uri: string;
  /** Who sends it, and where that is documented. */
  readonly why: string;
}

export interface ResourceTypeSpec {
  readonly name: ResourceKind;
  readonly endpoint: string;
  readonly schema: string;
  readonly description: string;
  readonly attributes: readonly Attr[];
  readonly extensions: readonly ExtensionSpec[];
  readonly tolerated: readonly ToleratedSchema[];
}

export const ENTERPRISE_USER: ExtensionSpec = {
  schema: URN.enterpriseUser, name: 'EnterpriseUser', required: false,
  description: 'Attributes of a person in an organization (RFC 7643 §4.3)', attributes: ENTERPRISE_USER_ATTRIBUTES,
};

export const RESOURCE_TYPES: Readonly<Record<ResourceKind, ResourceTypeSpec>> = {
  User: {
    name: 'User', endpoint: '/Users', schema: URN.user, description: 'A person who may sign in to applications of the tenant',
    attributes: USER_ATTRIBUTES, extensions: [ENTERPRISE_USER], tolerated: [],
  },
  Group: {
    name: 'Group', endpoint: '/Groups', schema: URN.group, description: 'Users whose access to applications follows their membership',
    attributes: GROUP_ATTRIBUTES, extensions: [],
    tolerated: [{
      uri: 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group',
      why: "Microsoft Entra ID lists it in the schemas of a group it creates (Entra's SCIM tutorial, \"Create Group\"); it defines no attribute",
    }],
  },
};

/** The attributes of a resource type: common ones, its schema's, and its extensions' (marked with `schema`). */
export const attributesOf = (kind: ResourceKind): readonly Attr[] => ALL_ATTRIBUTES[kind];
const ALL_ATTRIBUTES: Readonly<Record<ResourceKind, readonly Attr[]>> = {
  User: [...COMMON, ...RESOURCE_TYPES.User.attributes, ...RESOURCE_TYPES.User.extensions.flatMap((e) => e.attributes)],
  Group: [...COMMON, ...RESOURCE_TYPES.Group.attributes, ...RESOURCE_TYPES.Group.extensions.flatMap((e) => e.attributes)],
};

// Plain names must stay unique across a resource type's schemas: flattened extension attributes
// and unqualified paths depend on it. A future extension that reuses a core name fails here, loudly.
for (const [kind, attrs] of Object.entries(ALL_ATTRIBUTES)) {
  const seen = new Set<string>();
  for (const a of attrs) {
    if (seen.has(a.name.toLowerCase())) throw new Error(`SCIM schema table: ${kind} has two attributes named ${a.name}`);
    seen.add(a.name.toLowerCase());
  }
}

/** An attribute by name, without regard to case (RFC 7643 §2.1). */
export function findAttr(attrs: readonly Attr[] | undefined, name: string): Attr | undefined {
  const n = name.toLowerCase();
  return attrs?.find((a) => a.name.toLowerCase() === n);
}

/** The extension of a resource type with this URN (without regard to case), if any. */
export function extensionNamed(kind: ResourceKind, urn: string): ExtensionSpec | undefined {
  const u = urn.toLowerCase();
  return RESOURCE_TYPES[kind].extensions.find((e) => e.schema.toLowerCase() === u);
}

/**
 * The attributes a schema URN prefix makes available (RFC 7644 §3.10): none given, every attribute
 * of the type (extension attributes by their plain names too: the RFC asks clients to qualify them,
 * SHOULD, and Entra's own examples send `manager` unqualified; names are unique, so it is never
 * ambiguous); the resource type's URN, the common and core attributes; an extension's URN, its own.
 * Undefined: a schema this resource type does not have.
 */
export function attributesUnder(kind: ResourceKind, urn: string | undefined): readonly Attr[] | undefined {
  if (urn === undefined) return attributesOf(kind);
  if (urn.toLowerCase() === RESOURCE_TYPES[kind].schema.toLowerCase()) return [...COMMON, ...RESOURCE_TYPES[kind].attributes];
  return extensionNamed(kind, urn)?.attributes;
}

/** `urn:...:User:name.givenName` → the URN and `name.givenName`, for the URNs of this resource type; `urn` is undefined for a plain path. */
function splitSchema(kind: ResourceKind, path: string): { urn?: string; rest: string } | undefined {
  if (!/^urn:/i.test(path)) return { rest: path };
  const lower = path.toLowerCase();
  for (const urn of [RESOURCE_TYPES[kind].schema, ...RESOURCE_TYPES[kind].extensions.map((e) => e.schema)]) {
    if (lower.startsWith(`${urn.toLowerCase()}:`)) return { urn, rest: path.slice(urn.length + 1) };
  }
  return undefined;
}

/**
 * An attribute path (`name.givenName`, `urn:...:User:userName`, `emails.value`,
 * `urn:...:enterprise:2.0:User:manager.value`) resolved against a resource type: the attribute,
 * its sub-attribute if any, and the canonical path (plain names: extension attributes are
 * flattened). Undefined when it names nothing this server keeps.
 */
export function resolvePath(kind: ResourceKind, path: string): { attr: Attr; sub?: Attr; canonical: string } | undefined {
  const split = splitSchema(kind, path);
  if (split === undefined) return undefined;
  const [head, subName, ...more] = split.rest.split('.');
  if (head === undefined || more.length > 0) return undefined;
  const attr = findAttr(attributesUnder(kind, split.urn), head);
  if (attr === undefined) return undefined;
  if (subName === undefined) return { attr, canonical: attr.name };
  const sub = findAttr(attr.subAttributes, subName);
  return sub === undefined ? undefined : { attr, sub, canonical: `${attr.name}.${sub.name}` };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A resource (stored, or as answered) with its extensions' attributes lifted to the top, by their
 * plain names: the form values, PATCH and filters work on. Names are already canonical.
 */
export function flatten(kind: ResourceKind, resource: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(resource)) {
    if (extensionNamed(kind, k) !== undefined) {
      if (isObject(v)) Object.assign(out, v);
    } else out[k] = v;
  }
  return out;
}

/** The inverse of `flatten`: extension attributes gathered under their extension's URN, after the others. */
export function nest(kind: ResourceKind, attrs: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const under = new Map<string, Record<string, unknown>>();
  for (const [k, v] of Object.entries(attrs)) {
    const schema = findAttr(attributesOf(kind), k)?.schema;
    if (schema === undefined) out[k] = v;
    else under.set(schema, { ...under.get(schema), [k]: v });
  }
  for (const e of RESOURCE_TYPES[kind].extensions) {
    const values = under.get(e.schema);
    if (values !== undefined) out[e.schema] = values;
  }
  return out;
}

/** `schemas` of a representation: the resource type's, and each extension it carries a value of (RFC 7643 §3). */
export function schemasOf(kind: ResourceKind, resource: Readonly<Record<string, unknown>>): string[] {
  const t = RESOURCE_TYPES[kind];
  return [t.schema, ...t.extensions.filter((e) => isObject(resource[e.schema]) && Object.keys(resource[e.schema] as object).length > 0).map((e) => e.schema)];
}

const isCaseExact = (a: Attr) => a.caseExact ?? a.type !== 'string';
/** Whether values of this attribute compare without regard to case. */
export const ignoresCase = (a: Attr): boolean => (a.type === 'string' || a.type === 'reference') && !isCaseExact(a);

/** An attribute as RFC 7643 §7 describes it, with every characteristic spelled out. */
function characteristics(a: Attr): Record<string, unknown> {
  return {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description,
    required: a.required ?? false,
    ...(a.type === 'string' || a.type === 'reference' || a.type === 'binary' ? { caseExact: isCaseExact(a) } : {}),
    ...(a.canonicalValues === undefined ? {} : { canonicalValues: [...a.canonicalValues] }),
    ...(a.referenceTypes === undefined ? {} : { referenceTypes: [...a.referenceTypes] }),
    mutability: a.mutability ?? 'readWrite',
    returned: a.returned ?? 'default',
    uniqueness: a.uniqueness ?? 'none',
    ...(a.subAttributes === undefined ? {} : { subAttributes: a.subAttributes.map(describe) }),
  };
}

/** Without the table's own mark: RFC 7643 §7 has no `schema` characteristic. */
function describe(a: Attr): Record<string, unknown> {
  const { schema: _, ...rest } = a;
  return characteristics(rest);
}

/** The /Schemas resources: User, its extensions, and Group (common attributes are not part of a schema, RFC 7643 §3.1). */
export function schemaResources(location: (path: string) => string): Record<string, unknown>[] {
  const schema = (id: string, name: string, description: string, attributes: readonly Attr[]) => ({
    schemas: [URN.schema], id, name, description, attributes: attributes.map(describe),
    meta: { resourceType: 'Schema', location: location(`/Schemas/${id}`) },
  });
  return Object.values(RESOURCE_TYPES).flatMap((t) => [
    schema(t.schema, t.name, t.description, t.attributes),
    ...t.extensions.map((e) => schema(e.schema, e.name, e.description, e.attributes)),
  ]);
}

export function resourceTypeResources(location: (path: string) => string): Record<string, unknown>[] {
  return Object.values(RESOURCE_TYPES).map((t) => ({
    schemas: [URN.resourceType],
    id: t.name,
    name: t.name,
    endpoint: t.endpoint,
    description: t.description,
    schema: t.schema,
    schemaExtensions: t.extensions.map((e) => ({ schema: e.schema, required: e.required })),
    meta: { resourceType: 'ResourceType', location: location(`/ResourceTypes/${t.name}`) },
  }));
}
