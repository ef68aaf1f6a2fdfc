/** A run's end: completed by its worker, rolled back, handed back to the queue, cancelled while pending, deleted. */
import type * as Port from "../../ports.js";
import { first } from "../database.js";
import { slot } from "../prepared.js";
import { RUNNING } from "../threads.js";
import { QUEUED, RunSteps, runError, type Settlement, toRun } from "./steps.js";

export class RunCompletion extends RunSteps {
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
      const thread = yield* this.lockThreadOfRun(c.run_id);
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
      yield* this.settleThread(tx, thread, settlement);
      return toRun(row);
    });
  }

  async completeRolledBack(runId: string): Promise<void> {
    await this.transaction(function* (tx) {
      const thread = yield* this.lockThreadOfRun(runId);
      if (thread) yield* this.rollBack(tx, thread, runId);
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

  async delete(org: Port.OrgId, threadId: string, runId: string): Promise<"deleted" | "absent" | "running"> {
    return this.transaction(function* (tx) {
      const thread = yield* this.lockThreadOfRun(runId);
      const row = thread && (yield* first(this.selectRun(tx, runId)));
      if (!thread || !row || row.org_id !== org || row.thread_id !== threadId) return "absent";
      if (row.status === "running") return "running";
      yield* this.deleteRun(tx, row, row.run_id);
      yield* this.settleThread(tx, thread, {});
      return "deleted";
    });
  }

  async cancelPending(runId: string, action: "interrupt" | "rollback"): Promise<Port.Run | null> {
    return this.transaction(function* (tx) {
      const thread = yield* this.lockThreadOfRun(runId);
      const row = thread && (yield* first(this.selectRun(tx, runId)));
      if (!thread || row?.status !== "pending") return null;
      const now = new Date().toISOString();
      if (action === "rollback") {
        yield* this.deleteRun(tx, row, row.run_id);
        yield* this.restoreGraphBinding(tx, thread);
      } else yield* this.updateRun(tx, runId, { status: "interrupted", updated_at: now });
      yield* this.settleThread(tx, thread, {});
      return toRun({ ...row, status: "interrupted", updated_at: now });
    });
  }
}
