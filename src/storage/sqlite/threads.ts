import { conflict } from "../../errors.js";
import type {
  CheckpointStore,
  Interrupt,
  JsonObject,
  OrgId,
  Thread,
  ThreadDeletion,
  ThreadQuery,
  ThreadSweep,
  ThreadsRepo,
  ThreadTtl,
} from "../ports.js";
import type { ThreadStatus } from "../statuses.js";
import { type Db, prepared } from "./database.js";
import { authClause, jsonContains } from "./json-filter.js";

export interface ThreadRow {
  thread_id: string;
  org_id: string;
  status: ThreadStatus;
  metadata: string;
  config: string;
  values: string | null;
  interrupts: string;
  error: string | null;
  temporary: number;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  ttl_minutes: number | null;
  ttl_strategy: ThreadTtl["strategy"] | null;
  ttl_swept_at: string | null;
}

/** The TTL columns of a new thread row. */
export const ttlColumns = (ttl: ThreadTtl | undefined) => ({
  ttl_minutes: ttl?.minutes ?? null,
  ttl_strategy: ttl?.strategy ?? null,
  ttl_swept_at: null,
});

export const toThread = (r: ThreadRow): Thread => {
  const thread: Thread = {
    thread_id: r.thread_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    state_updated_at: r.state_updated_at,
    metadata: JSON.parse(r.metadata),
    status: r.status,
    config: JSON.parse(r.config),
    interrupts: JSON.parse(r.interrupts),
  };
  if (r.values !== null) thread.values = JSON.parse(r.values);
  if (r.error !== null) thread.error = JSON.parse(r.error);
  return thread;
};

/** Deletes a thread's checkpoints (tables owned by checkpointer.ts) in the caller's transaction. */
export function deleteThreadCheckpoints(db: Db, threadId: string): void {
  prepared(db, "DELETE FROM checkpoint_writes WHERE thread_id = ?").run(threadId);
  prepared(db, "DELETE FROM checkpoints WHERE thread_id = ?").run(threadId);
}

/** Deletes a thread with its runs and checkpoints, in the caller's transaction. */
export function deleteThread(db: Db, threadId: string): void {
  prepared(db, "DELETE FROM runs WHERE thread_id = ?").run(threadId);
  deleteThreadCheckpoints(db, threadId);
  prepared(db, "DELETE FROM threads WHERE thread_id = ?").run(threadId);
}

/**
 * Deletes all but the latest checkpoint of each of the thread's namespaces, with their pending writes
 * (checkpoint ids grow with time, so the latest is the greatest).
 */
function keepLatestCheckpoints(db: Db, threadId: string): void {
  const latest = `(SELECT MAX(l.checkpoint_id) FROM checkpoints l
                    WHERE l.thread_id = ? AND l.checkpoint_ns = t.checkpoint_ns)`;
  prepared(
    db,
    `DELETE FROM checkpoint_writes AS t WHERE thread_id = ? AND checkpoint_id <> COALESCE(${latest}, '')`,
  ).run(threadId, threadId);
  prepared(db, `DELETE FROM checkpoints AS t WHERE thread_id = ? AND checkpoint_id <> ${latest}`).run(
    threadId,
    threadId,
  );
}

/** The status a thread settles to when no run is executing it. */
export function settledStatus(db: Db, threadId: string, hasNext: boolean, failed: boolean): ThreadStatus {
  if (failed) return "error";
  if (hasNext) return "interrupted";
  const inFlight = prepared(
    db,
    "SELECT 1 FROM runs WHERE thread_id = ? AND status IN ('pending', 'running') LIMIT 1",
  ).get(threadId);
  return inFlight ? "busy" : "idle";
}

export class SqliteThreads implements ThreadsRepo {
  readonly #db: Db;
  readonly #checkpointer: CheckpointStore;
  readonly #get;

