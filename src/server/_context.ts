/** What every part of the server shares: storage, master key, public address. Built once by startServer. */
import type { EdgeApp, EdgeHost, ServerAddress } from '../contract/index.ts';
import type { MasterKey } from './_crypto.ts';
import type { TokenSettings } from './config.ts';
import type { SigningAlg } from './keys.ts';
import type { LoginSettings } from './login/options.ts';
import type { ScimSettings } from './scim/options.ts';
import type { Storage } from './storage/types.ts';

export interface ServerContext {
  readonly storage: Storage;
  readonly master: MasterKey;
  /** The public address; known only once the server listens (port 0 picks one). */
  readonly address: () => ServerAddress;
  readonly keyAlg: SigningAlg;
  readonly log: (line: string) => void;
  /** Guessing defence, emailed codes and mail delivery (login/options.ts). */
  readonly login: LoginSettings;
  /** Access token lifetime and refresh token reuse grace (config.ts). */
  readonly tokens: TokenSettings;
  /** The SCIM endpoint's rate limit (scim/options.ts); absent: the defaults. */
  readonly scim?: ScimSettings;
  /** Drops a tenant's cached oidc-provider so the next request sees new keys, scopes or settings. */
  readonly evictTenant: (tenant: string) => void;
  /** Apps the entry point mounted at the edge (the admin console), and what the server offers them. */
  readonly edge: readonly EdgeApp[];
  readonly edgeHost: EdgeHost;
}
