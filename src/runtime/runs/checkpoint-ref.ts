import type { Interrupt } from "../../storage/ports.js";
import { toPlain } from "../graphs/serialize.js";

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
 * A checkpoint payload of the `debug` and `checkpoints` stream modes, as the reference server sends
 * it: snake_case `parent_config` (absent for the first checkpoint), configs without LangGraph's
 * internal `__*` configurable keys, `checkpoint` / `parent_checkpoint` refs beside them (null unless
 * the config names a checkpoint), and subgraph tasks' `state` configs turned into `checkpoint` refs.
 */
export function withCheckpointRefs(payload: any): any {
  if (payload === null || typeof payload !== "object" || !("config" in payload)) return payload;
  const { parentConfig, ...rest } = payload;
  return {
    ...rest,
    config: publicConfig(payload.config),
    ...(parentConfig !== undefined && { parent_config: publicConfig(parentConfig) }),
    tasks: Array.isArray(payload.tasks) ? payload.tasks.map(withTaskCheckpoint) : payload.tasks,
    checkpoint: streamCheckpointRef(payload.config, true),
    parent_checkpoint: streamCheckpointRef(parentConfig, true),
  };
}

/** A task of a stream payload whose `state` is a subgraph's config: that config as a `checkpoint` ref. */
export function withTaskCheckpoint(task: any): any {
  if (task === null || typeof task !== "object") return task;
  const checkpoint = streamCheckpointRef(task.state, false);
  if (!checkpoint) return task;
  const { state: _state, ...rest } = task;
  return { ...rest, checkpoint };
}

function streamCheckpointRef(config: any, needsId: boolean): Record<string, unknown> | null {
  const c = config?.configurable;
  if (typeof c?.thread_id !== "string" || !c.thread_id) return null;
  if (needsId && typeof c.checkpoint_id !== "string") return null;
  return {
    thread_id: c.thread_id,
    checkpoint_id: c.checkpoint_id || null,
    checkpoint_ns: c.checkpoint_ns || "",
    checkpoint_map: c.checkpoint_map || null,
  };
}

/** A config as streamed: no `__*` configurable keys (LangGraph's internals), no callbacks. */
function publicConfig(config: any): any {
  if (
    config === null ||
    typeof config !== "object" ||
    typeof config.configurable !== "object" ||
    !config.configurable
  )
    return config;
  const { callbacks: _callbacks, ...rest } = config;
  return {
    ...rest,
    configurable: Object.fromEntries(
      Object.entries(config.configurable).filter(([key]) => !key.startsWith("__")),
    ),
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
