/**
 * What both checkpointers (sqlite/, postgres/) store as a checkpoint's metadata, and small helpers
 * they share.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";

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
