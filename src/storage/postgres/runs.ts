import { conflict, notFound } from "../../errors.js";
import type {
  AdmissionResult,
  ClaimResult,
  JsonObject,
  Lease,
  LeaseRenewal,
  OrgId,
  QueueStats,
  Run,
  RunAdmission,
  RunCompletion,
  RunKwargs,
  RunsRepo,
  StopAction,
  SweepResult,
} from "../ports.js";
import { DEFAULT_LEASE } from "../ports.js";
import { type MultitaskStrategy, type RunStatus, THREAD_BUSY_MESSAGE } from "../statuses.js";
import type { PgCheckpointer } from "./checkpointer.js";
import type { PgDatabase, Queryable } from "./database.js";
import { jsonContains, Params } from "./json-filter.js";
import {
  deleteThreads,
  insertThread,
  lockThread,
  settledStatus,
  type ThreadRow,
  ttlColumns,
} from "./threads.js";

interface RunRow {
  seq: number;
  run_id: string;
  thread_id: string;
  org_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: JsonObject;
  kwargs: RunKwargs;
  multitask_strategy: MultitaskStrategy;
  attempt: number;
  not_before: number;
  created_at: string;
  updated_at: string;
  worker_id: string | null;
  lease_expires_at: number | null;
  stop_requested: StopAction | null;
}

/**
 * Leases are stamped and compared with the database's clock, not each process's: hosts whose clocks
 * disagree must not take each other's live runs for dead ones.
 */
const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
const LEASE_EXPIRED = `(lease_expires_at IS NULL OR lease_expires_at < ${DB_NOW_MS})`;

const toRun = (r: RunRow): Run => ({
  run_id: r.run_id,
  thread_id: r.thread_id,
  assistant_id: r.assistant_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  status: r.status,
  metadata: r.metadata,
  kwargs: r.kwargs,
  multitask_strategy: r.multitask_strategy,
  attempt: r.attempt,
});

/** How many due candidates one claim looks at before giving up on threads other processes hold. */
const CLAIM_CANDIDATES = 16;
/**
 * A claim that skipped a due run because its thread was locked (an admission or another claim in
 * flight, a few milliseconds) asks to be retried this soon: the lock holder may have been an admission
 * refused with 409 whose transaction outlived the nudge of the run admitted before it, and no further
 * nudge would come.
 */
const CONTENDED_RETRY_MS = 20;

/**
 * The run queue on Postgres, the twin of sqlite/runs.ts. SQLite gets atomicity from its single
 * synchronous connection; here every transaction that changes a thread's runs first locks the thread
 * row (`lockThread`, SELECT … FOR UPDATE), then touches run rows. One lock order everywhere means
 * admission, claiming, cancelling and settling of one thread are serialized across all processes and
 * cannot deadlock one another. Operations keyed by run id read the run's thread without a lock, lock
 * the thread, then re-read the run (it may have moved on meanwhile).
 */
export class PgRuns implements RunsRepo {
  readonly #db: PgDatabase;
  readonly #checkpointer: PgCheckpointer;

  constructor(db: PgDatabase, checkpointer: PgCheckpointer) {
    this.#db = db;
    this.#checkpointer = checkpointer;
  }

