import { conflict, notFound } from "../../errors.js";
import type {
  AdmissionResult,
  CheckpointStore,
  ClaimResult,
  JsonObject,
  Lease,
  LeaseRenewal,
  OrgId,
  QueueStats,
  Run,
  RunAdmission,
  RunCompletion,
  RunsRepo,
  StopAction,
  SweepResult,
} from "../ports.js";
import { DEFAULT_LEASE } from "../ports.js";
import { type MultitaskStrategy, type RunStatus, THREAD_BUSY_MESSAGE } from "../statuses.js";
import { type Db, prepared, statementCache } from "./database.js";
import { jsonContains } from "./json-filter.js";
import { deleteThread, insertThread, settledStatus, type ThreadRow, ttlColumns } from "./threads.js";

interface RunRow {
  seq: number;
  run_id: string;
  thread_id: string;
  org_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: string;
  kwargs: string;
  multitask_strategy: MultitaskStrategy;
  attempt: number;
  not_before: number;
  created_at: string;
  updated_at: string;
  worker_id: string | null;
  lease_expires_at: number | null;
  stop_requested: StopAction | null;
}

const toRun = (r: RunRow): Run => ({
  run_id: r.run_id,
  thread_id: r.thread_id,
  assistant_id: r.assistant_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  status: r.status,
  metadata: JSON.parse(r.metadata),
  kwargs: JSON.parse(r.kwargs),
  multitask_strategy: r.multitask_strategy,
  attempt: r.attempt,
});

/**
 * The run queue. Every `db.transaction` below begins IMMEDIATE (database.ts): it holds the file's write
 * lock from its first read, so admission and claiming are atomic per thread without row locks, also
 * between the API thread's and the executor threads' connections. The Postgres adapter gets the same
 * guarantees from SELECT … FOR UPDATE.
 */
export class SqliteRuns implements RunsRepo {
  readonly #db: Db;
  readonly #checkpointer: CheckpointStore;
  readonly #q: ReturnType<typeof statementCache>;

  constructor(db: Db, checkpointer: CheckpointStore) {
    this.#db = db;
    this.#checkpointer = checkpointer;
    this.#q = statementCache(db);
  }

