/**
 * Thread-row operations other repositories run inside their own transactions (runs end, assistants
 * are deleted with their threads, TTLs expire): each takes the caller's executor.
 */
import type { ThreadStatus } from "../statuses.js";
import { deleteThreadCheckpoints } from "./checkpoint-rows.js";
import type { Executor } from "./database.js";

/** Deletes threads with their runs and checkpoints. */
export async function deleteThreads(ex: Executor, threadIds: string[]): Promise<void> {
  if (!threadIds.length) return;
  await ex.deleteFrom("runs").where("thread_id", "in", threadIds).execute();
  await deleteThreadCheckpoints(ex, threadIds);
  await ex.deleteFrom("threads").where("thread_id", "in", threadIds).execute();
}

/** The status a thread settles to when no run is executing it. */
export async function settledStatus(
  ex: Executor,
  threadId: string,
  hasNext: boolean,
  failed: boolean,
): Promise<ThreadStatus> {
  if (failed) return "error";
  if (hasNext) return "interrupted";
  const inFlight = await ex
    .selectFrom("runs")
    .select("run_id")
    .where("thread_id", "=", threadId)
    .where("status", "in", ["pending", "running"])
    .limit(1)
    .executeTakeFirst();
  return inFlight ? "busy" : "idle";
}