  constructor(db: Db, checkpointer: CheckpointStore) {
    this.#db = db;
    this.#checkpointer = checkpointer;
    this.#get = prepared<[string, string], ThreadRow>(
      db,
      "SELECT * FROM threads WHERE thread_id = ? AND org_id = ?",
    );
  }

  async create(
    org: OrgId,
    input: { thread_id: string; metadata: JsonObject; ttl?: ThreadTtl },
    ifExists: "raise" | "do_nothing",
  ): Promise<Thread> {
    return this.#db.transaction(() => {
      const existing = prepared<[string], ThreadRow>(
        this.#db,
        "SELECT * FROM threads WHERE thread_id = ?",
      ).get(input.thread_id);
      if (existing) {
        if (ifExists === "do_nothing" && existing.org_id === org) return toThread(existing);
        throw conflict(`Thread ${input.thread_id} already exists`);
      }
      const now = new Date().toISOString();
      const row: ThreadRow = {
        thread_id: input.thread_id,
        org_id: org,
        status: "idle",
        metadata: JSON.stringify(input.metadata),
        config: "{}",
        values: null,
        interrupts: "{}",
        error: null,
        temporary: 0,
        created_at: now,
        updated_at: now,
        state_updated_at: now,
        ...ttlColumns(input.ttl),
      };
      insertThread(this.#db, row);
      return toThread(row);
    })();
  }

  async get(org: OrgId, threadId: string): Promise<Thread | null> {
    const row = this.#get.get(threadId, org);
    return row ? toThread(row) : null;
  }

  async patch(org: OrgId, threadId: string, metadata: JsonObject, ttl?: ThreadTtl): Promise<Thread | null> {
    return this.#db.transaction(() => {
      const row = this.#get.get(threadId, org);
      if (!row) return null;
      const next: ThreadRow = {
        ...row,
        metadata: JSON.stringify({ ...JSON.parse(row.metadata), ...metadata }),
        updated_at: new Date().toISOString(),
        ...(ttl && ttlColumns(ttl)),
      };
      prepared(
        this.#db,
        `UPDATE threads SET metadata = ?, updated_at = ?, ttl_minutes = ?, ttl_strategy = ?, ttl_swept_at = ?
           WHERE thread_id = ?`,
      ).run(next.metadata, next.updated_at, next.ttl_minutes, next.ttl_strategy, next.ttl_swept_at, threadId);
      return toThread(next);
    })();
  }

  async delete(org: OrgId, threadId: string): Promise<ThreadDeletion> {
    return this.#db.transaction(() => {
      if (!this.#get.get(threadId, org)) return { deleted: false, runningRunIds: [], pendingRunIds: [] };
      const inFlight = prepared<[string], { run_id: string; status: string }>(
        this.#db,
        "SELECT run_id, status FROM runs WHERE thread_id = ? AND status IN ('pending', 'running')",
      ).all(threadId);
      deleteThread(this.#db, threadId);
      return {
        deleted: true,
        runningRunIds: inFlight.filter((r) => r.status === "running").map((r) => r.run_id),
        pendingRunIds: inFlight.filter((r) => r.status === "pending").map((r) => r.run_id),
      };
    })();
  }

  #where(org: OrgId, q: Partial<ThreadQuery>) {
    const clauses = ["org_id = ?", "temporary = 0"];
    const params: unknown[] = [org];
    if (q.ids?.length) {
      clauses.push(`thread_id IN (${q.ids.map(() => "?").join(",")})`);
      params.push(...q.ids);
    }
    if (q.status) {
      clauses.push("status = ?");
      params.push(q.status);
    }
    for (const [column, filter] of [
      ["metadata", q.metadata],
      ['"values"', q.values],
    ] as const) {
      if (filter && Object.keys(filter).length) {
        const f = jsonContains(column, filter);
        clauses.push(f.sql);
        params.push(...f.params);
      }
    }
    if (q.auth) {
      const f = authClause("metadata", q.auth);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    return { sql: clauses.join(" AND "), params };
  }

  async search(org: OrgId, q: ThreadQuery): Promise<{ items: Thread[]; total: number }> {
    const where = this.#where(org, q);
    // sort_by is validated against a closed list by the route schema, so it is safe to interpolate.
    const rows = prepared<unknown[], ThreadRow>(
      this.#db,
      `SELECT * FROM threads WHERE ${where.sql} ORDER BY ${q.sort_by} ${q.sort_order}, rowid ${q.sort_order} LIMIT ? OFFSET ?`,
    ).all(...where.params, q.limit, q.offset);
    return { items: rows.map(toThread), total: await this.count(org, q) };
  }

  async count(org: OrgId, q: Pick<ThreadQuery, "metadata" | "values" | "status" | "auth">): Promise<number> {
    const where = this.#where(org, q);
    return prepared<unknown[], { n: number }>(
      this.#db,
      `SELECT COUNT(*) AS n FROM threads WHERE ${where.sql}`,
    ).get(...where.params)!.n;
  }

  async copy(org: OrgId, threadId: string, newThreadId: string): Promise<Thread | null> {
    return this.#db.transaction(() => {
      const source = this.#get.get(threadId, org);
      if (!source) return null;
      const now = new Date().toISOString();
      const row: ThreadRow = {
        ...source,
        thread_id: newThreadId,
        status: source.status === "busy" ? "idle" : source.status,
        metadata: JSON.stringify({ ...JSON.parse(source.metadata), thread_id: newThreadId }),
        created_at: now,
        updated_at: now,
        ttl_swept_at: null,
      };
      insertThread(this.#db, row);
      this.#checkpointer.copyThread(threadId, newThreadId);
      return toThread(row);
    })();
  }

  async recordState(
    org: OrgId,
    threadId: string,
    state: { values: unknown; interrupts: Record<string, Interrupt[]>; hasNext: boolean },
  ): Promise<void> {
    this.#db.transaction(() => {
      if (!this.#get.get(threadId, org)) return;
      const now = new Date().toISOString();
      prepared(
        this.#db,
        `UPDATE threads SET "values" = ?, interrupts = ?, status = ?, error = NULL, updated_at = ?, state_updated_at = ?
           WHERE thread_id = ?`,
      ).run(
        JSON.stringify(state.values ?? null),
        JSON.stringify(state.interrupts),
        settledStatus(this.#db, threadId, state.hasNext, false),
        now,
        now,
        threadId,
      );
    })();
  }

  async sweepExpired(now: number, limit: number): Promise<ThreadSweep> {
    // One IMMEDIATE transaction: no admission can slip a run in between the check and the delete.
    return this.#db.transaction(() => {
      const expired = prepared<[number, number], { thread_id: string; ttl_strategy: string }>(
        this.#db,
        `SELECT thread_id, ttl_strategy FROM threads
         WHERE ttl_minutes IS NOT NULL AND temporary = 0 AND status <> 'busy'
           AND (julianday(updated_at) - 2440587.5) * 86400000.0 + ttl_minutes * 60000.0 <= ?
           AND (ttl_strategy = 'delete' OR ttl_swept_at IS NULL OR ttl_swept_at <> updated_at)
           AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.thread_id = threads.thread_id
                             AND runs.status IN ('pending', 'running'))
         ORDER BY updated_at, rowid LIMIT ?`,
      ).all(now, limit);
      const swept: ThreadSweep = { deleted: [], pruned: [] };
      for (const { thread_id, ttl_strategy } of expired) {
        if (ttl_strategy === "keep_latest") {
          keepLatestCheckpoints(this.#db, thread_id);
          prepared(this.#db, "UPDATE threads SET ttl_swept_at = updated_at WHERE thread_id = ?").run(
            thread_id,
          );
          swept.pruned.push(thread_id);
        } else {
          deleteThread(this.#db, thread_id);
          swept.deleted.push(thread_id);
        }
      }
      return swept;
    })();
  }

  async bindGraph(org: OrgId, threadId: string, graphId: string, assistantId: string): Promise<void> {
    const row = this.#get.get(threadId, org);
    if (!row) return;
    const metadata = { ...JSON.parse(row.metadata), graph_id: graphId, assistant_id: assistantId };
    prepared(this.#db, "UPDATE threads SET metadata = ?, updated_at = ? WHERE thread_id = ?").run(
      JSON.stringify(metadata),
      new Date().toISOString(),
      threadId,
    );
  }
}

export function insertThread(db: Db, row: ThreadRow): void {
  prepared(
    db,
    `INSERT INTO threads (thread_id, org_id, status, metadata, config, "values", interrupts, error, temporary,
       created_at, updated_at, state_updated_at, ttl_minutes, ttl_strategy, ttl_swept_at)
     VALUES (@thread_id, @org_id, @status, @metadata, @config, @values, @interrupts, @error, @temporary,
       @created_at, @updated_at, @state_updated_at, @ttl_minutes, @ttl_strategy, @ttl_swept_at)`,
  ).run(row);
}