  /** Locks the thread of `runId` and returns the run as it is under that lock. */
  async #lockRun(c: Queryable, runId: string): Promise<RunRow | undefined> {
    const { rows } = await c.query<{ thread_id: string }>("SELECT thread_id FROM runs WHERE run_id = $1", [
      runId,
    ]);
    if (!rows[0]) return undefined;
    await lockThread(c, rows[0].thread_id);
    const locked = await c.query<RunRow>("SELECT * FROM runs WHERE run_id = $1", [runId]);
    return locked.rows[0];
  }

  /** Settles the thread's status once no run of it is executing (see `settledStatus`). */
  /**
   * The thread's status and state once a run on it ended. A temporary thread (a stateless run's) goes
   * instead, with its run and checkpoints, in the same transaction that ends its run: no crash can leave
   * it behind.
   */
  async #settleThread(
    c: Queryable,
    threadId: string,
    patch: { values?: unknown; interrupts?: unknown; hasNext?: boolean; error?: unknown },
  ) {
    const { rows } = await c.query<ThreadRow>("SELECT * FROM threads WHERE thread_id = $1", [threadId]);
    const thread = rows[0];
    if (!thread) return;
    if (thread.temporary) {
      await deleteThreads(c, [threadId]);
      return;
    }
    const interrupts = patch.interrupts !== undefined ? patch.interrupts : thread.interrupts;
    const hasNext = patch.hasNext ?? Object.keys(interrupts as object).length > 0;
    const now = new Date().toISOString();
    const status = await settledStatus(c, threadId, hasNext, patch.error !== undefined);
    await c.query(
      `UPDATE threads SET status = $2, "values" = CASE WHEN $3 THEN $4::jsonb ELSE "values" END, interrupts = $5,
         error = $6, updated_at = $7, state_updated_at = CASE WHEN $3 THEN $7 ELSE state_updated_at END
       WHERE thread_id = $1`,
      [
        threadId,
        status,
        patch.values !== undefined,
        patch.values !== undefined ? JSON.stringify(patch.values) : null,
        JSON.stringify(interrupts),
        patch.error !== undefined ? JSON.stringify(patch.error) : null,
        now,
      ],
    );
  }

  async #deleteRun(c: Queryable, row: RunRow) {
    await this.#checkpointer.deleteRunIn(c, row.thread_id, row.run_id);
    await c.query("DELETE FROM runs WHERE run_id = $1", [row.run_id]);
  }

  /** After a rollback the thread is bound again to the graph of its latest remaining run (see SQLite). */
  async #restoreGraphBinding(c: Queryable, threadId: string) {
    const { rows } = await c.query<RunRow>(
      "SELECT * FROM runs WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1",
      [threadId],
    );
    const latest = rows[0];
    if (!latest) return;
    const graphId = latest.kwargs.config.configurable?.graph_id;
    await c.query("UPDATE threads SET metadata = metadata || $2::jsonb WHERE thread_id = $1", [
      threadId,
      JSON.stringify({ graph_id: graphId, assistant_id: latest.assistant_id }),
    ]);
  }

  async admit(org: OrgId, a: RunAdmission): Promise<AdmissionResult> {
    return this.#db.tx(async (c): Promise<AdmissionResult> => {
      let nowIso = new Date().toISOString();
      const graphMetadata = { graph_id: a.assistant.graph_id, assistant_id: a.assistant.assistant_id };
      // The thread row lock is what makes admission atomic per thread: a concurrent admission on the same
      // thread waits here until this one commits, then sees its run.
      let thread = await lockThread(c, a.thread_id);
      if (!thread) {
        if (!a.stateless && a.if_not_exists === "reject")
          throw notFound(`Thread with ID ${a.thread_id} not found`);
        // Two admissions creating the same thread at once: the second one's insert waits on the first's
        // unique key, does nothing, and the lock below then waits for and sees the first one's row.
        await insertThread(c, {
          thread_id: a.thread_id,
          org_id: org,
          status: "busy",
          metadata: { ...graphMetadata, ...a.metadata },
          config: a.thread_config ?? {},
          values: null,
          interrupts: {},
          error: null,
          temporary: Boolean(a.kwargs.temporary),
          created_at: nowIso,
          updated_at: nowIso,
          state_updated_at: nowIso,
          ...ttlColumns(a.stateless ? undefined : a.thread_ttl),
        });
        thread = await lockThread(c, a.thread_id);
        if (!thread) throw notFound(`Thread with ID ${a.thread_id} not found`); // deleted in between
      }
      if (thread.org_id !== org) throw notFound(`Thread with ID ${a.thread_id} not found`);
      // Timestamps are taken under the lock, so the queue order of one thread's runs (not_before, then
      // seq) is their admission order, as SQLite's serialized transactions give: concurrent admissions
      // may have computed `not_before` in another order than they got the lock. A delayed run keeps its time.
      const lockedAt = Date.now();
      nowIso = new Date(lockedAt).toISOString();
      const notBefore = Math.max(a.not_before.getTime(), lockedAt);

      const inFlight = await c.query<RunRow>(
        "SELECT * FROM runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY seq",
        [a.thread_id],
      );
      if (inFlight.rows.length && a.multitask_strategy === "reject") throw conflict(THREAD_BUSY_MESSAGE);

      const runningToStop: Run[] = [];
      const pendingSettled: Run[] = [];
      if (a.multitask_strategy === "interrupt" || a.multitask_strategy === "rollback") {
        for (const prior of inFlight.rows) {
          if (prior.status === "running") {
            // Recorded, so the stop happens even if the signal to its worker is lost or the worker dies.
            await c.query("UPDATE runs SET stop_requested = $2 WHERE run_id = $1", [
              prior.run_id,
              a.multitask_strategy,
            ]);
            runningToStop.push(toRun(prior));
            continue;
          }
          if (a.multitask_strategy === "rollback") await this.#deleteRun(c, prior);
          else
            await c.query("UPDATE runs SET status = 'interrupted', updated_at = $2 WHERE run_id = $1", [
              prior.run_id,
              nowIso,
            ]);
          pendingSettled.push(toRun(prior));
        }
      }

      const inserted = await c.query<RunRow>(
        `INSERT INTO runs (run_id, thread_id, org_id, assistant_id, status, metadata, kwargs, multitask_strategy,
           attempt, not_before, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, 0, $8, $9, $9) RETURNING *`,
        [
          a.run_id,
          a.thread_id,
          org,
          a.assistant.assistant_id,
          JSON.stringify(a.metadata),
          JSON.stringify(a.kwargs),
          a.multitask_strategy,
          notBefore,
          nowIso,
        ],
      );
      await c.query(
        `UPDATE threads SET status = 'busy', metadata = metadata || $2::jsonb, updated_at = $3,
           config = COALESCE($4::jsonb, config) WHERE thread_id = $1`,
        [
          a.thread_id,
          JSON.stringify(graphMetadata),
          nowIso,
          a.thread_config ? JSON.stringify(a.thread_config) : null,
        ],
      );
      return { run: toRun(inserted.rows[0]), runningToStop, pendingSettled };
    });
  }

  async get(org: OrgId, threadId: string | null, runId: string): Promise<Run | null> {
    const { rows } = await this.#db.query<RunRow>("SELECT * FROM runs WHERE run_id = $1 AND org_id = $2", [
      runId,
      org,
    ]);
    const row = rows[0];
    if (!row || (threadId !== null && row.thread_id !== threadId)) return null;
    return toRun(row);
  }

  async list(
    org: OrgId,
    threadId: string,
    q: { limit: number; offset: number; status?: RunStatus; metadata?: JsonObject },
  ): Promise<Run[]> {
    const params = new Params([threadId, org]);
    const clauses = ["thread_id = $1", "org_id = $2"];
    if (q.status) clauses.push(`status = ${params.add(q.status)}`);
    if (q.metadata && Object.keys(q.metadata).length)
      clauses.push(jsonContains("metadata", q.metadata, params));
    const { rows } = await this.#db.query<RunRow>(
      `SELECT * FROM runs WHERE ${clauses.join(" AND ")} ORDER BY seq DESC
       LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
      params.values,
    );
    return rows.map(toRun);
  }

  async delete(org: OrgId, threadId: string, runId: string): Promise<"deleted" | "absent" | "running"> {
    return this.#db.tx(async (c) => {
      const row = await this.#lockRun(c, runId);
      if (!row || row.org_id !== org || row.thread_id !== threadId) return "absent";
      if (row.status === "running") return "running";
      await this.#deleteRun(c, row);
      await this.#settleThread(c, threadId, {});
      return "deleted";
    });
  }

  async cancelPending(runId: string, action: "interrupt" | "rollback"): Promise<Run | null> {
    return this.#db.tx(async (c) => {
      const row = await this.#lockRun(c, runId);
      if (row?.status !== "pending") return null;
      const now = new Date().toISOString();
      if (action === "rollback") {
        await this.#deleteRun(c, row);
        await this.#restoreGraphBinding(c, row.thread_id);
      } else
        await c.query("UPDATE runs SET status = 'interrupted', updated_at = $2 WHERE run_id = $1", [
          runId,
          now,
        ]);
      await this.#settleThread(c, row.thread_id, {});
      return toRun({ ...row, status: "interrupted", updated_at: now });
    });
  }

  /**
   * Claims the oldest due pending run whose thread is not executing another run.
   *
   * Why the thread row lock (and not only SKIP LOCKED on the run): two workers may each pick a
   * different pending run of the same idle thread. Locking the run rows does not stop that: the rows
   * differ, and a `NOT EXISTS (running run)` check reads the statement's snapshot, which cannot see the
   * other worker's uncommitted claim. So a claim first locks the candidate's THREAD with
   * `FOR UPDATE SKIP LOCKED` (a thread another process is admitting or claiming on is skipped, not
   * waited for), then re-reads that thread's runs in a new statement, whose snapshot is taken after
   * the lock was granted and so sees any claim committed before it. The partial unique index
   * `runs_one_running (thread_id) WHERE status = 'running'` backs this up in the database itself: were
   * a code path ever to skip the lock, the second claim would fail instead of running two at once.
   * The same lock order (thread, then runs) as admission and completion keeps them deadlock-free.
   */
  async claimNext(lease: Lease = DEFAULT_LEASE): Promise<ClaimResult> {
    return this.#db.tx(async (c) => {
      const now = Date.now();
      // The oldest due runs (index runs_pending_due), reduced to their threads in queue order.
      const due = await c.query<{ thread_id: string }>(
        `SELECT r.thread_id FROM runs r
         WHERE r.status = 'pending' AND r.not_before <= $1
           AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.thread_id = r.thread_id AND x.status = 'running')
         ORDER BY r.not_before, r.seq LIMIT ${CLAIM_CANDIDATES}`,
        [now],
      );
      const candidates = [...new Set(due.rows.map((r) => r.thread_id))];
      let contended = false;
      for (const thread_id of candidates) {
        const locked = await c.query("SELECT 1 FROM threads WHERE thread_id = $1 FOR UPDATE SKIP LOCKED", [
          thread_id,
        ]);
        if (!locked.rows.length) {
          contended = true; // another transaction holds this thread right now
          continue;
        }
        const { rows } = await c.query<RunRow>(
          `SELECT * FROM runs r WHERE r.thread_id = $1 AND r.status = 'pending' AND r.not_before <= $2
             AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.thread_id = r.thread_id AND x.status = 'running')
           ORDER BY r.not_before, r.seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
          [thread_id, now],
        );
        const row = rows[0];
        if (!row) {
          contended = true; // claimed by another process since the first query: look again soon
          continue;
        }
        const nowIso = new Date(now).toISOString();
        await c.query(
          `UPDATE runs SET status = 'running', attempt = attempt + 1, updated_at = $2, worker_id = $3,
             lease_expires_at = ${DB_NOW_MS} + $4 WHERE run_id = $1`,
          [row.run_id, nowIso, lease.workerId, lease.ms],
        );
        const thread = await c.query<{ metadata: JsonObject }>(
          "UPDATE threads SET status = 'busy', updated_at = $2 WHERE thread_id = $1 RETURNING metadata",
          [row.thread_id, nowIso],
        );
        return {
          run: toRun({ ...row, status: "running", attempt: row.attempt + 1, updated_at: nowIso }),
          org: row.org_id,
          threadMetadata: thread.rows[0]?.metadata ?? {},
          nextDueAt: null,
          stopRequested: row.stop_requested ?? undefined,
        };
      }
      const next = await c.query<{ t: number | null }>(
        "SELECT MIN(not_before) AS t FROM runs WHERE status = 'pending' AND not_before > $1",
        [now],
      );
      let t = next.rows[0].t;
      if (contended) t = Math.min(t ?? Number.POSITIVE_INFINITY, now + CONTENDED_RETRY_MS);
      return { run: null, nextDueAt: t === null ? null : new Date(t) };
    });
  }

  /**
   * One statement for all of a worker's runs: a run it no longer holds (swept after its lease expired,
   * re-claimed by another worker, settled) is not renewed and comes back as lost.
   */
  async renewLeases(lease: Lease, runIds: string[]): Promise<LeaseRenewal> {
    if (!runIds.length) return { lost: [], recovered: [], stopRequested: [] };
    const { rows } = await this.#db.query<{ run_id: string; stop_requested: StopAction | null }>(
      `UPDATE runs SET lease_expires_at = ${DB_NOW_MS} + $3
       WHERE run_id = ANY($1) AND status = 'running' AND worker_id = $2
       RETURNING run_id, stop_requested`,
      [runIds, lease.workerId, lease.ms],
    );
    const held = new Set(rows.map((r) => r.run_id));
    const lost = runIds.filter((id) => !held.has(id));
    const recovered = lost.length
      ? await this.#db.query<{ run_id: string }>(
          "SELECT run_id FROM runs WHERE run_id = ANY($1) AND status IN ('pending', 'running')",
          [lost],
        )
      : { rows: [] };
    return {
      lost,
      recovered: recovered.rows.map((r) => r.run_id),
      stopRequested: rows
        .filter((r) => r.stop_requested)
        .map((r) => ({ run_id: r.run_id, action: r.stop_requested as StopAction })),
    };
  }

  async requestStop(runId: string, action: StopAction): Promise<boolean> {
    const { rowCount } = await this.#db.query(
      "UPDATE runs SET stop_requested = $2 WHERE run_id = $1 AND status = 'running'",
      [runId, action],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Each expired run is re-read under its thread lock and its own row lock (its worker may have renewed
   * or settled it since the scan; a renewal waits for the row), so concurrent sweepers in several
   * processes recover each run once, and never one whose worker just renewed it. A run with no lease
   * (left running by a version without leases) counts as expired.
   */
  async sweepExpiredLeases(maxAttempts: number): Promise<SweepResult> {
    const { rows } = await this.#db.query<{ run_id: string }>(
      `SELECT run_id FROM runs WHERE status = 'running' AND ${LEASE_EXPIRED} ORDER BY seq`,
    );
    return this.#recoverOrphans(
      rows.map((r) => r.run_id),
      maxAttempts,
      true,
    );
  }

  async complete(cmp: RunCompletion): Promise<Run | null> {
    return this.#db.tx(async (c) => {
      const row = await this.#lockRun(c, cmp.run_id);
      if (row?.status !== "running") return null; // deleted or settled meanwhile
      if (cmp.attempt !== undefined && row.attempt !== cmp.attempt) return null; // another worker's attempt now
      const now = new Date().toISOString();
      await c.query("UPDATE runs SET status = $2, updated_at = $3 WHERE run_id = $1", [
        cmp.run_id,
        cmp.status,
        now,
      ]);
      await this.#settleThread(c, row.thread_id, {
        values: cmp.values,
        interrupts: cmp.interrupts,
        hasNext: cmp.hasNext,
        error: cmp.status === "error" ? (cmp.error ?? { error: "Error", message: "Run failed" }) : undefined,
      });
      return toRun({ ...row, status: cmp.status, updated_at: now });
    });
  }

  async completeRolledBack(runId: string): Promise<void> {
    await this.#db.tx(async (c) => {
      const row = await this.#lockRun(c, runId);
      if (!row) return;
      await this.#deleteRun(c, row);
      await this.#restoreGraphBinding(c, row.thread_id);
      await this.#settleThread(c, row.thread_id, { hasNext: false });
    });
  }

  async requeue(runId: string, attempt?: number): Promise<void> {
    await this.#db.query(
      `UPDATE runs SET status = 'pending', updated_at = $2, worker_id = NULL, lease_expires_at = NULL
       WHERE run_id = $1 AND status = 'running' AND ($3::int IS NULL OR attempt = $3)`,
      [runId, new Date().toISOString(), attempt ?? null],
    );
  }

  /** Every `running` run, as if all leases had expired: only for a database no other process uses. */
  async recoverInterrupted(maxAttempts: number): Promise<SweepResult> {
    const { rows } = await this.#db.query<{ run_id: string }>(
      "SELECT run_id FROM runs WHERE status = 'running' ORDER BY seq",
    );
    return this.#recoverOrphans(
      rows.map((r) => r.run_id),
      maxAttempts,
      false,
    );
  }

  /** Runs no live worker executes: settled as a recorded stop request asks, requeued, or failed. */
  async #recoverOrphans(runIds: string[], maxAttempts: number, onlyExpired: boolean): Promise<SweepResult> {
    const result: SweepResult = { requeued: [], failed: [], interrupted: [], rolledBack: [] };
    for (const runId of runIds) {
      await this.#db.tx(async (c) => {
        const row = await this.#lockRun(c, runId);
        if (row?.status !== "running") return;
        if (onlyExpired) {
          const lease = await c.query<{ expired: boolean }>(
            `SELECT ${LEASE_EXPIRED} AS expired FROM runs WHERE run_id = $1 FOR UPDATE`,
            [runId],
          );
          if (!lease.rows[0]?.expired) return;
        }
        const now = new Date().toISOString();
        if (row.stop_requested === "rollback") {
          await this.#deleteRun(c, row);
          await this.#restoreGraphBinding(c, row.thread_id);
          await this.#settleThread(c, row.thread_id, { hasNext: false });
          result.rolledBack.push(row.run_id);
        } else if (row.stop_requested === "interrupt") {
          await c.query("UPDATE runs SET status = 'interrupted', updated_at = $2 WHERE run_id = $1", [
            row.run_id,
            now,
          ]);
          await this.#settleThread(c, row.thread_id, {});
          result.interrupted.push(row.run_id);
        } else if (row.attempt >= maxAttempts) {
          await c.query("UPDATE runs SET status = 'error', updated_at = $2 WHERE run_id = $1", [
            row.run_id,
            now,
          ]);
          await this.#settleThread(c, row.thread_id, {
            error: { error: "RunAbandoned", message: `Run failed after ${row.attempt} attempts` },
          });
          result.failed.push(row.run_id);
        } else {
          await c.query(
            `UPDATE runs SET status = 'pending', updated_at = $2, worker_id = NULL, lease_expires_at = NULL
             WHERE run_id = $1`,
            [row.run_id, now],
          );
          result.requeued.push(row.run_id);
        }
      });
    }
    return result;
  }

  async stats(): Promise<QueueStats> {
    const now = Date.now();
    // One statement, one snapshot. Due times are this process's clock, as `claimNext` compares them.
    const { rows } = await this.#db.query<{
      pending: number;
      running: number;
      oldest: number | null;
      median: number | null;
      unblocked: number | null;
    }>(
      `SELECT
         (SELECT COUNT(*) FROM runs WHERE status = 'pending') AS pending,
         (SELECT COUNT(*) FROM runs WHERE status = 'running') AS running,
         d.oldest, d.median,
         (SELECT MIN(r.not_before) FROM runs r WHERE r.status = 'pending' AND r.not_before <= $1
            AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.thread_id = r.thread_id AND x.status = 'running'))
           AS unblocked
       FROM (SELECT MIN(not_before) AS oldest,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY not_before) AS median
             FROM runs WHERE status = 'pending' AND not_before <= $1) d`,
      [now],
    );
    const row = rows[0]!;
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
