import type { RedisLink } from "../cluster/redis.js";
import type { RunEvent, RunLogs } from "./run-log.js";

/** How long a log of a run still in flight lives without news (a run that never ends is not kept forever). */
const IN_FLIGHT_TTL_SECONDS = 24 * 3600;
/** A dropped run's log lingers this long, so readers already attached see its end marker. */
const DROPPED_TTL_SECONDS = 5;
/** Entries read per XRANGE while catching up. */
const PAGE = 500;
/**
 * A follower that heard nothing for this long looks at the stream itself again: pub/sub is at most
 * once (a subscriber reconnect loses messages), so silence must not be trusted for long.
 */
const RECHECK_MS = 3_000;
const END = "__end__";
const DROP = "__drop__";

/**
 * Appends one entry with the next id (= the stream's length: entry n has stream id `n+1-0`), unless the
 * log has ended, and announces it on the channel of the same name. Atomic in Redis, so ids stay dense
 * and ordered even when a run's next attempt publishes from another process. Ending entries (END, DROP)
 * mark the log done and set its retention expiry; other entries push the in-flight expiry forward.
 * KEYS: stream, meta. ARGV: event, data, ttl seconds (0: keep the in-flight ttl), mark ("done", "dropped", "").
 */
const APPEND = `
if redis.call('HGET', KEYS[2], 'done') then
  if ARGV[4] == 'dropped' then
    redis.call('HSET', KEYS[2], 'dropped', '1')
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    redis.call('EXPIRE', KEYS[2], ARGV[3])
  end
  return -1
end
local n = redis.call('XLEN', KEYS[1])
redis.call('XADD', KEYS[1], (n + 1) .. '-0', 'e', ARGV[1], 'd', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'done', '1', ARGV[4], '1')
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
else
  redis.call('HSET', KEYS[2], 'open', '1')
  redis.call('EXPIRE', KEYS[1], ${IN_FLIGHT_TTL_SECONDS})
  redis.call('EXPIRE', KEYS[2], ${IN_FLIGHT_TTL_SECONDS})
end
redis.call('PUBLISH', KEYS[1], n .. '\\n' .. ARGV[1] .. '\\n' .. ARGV[2])
return n
`;

interface Entry {
  id: number;
  event: string;
  data: string;
}

/**
 * Run event logs as Redis Streams (DESIGN.md decision 5, scaled out): the worker executing a run
 * appends, and any API process serves `join`, `stream` and `Last-Event-ID` resumes of it. Readers catch
 * up with XRANGE and then follow the run's pub/sub channel (one shared subscriber connection per
 * process, not one blocked connection per reader); a gap in the announced ids sends them back to XRANGE,
 * so a lost message costs a round trip, never an event.
 */
export class RedisRunLogs implements RunLogs {
  readonly #link: RedisLink;
  readonly #retentionSeconds: number;

  /** Readers are in other processes than the writer: a lost end must be noticed from storage. */
  readonly shared = true;

  constructor(link: RedisLink, opts: { retentionSeconds: number }) {
    this.#link = link;
    this.#retentionSeconds = Math.max(1, opts.retentionSeconds);
    link.commands.defineCommand("hangarAppend", { numberOfKeys: 2, lua: APPEND });
  }

