import type { Logger } from "../../logger.js";
import type { StoreRepo } from "../../storage/ports.js";

export interface StoreSweeperOptions {
  repo: StoreRepo;
  log: Logger;
  clock?: () => number;
  /**
   * The longest the timer sleeps while items with a TTL exist (`store.ttl.sweep_interval_minutes`;
   * default 60 minutes), a safety net for wall-clock jumps. Sweeps otherwise happen when items expire.
   */
  maxIntervalMs?: number;
  /** The shortest time between two sweeps, so items expiring one after another are swept together. */
  minGapMs?: number;
}

/**
 * Deletes expired store items. Expired items are already invisible to every read, so this only
 * reclaims space; it keeps one timer, set for the earliest expiry in the database, and the store tells
 * it (`expiresAt`) when a write sets an earlier one. No polling.
 */
export class StoreSweeper {
  readonly #repo: StoreRepo;
  readonly #log: Logger;
  readonly #clock: () => number;
  readonly #maxIntervalMs: number;
  readonly #minGapMs: number;
  #timer?: NodeJS.Timeout;
  #armedFor: number | null = null;
  #lastSweep = 0;
  #stopped = false;
  #sweeping: Promise<void> = Promise.resolve();

  constructor(opts: StoreSweeperOptions) {
    this.#repo = opts.repo;
    this.#log = opts.log;
    this.#clock = opts.clock ?? Date.now;
    this.#maxIntervalMs = opts.maxIntervalMs ?? 60 * 60_000;
    this.#minGapMs = opts.minGapMs ?? 1000;
  }

  start(): void {
    this.#armAt(this.#clock());
  }

  /** An item will expire at `at` (epoch ms): make sure a sweep happens soon after. */
  expiresAt(at: number): void {
    if (this.#armedFor === null || at < this.#armedFor) this.#armAt(at);
  }

  /** Deletes what has expired now; returns how many items. */
  async sweep(): Promise<number> {
    const now = this.#clock();
    this.#lastSweep = now;
    const deleted = await this.#repo.sweepExpired(now);
    if (deleted) this.#log.debug("swept expired store items", { deleted });
    return deleted;
  }

  #armAt(at: number): void {
    if (this.#stopped) return;
    const now = this.#clock();
    const when = Math.min(Math.max(at, this.#lastSweep + this.#minGapMs), now + this.#maxIntervalMs);
    clearTimeout(this.#timer);
    this.#armedFor = when;
    this.#timer = setTimeout(() => this.#run(), Math.max(0, when - now) + 5);
    this.#timer.unref();
  }

  #run(): void {
    this.#armedFor = null;
    this.#sweeping = (async () => {
      try {
        await this.sweep();
        const next = await this.#repo.nextExpiry();
        if (next !== null) this.#armAt(next);
      } catch (err) {
        this.#log.error("sweeping expired store items failed", { error: (err as Error).message });
        this.#armAt(this.#clock() + this.#minGapMs);
      }
    })();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#sweeping;
  }
}
