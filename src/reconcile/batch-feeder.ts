/**
 * The reconciler's low-priority feeder (reconciler.ts): what is queued, one item per key (a second
 * item for a key replaces the first), goes to `run` in batches of at most `batchSize`, at most
 * `maxPerSecond`; a batch is started only once the one before settled.
 */

export interface BatchFeederOptions<T> {
  batchSize: number;
  maxPerSecond: number;
  /** Monotonic milliseconds. */
  clock: () => number;
  /** The pause between batches (it may end early, at a close). */
  pause: (ms: number) => Promise<void>;
  run: (item: T) => Promise<void>;
  /** Told the number queued each time it changes. */
  queued: (size: number) => void;
  /** A new feeding run's progress reporter (done, left after each batch). */
  progress: () => (p: { done: number; left: number }) => void;
  /** After a feeding run ended (and the next one, for what came meanwhile, was started). */
  ended: () => void;
}

export interface BatchFeeder<T> {
  /** Queues `item` under `key` and starts feeding (in a microtask, so that items added in one go fill whole batches). */
  add(key: string, item: T): void;
  /** Something is queued or being fed. */
  busy(): boolean;
  /** Forgets what is queued; a batch in flight goes on. */
  clear(): void;
  /** Resolves once the feeding run in flight (if any) ended. */
  settled(): Promise<void>;
  /** Nothing is added or fed from now on; a batch in flight goes on. */
  close(): void;
}

export function createBatchFeeder<T>(options: BatchFeederOptions<T>): BatchFeeder<T> {
  const { batchSize, maxPerSecond, clock } = options;
  const queue = new Map<string, T>();
  let feeding: Promise<void> | undefined;
  let closed = false;

  function kick(): void {
    if (feeding || closed || queue.size === 0) return;
    feeding = Promise.resolve()
      .then(feed)
      .finally(() => {
        feeding = undefined;
        kick();
        options.ended();
      });
  }

  async function feed(): Promise<void> {
    const report = options.progress();
    let done = 0;
    while (queue.size > 0 && !closed) {
      const batch: T[] = [];
      for (const [key, item] of queue) {
        queue.delete(key);
        if (batch.push(item) === batchSize) break;
      }
      options.queued(queue.size);
      const started = clock();
      await Promise.all(batch.map(options.run));
      done += batch.length;
      report({ done, left: queue.size });
      const wait = (batch.length * 1000) / maxPerSecond - (clock() - started);
      if (wait > 0 && queue.size > 0) await options.pause(wait);
    }
  }

  return {
    add(key, item) {
      if (closed) return;
      queue.set(key, item);
      options.queued(queue.size);
      kick();
    },
    busy: () => queue.size > 0 || feeding !== undefined,
    clear() {
      queue.clear();
      options.queued(0);
    },
    settled: async () => {
      await feeding;
    },
    close() {
      closed = true;
    },
  };
}
