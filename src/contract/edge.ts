/**
 * Apps served at the edge of the authorization server, on every tenant host, that are not rooms of
 * the server: the admin console. The entry point (bin/idforge.js, or a test) hands them to the server,
 * which knows them only through this contract: the path it routes to them, the OpenID Connect client
 * each signs in with at a tenant, and the host services they may use. They reach the directory only
 * through the admin API (src/admin-client), as any other client does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminCredentials } from './credentials.ts';
import type { ServerAddress } from './urls.ts';

/** The tenant a request on a tenant host is for, as the server found it from the Host header. */
export interface EdgeTenant {
  readonly name: string;
  readonly displayName: string;
}

/** What the server offers an edge app: its address, log, admin credentials and keys it derives for it. */
export interface EdgeHost {
  /** The server's public address (known once it listens). */
  address(): ServerAddress;
  log(line: string): void;
  /** The server's bootstrap admin credentials, held in memory (never sent to a browser). */
  adminCredentials(): AdminCredentials | undefined;
  /** A key for one purpose, derived from the master key: the app keeps no key of its own. */
  derive(purpose: string): Buffer;
  /** Sealing (AES-256-GCM under the master key), bound to `associated` (a tenant and a purpose). */
  seal(plaintext: string, associated: string): string;
  /** Throws when the value was not sealed by this server for `associated`. */
  unseal(sealed: string, associated: string): string;
}

/** An OpenID Connect client registration, as the server's provider takes it (RFC 7591 names). */
export interface EdgeClient {
  readonly client_id: string;
  /** The secret itself; the server keeps it as it keeps any client's (a hash). */
  readonly client_secret: string;
  readonly client_name: string;
  readonly redirect_uris: readonly string[];
  readonly post_logout_redirect_uris: readonly string[];
  readonly scope: string;
}

/** A request handler as node's http server calls it, with express's `next` for "not mine". */
export type EdgeHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export interface EdgeApp {
  /** Routed to the app on every tenant host: this path and everything below it (e.g. `/console`). */
  readonly path: string;
  /**
   * The client the app signs people in with at a tenant: its id holds a character no application's
   * client id may have (':'), so it never collides with one. The assignment rule does not apply to
   * it (the app decides who it lets in); it is shown in no listing, export or plan.
   */
  readonly clientId: string;
  /** Its registration at one tenant; undefined: none there (the server's own tenant). */
  client(tenant: string, host: EdgeHost): EdgeClient | undefined;
  /** The app's handler, made once when the server starts. It reads the tenant from `tenantOf`. */
  handler(host: EdgeHost, tenantOf: (res: ServerResponse) => EdgeTenant): EdgeHandler;
}
