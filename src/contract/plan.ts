/**
 * The provisioning plan: the admin API calls that make a server match a model. Each step names its
 * object by typed identity fields (tenant, application, user); the admin client turns those into
 * requests, and people read them through `stepName`.
 */
import type { ApplicationBody, AssignmentBody, TenantBody, UserBody } from './bodies.ts';
import type { WebhookBody } from './webhooks.ts';

export type AdminResourceKind = 'tenant' | 'application' | 'user' | 'assignment' | 'group assignment' | 'webhook';

export interface TenantRef { readonly kind: 'tenant'; readonly tenant: string }
export interface ApplicationRef { readonly kind: 'application'; readonly tenant: string; readonly application: string }
export interface UserRef { readonly kind: 'user'; readonly tenant: string; readonly user: string }
export interface AssignmentRef { readonly kind: 'assignment'; readonly tenant: string; readonly application: string; readonly user: string }
/** A group's access to an application (the model never declares these: its groups become user assignments). */
export interface GroupAssignmentRef { readonly kind: 'group assignment'; readonly tenant: string; readonly application: string; readonly group: string }
/** A tenant's webhook (src/contract/webhooks.ts). */
export interface WebhookRef { readonly kind: 'webhook'; readonly tenant: string; readonly webhook: string }
/** One object of the admin API, by identity. */
export type ResourceRef = TenantRef | ApplicationRef | UserRef | AssignmentRef | GroupAssignmentRef | WebhookRef;

/** One idempotent call of the provisioning plan. */
export type PlanStep =
  | (TenantRef & { readonly op: 'put'; readonly body: TenantBody })
  | (ApplicationRef & { readonly op: 'put'; readonly body: ApplicationBody })
  | (UserRef & { readonly op: 'put'; readonly body: UserBody })
  | (AssignmentRef & { readonly op: 'put'; readonly body: AssignmentBody })
  | (WebhookRef & { readonly op: 'put'; readonly body: WebhookBody })
  | (ResourceRef & { readonly op: 'delete' });

export type PutStep = Extract<PlanStep, { op: 'put' }>;

/** The calls, in dependency order, that make a server match a model. */
export interface ProvisioningPlan {
  readonly version: 2;
  readonly steps: readonly PlanStep[];
}

/** `acme`, `acme/portal`, `acme/u-alice`, `acme/portal/u-alice`: how a person reads a reference. */
export function stepName(ref: ResourceRef): string {
  switch (ref.kind) {
    case 'tenant':
      return ref.tenant;
    case 'application':
      return `${ref.tenant}/${ref.application}`;
    case 'user':
      return `${ref.tenant}/${ref.user}`;
    case 'assignment':
      return `${ref.tenant}/${ref.application}/${ref.user}`;
    case 'group assignment':
      return `${ref.tenant}/${ref.application}/group ${ref.group}`;
    case 'webhook':
      return `${ref.tenant}/webhooks/${ref.webhook}`;
  }
}

/** A stable key per object, for sets and maps (not for display and never parsed). */
export function refKey(ref: ResourceRef): string {
  return JSON.stringify([ref.kind, ref.tenant, 'application' in ref ? ref.application : '', 'user' in ref ? ref.user : '', 'group' in ref ? ref.group : '', 'webhook' in ref ? ref.webhook : '']);
}

/** Just the identity fields of a step. */
export function refOf(step: ResourceRef): ResourceRef {
  switch (step.kind) {
    case 'tenant':
      return { kind: 'tenant', tenant: step.tenant };
    case 'application':
      return { kind: 'application', tenant: step.tenant, application: step.application };
    case 'user':
      return { kind: 'user', tenant: step.tenant, user: step.user };
    case 'assignment':
      return { kind: 'assignment', tenant: step.tenant, application: step.application, user: step.user };
    case 'group assignment':
      return { kind: 'group assignment', tenant: step.tenant, application: step.application, group: step.group };
    case 'webhook':
      return { kind: 'webhook', tenant: step.tenant, webhook: step.webhook };
  }
}
