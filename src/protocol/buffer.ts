/**
 * The thread event buffer: a run's protocol events written to storage in batches (ThreadEventWriter),
 * and read back by any number of followers in any process (ThreadEventHub, the `ThreadEventFeed`).
 *
 * Storage is the only record (a `since` replay after a restart reads it); notifications only say
 * "look again": in this process a direct wake, from executor threads a message to the API thread,
 * across processes a Redis message (ClusterBus). Pub/sub delivers at most once, so a follower also
 * looks every `POLL_MS` while idle.
 */
import type { Logger } from "../logger.js";
import type { OrgId, ThreadEventRetention, ThreadEventsRepo } from "../storage/ports.js";
import type { ProducedEvent } from "./events.js";
import type { ThreadEvent, ThreadEventFeed, ThreadEventItem } from "./thread-events.js";

/** How long produced events wait to be written with the ones after them. */
const FLUSH_DELAY_MS = 5;
/** Events a follower reads per query: also what one slow reader can make the server hold. */
const PAGE = 200;
/** How often an idle follower looks at storage anyway (a lost Redis message must not stall it). */
const POLL_MS = 2_000;

/** Says that a thread's buffer grew: wakes followers here and, scaled out, elsewhere. */
export type ThreadEventsNotify = (org: OrgId, threadId: string) => void;

/**
 * One run's writer: events queue in memory and are written together. One write at a time: what is
 * produced while a write is in flight goes in the next one, whole (one transaction per event, queued
 * behind each other, fell further behind the run whenever a write took longer than the gap between
 * events: 270–720 ms scaled out under load, growing through the run).
 */
export class ThreadEventWriter {
  #queue: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** The writes in flight (they take the queue until it is empty); settles when all are stored. */
  #writing: Promise<void> | undefined;

  constructor(
    private readonly repo: ThreadEventsRepo,
    private readonly retention: ThreadEventRetention,
    private readonly org: OrgId,
    private readonly threadId: string,
    private readonly notify: ThreadEventsNotify,
    private readonly log: Logger,
  ) {}

  push(event: ProducedEvent): void {
    this.#queue.push(JSON.stringify(event));
    // A write in flight takes this event when it ends; otherwise wait a little for the ones after it.
    if (!this.#writing) this.#timer ??= setTimeout(() => void this.#flush(), FLUSH_DELAY_MS);
  }

  #flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#writing ??= this.#writeAll().finally(() => {
      this.#writing = undefined;
      // Pushed between the last batch and here: written now, not left for the next push.
      if (this.#queue.length > 0) void this.#flush();
    });
    return this.#writing;
  }

  async #writeAll(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      this.#queue = [];
      try {
        await this.#append(batch);
        this.notify(this.org, this.threadId);
      } catch (err) {
        // Events are what clients see of a run, not its result: the run goes on, the loss is logged.
        this.log.error("writing protocol events failed; they are lost", {
          thread_id: this.threadId,
          events: batch.length,
          error: (err as Error).message,
        });
      }
    }
  }

  async #append(batch: string[]): Promise<void> {
    try {
      await this.repo.append(this.org, this.threadId, batch, this.retention);
    } catch {
      await new Promise((r) => setTimeout(r, 100)); // once more, for a busy or dropped connection
      await this.repo.append(this.org, this.threadId, batch, this.retention);
    }
  }

  /** Writes what is queued; resolves once everything pushed so far is stored (before the run counts as ended). */
  async close(): Promise<void> {
    while (this.#writing || this.#queue.length > 0) await this.#flush();
  }
}

/** Opens run writers over one repository (the executor's side). */
export class ThreadEventBuffer {
  constructor(
    private readonly repo: ThreadEventsRepo,
    private readonly retention: ThreadEventRetention,
    private readonly notify: ThreadEventsNotify,
    private readonly log: Logger,
  ) {}

  writer(org: OrgId, threadId: string): ThreadEventWriter {
    return new ThreadEventWriter(this.repo, this.retention, org, threadId, this.notify, this.log);
  }
}

/** Where notifications of other processes come from and go to (ClusterBus, scaled out). */
export interface ThreadEventsBus {
  notifyThreadEvents(org: OrgId, threadId: string): void;
  onThreadEvents(handler: (org: OrgId, threadId: string) => void): Promise<() => void>;
}

/** The served side: followers of threads' events in this process. */
export class ThreadEventHub implements ThreadEventFeed {
  readonly #waiters = new Map<string, Set<() => void>>();
  #unsubscribe: Promise<() => void> | undefined;

  constructor(
    private readonly repo: ThreadEventsRepo,
    private readonly bus?: ThreadEventsBus,
  ) {
    this.#unsubscribe = bus?.onThreadEvents((org, threadId) => this.wake(org, threadId));
    this.#unsubscribe?.catch(() => undefined); // followers still poll
  }

  /** Events were written in this process (or an executor thread of it): wake followers, tell the others. */
  readonly notify: ThreadEventsNotify = (org, threadId) => {
    this.wake(org, threadId);
    this.bus?.notifyThreadEvents(org, threadId);
  };

  /** Wakes this process's followers of the thread. */
  wake(org: OrgId, threadId: string): void {
    for (const waiter of this.#waiters.get(`${org}\n${threadId}`) ?? []) waiter();
  }

  lastSeq(org: OrgId, threadId: string): Promise<number> {
    return this.repo.lastSeq(org, threadId);
  }

  async *follow(
    org: OrgId,
    threadId: string,
    since: number | undefined,
    signal: AbortSignal,
  ): AsyncIterable<ThreadEventItem> {
    const k = `${org}\n${threadId}`;
    let after = since ?? 0;
    // Without `since` the reader asked for what is kept: events dropped before that are not "missed".
    let asked = since !== undefined;
    while (!signal.aborted) {
      // Armed before reading: a write that lands during the read still wakes the wait below.
      let woken = false;
      let wake = () => {
        woken = true;
      };
      const waiter = () => wake();
      let set = this.#waiters.get(k);
      if (!set) {
        set = new Set();
        this.#waiters.set(k, set);
      }
      set.add(waiter);
      try {
        const { events, firstKept, lastSeq } = await this.repo.read(org, threadId, after, PAGE);
        // Fewer events than this reader already had: the thread was deleted (perhaps made again, its
        // seq from 1). The stream ends; a reader that reconnects is authorized for the new thread anew.
        if (lastSeq < after) return;
        const next = events[0]?.seq ?? firstKept;
        if (next > after + 1 && firstKept > after + 1 && asked) {
          yield { kind: "missed", from: after + 1, to: Math.min(next, firstKept) - 1 };
        }
        asked = true;
        for (const stored of events) {
          yield { kind: "event", event: { seq: stored.seq, ...JSON.parse(stored.json) } as ThreadEvent };
          after = stored.seq;
        }
        if (events.length === PAGE || woken) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, POLL_MS);
          function done() {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            resolve();
          }
          wake = done;
          signal.addEventListener("abort", done, { once: true });
        });
      } finally {
        set.delete(waiter);
        if (set.size === 0 && this.#waiters.get(k) === set) this.#waiters.delete(k);
      }
    }
  }

  async close(): Promise<void> {
    const unsubscribe = await this.#unsubscribe?.catch(() => undefined);
    unsubscribe?.();
  }
}
