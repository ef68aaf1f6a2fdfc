/**
 * Leases: a worker renews those of the runs it executes, a stop is recorded on a running run, and runs
 * whose worker is gone (lease expired, or the process that owned the database restarted) are recovered.
 */
import type { ExpressionBuilder } from "kysely";
import type * as Port from "../../ports.js";
import { first, type TxSteps } from "../database.js";
import { sql } from "../kysely.js";
import type { Tables } from "../tables.js";
import { IN_FLIGHT, RUNNING } from "../threads.js";
import { QUEUED, RunSteps, runError } from "./steps.js";

export class RunLeases extends RunSteps {
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
        const thread = yield* this.lockThreadOfRun(runId);
        if (!thread) return null;
        const run = this.selectRun(tx, runId).select((eb) => this.#leaseExpired(eb).as("expired"));
        const row = yield* first(this.dialect.lock(run));
        if (row?.status !== "running" || (onlyExpired && !row.expired)) return null;
        const now = new Date().toISOString();
        if (row.stop_requested === "rollback") {
          yield* this.rollBack(tx, thread, runId);
          return "rolledBack";
        }
        if (row.stop_requested === "interrupt") {
          yield* this.updateRun(tx, runId, { status: "interrupted", updated_at: now });
          yield* this.settleThread(tx, thread, {});
          return "interrupted";
        }
        if (row.attempt >= maxAttempts) {
          const error = { error: "RunAbandoned", message: `Run failed after ${row.attempt} attempts` };
          yield* this.updateRun(tx, runId, { status: "error", updated_at: now, error: runError(error) });
          yield* this.settleThread(tx, thread, { error: JSON.stringify(error) });
          return "failed";
        }
        yield* this.updateRun(tx, runId, { ...QUEUED, updated_at: now });
        return "requeued";
      });
      if (recovery) result[recovery].push(runId);
    }
    return result;
  }
}
