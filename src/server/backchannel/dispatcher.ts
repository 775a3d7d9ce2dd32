/**
 * Back-channel logout delivery, in the background of every server process beside the webhooks':
 * every `pollMs` it reads the event log past its place, turns each revocation into the logout
 * tokens it owes (targets.ts) and queues them while moving its place, in one transaction that only
 * one process wins (BackchannelStore.queue); then it claims the due logouts (a lease, as webhook
 * deliveries) and POSTs each as `logout_token=<JWT>` (form-encoded, §2.5) to the client's
 * back-channel logout URI, under the webhooks' rules: the SSRF checks with the connection pinned to
 * the checked address, the timeout, no redirects, the retry schedule. A 200 or 204 delivers (§2.8);
 * anything else is retried, then failed.
 *
 * A committed revocation is a queued logout whatever happens to the process (the log is written in
 * the change's transaction, the place moves with the queue), and an attempt cut short is made again
 * once its lease lapses, with the same `jti`. Sign-outs at the server are queued straight away
 * (`add`, provider.ts). Writes and sign-ins never wait for any of this.
 */
import type { MasterKey } from '../_crypto.ts';
import type { LogoutRecord, Storage } from '../storage/types.ts';
import type { WebhookSettings } from '../webhooks/options.ts';
import { post } from '../webhooks/post.ts';
import { LogoutTokenSigner } from './logout-token.ts';
import { REVOCATION_EVENT_TYPES, logoutTargets } from './targets.ts';

/** Events read per turn. */
const READ_BATCH = 500;
/** Settled logouts are kept this long (for a look at what went where), then purged. */
const KEEP_SETTLED_MS = 7 * 24 * 3600 * 1000;

export class BackchannelDispatcher {
  #timer: NodeJS.Timeout | undefined;
  #turn: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;
  #lastPurge = 0;
  readonly #signer: LogoutTokenSigner;

  constructor(
    private readonly storage: Pick<Storage, 'backchannel' | 'events' | 'applications' | 'users' | 'groups' | 'tenants'>,
    master: MasterKey,
    private readonly settings: WebhookSettings,
    issuer: (tenant: string) => string,
    private readonly log: (line: string) => void,
  ) {
    this.#signer = new LogoutTokenSigner(storage, master, issuer);
  }

  /** Takes its place in the log (the log's end, the first time any process starts), then runs every pollMs. */
  async start(): Promise<void> {
    if ((await this.storage.backchannel.place()) === undefined) await this.storage.backchannel.start(await this.storage.events.lastSeq());
    this.#timer ??= setInterval(() => this.kick(), this.settings.pollMs).unref();
  }

  /** A turn now, unless one runs. */
  kick(): void {
    if (this.#stopped) return;
    this.#turn ??= this.#once().catch((err: unknown) => this.log(`back-channel logout: ${(err as Error).message}`)).finally(() => (this.#turn = undefined));
  }

  /** Stops taking logouts; attempts in flight are left to finish (or to be taken again once their lease lapses). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#turn;
  }

  async #once(): Promise<void> {
    await this.#queueFromLog();
    if (this.#stopped) return;
    const nowMs = Date.now();
    const free = this.settings.concurrency - this.#inFlight.size;
    if (free > 0) {
      for (const due of await this.storage.backchannel.claim(nowMs, this.settings.leaseMs, free)) {
        const p: Promise<void> = this.#attempt(due)
          .catch((err: unknown) => this.log(`back-channel logout ${due.jti} to ${due.tenant}/${due.clientId}: ${(err as Error).message}`))
          .finally(() => this.#inFlight.delete(p));
        this.#inFlight.add(p);
      }
    }
    if (nowMs - this.#lastPurge > 3600_000) {
      this.#lastPurge = nowMs;
      await this.storage.backchannel.purge(nowMs - KEEP_SETTLED_MS);
    }
  }

  /**
   * The logouts of the events past the place, queued as the place moves past them (one process
   * wins). Only revocations are read whole; the rest of the log only moves the place.
   */
  async #queueFromLog(): Promise<void> {
    const from = await this.storage.backchannel.place();
    if (from === undefined) return;
    const { last, records } = await this.storage.events.window(from, READ_BATCH, REVOCATION_EVENT_TYPES);
    if (last === undefined) return;
    const nowMs = Date.now();
    const drafts = [];
    for (const { event } of records) drafts.push(...(await logoutTargets(this.storage, event, nowMs)));
    await this.storage.backchannel.queue(from, last, drafts, nowMs);
  }

  async #attempt(due: LogoutRecord): Promise<void> {
    let outcome: { status: number | null; error: string | null };
    try {
      const token = await this.#signer.sign(due);
      const body = new URLSearchParams({ logout_token: token }).toString();
      outcome = await post(new URL(due.uri), body, { 'content-type': 'application/x-www-form-urlencoded' }, this.settings, 'idforge-backchannel-logout/1');
    } catch (err) {
      outcome = { status: null, error: (err as Error).message };
    }
    // §2.8: 200 OK (204 is accepted too, as oidc-provider does); a 400 is the client refusing the token.
    const delivered = outcome.status === 200 || outcome.status === 204;
    const wait = this.settings.retrySeconds[due.attempts - 1];
    const nowMs = Date.now();
    if (!delivered) this.log(`back-channel logout ${due.jti} to ${due.tenant}/${due.clientId} (${due.uri}), attempt ${due.attempts}: ${outcome.error ?? `HTTP ${outcome.status}`}${wait === undefined ? '; given up' : `; again in ${wait} s`}`);
    await this.storage.backchannel.settle(due.jti, {
      delivered, status: outcome.status, error: delivered ? null : (outcome.error ?? `the client answered HTTP ${outcome.status}`), nowMs,
      nextAttemptMs: delivered || wait === undefined ? null : nowMs + wait * 1000,
    });
  }
}
