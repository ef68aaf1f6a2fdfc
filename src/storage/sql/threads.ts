/** Threads, and the row helpers the run queue (runs.ts) shares: thread row lock, insert, settled status. */
import type { Expression, ExpressionBuilder, SelectQueryBuilder, SqlBool } from "kysely";
import { conflict } from "../../errors.js";
import type * as Port from "../ports.js";
import type { RunStatus, ThreadStatus } from "../statuses.js";
import { copyThreadCheckpoints, deleteThreadCheckpoints, keepLatestCheckpoints } from "./checkpoint-rows.js";
import { all, changed, type Executor, first, type SqlDatabase, SqlRepo, type TxSteps } from "./database.js";
import { sql } from "./kysely.js";
import { slots } from "./prepared.js";
import { type Row, recordOf, type Tables, THREAD_JSON } from "./tables.js";
import { deleteThreadEvents } from "./thread-events.js";

export type ThreadRow = Row<"threads">;

/** Checkpoint rows read per query while measuring a thread's storage. */
const STORAGE_PAGE = 100;

/**
 * Each channel's value in a stored checkpoint, with its size in bytes as serialized JSON (the form the
 * checkpointer stores it in); none when the checkpoint is not stored as JSON.
 */
function channelValueBytes(row: { type: string | null; checkpoint: Buffer }): [string, number][] {
  if ((row.type ?? "json") !== "json") return [];
  const values = (JSON.parse(row.checkpoint.toString("utf8")) as { channel_values?: object | null })
    ?.channel_values;
  return Object.entries(values ?? {}).map(([channel, value]) => [
    channel,
    Buffer.byteLength(JSON.stringify(value) ?? "", "utf8"),
  ]);
}

/**
 * Run statuses in WHERE clauses are SQL literals, not parameters, and so are constant LIMITs: SQLite
 * re-prepares a statement on every execution when a bound parameter is compared with a partial index's
 * WHERE (`runs_pending_due`, `runs_one_running`: `status = '…'`), and plans a parameter LIMIT in a
 * subquery far worse; either costs several times what running the claim query does.
 */
export const PENDING = sql.lit<RunStatus>("pending");
export const RUNNING = sql.lit<RunStatus>("running");
export const IN_FLIGHT = [PENDING, RUNNING];

const ttlColumns = (ttl: Port.ThreadTtl | undefined) => ({
  ttl_minutes: ttl?.minutes ?? null,
  ttl_strategy: ttl?.strategy ?? null,
  ttl_swept_at: null,
});

/** A new thread's row (for `threadInsert`), as `fields` leave it from idle, empty and created `now`. */
export const newThreadRow = (
  org: Port.OrgId,
  threadId: string,
  now: string,
  ttl: Port.ThreadTtl | undefined,
  fields: Partial<ThreadRow>,
): ThreadRow => ({
  thread_id: threadId,
  org_id: org,
  status: "idle",
  metadata: "{}",
  config: "{}",
  values: null,
  interrupts: "{}",
  error: null,
  temporary: false,
  created_at: now,
  updated_at: now,
  state_updated_at: now,
  ...ttlColumns(ttl),
  ...fields,
});

/**
 * The columns a thread row is read with, a new row's: named, because Postgres' table also has the
 * generated `has_values` column, which a copied row must not carry into its INSERT.
 */
const THREAD_COLUMNS = Object.keys(newThreadRow("", "", "", undefined, {})) as (keyof ThreadRow)[];

/** `values` and `error` are SQL NULL until set; a stored JSON null comes back as the text `null`. */
const toThread = (r: ThreadRow): Port.Thread => {
  const thread: Port.Thread = recordOf(
    r,
    ["org_id", "temporary", "ttl_minutes", "ttl_strategy", "ttl_swept_at", "values", "error"],
    THREAD_JSON,
  );
  if (r.values !== null) thread.values = JSON.parse(r.values);
  if (r.error !== null) thread.error = JSON.parse(r.error);
  return thread;
};

