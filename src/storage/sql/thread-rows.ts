/** Thread-row operations other repositories run as a part of their own transactions (`yield*`). */
import type { ThreadStatus } from "../statuses.js";
import { deleteThreadCheckpoints } from "./checkpoint-rows.js";
import { changed, type Executor, first, type TxSteps } from "./database.js";

/** Deletes threads with their runs and checkpoints. */
export function* deleteThreads(tx: Executor, threadIds: string[]): TxSteps<void> {
  if (!threadIds.length) return;
  yield* changed(tx.deleteFrom("runs").where("thread_id", "in", threadIds));
  yield* deleteThreadCheckpoints(tx, threadIds);
  yield* changed(tx.deleteFrom("threads").where("thread_id", "in", threadIds));
}

/** The status a thread settles to when no run is executing it. */
export function* settledStatus(
  tx: Executor,
  threadId: string,
  hasNext: boolean,
  failed: boolean,
): TxSteps<ThreadStatus> {
  if (failed) return "error";
  if (hasNext) return "interrupted";
  const inFlight = yield* first(
    tx
      .selectFrom("runs")
      .select("run_id")
      .where("thread_id", "=", threadId)
      .where("status", "in", ["pending", "running"])
      .limit(1),
  );
  return inFlight ? "busy" : "idle";
}
