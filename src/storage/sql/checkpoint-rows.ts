/**
 * Operations on the checkpoint tables (owned by checkpointer.ts) that other repositories run as a
 * part of their own transactions (`yield*`): a thread's deletion, a run's rollback, a thread's copy,
 * a TTL's pruning.
 */
import type { OrgId } from "../ports.js";
import { all, changed, type Executor, first, type TxSteps } from "./database.js";

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

/** A checkpoint row as `keepLatestCheckpoints` reads it. */
interface StoredCheckpoint {
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Buffer;
}

/**
 * The channels whose values the stored checkpoint holds; undefined when its serialization is not
 * JSON (then nothing can be told, and the caller keeps what it would otherwise delete).
 */
function channelsWithValues(row: StoredCheckpoint): Set<string> | undefined {
  if ((row.type ?? "json") !== "json") return undefined;
  const parsed = JSON.parse(row.checkpoint.toString("utf8")) as { channel_values?: object | null };
  return new Set(Object.keys(parsed?.channel_values ?? {}));
}

/**
 * The delta channels (LangGraph's `DeltaChannel`) a checkpoint holds no value of: their value is
 * rebuilt on read by replaying the writes of its ancestors down to the nearest one that stores a value
 * (a snapshot). Metadata `counters_since_delta_snapshot` names every delta channel written or stepped
 * since its last snapshot (a channel snapshotted at this very checkpoint has its value here).
 */
function deltaChannelsToRebuild(row: StoredCheckpoint & { metadata: Buffer }): Set<string> {
  const metadata = JSON.parse(row.metadata.toString("utf8")) as {
    counters_since_delta_snapshot?: Record<string, unknown>;
  } | null;
  const delta = Object.keys(metadata?.counters_since_delta_snapshot ?? {});
  const stored = channelsWithValues(row);
  return new Set(delta.filter((channel) => !stored?.has(channel)));
}

/**
 * Deletes all but the latest checkpoint of each of the thread's namespaces, with their pending writes
 * (checkpoint ids grow with time, so the latest is the greatest) — except the ancestors the latest one
 * still needs: for a delta channel, from the latest back to the nearest checkpoint holding its value,
 * with their writes, which LangGraph replays to rebuild the channel (`getDeltaChannelHistory`). Keeping
 * only the latest would silently empty such a channel (a `DeltaValue` message history). The one prune
 * both `POST /threads/prune` and a TTL's `keep_latest` sweep do.
 */
export function* keepLatestCheckpoints(tx: Executor, org: OrgId, threadId: string): TxSteps<void> {
  const namespaces = yield* all(
    tx
      .selectFrom("checkpoints")
      .select((eb) => ["checkpoint_ns", eb.fn.max("checkpoint_id").as("latest")])
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .groupBy("checkpoint_ns"),
  );
  const row = (ns: string, id: string) =>
    first(
      tx
        .selectFrom("checkpoints")
        .select(["checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata"])
        .where("org_id", "=", org)
        .where("thread_id", "=", threadId)
        .where("checkpoint_ns", "=", ns)
        .where("checkpoint_id", "=", id),
    );
  for (const { checkpoint_ns: ns, latest } of namespaces) {
    const head = yield* row(ns, latest);
    if (!head) continue;
    const kept = [head.checkpoint_id];
    const missing = deltaChannelsToRebuild(head);
    for (let parent = head.parent_checkpoint_id; missing.size > 0 && parent !== null; ) {
      const ancestor = yield* row(ns, parent);
      if (!ancestor) break;
      kept.push(ancestor.checkpoint_id);
      for (const channel of channelsWithValues(ancestor) ?? []) missing.delete(channel);
      parent = ancestor.parent_checkpoint_id;
    }
    for (const table of ["checkpoint_writes", "checkpoints"] as const) {
      yield* changed(
        deleteOfThread(tx, table, org, threadId)
          .where("checkpoint_ns", "=", ns)
          .where("checkpoint_id", "not in", kept),
      );
    }
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
