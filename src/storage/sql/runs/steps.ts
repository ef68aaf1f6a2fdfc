/**
 * What the run queue's operations (the files beside this one, composed by index.ts) share: the steps
 * of their transactions and the pieces of their queries.
 *
 * Atomicity per thread: every transaction that changes a thread's runs first takes the thread
 * (`lockThread`, or `lockThreadOfRun` for operations keyed by run id), then touches run rows.
 * - SQLite: transactions begin IMMEDIATE (database.ts) and hold the file's write lock from their first
 *   statement, across the API thread's and the executor threads' connections, so admission and claiming
 *   are atomic without row locks; taking the thread is a plain read.
 * - Postgres: taking the thread is SELECT … FOR UPDATE on its row. One lock order everywhere (thread,
 *   then runs) means admission, claiming, cancelling and settling of one thread are serialized across
 *   all processes and cannot deadlock one another. Operations keyed by run id lock the run's thread in
 *   one statement, then read the run in the next: a new snapshot, taken under the lock, in which the
 *   run may have moved on meanwhile.
 * The partial unique index `runs_one_running (thread_id) WHERE status = 'running'` backs this up in the
 * database itself: were a code path ever to skip the lock, a second claim would fail instead of running
 * two runs of one thread at once.
 *
 * Leases are stamped and compared with the database's clock (`dialect.nowMs()`): hosts whose clocks
 * disagree must not take each other's live runs for dead ones. Due times (`not_before`) are the
 * admitting process's clock, compared with the claiming process's.
 */
import type { Expression, ExpressionBuilder, SqlBool, Updateable } from "kysely";
import type * as Port from "../../ports.js";
import { deleteRunCheckpoints } from "../checkpoint-rows.js";
import { changed, type Executor, first, type SqlDatabase, SqlRepo, type TxSteps } from "../database.js";
import { sql } from "../kysely.js";
import { slot } from "../prepared.js";
import { type Row, RUN_JSON, recordOf, type Tables } from "../tables.js";
import {
  deleteThreads,
  hasRuns,
  RUNNING,
  settledStatusExpression,
  type ThreadRow,
  threadRow,
  threadUpdate,
} from "../threads.js";

export type RunRow = Row<"runs">;

/** A run's record: its row without the queue's own columns and its stored error. */
export const toRun = (r: RunRow): Port.Run =>
  recordOf(r, ["org_id", "not_before", "worker_id", "lease_expires_at", "stop_requested", "error"], RUN_JSON);

/** The longest stack trace kept with a failed run, in characters (a trace's first lines say the most). */
const MAX_STACK = 16_384;

/** A failed run's stored error (JSON text): its type and message, and its stack trace when there is one. */
export function runError(error: { error: string; message: string }, stack?: string): string {
  return JSON.stringify({ ...error, ...(stack && { stack: stack.slice(0, MAX_STACK) }) });
}

/** A run in the queue, new or back for another attempt, for any worker to take. */
export const QUEUED = { status: "pending", worker_id: null, lease_expires_at: null } as const;

/** A thread's settling after one of its runs ended; JSON already serialized (before the transaction). */
export interface Settlement {
  values?: string;
  interrupts?: string;
  /** Absent: from the interrupts the thread keeps. */
  hasNext?: boolean;
  error?: string;
}

/**
 * No other run of the run's thread is executing, for a query on `runs as r` (typed loosely: it serves
 * selects, a CTE and an update, whose builders Kysely types apart).
 */
export const threadNotRunning = (eb: ExpressionBuilder<any, any>): Expression<SqlBool> =>
  eb.not(hasRuns(eb, eb.ref("r.org_id"), eb.ref("r.thread_id"), RUNNING));

/** What every operation on the queue holds: the database, and the checkpointer whose rows go with runs. */
export abstract class RunSteps extends SqlRepo {
  constructor(
    database: SqlDatabase,
    private readonly checkpointer: Port.CheckpointStore,
  ) {
    super(database);
  }

  /** Takes the thread (see the top of this file) and returns it as it is under the lock. */
  protected *lockThread(org: Port.OrgId, threadId: string): TxSteps<ThreadRow | undefined> {
    const query = this.database.prepared("runs.lockThread", (db) =>
      this.dialect.lock(threadRow(db, slot("org_id"), slot("thread_id"))),
    );
    return yield* query.first({ org_id: org, thread_id: threadId });
  }

