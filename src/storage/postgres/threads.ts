import { conflict } from "../../errors.js";
import type {
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
import type { PgCheckpointer } from "./checkpointer.js";
import type { PgDatabase, Queryable } from "./database.js";
import { authClause, jsonContains, Params } from "./json-filter.js";

export interface ThreadRow {
  thread_id: string;
  org_id: string;
  status: ThreadStatus;
  metadata: JsonObject;
  config: JsonObject;
  values: unknown;
  /** Generated column: `values` is not SQL NULL (pg hands out SQL NULL and JSON null alike as null). */
  has_values?: boolean;
  interrupts: Record<string, Interrupt[]>;
  error: unknown;
  temporary: boolean;
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
    metadata: r.metadata,
    status: r.status,
    config: r.config,
    interrupts: r.interrupts,
  };
  if (r.has_values) thread.values = r.values;
  if (r.error !== null) thread.error = r.error;
  return thread;
};

/**
 * Locks the thread row for the rest of the caller's transaction and returns it. Every transaction that
 * changes a thread's runs takes this lock first (then run rows): one lock order, so no deadlocks, and
 * admission, claiming and settling of one thread never interleave across processes.
 */
export async function lockThread(c: Queryable, threadId: string): Promise<ThreadRow | undefined> {
  const { rows } = await c.query<ThreadRow>("SELECT * FROM threads WHERE thread_id = $1 FOR UPDATE", [
    threadId,
  ]);
  return rows[0];
}

/** Deletes threads' checkpoints (tables owned by checkpointer.ts) in the caller's transaction. */
export async function deleteThreadCheckpoints(c: Queryable, threadIds: string[]): Promise<void> {
  await c.query("DELETE FROM checkpoint_writes WHERE thread_id = ANY($1::text[])", [threadIds]);
  await c.query("DELETE FROM checkpoints WHERE thread_id = ANY($1::text[])", [threadIds]);
}

/** Deletes threads with their runs and checkpoints, in the caller's transaction. */
export async function deleteThreads(c: Queryable, threadIds: string[]): Promise<void> {
  await c.query("DELETE FROM runs WHERE thread_id = ANY($1::text[])", [threadIds]);
  await deleteThreadCheckpoints(c, threadIds);
  await c.query("DELETE FROM threads WHERE thread_id = ANY($1::text[])", [threadIds]);
}

/** The status a thread settles to when no run is executing it. */
export async function settledStatus(
  c: Queryable,
  threadId: string,
  hasNext: boolean,
  failed: boolean,
): Promise<ThreadStatus> {
  if (failed) return "error";
  if (hasNext) return "interrupted";
  const { rows } = await c.query(
    "SELECT 1 FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') LIMIT 1",
    [threadId],
  );
  return rows.length ? "busy" : "idle";
}

/** Inserts the thread unless its id exists; returns whether it was inserted. */
export async function insertThread(c: Queryable, row: ThreadRow): Promise<boolean> {
  const { rowCount } = await c.query(
    `INSERT INTO threads (thread_id, org_id, status, metadata, config, "values", interrupts, error, temporary,
       created_at, updated_at, state_updated_at, ttl_minutes, ttl_strategy, ttl_swept_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (thread_id) DO NOTHING`,
    [
      row.thread_id,
      row.org_id,
      row.status,
      JSON.stringify(row.metadata),
      JSON.stringify(row.config),
      row.values === null && !row.has_values ? null : JSON.stringify(row.values),
      JSON.stringify(row.interrupts),
      row.error === null ? null : JSON.stringify(row.error),
      row.temporary,
      row.created_at,
      row.updated_at,
      row.state_updated_at,
      row.ttl_minutes,
      row.ttl_strategy,
      row.ttl_swept_at,
    ],
  );
  return rowCount === 1;
}

/** Threads on Postgres; the twin of sqlite/threads.ts. */
export class PgThreads implements ThreadsRepo {
  readonly #db: PgDatabase;
  readonly #checkpointer: PgCheckpointer;

  constructor(db: PgDatabase, checkpointer: PgCheckpointer) {
    this.#db = db;
    this.#checkpointer = checkpointer;
  }

