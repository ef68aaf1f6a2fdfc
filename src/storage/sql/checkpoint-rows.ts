/**
 * Operations on the checkpoint tables (owned by checkpointer.ts) that other repositories run inside
 * their own transactions: a thread's deletion, a run's rollback, a thread's copy, a TTL's pruning.
 * Each takes the caller's executor, so it commits or rolls back with the rows it belongs to.
 */
import type { Executor } from "./database.js";
import type { CheckpointWritesTable } from "./tables.js";

/** A pending write's columns, in the order `putWrites` binds them (`thread_id` first: the copy swaps it). */
export const WRITE_COLUMNS = [
  "thread_id",
  "checkpoint_ns",
  "checkpoint_id",
  "task_id",
  "idx",
  "channel",
  "type",
  "value",
  "task_path",
  "run_id",
] as const satisfies readonly (keyof CheckpointWritesTable)[];

/** Deletes the checkpoints and pending writes of these threads. */
export async function deleteThreadCheckpoints(ex: Executor, threadIds: string[]): Promise<void> {
  if (!threadIds.length) return;
  await ex.deleteFrom("checkpoint_writes").where("thread_id", "in", threadIds).execute();
  await ex.deleteFrom("checkpoints").where("thread_id", "in", threadIds).execute();
}

/**
 * Deletes the thread's checkpoints whose metadata `run_id` is `runId`, their writes, and the writes that
 * run made on other checkpoints (a resumed run writes onto its predecessor's last checkpoint).
 */
export async function deleteRunCheckpoints(ex: Executor, threadId: string, runId: string): Promise<void> {
  await ex
    .deleteFrom("checkpoint_writes")
    .where("thread_id", "=", threadId)
    .where((eb) =>
      eb.or([
        eb("run_id", "=", runId),
        eb(eb.refTuple("checkpoint_ns", "checkpoint_id"), "in", (sub) =>
          sub
            .selectFrom("checkpoints")
            .select(["checkpoints.checkpoint_ns", "checkpoints.checkpoint_id"])
            .where("checkpoints.thread_id", "=", threadId)
            .where("checkpoints.run_id", "=", runId)
            .$asTuple("checkpoint_ns", "checkpoint_id"),
        ),
      ]),
    )
    .execute();
  await ex.deleteFrom("checkpoints").where("thread_id", "=", threadId).where("run_id", "=", runId).execute();
}

/**
 * Deletes all but the latest checkpoint of each of the thread's namespaces, with their pending writes
 * (checkpoint ids grow with time, so the latest is the greatest).
 */
export async function keepLatestCheckpoints(ex: Executor, threadId: string): Promise<void> {
  const latest = ex
    .selectFrom("checkpoints as l")
    .select((eb) => ["l.checkpoint_ns", eb.fn.max("l.checkpoint_id").as("latest")])
    .where("l.thread_id", "=", threadId)
    .groupBy("l.checkpoint_ns")
    .$asTuple("checkpoint_ns", "latest");
  for (const table of ["checkpoint_writes", "checkpoints"] as const) {
    await ex
      .deleteFrom(table)
      .where("thread_id", "=", threadId)
      .where((eb) => eb(eb.refTuple("checkpoint_ns", "checkpoint_id"), "not in", latest))
      .execute();
  }
}

/**
 * Makes `target` an exact copy of `source`'s checkpoints and writes (whatever the target held is
 * replaced). The stored metadata's `thread_id` becomes the target's where present (metadata blobs are
 * JSON, checkpointer.ts makes sure), rewritten here rather than by each engine's JSON functions.
 */
export async function copyThreadCheckpoints(ex: Executor, source: string, target: string): Promise<void> {
  if (source === target) return;
  await deleteThreadCheckpoints(ex, [target]);
  const checkpoints = await ex
    .selectFrom("checkpoints")
    .selectAll()
    .where("thread_id", "=", source)
    .execute();
  for (const row of checkpoints) {
    const metadata = JSON.parse(row.metadata.toString("utf8"));
    if (metadata !== null && typeof metadata === "object" && Object.hasOwn(metadata, "thread_id"))
      metadata.thread_id = target;
    await ex
      .insertInto("checkpoints")
      .values({ ...row, thread_id: target, metadata: Buffer.from(JSON.stringify(metadata), "utf8") })
      .execute();
  }
  const [, ...copied] = WRITE_COLUMNS;
  await ex
    .insertInto("checkpoint_writes")
    .columns(WRITE_COLUMNS)
    .expression((eb) =>
      eb
        .selectFrom("checkpoint_writes")
        .select((s) => [s.val(target).as("thread_id"), ...copied])
        .where("thread_id", "=", source),
    )
    .execute();
}
