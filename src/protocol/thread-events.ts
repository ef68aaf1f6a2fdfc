/**
 * The thread-centric streaming protocol ("protocol v2", langchain-ai/agent-protocol `streaming/`):
 * the seam between the side that produces a thread's protocol events (the executor, for runs started
 * through the protocol) and the side that serves them (`POST /threads/{id}/stream/events`, the
 * WebSocket, `subscription.subscribe`). Envelopes on the wire come from `@langchain/protocol`.
 *
 * A thread's events are numbered by one counter (`seq`, from 1, across its runs, never restarting: it
 * is kept in storage), kept in a bounded durable buffer, and followed live from any process.
 */
import type { OrgId } from "../storage/ports.js";

/** One protocol event as kept: the wire `Event` is `{type:"event", event_id: String(seq), seq, method, params}`. */
export interface ThreadEvent {
  /** The thread's event counter: consecutive, from 1, across runs and restarts. */
  seq: number;
  /** `values`, `updates`, `messages`, `tools`, `custom` / `custom:<name>`, `lifecycle`, `input.requested`, … */
  method: string;
  /** Subgraph / node-task namespace, e.g. `["model:<task>"]`; `[]` is the root graph. */
  namespace: string[];
  /** `params.node` on `updates` (messages and tools name their node task in the namespace). */
  node?: string;
  /** Milliseconds since the epoch, when the event was produced. */
  timestamp: number;
  /** `params.data`. */
  data: unknown;
  /** The run that produced it. */
  run_id: string;
}

/** What a follower receives: events in seq order, or a note that events it asked for are no longer kept. */
export type ThreadEventItem =
  | { kind: "event"; event: ThreadEvent }
  /** Events `from`..`to` (inclusive) were dropped from the buffer before this reader asked for them. */
  | { kind: "missed"; from: number; to: number };

/** Served side: reads a thread's events from any process. */
export interface ThreadEventFeed {
  /**
   * Every kept event with seq > `since` (absent: every kept event), then each new one as it is
   * produced, until `signal` aborts. If events after `since` were already dropped, the first item is
   * `missed`. Never ends by itself (a protocol stream stays open across runs).
   */
  follow(
    org: OrgId,
    threadId: string,
    since: number | undefined,
    signal: AbortSignal,
  ): AsyncIterable<ThreadEventItem>;
  /** The thread's last seq (0: none yet); a command response's `meta.applied_through_seq`. */
  lastSeq(org: OrgId, threadId: string): Promise<number>;
}

/**
 * Set in a run's kwargs by `run.start` / `input.respond`: the executor then also produces the run's
 * protocol events into the thread's buffer (runs created over REST do not pay for it).
 */
export const THREAD_EVENTS_KWARG = "thread_events";

/** Set beside it by a resume (`input.respond`, `run.start` on an interrupted thread): the interrupt ids it answers (`input.answered`). */
export const ANSWERED_INTERRUPTS_KWARG = "thread_events_answered";
