import type { Logger } from "../../logger.js";
import type { ThreadSweep, ThreadsRepo } from "../../storage/ports.js";

export interface ThreadSweeperOptions {
  repo: Pick<ThreadsRepo, "sweepExpired">;
  log: Logger;
  /** langgraph.json `checkpointer.ttl.sweep_interval_minutes` (default 5), in ms. */
  intervalMs: number;
  /** Threads per storage call (`sweep_limit`, default 1000); a full batch is followed by another at once. */
  limit: number;
  clock?: () => number;
}

/** The shortest interval, so a tiny `sweep_interval_minutes` (tests) cannot make a busy loop. */
const MIN_INTERVAL_MS = 100;

/**
 * Applies expired thread TTLs (langgraph.json `checkpointer.ttl`, or a thread's own `ttl`) every
 * interval: storage deletes (or prunes, `keep_latest`) threads idle past their TTL, never one with a
 * run in flight. Every process runs one; storage makes each expiry happen once (row locks on Postgres,
 * one writer on SQLite).
 */
export class ThreadSweeper {
  readonly #opts: Required<ThreadSweeperOptions>;
  #timer?: NodeJS.Timeout;
  #stopped = false;
  #sweeping: Promise<unknown> = Promise.resolve();

  constructor(opts: ThreadSweeperOptions) {
    this.#opts = { clock: Date.now, ...opts, intervalMs: Math.max(MIN_INTERVAL_MS, opts.intervalMs) };
  }

  start(): void {
    this.#arm();
  }

  /** One sweep: batches until one comes back short. Returns everything it did. */
  async sweep(): Promise<ThreadSweep> {
    const total: ThreadSweep = { deleted: [], pruned: [] };
    const { repo, limit, clock, log } = this.#opts;
    for (;;) {
      const batch = await repo.sweepExpired(clock(), limit);
      total.deleted.push(...batch.deleted);
      total.pruned.push(...batch.pruned);
      if (this.#stopped || batch.deleted.length + batch.pruned.length < limit) break;
    }
    if (total.deleted.length || total.pruned.length)
      log.info("swept expired threads", { deleted: total.deleted.length, pruned: total.pruned.length });
    return total;
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#sweeping = this.sweep()
        .catch((err) => this.#opts.log.error("sweeping expired threads failed", { error: String(err) }))
        .finally(() => this.#arm());
    }, this.#opts.intervalMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#sweeping;
  }
}
