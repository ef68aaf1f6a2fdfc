/**
 * The run queue. Atomicity per thread: every transaction that changes a thread's runs first takes the
 * thread (`#lockThread`, or `#lockThreadOfRun` for operations keyed by run id), then touches run rows.
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
import type { Expression, ExpressionBuilder, SelectQueryBuilder, SqlBool, Updateable } from "kysely";
import { conflict, notFound } from "../../errors.js";
import type * as Port from "../ports.js";
import { DEFAULT_LEASE } from "../ports.js";
import { THREAD_BUSY_MESSAGE } from "../statuses.js";
import { deleteRunCheckpoints } from "./checkpoint-rows.js";
import { all, changed, type Executor, first, type SqlDatabase, SqlRepo, type TxSteps } from "./database.js";
import { sql } from "./kysely.js";
import { slot, slots } from "./prepared.js";
import { type Row, RUN_JSON, recordOf, type Tables } from "./tables.js";
import {
  deleteThreads,
  hasRuns,
  IN_FLIGHT,
  insertThread,
  newThreadRow,
  PENDING,
  RUNNING,
  runsInFlight,
  settledStatusExpression,
  type ThreadRow,
  threadRow,
} from "./threads.js";

type RunRow = Row<"runs">;

/** A run's record: its row without the queue's own columns and its stored error. */
const toRun = (r: RunRow): Port.Run =>
  recordOf(r, ["org_id", "not_before", "worker_id", "lease_expires_at", "stop_requested", "error"], RUN_JSON);

/** The longest stack trace kept with a failed run, in characters (a trace's first lines say the most). */
const MAX_STACK = 16_384;

/** A failed run's stored error (JSON text): its type and message, and its stack trace when there is one. */
function runError(error: { error: string; message: string }, stack?: string): string {
  return JSON.stringify({ ...error, ...(stack && { stack: stack.slice(0, MAX_STACK) }) });
}

/** How many due candidates one claim looks at before giving up on threads other processes hold. */
const CLAIM_CANDIDATES = 16;
/**
 * A claim that skipped a due run because its thread was locked (an admission or another claim in
 * flight, a few milliseconds) asks to be retried this soon: the lock holder may have been an admission
 * refused with 409 whose transaction outlived the nudge of the run admitted before it, and no further
 * nudge would come.
 */
const CONTENDED_RETRY_MS = 20;

/** A run in the queue, new or back for another attempt, for any worker to take. */
const QUEUED = { status: "pending", worker_id: null, lease_expires_at: null } as const;

/** A thread's settling after one of its runs ended; JSON already serialized (before the transaction). */
interface Settlement {
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
const threadNotRunning = (eb: ExpressionBuilder<any, any>): Expression<SqlBool> =>
  eb.not(hasRuns(eb, eb.ref("r.thread_id"), RUNNING));

/** The runs of `runs as r` a claim may take at `now`: due, pending, their thread idle; in queue order. */
const dueInQueueOrder = <O>(qb: SelectQueryBuilder<any, any, O>, now: unknown) =>
  qb
    .where("r.status", "=", PENDING)
    .where("r.not_before", "<=", now)
    .where(threadNotRunning)
    .orderBy("r.not_before")
    .orderBy("r.seq");

/** The earliest due time after `now` of a pending run (a delayed one), as `t`; typed loosely, as above. */
const nextDue = (
  ex: { selectFrom(table: "runs"): SelectQueryBuilder<any, any, object> },
  now: unknown,
): SelectQueryBuilder<any, any, { t: number | null }> =>
  ex
    .selectFrom("runs")
    .select((s) => s.fn.min("not_before").as("t"))
    .where("status", "=", PENDING)
    .where("not_before", ">", now);

/** Some due pending run waits behind its thread's executing run (ClaimResult.waiting); typed loosely. */
const waitingBehindThreads = (eb: ExpressionBuilder<any, any>, now: unknown) =>
  eb.exists(
    eb
      .selectFrom("runs as r")
      .select(sql.lit(1).as("one"))
      .where("r.status", "=", PENDING)
      .where("r.not_before", "<=", now)
      .where((e) => hasRuns(e, e.ref("r.thread_id"), RUNNING)),
  );

/** An epoch-ms time read from the database (null: none) as a Date. */
const dateOf = (ms: number | string | null | undefined) => (ms == null ? null : new Date(Number(ms)));

export class SqlRuns extends SqlRepo implements Port.RunsRepo {
  constructor(
    database: SqlDatabase,
    private readonly checkpointer: Port.CheckpointStore,
  ) {
    super(database);
  }

