/**
 * When a file fails the schema, keep the entities that are valid so the semantic checks can still
 * run: the admin then sees shape and reference mistakes in one pass, not one layer per run.
 *
 * Invalid entities are dropped; their names are remembered so that a reference to them is not
 * reported as "not defined" (it is defined, just broken, and that is reported already). Index maps
 * turn positions in the filtered lists back into positions in the file.
 */
import { ServerSpec, TenantSpec, UserSpec, GroupSpec, ApplicationSpec, AssignmentSpec, ScopeSpec, WebhookSpec, type ModelFile } from './model.ts';
import type { z } from 'zod';

const ENTITY_LISTS = {
  scopes: { schema: ScopeSpec, key: 'name' },
  users: { schema: UserSpec, key: 'id' },
  groups: { schema: GroupSpec, key: 'name' },
  applications: { schema: ApplicationSpec, key: 'name' },
  assignments: { schema: AssignmentSpec, key: 'application' },
  webhooks: { schema: WebhookSpec, key: 'name' },
} as const satisfies Record<string, { schema: z.ZodType; key: string }>;

export type ListName = keyof typeof ENTITY_LISTS;

export interface SalvagedTenant {
  readonly tenant: TenantSpec;
  /** Per list, filtered index → index in the file. */
  readonly indexMaps: Readonly<Record<ListName, readonly number[]>>;
  /** Names and ids of dropped entities (and of the tenant itself when its fields were invalid). */
  readonly broken: ReadonlySet<string>;
}

export interface SalvagedFile {
  readonly server: ModelFile['server'];
  readonly tenants: readonly SalvagedTenant[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function salvageTenant(raw: unknown, index: number): SalvagedTenant {
  const broken = new Set<string>();
  const empty = { scopes: [], users: [], groups: [], applications: [], assignments: [], webhooks: [] };
  const indexMaps: Record<ListName, number[]> = { scopes: [], users: [], groups: [], applications: [], assignments: [], webhooks: [] };
  if (!isRecord(raw)) {
    // A stub that yields no problems of its own and a name no real tenant can have.
    return { tenant: { name: `#${index}`, displayName: '#', unmanaged: 'remove', ...empty }, indexMaps, broken };
  }
  const lists: Record<string, unknown[]> = {};
  for (const [list, { schema, key }] of Object.entries(ENTITY_LISTS) as Array<[ListName, (typeof ENTITY_LISTS)[ListName]]>) {
    const items = Array.isArray(raw[list]) ? (raw[list] as unknown[]) : [];
    lists[list] = [];
    items.forEach((item, i) => {
      const r = (schema as z.ZodType).safeParse(item);
      if (r.success) {
        lists[list]!.push(r.data);
        indexMaps[list].push(i);
      } else if (isRecord(item) && typeof item[key] === 'string') {
        broken.add(item[key] as string);
      }
    });
  }
  const name = typeof raw.name === 'string' ? raw.name : `#${index}`;
  const displayName = typeof raw.displayName === 'string' && raw.displayName !== '' ? raw.displayName : name;
  const parsed = TenantSpec.safeParse({ name, displayName, ...lists });
  const tenant = parsed.success ? parsed.data : ({ name, displayName, ...lists } as unknown as TenantSpec);
  return { tenant, indexMaps, broken };
}

export function salvageFile(raw: Record<string, unknown>): SalvagedFile {
  const server = ServerSpec.safeParse(raw.server);
  const tenants = Array.isArray(raw.tenants) ? raw.tenants.map(salvageTenant) : [];
  return { server: raw.server === undefined || !server.success ? undefined : server.data, tenants };
}

export function identityMaps(t: TenantSpec): Record<ListName, number[]> {
  const seq = (n: number) => Array.from({ length: n }, (_, i) => i);
  return {
    scopes: seq(t.scopes.length),
    users: seq(t.users.length),
    groups: seq(t.groups.length),
    applications: seq(t.applications.length),
    assignments: seq(t.assignments.length),
    webhooks: seq(t.webhooks.length),
  };
}
