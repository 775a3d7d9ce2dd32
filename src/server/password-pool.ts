/**
 * Initial password hashing on every core, off the event loop, without starving sign-ins.
 *
 * argon2 (the native `argon2` package) runs each hash on a thread of libuv's pool, the process's
 * one pool of worker threads, which sign-in verifications, key generation and file I/O share. A
 * batch of 10,000 initial passwords handed to it at once would queue every sign-in and every file
 * read behind minutes of hashing; hashed one at a time it would use one core. So hashes go through
 * this pool: at most one per core in flight, and always one pool thread left for everything else;
 * the rest wait here, in order. One argon2id hash at the server's parameters (_crypto.ts) costs
 * ~22 ms of a core, so N passwords take about N × 22 ms / cores.
 *
 * libuv's pool has UV_THREADPOOL_SIZE threads (default 4, read once at start): on a machine with
 * more than 3 cores, set it to cores + 1 in the server's environment to hash on every core.
 */
import { availableParallelism } from 'node:os';
import { hashPassword } from './_crypto.ts';

/** libuv's thread pool size: what the environment asked for at start, else libuv's default. */
function libuvThreads(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4;
}

export class PasswordHashPool {
  /** Hashes in flight at most. */
  readonly size: number;
  #running = 0;
  #peak = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(size = Math.max(1, Math.min(availableParallelism(), libuvThreads() - 1))) {
    this.size = size;
  }

  /** One argon2id hash, in turn. */
  async hash(password: string): Promise<string> {
    if (this.#running >= this.size) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#running++;
    this.#peak = Math.max(this.#peak, this.#running);
    try {
      return await hashPassword(password);
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }

  /** The most hashes that were ever in flight at once (for tests and benchmarks). */
  get peak(): number {
    return this.#peak;
  }

  /** Every password's hash, in order; all are in the queue at once, so every core works on them. */
  hashAll(passwords: readonly string[]): Promise<string[]> {
    return Promise.all(passwords.map((p) => this.hash(p)));
  }
}

/** The server's pool: one per process, since libuv's thread pool is one per process. */
export const passwordHashPool = new PasswordHashPool();