  /** Takes the thread (see the top of this file) and returns it as it is under the lock. */
  *#lockThread(threadId: string): TxSteps<ThreadRow | undefined> {
    const query = this.database.prepared("runs.lockThread", (db) =>
      this.dialect.lock(threadRow(db, slot("thread_id"))),
    );
    return yield* query.first({ thread_id: threadId });
  }

  /** Takes the thread of `runId` in one statement, as it is under the lock; undefined: the run is gone. */
  *#lockThreadOfRun(runId: string): TxSteps<ThreadRow | undefined> {
    const query = this.database.prepared("runs.lockThreadOfRun", (db) => {
      const threadId = db
        .selectFrom("runs")
        .select("runs.thread_id")
        .where("runs.run_id", "=", slot("run_id"));
      return this.dialect.lock(threadRow(db, threadId));
    });
    return yield* query.first({ run_id: runId });
  }

  #run(ex: Executor, runId: string) {
    return ex.selectFrom("runs").selectAll().where("run_id", "=", runId);
  }

  *#update(tx: Executor, runId: string, set: Updateable<Tables["runs"]>): TxSteps<void> {
    yield* changed(tx.updateTable("runs").set(set).where("run_id", "=", runId));
  }

  /** Deletes the run (unless already gone: false), rebinds its thread's graph and settles the thread. */
  *#rollBack(tx: Executor, thread: ThreadRow, runId: string): TxSteps<boolean> {
    if (!(yield* this.#deleteRun(tx, thread.thread_id, runId))) return false;
    yield* this.#restoreGraphBinding(tx, thread);
    yield* this.#settleThread(tx, thread, { hasNext: false });
    return true;
  }

  /**
   * The thread's status and state once a run on it ended, in one UPDATE (the settled status is an
   * expression of it). A temporary thread (a stateless run's) goes instead, with its run and
   * checkpoints, in the same transaction that ends its run: no crash can leave it behind.
   */
  *#settleThread(tx: Executor, thread: ThreadRow, s: Settlement): TxSteps<void> {
    if (thread.temporary) {
      yield* deleteThreads(tx, [thread.thread_id]);
      return;
    }
    const hasNext = s.hasNext ?? Object.keys(JSON.parse(s.interrupts ?? thread.interrupts)).length > 0;
    const failed = s.error !== undefined;
    const [interrupts, values] = [s.interrupts !== undefined, s.values !== undefined];
    const query = this.database.prepared(`runs.settle:${hasNext}:${failed}:${interrupts}:${values}`, (db) =>
      db
        .updateTable("threads")
        .set((eb) => ({
          status: settledStatusExpression(slot("thread_id"), hasNext, failed)(eb),
          error: slot("error"),
          updated_at: slot("now"),
          ...(interrupts && { interrupts: slot("interrupts") }),
          ...(values && { values: slot("values"), state_updated_at: slot("now") }),
        }))
        .where("thread_id", "=", slot("thread_id")),
    );
    yield* query.changed({
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
  *#deleteRun(tx: Executor, threadId: string, runId: string): TxSteps<boolean> {
    this.checkpointer.fenceRun(runId);
    if (!(yield* changed(tx.deleteFrom("runs").where("run_id", "=", runId)))) return false;
    yield* deleteRunCheckpoints(tx, threadId, runId);
    return true;
  }

  /**
   * After a rollback the thread is bound again to the graph of its latest remaining run: admission
   * bound it to the rolled-back run's graph, and state/history are read through the bound graph.
   */
  *#restoreGraphBinding(tx: Executor, thread: ThreadRow): TxSteps<void> {
    const latest = yield* first(
      tx
        .selectFrom("runs")
        .select(["assistant_id", "kwargs"])
        .where("thread_id", "=", thread.thread_id)
        .orderBy("seq", "desc")
        .limit(sql.lit(1)),
    );
    if (!latest) return;
    const graphId = (JSON.parse(latest.kwargs) as Port.RunKwargs).config.configurable?.graph_id;
    const metadata = { ...JSON.parse(thread.metadata), graph_id: graphId, assistant_id: latest.assistant_id };
    const rebind = tx.updateTable("threads").set({ metadata: JSON.stringify(metadata) });
    yield* changed(rebind.where("thread_id", "=", thread.thread_id));
  }

  /**
   * Statements: the thread (locked), [its insert], [reject: whether a run is in flight | interrupt,
   * rollback: the runs in flight, and what settles them], the run's insert, [the thread's update].
   */
  async admit(org: Port.OrgId, a: Port.RunAdmission): Promise<Port.AdmissionResult> {
    const graphMetadata = { graph_id: a.assistant.graph_id, assistant_id: a.assistant.assistant_id };
    const runMetadata = JSON.stringify(a.metadata);
    const kwargs = JSON.stringify(a.kwargs);
    const threadConfig = a.thread_config ? JSON.stringify(a.thread_config) : undefined;
    // enqueue needs nothing of the runs ahead of it and reject only whether there are any; only
    // interrupt and rollback read them (a long queue would otherwise be loaded on every admission).
    const settlesPriors = a.multitask_strategy === "interrupt" || a.multitask_strategy === "rollback";
    return this.transaction(function* (tx): TxSteps<Port.AdmissionResult> {
      let thread = yield* this.#lockThread(a.thread_id);
      // Timestamps are taken under the lock, so the queue order of one thread's runs (not_before, then
      // seq) is their admission order: concurrent admissions may have computed `not_before` in another
      // order than they got the lock. A delayed run keeps its time.
      const lockedAt = Date.now();
      const nowIso = new Date(lockedAt).toISOString();
      let created = false;
      if (!thread) {
        if (!a.stateless && a.if_not_exists === "reject")
          throw notFound(`Thread with ID ${a.thread_id} not found`);
        // Created as the admission leaves it (busy, bound to the graph), so it needs no update below.
        const row = newThreadRow(org, a.thread_id, nowIso, a.stateless ? undefined : a.thread_ttl, {
          status: "busy",
          metadata: JSON.stringify({ ...graphMetadata, ...a.metadata, ...graphMetadata }),
          config: threadConfig ?? "{}",
          temporary: Boolean(a.kwargs.temporary),
        });
        // Two admissions creating the same thread at once (Postgres): the second one's insert waits on
        // the first's unique key, does nothing, and the lock below then waits for and sees its row.
        created = yield* insertThread(this.database, row);
        thread = created ? row : yield* this.#lockThread(a.thread_id);
        if (!thread) throw notFound(`Thread with ID ${a.thread_id} not found`); // deleted in between
      }
      if (thread.org_id !== org) throw notFound(`Thread with ID ${a.thread_id} not found`);

      // A thread this admission created has no runs yet.
      if (!created && a.multitask_strategy === "reject") {
        const busy = yield* this.database
          .prepared("runs.anyInFlight", (db) =>
            runsInFlight(db, slot("thread_id")).select("run_id").limit(sql.lit(1)),
          )
          .first({ thread_id: a.thread_id });
        if (busy) throw conflict(THREAD_BUSY_MESSAGE);
      }
      const runningToStop: Port.Run[] = [];
      const pendingSettled: Port.Run[] = [];
      if (!created && settlesPriors) {
        const inFlight = yield* all(runsInFlight(tx, a.thread_id).selectAll().orderBy("seq"));
        for (const prior of inFlight) {
          if (prior.status === "running") {
            // Recorded, so the stop happens even if the signal to its worker is lost or the worker dies.
            yield* this.#update(tx, prior.run_id, {
              stop_requested: a.multitask_strategy as Port.StopAction,
            });
            runningToStop.push(toRun(prior));
            continue;
          }
          if (a.multitask_strategy === "rollback") yield* this.#deleteRun(tx, prior.thread_id, prior.run_id);
          else yield* this.#update(tx, prior.run_id, { status: "interrupted", updated_at: nowIso });
          pendingSettled.push(toRun(prior));
        }
      }

      const run = {
        run_id: a.run_id,
        thread_id: a.thread_id,
        org_id: org,
        assistant_id: a.assistant.assistant_id,
        metadata: runMetadata,
        kwargs,
        multitask_strategy: a.multitask_strategy,
        attempt: 0,
        not_before: Math.max(a.not_before.getTime(), lockedAt),
        created_at: nowIso,
        updated_at: nowIso,
        ...QUEUED,
        stop_requested: null,
      };
      yield* this.database
        .prepared("runs.insert", (db) => db.insertInto("runs").values(slots(Object.keys(run))))
        .changed(run);
      if (!created) {
        const config = threadConfig !== undefined;
        const update = this.database.prepared(`runs.admitted:${config}`, (db) =>
          db
            .updateTable("threads")
            .set({
              status: sql.lit("busy"),
              metadata: slot("metadata"),
              updated_at: slot("now"),
              ...(config && { config: slot("config") }),
            })
            .where("thread_id", "=", slot("thread_id")),
        );
        yield* update.changed({
          thread_id: a.thread_id,
          metadata: JSON.stringify({ ...JSON.parse(thread.metadata), ...graphMetadata }),
          now: nowIso,
          config: threadConfig,
        });
      }
      return { run: toRun({ ...run, seq: 0, error: null }), runningToStop, pendingSettled };
    });
  }

  async get(org: Port.OrgId, threadId: string | null, runId: string): Promise<Port.Run | null> {
    const row = await this.#run(this.database.db, runId).executeTakeFirst();
    if (!row || row.org_id !== org || (threadId !== null && row.thread_id !== threadId)) return null;
    return toRun(row);
  }

  async list(org: Port.OrgId, threadId: string, q: Port.RunListQuery): Promise<Port.Run[]> {
    const rows = await this.database.db
      .selectFrom("runs")
      .selectAll()
      .where("thread_id", "=", threadId)
      .where("org_id", "=", org)
      .$if(Boolean(q.status), (qb) => qb.where("status", "=", q.status!))
      .$if(Boolean(q.metadata), (qb) => qb.where(this.dialect.jsonContains("metadata", q.metadata!)))
      .orderBy("seq", "desc")
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    return rows.map(toRun);
  }

  /**
   * Newest first (`seq`). The custom auth filter applies to the runs' threads (a subquery on threads,
   * whose metadata it reads), as runs are authorized through their thread.
   */
  async search(
    org: Port.OrgId,
    q: Port.RunSearchQuery,
  ): Promise<{ items: Port.RunWithError[]; total: number }> {
    const d = this.dialect;
    const filtered = this.database.db
      .selectFrom("runs")
      .where("org_id", "=", org)
      .$if(Boolean(q.status?.length), (qb) => qb.where("status", "in", q.status!))
      .$if(q.assistant_id !== undefined, (qb) => qb.where("assistant_id", "=", q.assistant_id!))
      .$if(q.thread_id !== undefined, (qb) => qb.where("thread_id", "=", q.thread_id!))
      .$if(Boolean(q.metadata), (qb) => qb.where(d.jsonContains("runs.metadata", q.metadata!)))
      .$if(Boolean(q.auth), (qb) =>
        qb.where("thread_id", "in", (eb) =>
          eb
            .selectFrom("threads")
            .select("threads.thread_id")
            .where("threads.org_id", "=", org)
            .where(d.authFilter("threads.metadata", q.auth!)),
        ),
      );
    const rows = await filtered.selectAll().orderBy("seq", "desc").limit(q.limit).offset(q.offset).execute();
    const items = rows.map((r) => ({ ...toRun(r), error: r.error === null ? null : JSON.parse(r.error) }));
    return { items, total: await this.countOf(filtered) };
  }

  async delete(org: Port.OrgId, threadId: string, runId: string): Promise<"deleted" | "absent" | "running"> {
    return this.transaction(function* (tx) {
      const thread = yield* this.#lockThreadOfRun(runId);
      const row = thread && (yield* first(this.#run(tx, runId)));
      if (!thread || !row || row.org_id !== org || row.thread_id !== threadId) return "absent";
      if (row.status === "running") return "running";
      yield* this.#deleteRun(tx, row.thread_id, row.run_id);
      yield* this.#settleThread(tx, thread, {});
      return "deleted";
    });
  }

  async cancelPending(runId: string, action: "interrupt" | "rollback"): Promise<Port.Run | null> {
    return this.transaction(function* (tx) {
      const thread = yield* this.#lockThreadOfRun(runId);
      const row = thread && (yield* first(this.#run(tx, runId)));
      if (!thread || row?.status !== "pending") return null;
      const now = new Date().toISOString();
      if (action === "rollback") {
        yield* this.#deleteRun(tx, row.thread_id, row.run_id);
        yield* this.#restoreGraphBinding(tx, thread);
      } else yield* this.#update(tx, runId, { status: "interrupted", updated_at: now });
      yield* this.#settleThread(tx, thread, {});
      return toRun({ ...row, status: "interrupted", updated_at: now });
    });
  }

  /**
   * Claims the oldest due pending run whose thread is not executing another run: `#pickThread` takes
   * its thread, `#claimOn` marks the run running, the thread's update returns its metadata: three
   * statements in a transaction (Postgres; where a transaction holds the whole database's write lock,
   * SQLite: `#claimSerialized`). Most claims find nothing due (a worker asks again whenever it may have
   * room): the pick runs once outside a transaction first and answers those alone, without a
   * transaction's round trips.
   *
   * Why the thread row lock on Postgres (and not only SKIP LOCKED on the run): two workers may each pick
   * a different pending run of the same idle thread. Locking the run rows does not stop that: the rows
   * differ, and a `NOT EXISTS (running run)` check reads the statement's snapshot, which cannot see the
   * other worker's uncommitted claim. So a claim first locks the candidate's THREAD with
   * `FOR UPDATE SKIP LOCKED` (a thread another process is admitting or claiming on is skipped, not
   * waited for), then picks the thread's run in a new statement, whose snapshot is taken after the lock
   * was granted and so sees any claim committed before it. SQLite needs none of this: `#claimSerialized`.
   */
  async claimNext(lease: Port.Lease = DEFAULT_LEASE): Promise<Port.ClaimResult> {
    if (this.dialect.serializesTransactions) return this.#claimSerialized(lease);
    const [look] = await this.database
      .prepared("runs.look", (db) => this.#pickQuery(db, slot("now"), [], false))
      .execute(this.database, { now: Date.now() });
    if (look.thread_id === null && !look.due)
      return {
        run: null,
        nextDueAt: dateOf(look.next_due),
        claimable: false,
        waiting: Boolean(look.waiting),
      };
    return this.transaction(function* (tx): TxSteps<Port.ClaimResult> {
      const now = Date.now();
      const nowIso = new Date(now).toISOString();
      const tried: string[] = [];
      for (;;) {
        const pick = yield* this.#pickThread(tx, now, tried);
        if (pick.thread_id === null) {
          let t = pick.next_due === null ? null : Number(pick.next_due);
          // Due runs whose threads were locked, or claimed by another process since: look again soon.
          if (pick.due || tried.length) t = Math.min(t ?? Number.POSITIVE_INFINITY, now + CONTENDED_RETRY_MS);
          return { run: null, nextDueAt: dateOf(t), claimable: false, waiting: pick.waiting };
        }
        const row = yield* this.database
          .prepared("runs.claimOn", (db) => this.#claimOn(db))
          .first({
            thread_id: pick.thread_id,
            now,
            now_iso: nowIso,
            worker_id: lease.workerId,
            lease_ms: lease.ms,
          });
        if (!row) {
          // Claimed by another process between the pick's snapshot and its lock (Postgres).
          tried.push(pick.thread_id);
          continue;
        }
        // Other threads' due runs are not looked for here: another claim finds out.
        return yield* this.#claimed(row, now, true);
      }
    });
  }

  /**
   * claimNext on SQLite: a transaction holds the database's write lock from its first statement, so the
   * oldest due run it reads is the one it claims, with no other writer in between: one SELECT and two
   * UPDATEs by key, about half of what the Postgres strategy's statements cost (they make its pick safe
   * among concurrent claimers). An empty claim is two reads inside the transaction: held for so short a
   * time, the lock costs less than a look outside it would cost every successful claim.
   */
  async #claimSerialized(lease: Port.Lease): Promise<Port.ClaimResult> {
    // The second oldest says whether another claim could take one (ClaimResult.claimable).
    const oldestDue = this.database.prepared("runs.oldestDue", (db) =>
      dueInQueueOrder(db.selectFrom("runs as r").selectAll(), slot("now")).limit(sql.lit(2)),
    );
    const delayed = this.database.prepared("runs.nextDue", (db) => nextDue(db, slot("now")));
    return this.transaction(function* (): TxSteps<Port.ClaimResult> {
      const now = Date.now();
      const [row, next] = yield* oldestDue.rows({ now });
      if (!row) {
        const nextDueAt = dateOf((yield* delayed.first({ now }))?.t);
        return {
          run: null,
          nextDueAt,
          claimable: false,
          waiting: Boolean((yield* this.#waiting.first({ now }))!.waiting),
        };
      }
      const nowIso = new Date(now).toISOString();
      const claim = this.database.prepared("runs.claimById", (db) =>
        db.updateTable("runs").set(this.#claimSet).where("run_id", "=", slot("run_id")),
      );
      yield* claim.changed({
        run_id: row.run_id,
        now_iso: nowIso,
        worker_id: lease.workerId,
        lease_ms: lease.ms,
      });
      return yield* this.#claimed(
        { ...row, status: "running", attempt: row.attempt + 1, updated_at: nowIso },
        now,
        next !== undefined, // maybe on the same thread (then not claimable after all): one empty claim at worst
      );
    });
  }

  /** What a claim sets on the run it takes. Slots: now_iso, worker_id, lease_ms. */
  #claimSet = (eb: ExpressionBuilder<Tables, "runs">) => ({
    status: RUNNING,
    attempt: eb("attempt", "+", sql.lit(1)),
    updated_at: slot("now_iso"),
    worker_id: slot("worker_id"),
    lease_expires_at: sql<number>`${this.dialect.nowMs()} + ${slot("lease_ms")}`,
  });

  /** The claim's last statement, on the claimed run's thread (now busy), and its result. */
  *#claimed(row: RunRow, now: number, claimable: boolean): TxSteps<Port.ClaimResult> {
    const nowIso = new Date(now).toISOString();
    const thread = yield* this.database
      .prepared("runs.claimed", (db) =>
        db
          .updateTable("threads")
          .set({ status: sql.lit("busy"), updated_at: slot("now_iso") })
          .where("thread_id", "=", slot("thread_id"))
          .returning("metadata"),
      )
      .first({ thread_id: row.thread_id, now_iso: nowIso });
    return {
      run: toRun(row),
      org: row.org_id,
      threadMetadata: thread ? JSON.parse(thread.metadata) : {},
      nextDueAt: null,
      stopRequested: row.stop_requested ?? undefined,
      claimable,
      // The claimed run's thread executes it now: its other due runs count.
      waiting: Boolean((yield* this.#waiting.first({ now }))!.waiting),
    };
  }

  /** Whether due runs wait behind their thread's executing run (ClaimResult.waiting). Slot: now. */
  get #waiting() {
    return this.database.prepared("runs.waiting", (db) =>
      db.selectNoFrom((eb) => waitingBehindThreads(eb, slot("now")).as("waiting")),
    );
  }

  /**
   * One statement: the thread of the oldest due run whose thread executes none (index runs_pending_due),
   * locked with SKIP LOCKED on Postgres; whether any such run was due (none picked although some were
   * due = contended); the next due time of a delayed run; whether due runs wait behind executing threads.
   * The first `CLAIM_CANDIDATES` due runs are the
   * candidates, threads already `tried` left out. Compiled once for the usual case, none tried.
   */
  *#pickThread(tx: Executor, now: number, tried: string[]) {
    const row = tried.length
      ? yield* first(this.#pickQuery(tx, now, tried))
      : yield* this.#pick.first({ now });
    return {
      thread_id: row!.thread_id as string | null,
      due: Boolean(row!.due),
      next_due: row!.next_due,
      waiting: Boolean(row!.waiting),
    };
  }

  get #pick() {
    return this.database.prepared("runs.pick", (db) => this.#pickQuery(db, slot("now"), []));
  }

  /** `lock`: the picked thread locked (Postgres), for a transaction; without, a look at the queue. */
  #pickQuery(ex: Executor, now: number, tried: string[], lock = true) {
    return ex
      .with("due", (db) =>
        dueInQueueOrder(db.selectFrom("runs as r").select(["r.thread_id", "r.not_before", "r.seq"]), now)
          .$if(tried.length > 0, (qb) => qb.where("r.thread_id", "not in", tried))
          .limit(sql.lit(CLAIM_CANDIDATES)),
      )
      .selectNoFrom((eb) => {
        const thread = eb
          .selectFrom("threads as t")
          .innerJoin("due", "due.thread_id", "t.thread_id")
          .select("t.thread_id")
          .orderBy("due.not_before")
          .orderBy("due.seq")
          .limit(sql.lit(1));
        return [
          (lock ? this.dialect.lock(thread, { of: "t", skipLocked: true }) : thread).as("thread_id"),
          eb.exists(eb.selectFrom("due").select(sql.lit(1).as("one"))).as("due"),
          nextDue(eb, now).as("next_due"),
          waitingBehindThreads(eb, now).as("waiting"),
        ];
      });
  }

  /**
   * Marks the thread's oldest due pending run running (attempt + 1, this worker's lease) and returns
   * it; undefined when the thread has none due or executes one already. The run is chosen in this
   * statement's own snapshot, taken under the thread's lock. `status = 'pending'` is checked again on
   * the row itself, as it is when the UPDATE gets to it. Slots: thread_id, now, now_iso, worker_id,
   * lease_ms.
   */
  #claimOn(db: Executor) {
    return db
      .updateTable("runs")
      .set(this.#claimSet)
      .where("status", "=", PENDING)
      .where("run_id", "=", (eb) =>
        dueInQueueOrder(eb.selectFrom("runs as r").select("r.run_id"), slot("now"))
          .where("r.thread_id", "=", slot("thread_id"))
          .limit(sql.lit(1)),
      )
      .returningAll();
  }

  /**
   * One statement for all of a worker's runs: a run it no longer holds (swept after its lease expired,
   * re-claimed by another worker, settled) is not renewed and comes back as lost.
   */
  async renewLeases(lease: Port.Lease, runIds: string[]): Promise<Port.LeaseRenewal> {
    if (!runIds.length) return { lost: [], recovered: [], stopRequested: [] };
    const db = this.database.db;
    const held = await db
      .updateTable("runs")
      .set({ lease_expires_at: sql<number>`${this.dialect.nowMs()} + ${lease.ms}` })
      .where("run_id", "in", runIds)
      .where("status", "=", RUNNING)
      .where("worker_id", "=", lease.workerId)
      .returning(["run_id", "stop_requested"])
      .execute();
    const heldIds = new Set(held.map((r) => r.run_id));
    const lost = runIds.filter((id) => !heldIds.has(id));
    const recovered = lost.length
      ? await db
          .selectFrom("runs")
          .select("run_id")
          .where("run_id", "in", lost)
          .where("status", "in", IN_FLIGHT)
          .execute()
      : [];
    return {
      lost,
      recovered: recovered.map((r) => r.run_id),
      stopRequested: held
        .filter((r) => r.stop_requested)
        .map((r) => ({ run_id: r.run_id, action: r.stop_requested! })),
    };
  }

  async requestStop(runId: string, action: Port.StopAction): Promise<boolean> {
    const { numUpdatedRows } = await this.database.db
      .updateTable("runs")
      .set({ stop_requested: action })
      .where("run_id", "=", runId)
      .where("status", "=", RUNNING)
      .executeTakeFirst();
    return numUpdatedRows > 0n;
  }

  /** A running run's lease ran out, by the database's clock; a run with none (from a version without leases) too. */
  #leaseExpired = (eb: ExpressionBuilder<Tables, "runs">) =>
    eb.or([eb("lease_expires_at", "is", null), eb("lease_expires_at", "<", this.dialect.nowMs())]);

  async sweepExpiredLeases(maxAttempts: number): Promise<Port.SweepResult> {
    return this.#recoverOrphans(maxAttempts, true);
  }

  /** Statements: the thread (locked), the run's update (checks status and attempt), the thread's update. */
  async complete(c: Port.RunCompletion): Promise<Port.Run | null> {
    const failure = c.status === "error" ? (c.error ?? { error: "Error", message: "Run failed" }) : undefined;
    const settlement: Settlement = {
      values: c.values !== undefined ? JSON.stringify(c.values) : undefined,
      interrupts: c.interrupts !== undefined ? JSON.stringify(c.interrupts) : undefined,
      hasNext: c.hasNext,
      // The thread's error is what clients see of a failure: its type and message, no trace.
      error: failure && JSON.stringify({ error: failure.error, message: failure.message }),
    };
    return this.transaction(function* (tx) {
      const thread = yield* this.#lockThreadOfRun(c.run_id);
      if (!thread) return null;
      const now = new Date().toISOString();
      const ofAttempt = c.attempt !== undefined;
      const row = yield* this.database
        .prepared(`runs.complete:${ofAttempt}`, (db) =>
          db
            .updateTable("runs")
            .set({ status: slot("status"), updated_at: slot("now"), error: slot("error") })
            .where("run_id", "=", slot("run_id"))
            .where("status", "=", RUNNING) // not deleted or settled meanwhile
            .$if(ofAttempt, (qb) => qb.where("attempt", "=", slot("attempt"))) // not another worker's attempt now
            .returningAll(),
        )
        .first({
          run_id: c.run_id,
          status: c.status,
          now,
          attempt: c.attempt,
          error: failure ? runError(failure, c.stack) : null,
        });
      if (!row) return null;
      yield* this.#settleThread(tx, thread, settlement);
      return toRun(row);
    });
  }

  async completeRolledBack(runId: string): Promise<void> {
    await this.transaction(function* (tx) {
      const thread = yield* this.#lockThreadOfRun(runId);
      if (thread) yield* this.#rollBack(tx, thread, runId);
    });
  }

  async requeue(runId: string, attempt?: number): Promise<void> {
    await this.database.db
      .updateTable("runs")
      .set({ ...QUEUED, updated_at: new Date().toISOString() })
      .where("run_id", "=", runId)
      .where("status", "=", RUNNING)
      .$if(attempt !== undefined, (qb) => qb.where("attempt", "=", attempt!))
      .execute();
  }

  async recoverInterrupted(maxAttempts: number): Promise<Port.SweepResult> {
    return this.#recoverOrphans(maxAttempts, false);
  }

  /**
   * Runs no live worker executes (with `onlyExpired`, those whose lease expired): settled as a recorded
   * stop request asks, requeued, or failed. Each in a transaction of its own, re-read under its thread's
   * lock and its own row lock (its worker may have renewed or settled it since the scan; a renewal, which
   * takes no thread lock, waits for the row), so concurrent sweepers in several processes recover each
   * run once, and never one whose worker just renewed it.
   */
  async #recoverOrphans(maxAttempts: number, onlyExpired: boolean): Promise<Port.SweepResult> {
    const orphans = await this.database.db
      .selectFrom("runs")
      .select("run_id")
      .where("status", "=", RUNNING)
      .$if(onlyExpired, (qb) => qb.where(this.#leaseExpired))
      .orderBy("seq")
      .execute();
    const result: Port.SweepResult = { requeued: [], failed: [], interrupted: [], rolledBack: [] };
    for (const { run_id: runId } of orphans) {
      const recovery = await this.transaction(function* (tx): TxSteps<keyof Port.SweepResult | null> {
        const thread = yield* this.#lockThreadOfRun(runId);
        if (!thread) return null;
        const run = this.#run(tx, runId).select((eb) => this.#leaseExpired(eb).as("expired"));
        const row = yield* first(this.dialect.lock(run));
        if (row?.status !== "running" || (onlyExpired && !row.expired)) return null;
        const now = new Date().toISOString();
        if (row.stop_requested === "rollback") {
          yield* this.#rollBack(tx, thread, runId);
          return "rolledBack";
        }
        if (row.stop_requested === "interrupt") {
          yield* this.#update(tx, runId, { status: "interrupted", updated_at: now });
          yield* this.#settleThread(tx, thread, {});
          return "interrupted";
        }
        if (row.attempt >= maxAttempts) {
          const error = { error: "RunAbandoned", message: `Run failed after ${row.attempt} attempts` };
          yield* this.#update(tx, runId, { status: "error", updated_at: now, error: runError(error) });
          yield* this.#settleThread(tx, thread, { error: JSON.stringify(error) });
          return "failed";
        }
        yield* this.#update(tx, runId, { ...QUEUED, updated_at: now });
        return "requeued";
      });
      if (recovery) result[recovery].push(runId);
    }
    return result;
  }

  /**
   * One statement, one snapshot. Due times are this process's clock, as `claimNext` compares them.
   * Partial indexes answer each part: runs_pending_due (pending by due time), runs_one_running. The
   * median is the middle due run (or the mean of the middle two) by row number in due order.
   */
  async stats(): Promise<Port.QueueStats> {
    const now = Date.now();
    const row = await this.database.db
      .selectNoFrom((eb) => {
        const pendingDue = () =>
          eb.selectFrom("runs as r").where("r.status", "=", PENDING).where("r.not_before", "<=", now);
        const oldestDue = () => pendingDue().select((s) => s.fn.min("r.not_before").as("t"));
        const count = (status: typeof PENDING) =>
          eb
            .selectFrom("runs")
            .select((s) => s.fn.countAll<number>().as("n"))
            .where("status", "=", status);
        return [
          count(PENDING).as("pending"),
          count(RUNNING).as("running"),
          oldestDue().as("oldest"),
          eb
            .selectFrom(
              pendingDue()
                .select([
                  "r.not_before",
                  sql<number>`row_number() over (order by ${sql.ref("r.not_before")})`.as("rn"),
                  sql<number>`count(*) over ()`.as("n"),
                ])
                .as("d"),
            )
            .select((s) => s.fn.avg<number>("d.not_before").as("m"))
            .where(sql.ref("d.rn"), "in", [sql<number>`(d.n + 1) / 2`, sql<number>`(d.n + 2) / 2`])
            .as("median"),
          oldestDue().where(threadNotRunning).as("unblocked"),
        ];
      })
      .executeTakeFirstOrThrow();
    const wait = (since: number | string | null) =>
      since === null ? null : Math.max(0, now - Number(since)) / 1000;
    return {
      n_pending: Number(row.pending),
      n_running: Number(row.running),
      pending_runs_wait_time_max_secs: wait(row.oldest),
      pending_runs_wait_time_med_secs: wait(row.median),
      pending_unblocked_runs_wait_time_max_secs: wait(row.unblocked),
    };
  }
}
