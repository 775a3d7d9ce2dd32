/** The one typed client of idforge's admin API, and a fetch that resolves `*.localhost` itself. */
export {
  AdminClient, AdminApiError, readAdminCredentials, endpointFromCredentials, fetchAdminToken, mapLimit,
  type AdminConnection, type AdminEndpoint, type CallOptions, type RawResponse,
} from './client.ts';
export { localhostFetch } from './fetch.ts';
export { readLiveTenant, type LiveTenantState } from './live-tenant.ts';
