/**
 * In-process mutual exclusion by name: a queue of promises per name. Enough on its own where one
 * process serves the database (SQLite); in front of the database's locks otherwise (PostgreSQL),
 * so a burst in one process holds one database connection per name, not one per waiter.
 */
/** Mutual exclusion by name: `fn` runs while holding every name. */
export interface NamedLocks {
  hold<T>(names: readonly string[], fn: () => Promise<T>): Promise<T>;
}

export class KeyedLocks implements NamedLocks {
  /** Per name: the tail of the queue of holders. */
  readonly #queues = new Map<string, Promise<void>>();

  /** Runs `fn` holding every name; names are taken in sorted order, so holders never wait on each other. */
  async hold<T>(names: readonly string[], fn: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    try {
      for (const name of [...new Set(names)].sort()) releases.push(await this.#acquire(name));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  #acquire(name: string): Promise<() => void> {
    const before = this.#queues.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const tail = before.then(() => mine);
    this.#queues.set(name, tail);
    return before.then(() => () => {
      release();
      // Forget idle names, so a spray of made-up accounts does not grow the map.
      if (this.#queues.get(name) === tail) this.#queues.delete(name);
    });
  }
}