  #thread(threadId: string): ThreadRow | undefined {
    return this.#q("SELECT * FROM threads WHERE thread_id = ?").get(threadId);
  }

  /** Settles the thread's status once no run of it is executing (see `settledStatus`). */
  /**
   * The thread's status and state once a run on it ended. A temporary thread (a stateless run's) goes
   * instead, with its run and checkpoints, in the same transaction that ends its run: no crash can leave
   * it behind.
   */
  #settleThread(
    threadId: string,
    patch: { values?: unknown; interrupts?: unknown; hasNext?: boolean; error?: unknown },
  ) {
    const thread = this.#thread(threadId);
    if (!thread) return;
    if (thread.temporary) {
      deleteThread(this.#db, threadId);
      return;
    }
    const interrupts = patch.interrupts !== undefined ? JSON.stringify(patch.interrupts) : thread.interrupts;
    const hasNext = patch.hasNext ?? interrupts !== "{}";
    const now = new Date().toISOString();
    this.#q(
      `UPDATE threads SET status = ?, "values" = ?, interrupts = ?, error = ?, updated_at = ?, state_updated_at = ?
       WHERE thread_id = ?`,
    ).run(
      settledStatus(this.#db, threadId, hasNext, patch.error !== undefined),
      patch.values !== undefined ? JSON.stringify(patch.values) : thread.values,
      interrupts,
      patch.error !== undefined ? JSON.stringify(patch.error) : null,
      now,
      patch.values !== undefined ? now : thread.state_updated_at,
      threadId,
    );
  }

  #deleteRun(row: RunRow) {
    this.#checkpointer.deleteRun(row.thread_id, row.run_id);
    this.#q("DELETE FROM runs WHERE run_id = ?").run(row.run_id);
  }

  /**
   * After a rollback the thread is bound again to the graph of its latest remaining run: admission
   * bound it to the rolled-back run's graph, and state/history are read through the bound graph.
   */
  #restoreGraphBinding(threadId: string) {
    const latest: RunRow | undefined = this.#q(
      "SELECT * FROM runs WHERE thread_id = ? ORDER BY seq DESC LIMIT 1",
    ).get(threadId);
    const thread = this.#thread(threadId);
    if (!latest || !thread) return;
    const graphId = (JSON.parse(latest.kwargs) as Run["kwargs"]).config.configurable?.graph_id;
    const metadata = { ...JSON.parse(thread.metadata), graph_id: graphId, assistant_id: latest.assistant_id };
    this.#q("UPDATE threads SET metadata = ? WHERE thread_id = ?").run(JSON.stringify(metadata), threadId);
  }

  async admit(org: OrgId, a: RunAdmission): Promise<AdmissionResult> {
    return this.#db.transaction((): AdmissionResult => {
      const now = new Date();
      const nowIso = now.toISOString();
      let thread = this.#thread(a.thread_id);
      if (thread && thread.org_id !== org) throw notFound(`Thread with ID ${a.thread_id} not found`);
      const graphMetadata = { graph_id: a.assistant.graph_id, assistant_id: a.assistant.assistant_id };
      if (!thread) {
        if (!a.stateless && a.if_not_exists === "reject")
          throw notFound(`Thread with ID ${a.thread_id} not found`);
        thread = {
          thread_id: a.thread_id,
          org_id: org,
          status: "busy",
          metadata: JSON.stringify({ ...graphMetadata, ...a.metadata }),
          config: JSON.stringify(a.thread_config ?? {}),
          values: null,
          interrupts: "{}",
          error: null,
          temporary: a.kwargs.temporary ? 1 : 0,
          created_at: nowIso,
          updated_at: nowIso,
          state_updated_at: nowIso,
          ...ttlColumns(a.stateless ? undefined : a.thread_ttl),
        };
        insertThread(this.#db, thread);
      }

      // enqueue needs nothing of the runs ahead of it and reject only whether there are any; only
      // interrupt and rollback read them (a long queue would otherwise be loaded on every admission).
      const settlesPriors = a.multitask_strategy === "interrupt" || a.multitask_strategy === "rollback";
      if (
        a.multitask_strategy === "reject" &&
        this.#q("SELECT 1 FROM runs WHERE thread_id = ? AND status IN ('pending', 'running') LIMIT 1").get(
          a.thread_id,
        )
      ) {
        throw conflict(THREAD_BUSY_MESSAGE);
      }
      const inFlight: RunRow[] = settlesPriors
        ? this.#q(
            "SELECT * FROM runs WHERE thread_id = ? AND status IN ('pending', 'running') ORDER BY seq",
          ).all(a.thread_id)
        : [];

      const runningToStop: Run[] = [];
      const pendingSettled: Run[] = [];
      if (settlesPriors) {
        for (const prior of inFlight) {
          if (prior.status === "running") {
            this.#q("UPDATE runs SET stop_requested = ? WHERE run_id = ?").run(
              a.multitask_strategy,
              prior.run_id,
            );
            runningToStop.push(toRun(prior));
            continue;
          }
          if (a.multitask_strategy === "rollback") this.#deleteRun(prior);
          else
            this.#q("UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?").run(
              nowIso,
              prior.run_id,
            );
          pendingSettled.push(toRun(prior));
        }
      }

      const row: RunRow = {
        seq: 0,
        run_id: a.run_id,
        thread_id: a.thread_id,
        org_id: org,
        assistant_id: a.assistant.assistant_id,
        status: "pending",
        metadata: JSON.stringify(a.metadata),
        kwargs: JSON.stringify(a.kwargs),
        multitask_strategy: a.multitask_strategy,
        attempt: 0,
        not_before: a.not_before.getTime(),
        created_at: nowIso,
        updated_at: nowIso,
        worker_id: null,
        lease_expires_at: null,
        stop_requested: null,
      };
      this.#q(
        `INSERT INTO runs (run_id, thread_id, org_id, assistant_id, status, metadata, kwargs, multitask_strategy, attempt,
           not_before, created_at, updated_at)
         VALUES (@run_id, @thread_id, @org_id, @assistant_id, @status, @metadata, @kwargs, @multitask_strategy, @attempt,
           @not_before, @created_at, @updated_at)`,
      ).run(row);
      this.#q(
        "UPDATE threads SET status = 'busy', metadata = ?, config = ?, updated_at = ? WHERE thread_id = ?",
      ).run(
        JSON.stringify({ ...JSON.parse(thread.metadata), ...graphMetadata }),
        a.thread_config ? JSON.stringify(a.thread_config) : thread.config,
        nowIso,
        a.thread_id,
      );
      return { run: toRun(row), runningToStop, pendingSettled };
    })();
  }

  async get(org: OrgId, threadId: string | null, runId: string): Promise<Run | null> {
    const row: RunRow | undefined = this.#q("SELECT * FROM runs WHERE run_id = ? AND org_id = ?").get(
      runId,
      org,
    );
    if (!row || (threadId !== null && row.thread_id !== threadId)) return null;
    return toRun(row);
  }

  async list(
    org: OrgId,
    threadId: string,
    q: { limit: number; offset: number; status?: RunStatus; metadata?: JsonObject },
  ): Promise<Run[]> {
    const clauses = ["thread_id = ?", "org_id = ?"];
    const params: unknown[] = [threadId, org];
    if (q.status) {
      clauses.push("status = ?");
      params.push(q.status);
    }
    if (q.metadata && Object.keys(q.metadata).length) {
      const f = jsonContains("metadata", q.metadata);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    const rows: RunRow[] = prepared(
      this.#db,
      `SELECT * FROM runs WHERE ${clauses.join(" AND ")} ORDER BY seq DESC LIMIT ? OFFSET ?`,
    ).all(...params, q.limit, q.offset) as RunRow[];
    return rows.map(toRun);
  }

  async delete(org: OrgId, threadId: string, runId: string): Promise<"deleted" | "absent" | "running"> {
    return this.#db.transaction(() => {
      const row: RunRow | undefined = this.#q("SELECT * FROM runs WHERE run_id = ? AND org_id = ?").get(
        runId,
        org,
      );
      if (!row || row.thread_id !== threadId) return "absent";
      if (row.status === "running") return "running";
      this.#deleteRun(row);
      this.#settleThread(threadId, {});
      return "deleted";
    })();
  }

  async cancelPending(runId: string, action: "interrupt" | "rollback"): Promise<Run | null> {
    return this.#db.transaction(() => {
      const row: RunRow | undefined = this.#q("SELECT * FROM runs WHERE run_id = ?").get(runId);
      if (row?.status !== "pending") return null;
      const now = new Date().toISOString();
      if (action === "rollback") {
        this.#deleteRun(row);
        this.#restoreGraphBinding(row.thread_id);
      } else
        this.#q("UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?").run(now, runId);
      this.#settleThread(row.thread_id, {});
      return toRun({ ...row, status: "interrupted", updated_at: now });
    })();
  }

  async claimNext(lease: Lease = DEFAULT_LEASE): Promise<ClaimResult> {
    return this.#db.transaction(() => {
      const now = Date.now();
      // The oldest due pending run whose thread is not executing another run: at most one run per thread.
      const row: RunRow | undefined = this.#q(
        `SELECT * FROM runs r WHERE r.status = 'pending' AND r.not_before <= ?
           AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.thread_id = r.thread_id AND x.status = 'running')
         ORDER BY r.not_before, r.seq LIMIT 1`,
      ).get(now);
      if (!row) {
        const next: { t: number | null } = this.#q(
          "SELECT MIN(not_before) AS t FROM runs WHERE status = 'pending' AND not_before > ?",
        ).get(now);
        return { run: null, nextDueAt: next.t === null ? null : new Date(next.t) };
      }
      const nowIso = new Date(now).toISOString();
      this.#q(
        `UPDATE runs SET status = 'running', attempt = attempt + 1, updated_at = ?, worker_id = ?,
           lease_expires_at = ? WHERE run_id = ?`,
      ).run(nowIso, lease.workerId, now + lease.ms, row.run_id);
      const thread: { metadata: string } | undefined = this.#q(
        "UPDATE threads SET status = 'busy', updated_at = ? WHERE thread_id = ? RETURNING metadata",
      ).get(nowIso, row.thread_id);
      return {
        run: toRun({ ...row, status: "running", attempt: row.attempt + 1, updated_at: nowIso }),
        org: row.org_id,
        threadMetadata: thread ? JSON.parse(thread.metadata) : {},
        nextDueAt: null,
        stopRequested: row.stop_requested ?? undefined,
      };
    })();
  }

  async renewLeases(lease: Lease, runIds: string[]): Promise<LeaseRenewal> {
    return this.#db.transaction(() => {
      const lost: string[] = [];
      const recovered: string[] = [];
      const stopRequested: LeaseRenewal["stopRequested"] = [];
      const until = Date.now() + lease.ms;
      for (const runId of runIds) {
        const row: Pick<RunRow, "stop_requested"> | undefined = this.#q(
          `UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND status = 'running' AND worker_id = ?
           RETURNING stop_requested`,
        ).get(until, runId, lease.workerId);
        if (row?.stop_requested) stopRequested.push({ run_id: runId, action: row.stop_requested });
        if (row) continue;
        lost.push(runId);
        const now: Pick<RunRow, "status"> | undefined = this.#q(
          "SELECT status FROM runs WHERE run_id = ?",
        ).get(runId);
        if (now?.status === "pending" || now?.status === "running") recovered.push(runId);
      }
      return { lost, recovered, stopRequested };
    })();
  }

  async requestStop(runId: string, action: StopAction): Promise<boolean> {
    const { changes } = this.#q(
      "UPDATE runs SET stop_requested = ? WHERE run_id = ? AND status = 'running'",
    ).run(action, runId);
    return changes > 0;
  }

  async sweepExpiredLeases(maxAttempts: number): Promise<SweepResult> {
    return this.#db.transaction(() => {
      const rows: RunRow[] = this.#q(
        "SELECT * FROM runs WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY seq",
      ).all(Date.now());
      return this.#recoverOrphans(rows, maxAttempts);
    })();
  }

  async complete(c: RunCompletion): Promise<Run | null> {
    return this.#db.transaction(() => {
      const row: RunRow | undefined = this.#q("SELECT * FROM runs WHERE run_id = ?").get(c.run_id);
      if (row?.status !== "running") return null; // deleted or settled meanwhile
      if (c.attempt !== undefined && row.attempt !== c.attempt) return null; // another worker's attempt now
      const now = new Date().toISOString();
      this.#q("UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?").run(c.status, now, c.run_id);
      this.#settleThread(row.thread_id, {
        values: c.values,
        interrupts: c.interrupts,
        hasNext: c.hasNext,
        error: c.status === "error" ? (c.error ?? { error: "Error", message: "Run failed" }) : undefined,
      });
      return toRun({ ...row, status: c.status, updated_at: now });
    })();
  }

  async completeRolledBack(runId: string): Promise<void> {
    this.#db.transaction(() => {
      const row: RunRow | undefined = this.#q("SELECT * FROM runs WHERE run_id = ?").get(runId);
      if (!row) return;
      this.#deleteRun(row);
      this.#restoreGraphBinding(row.thread_id);
      this.#settleThread(row.thread_id, { hasNext: false });
    })();
  }

  async requeue(runId: string, attempt?: number): Promise<void> {
    this.#q(
      `UPDATE runs SET status = 'pending', updated_at = ?, worker_id = NULL, lease_expires_at = NULL
       WHERE run_id = ? AND status = 'running' AND (? IS NULL OR attempt = ?)`,
    ).run(new Date().toISOString(), runId, attempt ?? null, attempt ?? null);
  }

  async recoverInterrupted(maxAttempts: number): Promise<SweepResult> {
    return this.#db.transaction(() =>
      this.#recoverOrphans(
        this.#q("SELECT * FROM runs WHERE status = 'running' ORDER BY seq").all(),
        maxAttempts,
      ),
    )();
  }

  /** Runs no live worker executes: settled as a recorded stop request asks, requeued, or failed. */
  #recoverOrphans(rows: RunRow[], maxAttempts: number): SweepResult {
    const result: SweepResult = { requeued: [], failed: [], interrupted: [], rolledBack: [] };
    const now = new Date().toISOString();
    for (const row of rows) {
      if (row.stop_requested === "rollback") {
        this.#deleteRun(row);
        this.#restoreGraphBinding(row.thread_id);
        this.#settleThread(row.thread_id, { hasNext: false });
        result.rolledBack.push(row.run_id);
      } else if (row.stop_requested === "interrupt") {
        this.#q("UPDATE runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?").run(
          now,
          row.run_id,
        );
        this.#settleThread(row.thread_id, {});
        result.interrupted.push(row.run_id);
      } else if (row.attempt >= maxAttempts) {
        this.#q("UPDATE runs SET status = 'error', updated_at = ? WHERE run_id = ?").run(now, row.run_id);
        this.#settleThread(row.thread_id, {
          error: { error: "RunAbandoned", message: `Run failed after ${row.attempt} attempts` },
        });
        result.failed.push(row.run_id);
      } else {
        this.#q(
          "UPDATE runs SET status = 'pending', updated_at = ?, worker_id = NULL, lease_expires_at = NULL WHERE run_id = ?",
        ).run(now, row.run_id);
        result.requeued.push(row.run_id);
      }
    }
    return result;
  }

  async stats(): Promise<QueueStats> {
    const now = Date.now();
    // Partial indexes answer each part: runs_pending_due (pending by due time), runs_running.
    const row: {
      pending: number;
      running: number;
      due: number;
      oldest: number | null;
      unblocked: number | null;
    } = this.#q(
      `SELECT
           (SELECT COUNT(*) FROM runs WHERE status = 'pending') AS pending,
           (SELECT COUNT(*) FROM runs WHERE status = 'running') AS running,
           (SELECT COUNT(*) FROM runs WHERE status = 'pending' AND not_before <= @now) AS due,
           (SELECT MIN(not_before) FROM runs WHERE status = 'pending' AND not_before <= @now) AS oldest,
           (SELECT MIN(r.not_before) FROM runs r WHERE r.status = 'pending' AND r.not_before <= @now
              AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.thread_id = r.thread_id AND x.status = 'running'))
             AS unblocked`,
    ).get({ now });
    let median: number | null = null;
    if (row.due > 0) {
      // The middle one (or the middle two) in due order.
      const middle: { not_before: number }[] = this.#q(
        `SELECT not_before FROM runs WHERE status = 'pending' AND not_before <= ?
         ORDER BY not_before LIMIT ? OFFSET ?`,
      ).all(now, row.due % 2 ? 1 : 2, Math.floor((row.due - 1) / 2));
      if (middle.length) median = middle.reduce((sum, m) => sum + m.not_before, 0) / middle.length;
    }
    const wait = (since: number | null) => (since === null ? null : Math.max(0, now - since) / 1000);
    return {
      n_pending: row.pending,
      n_running: row.running,
      pending_runs_wait_time_max_secs: wait(row.oldest),
      pending_runs_wait_time_med_secs: wait(median),
      pending_unblocked_runs_wait_time_max_secs: wait(row.unblocked),
    };
  }
}
