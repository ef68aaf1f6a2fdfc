/** Claims: a worker takes the oldest due run whose thread executes none, under a lease. */
import type { ExpressionBuilder, SelectQueryBuilder } from "kysely";
import type * as Port from "../../ports.js";
import { DEFAULT_LEASE } from "../../ports.js";
import { type Executor, first, type TxSteps } from "../database.js";
import { sql } from "../kysely.js";
import { slot } from "../prepared.js";
import type { Tables } from "../tables.js";
import { hasRuns, PENDING, RUNNING } from "../threads.js";
import { type RunRow, RunSteps, threadNotRunning, toRun } from "./steps.js";

/** A thread's key: an id is unique within its organization only. */
type ThreadKey = { org_id: string; thread_id: string };

/** How many due candidates one claim looks at before giving up on threads other processes hold. */
const CLAIM_CANDIDATES = 16;
/**
 * A claim that skipped a due run because its thread was locked (an admission or another claim in
 * flight, a few milliseconds) asks to be retried this soon: the lock holder may have been an admission
 * refused with 409 whose transaction outlived the nudge of the run admitted before it, and no further
 * nudge would come.
 */
const CONTENDED_RETRY_MS = 20;

/** The runs of `runs as r` a claim may take at `now`: due, pending, their thread idle; in queue order. */
export const dueInQueueOrder = <O>(qb: SelectQueryBuilder<any, any, O>, now: unknown) =>
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
      .where((e) => hasRuns(e, e.ref("r.org_id"), e.ref("r.thread_id"), RUNNING)),
  );

/** An epoch-ms time read from the database (null: none) as a Date. */
const dateOf = (ms: number | string | null | undefined) => (ms == null ? null : new Date(Number(ms)));

export class RunClaims extends RunSteps {
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
      const tried: ThreadKey[] = [];
      for (;;) {
        const pick = yield* this.#pickThread(tx, now, tried);
        if (pick.org_id === null || pick.thread_id === null) {
          let t = pick.next_due === null ? null : Number(pick.next_due);
          // Due runs whose threads were locked, or claimed by another process since: look again soon.
          if (pick.due || tried.length) t = Math.min(t ?? Number.POSITIVE_INFINITY, now + CONTENDED_RETRY_MS);
          return { run: null, nextDueAt: dateOf(t), claimable: false, waiting: pick.waiting };
        }
        const row = yield* this.database
          .prepared("runs.claimOn", (db) => this.#claimOn(db))
          .first({
            org_id: pick.org_id,
            thread_id: pick.thread_id,
            now,
            now_iso: nowIso,
            worker_id: lease.workerId,
            lease_ms: lease.ms,
          });
        if (!row) {
          // Claimed by another process between the pick's snapshot and its lock (Postgres).
          tried.push({ org_id: pick.org_id, thread_id: pick.thread_id });
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
          .where("org_id", "=", slot("org_id"))
          .where("thread_id", "=", slot("thread_id"))
          .returning("metadata"),
      )
      .first({ org_id: row.org_id, thread_id: row.thread_id, now_iso: nowIso });
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
  *#pickThread(tx: Executor, now: number, tried: ThreadKey[]) {
    const row = tried.length
      ? yield* first(this.#pickQuery(tx, now, tried))
      : yield* this.#pick.first({ now });
    return {
      org_id: row!.org_id as string | null,
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
  #pickQuery(ex: Executor, now: number, tried: ThreadKey[], lock = true) {
    return (
      ex
        .with("due", (db) =>
          dueInQueueOrder(
            db.selectFrom("runs as r").select(["r.org_id", "r.thread_id", "r.not_before", "r.seq"]),
            now,
          )
            .$if(tried.length > 0, (qb) =>
              qb.where((eb) =>
                eb.not(
                  eb.or(
                    tried.map((k) =>
                      eb.and([eb("r.org_id", "=", k.org_id), eb("r.thread_id", "=", k.thread_id)]),
                    ),
                  ),
                ),
              ),
            )
            .limit(sql.lit(CLAIM_CANDIDATES)),
        )
        // The oldest due run's thread, its whole key read once (a CTE used twice is evaluated once).
        .with(
          (cte) => cte("picked").materialized(),
          (db) => {
            const thread = db
              .selectFrom("threads as t")
              .innerJoin("due", (join) =>
                join.onRef("due.org_id", "=", "t.org_id").onRef("due.thread_id", "=", "t.thread_id"),
              )
              .select(["t.org_id", "t.thread_id"])
              .orderBy("due.not_before")
              .orderBy("due.seq")
              .limit(sql.lit(1));
            return lock ? this.dialect.lock(thread, { of: "t", skipLocked: true }) : thread;
          },
        )
        .selectNoFrom((eb) => {
          return [
            eb.selectFrom("picked").select("picked.org_id").as("org_id"),
            eb.selectFrom("picked").select("picked.thread_id").as("thread_id"),
            eb.exists(eb.selectFrom("due").select(sql.lit(1).as("one"))).as("due"),
            nextDue(eb, now).as("next_due"),
            waitingBehindThreads(eb, now).as("waiting"),
          ];
        })
    );
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
          .where("r.org_id", "=", slot("org_id"))
          .where("r.thread_id", "=", slot("thread_id"))
          .limit(sql.lit(1)),
      )
      .returningAll();
  }
}
