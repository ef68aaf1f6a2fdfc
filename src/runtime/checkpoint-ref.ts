import type { Interrupt } from "../storage/ports.js";
import { toPlain } from "./serialize.js";

/** The wire form of a LangGraph checkpoint config: `{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`. */
export function checkpointRef(config: any): Record<string, unknown> | null {
  const c = config?.configurable;
  if (!c) return null;
  return {
    thread_id: c.thread_id,
    checkpoint_ns: c.checkpoint_ns ?? "",
    checkpoint_id: c.checkpoint_id,
    checkpoint_map: c.checkpoint_map ?? null,
  };
}

/**
 * A checkpoint payload of the `debug` and `checkpoints` stream modes, as the official servers send
 * it: snake_case `parent_config` and `checkpoint` / `parent_checkpoint` refs beside the configs.
 */
export function withCheckpointRefs(payload: any): any {
  if (payload === null || typeof payload !== "object" || !("config" in payload)) return payload;
  const { parentConfig, ...rest } = payload;
  return {
    ...rest,
    parent_config: parentConfig ?? null,
    checkpoint: checkpointRef(payload.config),
    parent_checkpoint: checkpointRef(parentConfig),
  };
}

/** Interrupts of a state snapshot, keyed by task id (the `thread.interrupts` shape). */
export function interruptsByTask(snapshot: {
  tasks?: { id: string; interrupts?: unknown[] }[];
}): Record<string, Interrupt[]> {
  const out: Record<string, Interrupt[]> = {};
  for (const task of snapshot.tasks ?? []) {
    if (task.interrupts?.length) out[task.id] = toPlain(task.interrupts) as Interrupt[];
  }
  return out;
}