  async #get(c: Queryable, org: OrgId, threadId: string, lock = false): Promise<ThreadRow | undefined> {
    const { rows } = await c.query<ThreadRow>(
      `SELECT * FROM threads WHERE thread_id = $1 AND org_id = $2${lock ? " FOR UPDATE" : ""}`,
      [threadId, org],
    );
    return rows[0];
  }

  async create(
    org: OrgId,
    input: { thread_id: string; metadata: JsonObject; ttl?: ThreadTtl },
    ifExists: "raise" | "do_nothing",
  ): Promise<Thread> {
    return this.#db.tx(async (c) => {
      const now = new Date().toISOString();
      const row: ThreadRow = {
        thread_id: input.thread_id,
        org_id: org,
        status: "idle",
        metadata: input.metadata,
        config: {},
        values: null,
        interrupts: {},
        error: null,
        temporary: false,
        created_at: now,
        updated_at: now,
        state_updated_at: now,
        ...ttlColumns(input.ttl),
      };
      if (await insertThread(c, row)) return toThread(row);
      const { rows } = await c.query<ThreadRow>("SELECT * FROM threads WHERE thread_id = $1", [
        input.thread_id,
      ]);
      const existing = rows[0];
      if (existing && ifExists === "do_nothing" && existing.org_id === org) return toThread(existing);
      throw conflict(`Thread ${input.thread_id} already exists`);
    });
  }

  async get(org: OrgId, threadId: string): Promise<Thread | null> {
    const row = await this.#get(this.#db, org, threadId);
    return row ? toThread(row) : null;
  }

  async patch(org: OrgId, threadId: string, metadata: JsonObject, ttl?: ThreadTtl): Promise<Thread | null> {
    const { rows } = await this.#db.query<ThreadRow>(
      ttl
        ? `UPDATE threads SET metadata = metadata || $3::jsonb, updated_at = $4, ttl_minutes = $5,
             ttl_strategy = $6, ttl_swept_at = NULL
           WHERE thread_id = $1 AND org_id = $2 RETURNING *`
        : `UPDATE threads SET metadata = metadata || $3::jsonb, updated_at = $4
           WHERE thread_id = $1 AND org_id = $2 RETURNING *`,
      [
        threadId,
        org,
        JSON.stringify(metadata),
        new Date().toISOString(),
        ...(ttl ? [ttl.minutes, ttl.strategy] : []),
      ],
    );
    return rows[0] ? toThread(rows[0]) : null;
  }

  async delete(org: OrgId, threadId: string): Promise<ThreadDeletion> {
    return this.#db.tx(async (c) => {
      if (!(await this.#get(c, org, threadId, true)))
        return { deleted: false, runningRunIds: [], pendingRunIds: [] };
      const inFlight = await c.query<{ run_id: string; status: string }>(
        "SELECT run_id, status FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running')",
        [threadId],
      );
      await deleteThreads(c, [threadId]);
      return {
        deleted: true,
        runningRunIds: inFlight.rows.filter((r) => r.status === "running").map((r) => r.run_id),
        pendingRunIds: inFlight.rows.filter((r) => r.status === "pending").map((r) => r.run_id),
      };
    });
  }

  #where(org: OrgId, q: Partial<ThreadQuery>, params: Params): string {
    const clauses = [`org_id = ${params.add(org)}`, "NOT temporary"];
    if (q.ids?.length) clauses.push(`thread_id = ANY(${params.add(q.ids)}::text[])`);
    if (q.status) clauses.push(`status = ${params.add(q.status)}`);
    if (q.metadata && Object.keys(q.metadata).length)
      clauses.push(jsonContains("metadata", q.metadata, params));
    if (q.values && Object.keys(q.values).length) clauses.push(jsonContains('"values"', q.values, params));
    if (q.auth) clauses.push(authClause("metadata", q.auth, params));
    return clauses.join(" AND ");
  }

  async search(org: OrgId, q: ThreadQuery): Promise<{ items: Thread[]; total: number }> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const order = q.sort_order === "asc" ? "ASC" : "DESC";
    // sort_by is validated against a closed list by the route schema, so it is safe to interpolate.
    const { rows } = await this.#db.query<ThreadRow>(
      `SELECT * FROM threads WHERE ${where} ORDER BY ${q.sort_by} ${order}, seq ${order}
       LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
      params.values,
    );
    return { items: rows.map(toThread), total: await this.count(org, q) };
  }

  async count(org: OrgId, q: Pick<ThreadQuery, "metadata" | "values" | "status" | "auth">): Promise<number> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const { rows } = await this.#db.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM threads WHERE ${where}`,
      params.values,
    );
    return rows[0].n;
  }

  async copy(org: OrgId, threadId: string, newThreadId: string): Promise<Thread | null> {
    return this.#db.tx(async (c) => {
      const source = await this.#get(c, org, threadId);
      if (!source) return null;
      const now = new Date().toISOString();
      const row: ThreadRow = {
        ...source,
        thread_id: newThreadId,
        status: source.status === "busy" ? "idle" : source.status,
        metadata: { ...source.metadata, thread_id: newThreadId },
        created_at: now,
        updated_at: now,
        ttl_swept_at: null,
      };
      if (!(await insertThread(c, row))) throw conflict(`Thread ${newThreadId} already exists`);
      await this.#checkpointer.copyThreadIn(c, threadId, newThreadId);
      return toThread(row);
    });
  }

  async recordState(
    org: OrgId,
    threadId: string,
    state: { values: unknown; interrupts: Record<string, Interrupt[]>; hasNext: boolean },
  ): Promise<void> {
    await this.#db.tx(async (c) => {
      if (!(await this.#get(c, org, threadId, true))) return;
      const now = new Date().toISOString();
      await c.query(
        `UPDATE threads SET "values" = $2, interrupts = $3, status = $4, error = NULL, updated_at = $5,
           state_updated_at = $5 WHERE thread_id = $1`,
        [
          threadId,
          JSON.stringify(state.values ?? null),
          JSON.stringify(state.interrupts),
          await settledStatus(c, threadId, state.hasNext, false),
          now,
        ],
      );
    });
  }

  async sweepExpired(now: number, limit: number): Promise<ThreadSweep> {
    return this.#db.tx(async (c) => {
      // SKIP LOCKED: a thread another sweeper (or an admission) holds is left to it, so each expiry
      // happens once. A thread an admission made busy after this snapshot is re-checked on its new
      // row version when locked (status), and excluded.
      const { rows } = await c.query<{ thread_id: string; ttl_strategy: string }>(
        `SELECT thread_id, ttl_strategy FROM threads t
         WHERE ttl_minutes IS NOT NULL AND NOT temporary AND status <> 'busy'
           AND updated_at::timestamptz + ttl_minutes * interval '1 minute' <= to_timestamp($1 / 1000.0)
           AND (ttl_strategy = 'delete' OR ttl_swept_at IS DISTINCT FROM updated_at)
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.thread_id
                             AND r.status IN ('pending', 'running'))
         ORDER BY updated_at, seq LIMIT $2
         FOR UPDATE SKIP LOCKED`,
        [now, limit],
      );
      const deleted = rows.filter((r) => r.ttl_strategy !== "keep_latest").map((r) => r.thread_id);
      const pruned = rows.filter((r) => r.ttl_strategy === "keep_latest").map((r) => r.thread_id);
      if (deleted.length) await deleteThreads(c, deleted);
      if (pruned.length) {
        // All but each namespace's latest checkpoint (ids grow with time), with their pending writes.
        const latest = `(SELECT MAX(l.checkpoint_id) FROM checkpoints l
                          WHERE l.thread_id = t.thread_id AND l.checkpoint_ns = t.checkpoint_ns)`;
        await c.query(
          `DELETE FROM checkpoint_writes t WHERE thread_id = ANY($1::text[])
             AND checkpoint_id IS DISTINCT FROM ${latest}`,
          [pruned],
        );
        await c.query(
          `DELETE FROM checkpoints t WHERE thread_id = ANY($1::text[]) AND checkpoint_id <> ${latest}`,
          [pruned],
        );
        await c.query("UPDATE threads SET ttl_swept_at = updated_at WHERE thread_id = ANY($1::text[])", [
          pruned,
        ]);
      }
      return { deleted, pruned };
    });
  }

  async bindGraph(org: OrgId, threadId: string, graphId: string, assistantId: string): Promise<void> {
    await this.#db.query(
      `UPDATE threads SET metadata = metadata || $3::jsonb, updated_at = $4 WHERE thread_id = $1 AND org_id = $2`,
      [
        threadId,
        org,
        JSON.stringify({ graph_id: graphId, assistant_id: assistantId }),
        new Date().toISOString(),
      ],
    );
  }
}