  #keys(runId: string) {
    const stream = `${this.#link.prefix}run:${runId}`;
    return { stream, meta: `${stream}:meta` };
  }

  async open(runId: string): Promise<void> {
    const { meta } = this.#keys(runId);
    await this.#link.commands.multi().hset(meta, "open", "1").expire(meta, IN_FLIGHT_TTL_SECONDS).exec();
  }

  #append(runId: string, event: string, data: string, ttlSeconds: number, mark: "" | "done" | "dropped") {
    const { stream, meta } = this.#keys(runId);
    // EVALSHA of the script defined in the constructor (ioredis falls back to EVAL when Redis lacks it).
    const commands = this.#link.commands as unknown as { hangarAppend(...args: string[]): Promise<number> };
    void commands.hangarAppend(stream, meta, event, data, String(ttlSeconds), mark).catch(() => undefined);
  }

  publish(runId: string, event: string, data: string): void {
    this.#append(runId, event, data, 0, "");
  }

  end(runId: string, result: unknown): void {
    this.#append(runId, END, JSON.stringify({ result }), this.#retentionSeconds, "done");
  }

  drop(runId: string): void {
    this.#append(runId, DROP, "", DROPPED_TTL_SECONDS, "dropped");
  }

  /** open/done/dropped flags; `known` is false when the run has no log at all. */
  async #state(runId: string) {
    const meta = await this.#link.commands.hgetall(this.#keys(runId).meta);
    return {
      known: Boolean(meta.open || meta.done),
      done: Boolean(meta.done),
      dropped: Boolean(meta.dropped),
    };
  }

  async #range(runId: string, after: number): Promise<Entry[]> {
    const raw = (await this.#link.commands.xrange(
      this.#keys(runId).stream,
      `${BigInt(after) + 2n}-0`,
      "+",
      "COUNT",
      PAGE,
    )) as [string, string[]][];
    return raw.map(([id, fields]) => ({
      id: Number(id.slice(0, id.indexOf("-"))) - 1,
      event: fields[fields.indexOf("e") + 1],
      data: fields[fields.indexOf("d") + 1],
    }));
  }

  async *read(runId: string, after: number, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    const inbox = new Inbox<Entry>();
    const unsubscribe = await this.#link.subscribe(this.#keys(runId).stream, (m) =>
      inbox.push(parseMessage(m)),
    );
    try {
      let last = Math.max(-1, Math.min(Math.floor(after), Number.MAX_SAFE_INTEGER - 2));
      for (;;) {
        // Catch up from the stream itself.
        const state = await this.#state(runId);
        if (!state.known || state.dropped) return;
        for (;;) {
          const page = await this.#range(runId, last);
          for (const entry of page) {
            if (entry.event === END || entry.event === DROP) return;
            yield entry;
            last = entry.id;
          }
          if (page.length < PAGE) break;
        }
        // Ended before we looked (a resume past its end marker): nothing more will come.
        if (state.done) return;
        // Follow the channel until its ids show a gap or it stays silent (then catch up again), or the end.
        for (;;) {
          const entry = await inbox.next(signal, RECHECK_MS);
          if (entry === "aborted") return; // the reader went away
          if (entry === "timeout") break;
          if (entry.event === END || entry.event === DROP) {
            if (entry.id <= last + 1) return;
            break; // events before the end are missing here: read them from the stream
          }
          if (entry.id <= last) continue;
          if (entry.id > last + 1) break;
          yield entry;
          last = entry.id;
        }
      }
    } finally {
      unsubscribe();
    }
  }

  async outcome(runId: string, signal?: AbortSignal): Promise<{ result: unknown } | null> {
    const inbox = new Inbox<Entry>();
    const unsubscribe = await this.#link.subscribe(this.#keys(runId).stream, (m) => {
      const entry = parseMessage(m);
      if (entry.event === END || entry.event === DROP) inbox.push(entry);
    });
    try {
      for (;;) {
        const state = await this.#state(runId);
        if (!state.known || state.dropped) return null;
        const ending = state.done ? await this.#lastEntry(runId) : await inbox.next(signal, RECHECK_MS);
        if (ending === "aborted") return null;
        if (ending === "timeout") continue; // silence: look at the log itself again
        if (ending?.event !== END) return null;
        return { result: (JSON.parse(ending.data) as { result?: unknown }).result };
      }
    } finally {
      unsubscribe();
    }
  }

  async #lastEntry(runId: string): Promise<Entry | undefined> {
    const last = (await this.#link.commands.xrevrange(this.#keys(runId).stream, "+", "-", "COUNT", 1)) as [
      string,
      string[],
    ][];
    const fields = last[0]?.[1];
    if (!fields) return undefined;
    return { id: -1, event: fields[fields.indexOf("e") + 1], data: fields[fields.indexOf("d") + 1] };
  }

  close(): void {
    // The connections belong to the RedisLink, which the server closes.
  }
}

/** An announcement is `<id>\n<event>\n<data>` (data may itself contain newlines). */
function parseMessage(message: string): Entry {
  const first = message.indexOf("\n");
  const second = message.indexOf("\n", first + 1);
  return {
    id: Number(message.slice(0, first)),
    event: message.slice(first + 1, second),
    data: message.slice(second + 1),
  };
}

/** A queue filled by a subscription and drained by one async reader. */
class Inbox<T> {
  readonly #items: T[] = [];
  #waiter?: () => void;

  push(item: T) {
    this.#items.push(item);
    this.#waiter?.();
  }

  /** The next item; "aborted" once `signal` aborts, "timeout" after `timeoutMs` without one. */
  async next(signal: AbortSignal | undefined, timeoutMs: number): Promise<T | "aborted" | "timeout"> {
    if (this.#items.length === 0 && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiter = undefined;
          clearTimeout(timer);
          signal?.removeEventListener("abort", wake);
          resolve();
        };
        const timer = setTimeout(wake, timeoutMs);
        this.#waiter = wake;
        signal?.addEventListener("abort", wake, { once: true });
      });
    }
    if (signal?.aborted) return "aborted";
    return this.#items.shift() ?? "timeout";
  }
}