/** A value of the thread key: the value itself, or a subquery giving it (a run's). */
type KeyPart = string | SelectQueryBuilder<Tables, "runs", { org_id: string } | { thread_id: string }>;

/**
 * The query of the thread row: a thread is `(org, threadId)`, an id being unique within its
 * organization only. Locked (`dialect.lock`), it is the lock every transaction that changes a thread's
 * runs takes first (runs.ts's header says why).
 */
export const threadRow = (ex: Executor, org: KeyPart, threadId: KeyPart) =>
  ex
    .selectFrom("threads")
    .select(THREAD_COLUMNS)
    .where("org_id", "=", org as string)
    .where("thread_id", "=", threadId as string);

/** An UPDATE of the thread `(org, threadId)`. */
export const threadUpdate = (ex: Executor, org: Port.OrgId, threadId: string) =>
  ex.updateTable("threads").where("org_id", "=", org).where("thread_id", "=", threadId);

/** The thread's runs in flight, to select from. */
export const runsInFlight = (ex: Executor, org: Port.OrgId, threadId: string) =>
  ex
    .selectFrom("runs")
    .where("org_id", "=", org)
    .where("thread_id", "=", threadId)
    .where("status", "in", IN_FLIGHT);

/** EXISTS a run of the thread (its organization and id as expressions, or columns) with `status` (one or a list). */
export const hasRuns = (
  eb: ExpressionBuilder<any, any>,
  org: Expression<string>,
  thread: Expression<string>,
  status: typeof RUNNING | typeof IN_FLIGHT,
) =>
  eb.exists(
    eb
      .selectFrom("runs as x")
      .select(sql.lit(1).as("one"))
      .where("x.org_id", "=", org)
      .where("x.thread_id", "=", thread)
      .where("x.status", Array.isArray(status) ? "in" : "=", status),
  );

/** A deletion's result, from the runs in flight it found: those running and those pending. */
export const deletion = (
  deleted: boolean,
  inFlight: { run_id: string; status: string }[] = [],
): Port.ThreadDeletion => ({
  deleted,
  runningRunIds: inFlight.filter((r) => r.status === "running").map((r) => r.run_id),
  pendingRunIds: inFlight.filter((r) => r.status === "pending").map((r) => r.run_id),
});

/** Deletes `org`'s threads with their runs and checkpoints (a part of the caller's transaction). */
export function* deleteThreads(tx: Executor, org: Port.OrgId, threadIds: string[]): TxSteps<void> {
  if (!threadIds.length) return;
  yield* changed(tx.deleteFrom("runs").where("org_id", "=", org).where("thread_id", "in", threadIds));
  yield* deleteThreadCheckpoints(tx, org, threadIds);
  yield* deleteThreadEvents(tx, org, threadIds);
  yield* changed(tx.deleteFrom("threads").where("org_id", "=", org).where("thread_id", "in", threadIds));
}

/**
 * Inserts the thread unless its organization has one of this id; returns whether it did. On Postgres, a
 * concurrent insert of the same key waits on the first one's and then does nothing.
 */
export function* insertThread(database: SqlDatabase, row: ThreadRow): TxSteps<boolean> {
  const query = database.prepared("threads.insert", (db) =>
    db
      .insertInto("threads")
      .values(slots(THREAD_COLUMNS))
      .onConflict((oc) => oc.columns(["org_id", "thread_id"]).doNothing()),
  );
  return (yield* query.changed({ ...row, temporary: database.dialect.bool(Boolean(row.temporary)) })) > 0;
}

/**
 * The status a thread settles to when no run of it is executing, as an expression of the thread's
 * UPDATE (evaluated after the run's own row changed, in the same transaction, on the updated row's
 * own key): settling costs no statement of its own.
 */
