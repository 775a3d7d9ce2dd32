/** Pulumi resources for idforge: the server, the admin API objects, and the component over a Model. */
export { AuthServer, type AuthServerArgs, type LocalServerArgs } from './auth-server.ts';
export { Tenant, type TenantArgs } from './tenant.ts';
export { Application, type ApplicationArgs, type ApplicationSpecBody } from './application.ts';
export { TenantUsers, type TenantUsersArgs, type UserSpecBody } from './tenant-users.ts';
export { TenantAssignments, type TenantAssignmentsArgs } from './tenant-assignments.ts';
export { StableSecret, type StableSecretArgs } from './stable-secret.ts';
export { ClientConfigs, type ClientConfigsArgs } from './client-configs.ts';
export { IdentityStack, DEFAULT_PORT, type IdentityStackArgs } from './identity-stack.ts';
export type { AdminConnection } from '../admin-client/index.ts';
