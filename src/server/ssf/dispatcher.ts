/**
 * The SSF transmitter's background work, in every server process beside the webhooks': every
 * `pollMs` it turns the event log's new events into SETs for each stream (SsfStore.enqueue, the
 * outbox the webhooks read: at least once, across restarts), then pushes the due SETs of push
 * streams (RFC 8935): a POST of the signed SET as application/secevent+jwt, with the stream's
 * Authorization header, under the webhooks' rules (the SSRF checks, timeout, no redirects, the
 * retry schedule, a lease per attempt). A 2xx answer delivers (202 is RFC 8935's); a 400 is the
 * receiver refusing that SET (RFC 8935 §2.3: not retried, its `err` kept); anything else is retried.
 *
 * Poll streams (poll.ts) wait on `afterTurn`, so a long poll answers within a turn of the change.
 * Writes and sign-ins never wait for any of this: they only write the outbox.
 */
import type { MasterKey } from '../_crypto.ts';
import type { Storage } from '../storage/types.ts';
import type { WebhookSettings } from '../webhooks/options.ts';
import { post } from '../webhooks/post.ts';
import { lostAccess } from './access.ts';
import { NeedsLookup, SET_SOURCE_TYPES, translate } from './events.ts';
import type { SetSigner } from './sign.ts';

const ENQUEUE_BATCH = 500;
/** Lookups kept (by event id) for the turns that need them; then the oldest go. */
const MAX_LOOKUPS = 10_000;
/** Events looked up per turn at most (each one costs the queueing transaction a retry). */
const LOOKUPS_PER_TURN = 100;
/**
 * Settled SETs are kept this long (a stream's recent history), then purged; pending ones too (a
 * poll receiver gone for a week, a stream paused and forgotten), so an unread queue stays bounded.
 */
const KEEP_SETTLED_MS = 7 * 24 * 3600 * 1000;
const KEEP_PENDING_MS = 7 * 24 * 3600 * 1000;

type Due = Awaited<ReturnType<Storage['ssf']['claim']>>[number];

export class SsfDispatcher {
  #timer: NodeJS.Timeout | undefined;
  #turn: Promise<void> | undefined;
  #waiters: (() => void)[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;
  #lastPurge = 0;
  readonly #translate;
  /** Who each looked-up event left without access (access.ts), by event id. */
  readonly #lost = new Map<string, readonly string[]>();

  constructor(
    private readonly storage: Pick<Storage, 'ssf' | 'applications' | 'users' | 'groups'>,
    private readonly signer: SetSigner,
    private readonly master: MasterKey,
    private readonly settings: WebhookSettings,
    issuer: (tenant: string) => string,
    private readonly log: (line: string) => void,
  ) {
    this.#translate = translate(issuer, this.#lost);
  }

  start(): void {
    this.#timer ??= setInterval(() => this.kick(), this.settings.pollMs).unref();
  }

  /** A turn now (unless one runs): after a verification request, say. */
  kick(): void {
    if (this.#stopped) return;
    this.#turn ??= this.#once().catch((err: unknown) => this.log(`ssf: ${(err as Error).message}`)).finally(() => {
      this.#turn = undefined;
      const w = this.#waiters;
      this.#waiters = [];
      for (const resolve of w) resolve();
    });
  }

  /** Resolves once the next turn has queued what the log holds. */
  afterTurn(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#turn;
    const w = this.#waiters;
    this.#waiters = [];
    for (const resolve of w) resolve();
  }

  async #once(): Promise<void> {
    if (this.#stopped) return;
    const nowMs = Date.now();
    await this.#enqueue(nowMs);
    if (nowMs - this.#lastPurge > 3600_000) {
      this.#lastPurge = nowMs;
      await this.storage.ssf.purge(nowMs - KEEP_SETTLED_MS, nowMs - KEEP_PENDING_MS);
    }
    const free = this.settings.concurrency - this.#inFlight.size;
    if (free <= 0 || this.#stopped) return;
    for (const due of await this.storage.ssf.claim(Date.now(), this.settings.leaseMs, free)) {
      const p: Promise<void> = this.#push(due)
        .catch((err: unknown) => this.log(`ssf: push of ${due.jti} to ${due.tenant}/${due.stream}: ${(err as Error).message}`))
        .finally(() => this.#inFlight.delete(p));
      this.#inFlight.add(p);
    }
  }

  /**
   * Queues what the log holds. A translation that meets an event needing a lookup rolls the
   * transaction back (nothing queued, no place moved); the lookup is made and the queueing tried again.
   */
  async #enqueue(nowMs: number): Promise<void> {
    for (let i = 0; i <= LOOKUPS_PER_TURN; i++) {
      try {
        await this.storage.ssf.enqueue(nowMs, ENQUEUE_BATCH, this.#translate, SET_SOURCE_TYPES);
        return;
      } catch (err) {
        if (!(err instanceof NeedsLookup)) throw err;
        // The rest waits for the next turn (the lookups made so far are kept).
        if (i === LOOKUPS_PER_TURN) return;
        this.#lost.set(err.event.id, await lostAccess(this.storage, err.event));
        if (this.#lost.size > MAX_LOOKUPS) this.#lost.delete(this.#lost.keys().next().value as string);
      }
    }
  }

  async #push(due: Due): Promise<void> {
    const stream = due.streamRecord;
    const jwt = await this.signer.sign(due.tenant, due.claims);
    const authorization = stream.sealedAuthorization === null ? undefined : this.master.unseal(stream.sealedAuthorization, ssfAuthorizationSealedFor(stream.id));
    const outcome = await post(new URL(stream.body.endpointUrl!), jwt, {
      'content-type': 'application/secevent+jwt', accept: 'application/json', ...(authorization === undefined ? {} : { authorization }),
    }, this.settings, 'idforge-ssf/1');
    const nowMs = Date.now();
    if (outcome.error === null) return this.storage.ssf.settle(due.tenant, due.stream, due.jti, { delivered: true, error: null, nextAttemptMs: null, nowMs });
    // RFC 8935 §2.3: a 400 says this SET is refused (its `err`): sending it again would be refused again.
    const refused = outcome.status === 400;
    const wait = refused ? undefined : this.settings.retrySeconds[due.attempts - 1];
    const error = refused ? `${outcome.error}: ${(outcome.answer ?? '').slice(0, 300)}` : outcome.error;
    await this.storage.ssf.settle(due.tenant, due.stream, due.jti, { delivered: false, error, nextAttemptMs: wait === undefined ? null : nowMs + wait * 1000, nowMs });
  }
}

/** The associated data a push stream's Authorization header is sealed under. */
export const ssfAuthorizationSealedFor = (id: string) => `ssf-authorization:${id}`;
