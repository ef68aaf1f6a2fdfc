/**
 * Run event logs (DESIGN.md decision 5): every event of a run gets the next id and is kept, so any
 * number of readers can follow a run and a reader that reconnects with Last-Event-ID misses nothing.
 * A finished run's log stays readable for the retention window, then is dropped.
 *
 * Two adapters: `MemoryRunLogs` (below; the embedded mode, one process) and `RedisRunLogs`
 * (redis-run-logs.ts; runs execute on other processes than the ones their readers are connected to).
 */
export interface RunEvent {
  id: number;
  event: string;
  /** The event's data, already serialised to JSON once for every reader. */
  data: string;
}

export interface RunLogs {
  /**
   * True when the writer may be another process (Redis): a writer that died between settling a run in
   * storage and ending its log leaves the log open, so readers also watch storage.
   */
  readonly shared?: boolean;
  /**
   * Makes a run's log exist before it starts, so readers can attach to a pending run. A log dropped
   * (its run deleted) within the retention window is not opened again: a reader attaching just after
   * the delete must not wait on a log nobody will end.
   */
  open(runId: string): void | Promise<void>;
  /** Appends an event (ignored once the log has ended). Fire-and-forget: order is kept per run. */
  publish(runId: string, event: string, data: string): void;
  /** Marks the run finished with its join result: readers drain and stop; the log expires later. */
  end(runId: string, result: unknown): void;
  /** Forgets a run at once (it was deleted). Readers still attached finish. */
  drop(runId: string): void;
  /**
   * Events with id > `after` (-1: from the start), then every new one until the run ends or `signal`
   * aborts. A run with no log (expired, or never opened) yields nothing.
   */
  read(runId: string, after: number, signal?: AbortSignal): AsyncIterable<RunEvent>;
  /**
   * Resolves when the run ends, with its join result; null when there is no log of it (expired,
   * dropped, never opened) — the caller then reads storage.
   */
  outcome(runId: string, signal?: AbortSignal): Promise<{ result: unknown } | null>;
  close(): void | Promise<void>;
}

interface Log {
  events: RunEvent[];
  done: boolean;
  /** What `join` and `wait` answer for this run, set when it ends. */
  result?: unknown;
  wake: Set<() => void>;
  expiry?: NodeJS.Timeout;
}

/** The embedded adapter: logs in this process's memory. */
export class MemoryRunLogs implements RunLogs {
  readonly #logs = new Map<string, Log>();
  /** Runs dropped within the retention window, which `open` must not bring back. */
  readonly #dropped = new Map<string, NodeJS.Timeout>();
  readonly #retentionMs: number;

  constructor(opts: { retentionSeconds: number }) {
    this.#retentionMs = opts.retentionSeconds * 1000;
  }

  #log(runId: string): Log {
    let log = this.#logs.get(runId);
    if (!log) {
      log = { events: [], done: false, wake: new Set() };
      this.#logs.set(runId, log);
    }
    return log;
  }

  /** Makes a run's log exist before it starts (not one dropped lately: see RunLogs.open). */
  open(runId: string): void {
    if (!this.#dropped.has(runId)) this.#log(runId);
  }

  publish(runId: string, event: string, data: string): void {
    const log = this.#log(runId);
    if (log.done) return;
    log.events.push({ id: log.events.length, event, data });
    this.#wakeAll(log);
  }

  /** Marks the run finished: readers drain and stop; the log expires after the retention window. */
  end(runId: string, result: unknown): void {
    const log = this.#log(runId);
    log.done = true;
    log.result = result;
    this.#wakeAll(log);
    clearTimeout(log.expiry);
    log.expiry = setTimeout(() => this.#logs.delete(runId), this.#retentionMs);
    log.expiry.unref();
  }

  /** Forgets a run at once (it was deleted). Readers still attached finish. */
  drop(runId: string): void {
    clearTimeout(this.#dropped.get(runId));
    const tombstone = setTimeout(() => this.#dropped.delete(runId), this.#retentionMs);
    tombstone.unref();
    this.#dropped.set(runId, tombstone);
    const log = this.#logs.get(runId);
    if (!log) return;
    log.done = true;
    this.#wakeAll(log);
    clearTimeout(log.expiry);
    this.#logs.delete(runId);
  }

  /**
   * Events with id > `after` (-1: from the start), then every new one until the run ends or `signal`
   * aborts. A run with no log (expired, or never seen by this process) yields nothing.
   */
  async *read(runId: string, after: number, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    const log = this.#logs.get(runId);
    if (!log) return;
    let next = Math.max(0, after + 1);
    while (!signal?.aborted) {
      while (next < log.events.length) yield log.events[next++];
      if (log.done) return;
      await this.#change(log, signal);
    }
  }

  /**
   * Resolves when the run ends, with its join result; null when this process has no log of it
   * (expired, deleted, or the run was never seen here) — the caller then reads storage.
   */
  async outcome(runId: string, signal?: AbortSignal): Promise<{ result: unknown } | null> {
    const log = this.#logs.get(runId);
    if (!log) return null;
    while (!log.done && !signal?.aborted) {
      await this.#change(log, signal);
    }
    return log.done && this.#logs.get(runId) === log ? { result: log.result } : null;
  }

  /** Resolves on the log's next event, its end, or the reader's abort. */
  #change(log: Log, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        log.wake.delete(wake);
        signal?.removeEventListener("abort", wake);
        resolve();
      };
      log.wake.add(wake);
      signal?.addEventListener("abort", wake, { once: true });
    });
  }

  #wakeAll(log: Log) {
    for (const wake of [...log.wake]) wake();
  }

  close(): void {
    for (const log of this.#logs.values()) {
      clearTimeout(log.expiry);
      log.done = true;
      this.#wakeAll(log);
    }
    this.#logs.clear();
    for (const tombstone of this.#dropped.values()) clearTimeout(tombstone);
    this.#dropped.clear();
  }
}