export function settledStatusExpression(hasNext: boolean, failed: boolean) {
  return (eb: ExpressionBuilder<Tables, "threads">) =>
    failed
      ? sql.lit<ThreadStatus>("error")
      : hasNext
        ? sql.lit<ThreadStatus>("interrupted")
        : eb
            .case()
            .when(hasRuns(eb, eb.ref("threads.org_id"), eb.ref("threads.thread_id"), IN_FLIGHT))
            .then(sql.lit<ThreadStatus>("busy"))
            .else(sql.lit<ThreadStatus>("idle"))
            .end();
}

/** Copies and deletions go through checkpoint-rows.ts in this repository's transactions: no checkpointer. */
export class SqlThreads extends SqlRepo implements Port.ThreadsRepo {
  async create(org: Port.OrgId, input: Port.ThreadInput, ifExists: "raise" | "do_nothing") {
    const now = new Date().toISOString();
    const row = newThreadRow(org, input.thread_id, now, input.ttl, {
      metadata: JSON.stringify(input.metadata),
    });
    return this.transaction(function* (tx) {
      // One statement when the id is new; the existing row is read only when it was not.
      if (yield* insertThread(this.database, row)) return toThread(row);
      const existing = yield* first(threadRow(tx, org, input.thread_id));
      if (existing && ifExists === "do_nothing") return toThread(existing);
      throw conflict(`Thread ${input.thread_id} already exists`);
    });
  }

  async get(org: Port.OrgId, threadId: string): Promise<Port.Thread | null> {
    return this.recordOrNull(threadRow(this.database.db, org, threadId), toThread);
  }

  async patch(org: Port.OrgId, threadId: string, metadata: Port.JsonObject, ttl?: Port.ThreadTtl) {
    const updatedAt = new Date().toISOString();
    return this.transaction(function* (tx) {
      // The merge is computed here from the locked row: SQLite has no shallow JSON merge (`||` is
      // Postgres' only), and the row lock keeps concurrent patches from losing each other's keys.
      const row = yield* first(this.dialect.lock(threadRow(tx, org, threadId)));
      if (!row) return null;
      const set = {
        metadata: JSON.stringify({ ...JSON.parse(row.metadata), ...metadata }),
        updated_at: updatedAt,
        ...(ttl && ttlColumns(ttl)),
      };
      yield* changed(threadUpdate(tx, org, threadId).set(set));
      return toThread({ ...row, ...set });
    });
  }

  async delete(org: Port.OrgId, threadId: string): Promise<Port.ThreadDeletion> {
    return this.transaction(function* (tx) {
      if (!(yield* first(this.dialect.lock(threadRow(tx, org, threadId))))) return deletion(false);
      const inFlight = yield* all(runsInFlight(tx, org, threadId).select(["run_id", "status"]));
      yield* deleteThreads(tx, org, [threadId]);
      return deletion(true, inFlight);
    });
  }

