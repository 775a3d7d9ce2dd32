/**
 * `idforge serve --workers N`: N processes serving one port (node:cluster; the primary accepts and
 * hands connections round-robin to the workers), each a whole server on the shared storage.
 *
 * The primary serves nothing itself. It starts one worker and waits until it listens (so the
 * first start's schema, master key and system tenant are made once), then the others; replaces a
 * worker that dies; on SIGTERM or SIGINT asks every worker to drain and waits for them. Through IPC
 * it holds what the workers must share beyond the database: the locks that serialize sign-in
 * attempts on SQLite (PostgreSQL's are the database's own), and the metrics of all workers.
 */
import cluster, { type Worker } from 'node:cluster';
import client from 'prom-client';
import { KeyedLocks, type NamedLocks } from '../storage/_keyed-locks.ts';
import type { ClusterLink } from '../config.ts';

/** What a worker tells the primary once it listens: the lines `idforge serve` prints. */
export interface ListeningMessage {
  readonly type: 'idforge:listening';
  readonly banner: string;
}

type ToPrimary =
  | ListeningMessage
  | { readonly type: 'idforge:lock'; readonly id: number; readonly names: readonly string[] }
  | { readonly type: 'idforge:unlock'; readonly id: number }
  | { readonly type: 'idforge:metrics'; readonly id: number };

type ToWorker =
  | { readonly type: 'idforge:locked'; readonly id: number }
  | { readonly type: 'idforge:metrics'; readonly id: number; readonly text?: string; readonly error?: string };

const isOurs = (m: unknown): m is { type: string } => typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string' && (m as { type: string }).type.startsWith('idforge:');

/** A worker that dies this often within a minute is not replaced again: something is wrong. */
const MAX_RESTARTS_PER_MINUTE = 5;

export interface PrimaryResult {
  /** Exit code for the command: 0 after a clean shutdown, 1 when the first worker could not start. */
  readonly code: number;
}

/**
 * Runs the cluster until a signal (or until the first worker fails to start). `announce` gets the
 * first worker's banner (where it listens) once all workers listen.
 */
export async function runPrimary(workers: number, announce: (banner: string) => void, log: (line: string) => void): Promise<PrimaryResult> {
  const locks = new KeyedLocks();
  const metrics = new client.AggregatorRegistry();
  /** Locks held per worker, released if it dies holding them. */
  const held = new Map<number, Map<number, () => void>>();
  let stopping = false;
  /** Until the first worker listens, a worker that exits has failed to start: it is not replaced. */
  let started = false;
  const restarts: number[] = [];

  const onMessage = (worker: Worker, message: unknown): void => {
    if (!isOurs(message)) return;
    const m = message as ToPrimary;
    const send = (reply: ToWorker) => {
      if (worker.isConnected()) worker.send(reply);
    };
    switch (m.type) {
      case 'idforge:lock': {
        const mine = held.get(worker.id) ?? new Map<number, () => void>();
        held.set(worker.id, mine);
        void locks.hold(m.names, () => new Promise<void>((release) => {
          mine.set(m.id, release);
          if (!worker.isConnected()) release();
          else send({ type: 'idforge:locked', id: m.id });
        }));
        break;
      }
      case 'idforge:unlock':
        held.get(worker.id)?.get(m.id)?.();
        held.get(worker.id)?.delete(m.id);
        break;
      case 'idforge:metrics':
        metrics.clusterMetrics().then(
          (text) => send({ type: 'idforge:metrics', id: m.id, text }),
          (err: unknown) => send({ type: 'idforge:metrics', id: m.id, error: (err as Error).message }),
        );
        break;
      default:
        break;
    }
  };
  cluster.on('message', onMessage);

  const fork = (): { worker: Worker; listening: Promise<string | undefined> } => {
    const worker = cluster.fork();
    const listening = new Promise<string | undefined>((resolve) => {
      const onMsg = (m: unknown) => {
        if (isOurs(m) && (m as ToPrimary).type === 'idforge:listening') {
          worker.off('message', onMsg);
          resolve((m as ListeningMessage).banner);
        }
      };
      worker.on('message', onMsg);
      worker.once('exit', () => resolve(undefined));
    });
    worker.once('exit', (code, signal) => {
      for (const release of held.get(worker.id)?.values() ?? []) release();
      held.delete(worker.id);
      if (stopping || !started) return;
      const now = Date.now();
      restarts.push(now);
      while (restarts.length > 0 && restarts[0]! < now - 60_000) restarts.shift();
      if (restarts.length > MAX_RESTARTS_PER_MINUTE) {
        log(`worker ${worker.process.pid} exited (${signal ?? code}); ${restarts.length} workers died within a minute: not replacing it`);
        return;
      }
      log(`worker ${worker.process.pid} exited (${signal ?? code}); starting a new one`);
      fork();
    });
    return { worker, listening };
  };

  const stop = async (): Promise<void> => {
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
    await Promise.all(alive.map((w) => new Promise<void>((resolve) => {
      w.once('exit', () => resolve());
      w.process.kill('SIGTERM');
    })));
  };

  const signalled = new Promise<NodeJS.Signals>((done) => {
    const onSignal = (s: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      done(s);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });

  // The first worker alone: it migrates, makes the master key and the system tenant if needed.
  const first = fork();
  const banner = await Promise.race([first.listening, signalled.then(() => undefined)]);
  if (banner === undefined) {
    await stop();
    cluster.off('message', onMessage);
    // The worker said why (its own stderr); a signal before it listened is a clean stop.
    return { code: first.worker.process.exitCode === 0 || first.worker.process.signalCode !== null ? 0 : 1 };
  }
  started = true;
  const rest = Array.from({ length: workers - 1 }, () => fork().listening);
  const ready = await Promise.race([Promise.all(rest).then(() => true), signalled.then(() => false)]);
  if (ready) announce(banner);
  const signal = await signalled;
  log(`${signal} received: draining ${Object.keys(cluster.workers ?? {}).length} worker(s)`);
  await stop();
  cluster.off('message', onMessage);
  return { code: 0 };
}

/** In a worker: the link to the primary (locks, metrics) and how to report that it listens. */
export function workerLink(): ClusterLink & { listening(banner: string): void } {
  let next = 0;
  const waiting = new Map<number, (m: ToWorker) => void>();
  process.on('message', (m: unknown) => {
    if (!isOurs(m)) return;
    const reply = m as ToWorker;
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const ask = (message: ToPrimary & { id: number }): Promise<ToWorker> => new Promise((resolve, reject) => {
    if (process.send === undefined || !process.connected) return reject(new Error('the cluster primary is gone'));
    waiting.set(message.id, resolve);
    process.send(message);
  });
  const locks: NamedLocks = {
    async hold(names, fn) {
      const id = ++next;
      await ask({ type: 'idforge:lock', id, names });
      try {
        return await fn();
      } finally {
        if (process.connected) process.send!({ type: 'idforge:unlock', id } satisfies ToPrimary);
      }
    },
  };
  return {
    locks,
    async metricsText() {
      const r = await ask({ type: 'idforge:metrics', id: ++next });
      if (r.type !== 'idforge:metrics' || r.text === undefined) throw new Error(r.type === 'idforge:metrics' ? (r.error ?? 'no metrics') : 'unexpected answer');
      return r.text;
    },
    listening(banner) {
      process.send?.({ type: 'idforge:listening', banner } satisfies ListeningMessage);
    },
  };
}

export const isWorker = (): boolean => cluster.isWorker;
