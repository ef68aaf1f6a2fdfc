/**
 * Operations on the checkpoint tables (owned by checkpointer.ts) that other repositories run as a
 * part of their own transactions (`yield*`): a thread's deletion, a run's rollback, a thread's copy,
 * a TTL's pruning.
 */
import type { OrgId } from "../ports.js";
import { all, changed, type Executor, type TxSteps } from "./database.js";

/**
 * A pending write's columns, key first, as `putWrites` binds them. A thread is `(org_id, thread_id)`: a
 * thread id is unique within its organization only.
 */
export const WRITE_KEY = ["org_id", "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"] as const;
export const WRITE_VALUES = ["channel", "type", "value", "task_path", "run_id"] as const;
export const WRITE_COLUMNS = [...WRITE_KEY, ...WRITE_VALUES] as const;

/** Checkpoint rows (of `table`) of `org`'s thread `threadId`, to narrow further. */
const deleteOfThread = <T extends "checkpoints" | "checkpoint_writes">(
  tx: Executor,
  table: T,
  org: OrgId,
  threadId: string,
) =>
  tx
    .deleteFrom(table as "checkpoints")
    .where("org_id", "=", org)
    .where("thread_id", "=", threadId);

export function* deleteThreadCheckpoints(tx: Executor, org: OrgId, threadIds: string[]): TxSteps<void> {
  if (!threadIds.length) return;
  for (const table of ["checkpoint_writes", "checkpoints"] as const)
    yield* changed(tx.deleteFrom(table).where("org_id", "=", org).where("thread_id", "in", threadIds));
}

/**
 * Deletes the thread's checkpoints whose metadata `run_id` is `runId`, their writes, and the writes that
 * run made on other checkpoints (a resumed run writes onto its predecessor's last checkpoint).
 */
export function* deleteRunCheckpoints(
  tx: Executor,
  org: OrgId,
  threadId: string,
  runId: string,
): TxSteps<void> {
  yield* changed(
    deleteOfThread(tx, "checkpoint_writes", org, threadId).where((eb) =>
      eb.or([
        eb("run_id", "=", runId),
        eb(eb.refTuple("checkpoint_ns", "checkpoint_id"), "in", (sub) =>
          sub
            .selectFrom("checkpoints")
            .select(["checkpoints.checkpoint_ns", "checkpoints.checkpoint_id"])
            .where("checkpoints.org_id", "=", org)
            .where("checkpoints.thread_id", "=", threadId)
            .where("checkpoints.run_id", "=", runId)
            .$asTuple("checkpoint_ns", "checkpoint_id"),
        ),
      ]),
    ),
  );
  yield* changed(deleteOfThread(tx, "checkpoints", org, threadId).where("run_id", "=", runId));
}

/**
 * Deletes all but the latest checkpoint of each of the thread's namespaces, with their pending writes
 * (checkpoint ids grow with time, so the latest is the greatest).
 */
export function* keepLatestCheckpoints(tx: Executor, org: OrgId, threadId: string): TxSteps<void> {
  const latest = tx
    .selectFrom("checkpoints as l")
    .select((eb) => ["l.checkpoint_ns", eb.fn.max("l.checkpoint_id").as("latest")])
    .where("l.org_id", "=", org)
    .where("l.thread_id", "=", threadId)
    .groupBy("l.checkpoint_ns")
    .$asTuple("checkpoint_ns", "latest");
  for (const table of ["checkpoint_writes", "checkpoints"] as const) {
    yield* changed(
      deleteOfThread(tx, table, org, threadId).where((eb) =>
        eb(eb.refTuple("checkpoint_ns", "checkpoint_id"), "not in", latest),
      ),
    );
  }
}

/**
 * Makes `target` an exact copy of `source`'s checkpoints and writes (whatever the target held is
 * replaced). The stored metadata's `thread_id` becomes the target's where present (metadata blobs are
 * JSON, checkpointer.ts makes sure), rewritten here rather than by each engine's JSON functions.
 */
export function* copyThreadCheckpoints(
  tx: Executor,
  org: OrgId,
  source: string,
  target: string,
): TxSteps<void> {
  if (source === target) return;
  yield* deleteThreadCheckpoints(tx, org, [target]);
  const checkpoints = yield* all(
    tx.selectFrom("checkpoints").selectAll().where("org_id", "=", org).where("thread_id", "=", source),
  );
  for (const row of checkpoints) {
    const metadata = JSON.parse(row.metadata.toString("utf8"));
    if (metadata !== null && typeof metadata === "object" && Object.hasOwn(metadata, "thread_id"))
      metadata.thread_id = target;
    yield* changed(
      tx
        .insertInto("checkpoints")
        .values({ ...row, thread_id: target, metadata: Buffer.from(JSON.stringify(metadata), "utf8") }),
    );
  }
  const [, , ...copied] = WRITE_COLUMNS;
  yield* changed(
    tx
      .insertInto("checkpoint_writes")
      .columns(WRITE_COLUMNS)
      .expression((eb) =>
        eb
          .selectFrom("checkpoint_writes")
          .select((s) => [s.val(org).as("org_id"), s.val(target).as("thread_id"), ...copied])
          .where("org_id", "=", org)
          .where("thread_id", "=", source),
      ),
  );
}
