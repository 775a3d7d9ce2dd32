/**
 * One tenant's whole live state through the admin API: the tenant, its applications, users and
 * every client application's assignments. `idforge export` writes it as a model; the console shows
 * it and proposes changes against it.
 */
import type { ApplicationView, AssignmentView, TenantView, UserView, WebhookView } from '../contract/index.ts';
import type { AdminClient } from './client.ts';

export interface LiveTenantState {
  readonly tenant: TenantView;
  readonly applications: readonly ApplicationView[];
  readonly users: readonly UserView[];
  /** Per client application name (apis have none). */
  readonly assignments: Readonly<Record<string, readonly AssignmentView[]>>;
  readonly webhooks: readonly WebhookView[];
}

/** The tenant's live state, or undefined when it does not exist. */
export async function readLiveTenant(client: AdminClient, tenant: string): Promise<LiveTenantState | undefined> {
  const t = await client.find('getTenant', { tenant });
  if (t === undefined) return undefined;
  const applications = (await client.listAll('listApplications', { tenant })) ?? [];
  const users = (await client.listAll('listUsers', { tenant })) ?? [];
  const assignments: Record<string, readonly AssignmentView[]> = {};
  for (const a of applications) {
    if (a.kind !== 'api') assignments[a.name] = (await client.listAll('listAssignments', { tenant, application: a.name })) ?? [];
  }
  const webhooks = (await client.call('listWebhooks', { tenant })).items;
  return { tenant: t, applications, users, assignments, webhooks };
}