  /** Takes the thread of `runId` in one statement, as it is under the lock; undefined: the run is gone. */
  protected *lockThreadOfRun(runId: string): TxSteps<ThreadRow | undefined> {
    const query = this.database.prepared("runs.lockThreadOfRun", (db) => {
      const ofRun = db.selectFrom("runs").where("runs.run_id", "=", slot("run_id"));
      return this.dialect.lock(threadRow(db, ofRun.select("runs.org_id"), ofRun.select("runs.thread_id")));
    });
    return yield* query.first({ run_id: runId });
  }

  protected selectRun(ex: Executor, runId: string) {
    return ex.selectFrom("runs").selectAll().where("run_id", "=", runId);
  }

  protected *updateRun(tx: Executor, runId: string, set: Updateable<Tables["runs"]>): TxSteps<void> {
    yield* changed(tx.updateTable("runs").set(set).where("run_id", "=", runId));
  }

  /** Deletes the run (unless already gone: false), rebinds its thread's graph and settles the thread. */
  protected *rollBack(tx: Executor, thread: ThreadRow, runId: string): TxSteps<boolean> {
    if (!(yield* this.deleteRun(tx, thread, runId))) return false;
    yield* this.restoreGraphBinding(tx, thread);
    yield* this.settleThread(tx, thread, { hasNext: false });
    return true;
  }

  /**
   * The thread's status and state once a run on it ended, in one UPDATE (the settled status is an
   * expression of it). A temporary thread (a stateless run's) goes instead, with its run and
   * checkpoints, in the same transaction that ends its run: no crash can leave it behind.
   */
  protected *settleThread(tx: Executor, thread: ThreadRow, s: Settlement): TxSteps<void> {
    if (thread.temporary) {
      yield* deleteThreads(tx, thread.org_id, [thread.thread_id]);
      return;
    }
    const hasNext = s.hasNext ?? Object.keys(JSON.parse(s.interrupts ?? thread.interrupts)).length > 0;
    const failed = s.error !== undefined;
    const [interrupts, values] = [s.interrupts !== undefined, s.values !== undefined];
    const query = this.database.prepared(`runs.settle:${hasNext}:${failed}:${interrupts}:${values}`, (db) =>
      db
        .updateTable("threads")
        .set((eb) => ({
          status: settledStatusExpression(hasNext, failed)(eb),
          error: slot("error"),
          updated_at: slot("now"),
          ...(interrupts && { interrupts: slot("interrupts") }),
          ...(values && { values: slot("values"), state_updated_at: slot("now") }),
        }))
        .where("org_id", "=", slot("org_id"))
        .where("thread_id", "=", slot("thread_id")),
    );
    yield* query.changed({
      org_id: thread.org_id,
      thread_id: thread.thread_id,
      error: s.error ?? null,
      now: new Date().toISOString(),
      interrupts: s.interrupts,
      values: s.values,
    });
  }

  /**
   * Deletes a run and its checkpoints; false if the run was already gone. The checkpointer's fence comes
   * first: a late checkpoint of the run is dropped, not written after its rows were deleted.
   */
  protected *deleteRun(
    tx: Executor,
    thread: Pick<ThreadRow, "org_id" | "thread_id">,
    runId: string,
  ): TxSteps<boolean> {
    this.checkpointer.fenceRun(runId);
    if (!(yield* changed(tx.deleteFrom("runs").where("run_id", "=", runId)))) return false;
    yield* deleteRunCheckpoints(tx, thread.org_id, thread.thread_id, runId);
    return true;
  }

  /**
   * After a rollback the thread is bound again to the graph of its latest remaining run: admission
   * bound it to the rolled-back run's graph, and state/history are read through the bound graph.
   */
  protected *restoreGraphBinding(tx: Executor, thread: ThreadRow): TxSteps<void> {
    const latest = yield* first(
      tx
        .selectFrom("runs")
        .select(["assistant_id", "kwargs"])
        .where("org_id", "=", thread.org_id)
        .where("thread_id", "=", thread.thread_id)
        .orderBy("seq", "desc")
        .limit(sql.lit(1)),
    );
    if (!latest) return;
    const graphId = (JSON.parse(latest.kwargs) as Port.RunKwargs).config.configurable?.graph_id;
    const metadata = { ...JSON.parse(thread.metadata), graph_id: graphId, assistant_id: latest.assistant_id };
    yield* changed(
      threadUpdate(tx, thread.org_id, thread.thread_id).set({ metadata: JSON.stringify(metadata) }),
    );
  }
}
