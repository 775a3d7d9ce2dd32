/**
 * The console's only way to the tenant's data: the admin API over HTTP, through the one typed
 * client, fixed to ONE tenant. The console server side holds the server's bootstrap admin
 * credentials (never sent to a browser); every call it makes for a signed-in administrator goes
 * through this class, which takes no tenant from its callers: the tenant is the Host the
 * administrator signed in at, set once when the request is routed. Operations without a tenant
 * (listing all tenants) cannot be named here at all.
 */
import { AdminClient, readLiveTenant, type CallOptions, type LiveTenantState } from '../admin-client/index.ts';
import { MANAGED_BY_CONSOLE, type AdminCredentials, type RouteName, type RouteParams, type RouteResponse } from '../contract/index.ts';
import { endpointFromCredentials } from '../admin-client/index.ts';

/** Operations whose path names a tenant. */
type TenantRoute = { [R in RouteName]: 'tenant' extends keyof RouteParams<R> ? R : never }[RouteName];
type Within<R extends RouteName> = Omit<RouteParams<R>, 'tenant'>;

export class TenantAdmin {
  constructor(
    private readonly client: AdminClient,
    readonly tenant: string,
  ) {}

  #params<R extends TenantRoute>(params: Within<R>): RouteParams<R> {
    // The tenant last: a caller cannot smuggle another one in, whatever it passes.
    return { ...(params as object), tenant: this.tenant } as unknown as RouteParams<R>;
  }

  call<R extends TenantRoute>(name: R, params: Within<R>, opts?: CallOptions<R>): Promise<RouteResponse<R>> {
    return this.client.call(name, this.#params<R>(params), opts);
  }

  find<R extends TenantRoute>(name: R, params: Within<R>): Promise<RouteResponse<R> | undefined> {
    return this.client.find(name, this.#params<R>(params));
  }

  listAll<R extends 'listApplications' | 'listUsers' | 'listAssignments'>(name: R, params: Within<R>) {
    return this.client.listAll(name, this.#params<R>(params));
  }

  live(): Promise<LiveTenantState | undefined> {
    return readLiveTenant(this.client, this.tenant);
  }

  /** The same tenant, with every write said to be the console's, made by this administrator (the event log's actor). */
  actingAs(userId: string): TenantAdmin {
    return new TenantAdmin(this.client.as({ manager: MANAGED_BY_CONSOLE, who: userId }), this.tenant);
  }
}

/** One admin client per server process, made at first use from the credentials the server wrote. */
export function adminClientFor(credentials: () => AdminCredentials | undefined): () => AdminClient {
  let client: AdminClient | undefined;
  return () => {
    if (client === undefined) {
      const c = credentials();
      if (c === undefined) throw new Error('the admin console is used before the server wrote its admin credentials');
      client = new AdminClient(endpointFromCredentials(c));
    }
    return client;
  };
}