  /** The threads of `org` a search or count sees (never a stateless run's temporary thread). */
  #filtered(org: Port.OrgId, q: Partial<Port.ThreadQuery>) {
    const d = this.dialect;
    return this.database.db
      .selectFrom("threads")
      .where("org_id", "=", org)
      .where("temporary", "=", d.bool(false))
      .$if(Boolean(q.ids?.length), (qb) => qb.where("thread_id", "in", q.ids!))
      .$if(Boolean(q.status), (qb) => qb.where("status", "=", q.status!))
      .$if(Boolean(q.metadata), (qb) => qb.where(d.jsonContains("metadata", q.metadata!)))
      .$if(Boolean(q.values), (qb) => qb.where(d.jsonContains("values", q.values!)))
      .$if(Boolean(q.auth), (qb) => qb.where(d.authFilter("metadata", q.auth!)));
  }

  search(org: Port.OrgId, q: Port.ThreadQuery): Promise<{ items: Port.Thread[]; total: number }> {
    return this.searchPage(
      this.#filtered(org, q),
      (qb, order) => qb.select(THREAD_COLUMNS).orderBy(q.sort_by, order),
      toThread,
      q,
    );
  }

  count(org: Port.OrgId, q: Partial<Port.ThreadQuery>): Promise<number> {
    return this.countOf(this.#filtered(org, q));
  }

  async copy(
    org: Port.OrgId,
    threadId: string,
    newThreadId: string,
    metadata: Port.JsonObject = {},
  ): Promise<Port.Thread | null> {
    const now = new Date().toISOString();
    return this.transaction(function* (tx) {
      const source = yield* first(threadRow(tx, org, threadId));
      if (!source) return null;
      const row: ThreadRow = {
        ...source,
        thread_id: newThreadId,
        status: source.status === "busy" ? "idle" : source.status,
        metadata: JSON.stringify({ ...JSON.parse(source.metadata), ...metadata, thread_id: newThreadId }),
        created_at: now,
        updated_at: now,
        ttl_swept_at: null,
      };
      if (!(yield* insertThread(this.database, row))) throw conflict(`Thread ${newThreadId} already exists`);
      yield* copyThreadCheckpoints(tx, org, threadId, newThreadId);
      return toThread(row);
    });
  }

  async recordState(org: Port.OrgId, threadId: string, state: Port.ThreadState): Promise<void> {
    const values = JSON.stringify(state.values ?? null);
    const interrupts = JSON.stringify(state.interrupts);
    const now = new Date().toISOString();
    await this.transaction(function* (tx) {
      if (!(yield* first(this.dialect.lock(threadRow(tx, org, threadId))))) return;
      const status = settledStatusExpression(state.hasNext, false);
      const set = { values, interrupts, error: null, updated_at: now, state_updated_at: now };
      yield* changed(threadUpdate(tx, org, threadId).set((eb) => ({ ...set, status: status(eb) })));
    });
  }

  async bindGraph(org: Port.OrgId, threadId: string, graphId: string, assistantId: string): Promise<void> {
    await this.patch(org, threadId, { graph_id: graphId, assistant_id: assistantId });
  }

  async keepLatest(org: Port.OrgId, threadId: string): Promise<boolean> {
    return this.transaction(function* (tx) {
      if (!(yield* first(this.dialect.lock(threadRow(tx, org, threadId))))) return false;
      if (yield* first(runsInFlight(tx, org, threadId).select("run_id"))) return false;
      yield* keepLatestCheckpoints(tx, org, threadId);
      return true;
    });
  }

  async ttl(org: Port.OrgId, threadId: string): Promise<Port.ThreadTtl | null> {
    const row = await threadRow(this.database.db, org, threadId)
      .clearSelect()
      .select(["ttl_minutes", "ttl_strategy"])
      .executeTakeFirst();
    if (!row || row.ttl_minutes === null || row.ttl_strategy === null) return null;
    return { minutes: Number(row.ttl_minutes), strategy: row.ttl_strategy as Port.ThreadTtl["strategy"] };
  }

  /**
   * Reads the thread's checkpoints a page at a time (memory stays one page however long the history),
   * measuring each stored blob; channel values are measured inside the checkpoint blobs, where this
   * checkpointer stores them.
   */
  async checkpointStorage(org: Port.OrgId, threadId: string): Promise<Port.CheckpointStorage> {
    const db = this.database.db;
    const usage: Port.CheckpointStorage = {
      checkpoints: { count: 0, bytes: 0 },
      channel_values: { count: 0, bytes: 0, channels: Object.create(null) },
      pending_writes: { count: 0, bytes: 0 },
    };
    const page = (after?: { ns: string; id: string }) =>
      db
        .selectFrom("checkpoints")
        .select(["checkpoint_ns", "checkpoint_id", "type", "checkpoint", "metadata"])
        .where("org_id", "=", org)
        .where("thread_id", "=", threadId)
        .$if(after !== undefined, (q) =>
          q.where((eb) =>
            eb(eb.refTuple("checkpoint_ns", "checkpoint_id"), ">", eb.tuple(after!.ns, after!.id)),
          ),
        )
        .orderBy("checkpoint_ns")
        .orderBy("checkpoint_id")
        .limit(STORAGE_PAGE)
        .execute();
    for (let rows = await page(); rows.length > 0; ) {
      for (const row of rows) {
        let valueBytes = 0;
        for (const [channel, bytes] of channelValueBytes(row)) {
          const entry = usage.channel_values.channels[channel] ?? { count: 0, bytes: 0 };
          usage.channel_values.channels[channel] = entry;
          entry.count += 1;
          entry.bytes += bytes;
          usage.channel_values.count += 1;
          valueBytes += bytes;
        }
        usage.channel_values.bytes += valueBytes;
        usage.checkpoints.count += 1;
        usage.checkpoints.bytes += row.checkpoint.length + row.metadata.length - valueBytes;
      }
      const last = rows[rows.length - 1]!;
      rows = rows.length < STORAGE_PAGE ? [] : await page({ ns: last.checkpoint_ns, id: last.checkpoint_id });
    }
    const writes = await db
      .selectFrom("checkpoint_writes")
      .select((eb) => [
        eb.fn.countAll<number>().as("n"),
        eb.fn.coalesce(eb.fn.sum<number>(eb.fn("length", ["value"])), sql.lit(0)).as("bytes"),
      ])
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .executeTakeFirstOrThrow();
    usage.pending_writes = { count: Number(writes.n), bytes: Number(writes.bytes) };
    return usage;
  }

  /**
   * One transaction. On SQLite it is IMMEDIATE: no admission can slip a run in between the check and
   * the delete. On Postgres the candidates are locked with SKIP LOCKED: a thread another sweeper (or an
   * admission) holds is left to it, so each expiry happens once; a thread an admission made busy after
   * the statement's snapshot is re-checked on its new row version when locked (status), and excluded.
   */
  async sweepExpired(now: number, limit: number): Promise<Port.ThreadSweep> {
    const d = this.dialect;
    return this.transaction(function* (tx) {
      const expired = yield* all(
        d.lock(
          tx
            .selectFrom("threads")
            .select(["org_id", "thread_id", "ttl_strategy"])
            .where("ttl_minutes", "is not", null)
            .where("temporary", "=", d.bool(false))
            .where("status", "<>", "busy")
            .where(sql<SqlBool>`${d.isoToMs("updated_at")} + ttl_minutes * 60000.0 <= ${now}`)
            .where((eb) =>
              eb.or([
                eb("ttl_strategy", "=", "delete"),
                eb("ttl_swept_at", "is", null),
                eb("ttl_swept_at", "<>", eb.ref("updated_at")),
              ]),
            )
            .where((eb) =>
              eb.not(hasRuns(eb, eb.ref("threads.org_id"), eb.ref("threads.thread_id"), IN_FLIGHT)),
            )
            .orderBy("updated_at")
            .orderBy(d.insertionOrder("threads"))
            .limit(limit),
          { skipLocked: true },
        ),
      );
      const deleted = expired.filter((r) => r.ttl_strategy !== "keep_latest");
      const pruned = expired.filter((r) => r.ttl_strategy === "keep_latest");
      for (const { org_id, thread_id } of deleted) yield* deleteThreads(tx, org_id, [thread_id]);
      for (const { org_id, thread_id } of pruned) {
        yield* keepLatestCheckpoints(tx, org_id, thread_id);
        const swept = threadUpdate(tx, org_id, thread_id).set((eb) => ({
          ttl_swept_at: eb.ref("updated_at"),
        }));
        yield* changed(swept);
      }
      const key = ({ org_id, thread_id }: { org_id: string; thread_id: string }) => ({
        org: org_id,
        thread_id,
      });
      return { deleted: deleted.map(key), pruned: pruned.map(key) };
    });
  }
}
