/**
 * The storage port of protocol-v2 thread events (src/protocol/): each thread's events numbered by one
 * counter (`seq`, from 1, across runs and restarts), kept within a count and a byte bound, oldest
 * dropped first. Re-exported by `ports.ts`. Events leave with their thread (`deleteThreads`).
 */

type OrgId = string;

/** One event as stored: `data` is the event's JSON (`{method, namespace, node?, timestamp, data, run_id}`). */
export interface StoredThreadEvent {
  seq: number;
  json: string;
}

/** How much of a thread's events is kept. */
export interface ThreadEventRetention {
  /** Events kept per thread, at most. */
  maxEvents: number;
  /** Bytes of event JSON kept per thread, at most (the newest event is kept whatever its size). */
  maxBytes: number;
}

export interface ThreadEventsRepo {
  /**
   * Appends events (JSON texts, in order) to the thread's log in one transaction, numbering them after
   * its last seq, and drops the oldest beyond `retention`. Returns the last seq given.
   */
  append(org: OrgId, threadId: string, events: string[], retention: ThreadEventRetention): Promise<number>;
  /**
   * Kept events with seq > `after`, oldest first, at most `limit`; and the first seq kept (the thread's
   * next seq when none is kept) and the last seq given (0: none yet).
   */
  read(
    org: OrgId,
    threadId: string,
    after: number,
    limit: number,
  ): Promise<{ events: StoredThreadEvent[]; firstKept: number; lastSeq: number }>;
  /** The last seq given to the thread's events (0: none yet). */
  lastSeq(org: OrgId, threadId: string): Promise<number>;
}
