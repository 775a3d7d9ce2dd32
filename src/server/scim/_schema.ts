/**
 * The SCIM schemas this server serves (RFC 7643), as one table of attributes per resource type. The
 * table is the one source for: the /Schemas documents, what a request may write (names resolved
 * without regard to case, types checked, read-only attributes refused), which comparisons ignore
 * case (filters, sorting, uniqueness), and what is returned (`returned`).
 *
 * Only attributes this server keeps are published, so a client never sends one that is silently
 * dropped. Users: the core User schema without ims, photos, entitlements, roles and
 * x509Certificates. Groups: displayName and members (users; nested groups are not supported).
 */

export const URN = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  searchRequest: 'urn:ietf:params:scim:api:messages:2.0:SearchRequest',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
} as const;

export type AttrType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex';
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
}

const str = (name: string, description: string, extra: Partial<Attr> = {}): Attr => ({ name, type: 'string', description, ...extra });
const primary: Attr = { name: 'primary', type: 'boolean', description: "Whether this value is the preferred one; 'true' at most once" };
const display = (what: string): Attr => str('display', `A human-readable name for the ${what}`);

/** A multi-valued attribute of typed values (emails, phoneNumbers), as RFC 7643 §2.4 shapes them. */
const typedValues = (name: string, description: string, types: readonly string[], extra: Partial<Attr> = {}): Attr => ({
  name, type: 'complex', multiValued: true, description, ...extra,
  subAttributes: [
    str('value', `The ${name} value`, { required: true }),
    display(name.replace(/s$/, '')),
    str('type', 'A label for the function of the value', { canonicalValues: types }),
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
];

export const GROUP_ATTRIBUTES: readonly Attr[] = [
  str('displayName', 'The name of the group, unique in the tenant without regard to case', { required: true, uniqueness: 'server', maxLength: 256 }),
  {
    name: 'members', type: 'complex', multiValued: true, description: "The group's members: users of the tenant. A member who leaves loses the group's access to applications.",
    subAttributes: [
      str('value', 'The id of the member user', { mutability: 'immutable', caseExact: true, required: true }),
      { name: '$ref', type: 'reference', referenceTypes: ['User'], mutability: 'immutable', caseExact: true, description: 'The URI of the member' },
      str('type', 'The type of member: User (groups cannot be members)', { mutability: 'immutable', canonicalValues: ['User'] }),
    ],
  },
];

export type ResourceKind = 'User' | 'Group';

export interface ResourceTypeSpec {
  readonly name: ResourceKind;
  readonly endpoint: string;
  readonly schema: string;
  readonly description: string;
  readonly attributes: readonly Attr[];
}

export const RESOURCE_TYPES: Readonly<Record<ResourceKind, ResourceTypeSpec>> = {
  User: { name: 'User', endpoint: '/Users', schema: URN.user, description: 'A person who may sign in to applications of the tenant', attributes: USER_ATTRIBUTES },
  Group: { name: 'Group', endpoint: '/Groups', schema: URN.group, description: 'Users whose access to applications follows their membership', attributes: GROUP_ATTRIBUTES },
};

/** The attributes of a resource type, common ones included. */
export const attributesOf = (kind: ResourceKind): readonly Attr[] => [...COMMON, ...RESOURCE_TYPES[kind].attributes];

/** An attribute by name, without regard to case (RFC 7643 §2.1). */
export function findAttr(attrs: readonly Attr[] | undefined, name: string): Attr | undefined {
  const n = name.toLowerCase();
  return attrs?.find((a) => a.name.toLowerCase() === n);
}

/**
 * An attribute path (`name.givenName`, `urn:...:User:userName`, `emails.value`) resolved against a
 * resource type: the attribute, its sub-attribute if any, and the canonical path. Undefined when
 * it names nothing this server keeps.
 */
export function resolvePath(kind: ResourceKind, path: string): { attr: Attr; sub?: Attr; canonical: string } | undefined {
  let rest = path;
  const urn = RESOURCE_TYPES[kind].schema;
  if (rest.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) rest = rest.slice(urn.length + 1);
  else if (/^urn:/i.test(rest)) return undefined;
  const [head, subName, ...more] = rest.split('.');
  if (head === undefined || more.length > 0) return undefined;
  const attr = findAttr(attributesOf(kind), head);
  if (attr === undefined) return undefined;
  if (subName === undefined) return { attr, canonical: attr.name };
  const sub = findAttr(attr.subAttributes, subName);
  return sub === undefined ? undefined : { attr, sub, canonical: `${attr.name}.${sub.name}` };
}

const isCaseExact = (a: Attr) => a.caseExact ?? a.type !== 'string';
/** Whether values of this attribute compare without regard to case. */
export const ignoresCase = (a: Attr): boolean => (a.type === 'string' || a.type === 'reference') && !isCaseExact(a);

/** An attribute as RFC 7643 §7 describes it, with every characteristic spelled out. */
function describe(a: Attr): Record<string, unknown> {
  return {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description,
    required: a.required ?? false,
    ...(a.type === 'string' || a.type === 'reference' ? { caseExact: isCaseExact(a) } : {}),
    ...(a.canonicalValues === undefined ? {} : { canonicalValues: [...a.canonicalValues] }),
    ...(a.referenceTypes === undefined ? {} : { referenceTypes: [...a.referenceTypes] }),
    mutability: a.mutability ?? 'readWrite',
    returned: a.returned ?? 'default',
    uniqueness: a.uniqueness ?? 'none',
    ...(a.subAttributes === undefined ? {} : { subAttributes: a.subAttributes.map(describe) }),
  };
}

/** The /Schemas resources: User and Group (common attributes are not part of a schema, RFC 7643 §3.1). */
export function schemaResources(location: (path: string) => string): Record<string, unknown>[] {
  return Object.values(RESOURCE_TYPES).map((t) => ({
    schemas: [URN.schema],
    id: t.schema,
    name: t.name,
    description: t.description,
    attributes: t.attributes.map(describe),
    meta: { resourceType: 'Schema', location: location(`/Schemas/${t.schema}`) },
  }));
}

export function resourceTypeResources(location: (path: string) => string): Record<string, unknown>[] {
  return Object.values(RESOURCE_TYPES).map((t) => ({
    schemas: [URN.resourceType],
    id: t.name,
    name: t.name,
    endpoint: t.endpoint,
    description: t.description,
    schema: t.schema,
    schemaExtensions: [],
    meta: { resourceType: 'ResourceType', location: location(`/ResourceTypes/${t.name}`) },
  }));
}
