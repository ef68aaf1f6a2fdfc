/**
 * What the checkpointer (sql/checkpointer.ts; during issue 18's transition also the per-engine ones in
 * sqlite/ and postgres/) does before it writes a row: the metadata a checkpoint is stored with, the
 * rollback fence, and the preparation of a checkpoint row.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type Checkpoint,
  type CheckpointMetadata,
  copyCheckpoint,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

/** Config/configurable keys that describe the call site, not the run: never copied into checkpoint metadata. */
const NON_METADATA_KEYS = new Set([
  "checkpoint_id",
  "checkpoint_ns",
  "checkpoint_map",
  "task_id",
  "langgraph_step",
  "langgraph_node",
  "langgraph_triggers",
  "langgraph_path",
  "langgraph_checkpoint_ns",
]);

export function toBuffer(bytes: Uint8Array | string): Buffer {
  if (typeof bytes === "string") return Buffer.from(bytes, "utf8");
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function isPrimitive(v: unknown): v is string | number | boolean {
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean";
}

/**
 * LangGraph JS hands `put` only `{source, step, parents}`; the run's identity (`run_id`, `thread_id`,
 * `graph_id`, `assistant_id`, user metadata) lives in `config.metadata` / `config.configurable`. Like the
 * Python savers' `get_checkpoint_metadata`, fold scalar values from both into the stored metadata:
 * the checkpoint's own keys win, then `config.metadata`, then `configurable`.
 */
export function checkpointMetadata(
  config: RunnableConfig,
  metadata: CheckpointMetadata,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...metadata };
  for (const source of [config.metadata, config.configurable]) {
    if (!source) continue;
    for (const [key, value] of Object.entries(source)) {
      if (Object.hasOwn(merged, key) || key.startsWith("__") || NON_METADATA_KEYS.has(key)) continue;
      if (isPrimitive(value)) merged[key] = value;
    }
  }
  return merged;
}

export function runIdOf(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/**
 * Run ids whose checkpoints must be dropped: a graph stopped by a rollback may still flush a checkpoint
 * after its run's checkpoints were deleted. In process memory; remembers the most recent `capacity` ids.
 */
export class RunFence {
  readonly #ids = new Set<string>();
  readonly #capacity: number;

  constructor(capacity = 10_000) {
    this.#capacity = Math.max(1, capacity);
  }

  add(runId: string): void {
    this.#ids.delete(runId);
    this.#ids.add(runId);
    while (this.#ids.size > this.#capacity) this.#ids.delete(this.#ids.values().next().value as string);
  }

  has(runId: string | null): boolean {
    return runId !== null && this.#ids.has(runId);
  }
}

/** A checkpoint ready to be written, or `row: null` when its run is fenced (then nothing is written). */
export interface PreparedCheckpoint {
  /** The config `put` returns, written or not. */
  result: RunnableConfig;
  row: {
    threadId: string;
    ns: string;
    checkpointId: string;
    parentId: string | null;
    runId: string | null;
    type: string;
    checkpoint: Buffer;
    metadata: Buffer;
  } | null;
}

/**
 * Everything `put` does before the write: the checkpoint's identity (`checkpoint_ns`, parent =
 * `configurable.checkpoint_id`), its metadata merged with the run's (see `checkpointMetadata`), the
 * fence checked before and after serialization (a rollback may land while it is awaited).
 */
export async function prepareCheckpoint(
  serde: SerializerProtocol,
  fence: RunFence,
  config: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
): Promise<PreparedCheckpoint> {
  const threadId = config.configurable?.thread_id;
  if (threadId === undefined || threadId === null) {
    throw new Error('Failed to put checkpoint: config.configurable is missing "thread_id".');
  }
  const ns = String(config.configurable?.checkpoint_ns ?? "");
  const parentId = config.configurable?.checkpoint_id;
  const result: RunnableConfig = {
    configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id },
  };
  const merged = checkpointMetadata(config, metadata);
  const runId = runIdOf(merged.run_id);
  if (fence.has(runId)) return { result, row: null };
  const [[type, serializedCheckpoint], [metadataType, serializedMetadata]] = await Promise.all([
    serde.dumpsTyped(copyCheckpoint(checkpoint)),
    serde.dumpsTyped(merged),
  ]);
  if (metadataType !== "json") {
    throw new Error(`Checkpoint metadata must serialize as JSON, got "${metadataType}"`);
  }
  if (fence.has(runId)) return { result, row: null };
  return {
    result,
    row: {
      threadId: String(threadId),
      ns,
      checkpointId: checkpoint.id,
      parentId: parentId ? String(parentId) : null,
      runId,
      type,
      checkpoint: toBuffer(serializedCheckpoint),
      metadata: toBuffer(serializedMetadata),
    },
  };
}
