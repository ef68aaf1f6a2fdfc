import { badRequest, conflict, notFound } from "../errors.js";
import { type CompiledGraph, type GraphRegistry, withCheckpointOrg } from "../runtime/graphs/graphs.js";
import { toPlain } from "../runtime/graphs/serialize.js";
import { checkpointRef, interruptsByTask } from "../runtime/runs/checkpoint-ref.js";
import { CHECKPOINT_ORG_KEY, type OrgId, type Storage, type Thread } from "../storage/ports.js";

/** A LangGraph StateSnapshot in the wire shape of the official servers (ThreadState). */
export function toThreadState(snapshot: any): Record<string, unknown> {
  return {
    values: toPlain(snapshot.values) ?? {},
    next: snapshot.next ?? [],
    tasks: (snapshot.tasks ?? []).map((t: any) => ({
      id: t.id,
      name: t.name,
      path: t.path ?? [],
      error: t.error ? String(t.error?.message ?? t.error) : null,
      interrupts: toPlain(t.interrupts ?? []),
      checkpoint: t.state && "configurable" in t.state ? checkpointRef(t.state) : null,
      state: t.state && "values" in t.state ? toThreadState(t.state) : null,
      result: t.result === undefined ? null : toPlain(t.result),
    })),
    metadata: toPlain(snapshot.metadata) ?? {},
    created_at: snapshot.createdAt ?? null,
    checkpoint: checkpointRef(snapshot.config),
    parent_checkpoint: checkpointRef(snapshot.parentConfig),
    interrupts: toPlain((snapshot.tasks ?? []).flatMap((t: any) => t.interrupts ?? [])),
  };
}

export const EMPTY_STATE = {
  values: {},
  next: [],
  tasks: [],
  metadata: {},
  created_at: null,
  checkpoint: null,
  parent_checkpoint: null,
  interrupts: [],
};

/**
 * Reads and writes a thread's graph state. The graph is the one the thread last ran (its
 * `metadata.graph_id`), instantiated with the server's checkpointer.
 */
export class ThreadStateService {
  constructor(
    private readonly storage: Storage,
    private readonly graphs: GraphRegistry,
  ) {}

  async graphOf(thread: Thread): Promise<CompiledGraph | null> {
    const graphId = thread.metadata.graph_id;
    if (typeof graphId !== "string" || !this.graphs.has(graphId)) return null;
    return this.graphs.get(graphId, thread.config);
  }

  async get(org: OrgId, thread: Thread, checkpoint: Record<string, unknown> = {}, subgraphs = false) {
    const graph = await this.graphOf(thread);
    if (!graph) return EMPTY_STATE;
    const snapshot = await withCheckpointOrg(org, () =>
      graph.getState({ configurable: checkpointConfig(org, thread.thread_id, checkpoint) }, { subgraphs }),
    );
    // LangGraph answers an unknown checkpoint with an empty snapshot (no creation time).
    if (checkpoint.checkpoint_id && !snapshot.createdAt)
      throw notFound(`Checkpoint ${checkpoint.checkpoint_id} not found`);
    return toThreadState(snapshot);
  }

  async history(
    org: OrgId,
    thread: Thread,
    opts: {
      limit: number;
      before?: string;
      metadata?: Record<string, unknown>;
      checkpoint?: Record<string, unknown>;
    },
  ) {
    const graph = await this.graphOf(thread);
    if (!graph) return [];
    const out: unknown[] = [];
    const config = {
      configurable: checkpointConfig(org, thread.thread_id, opts.checkpoint),
    };
    const iterator = graph.getStateHistory(config, {
      limit: opts.limit,
      before: opts.before ? { configurable: { checkpoint_id: opts.before } } : undefined,
      filter: opts.metadata,
    });
    await withCheckpointOrg(org, async () => {
      for await (const snapshot of iterator) out.push(toThreadState(snapshot));
    });
    return out;
  }

  /** POST /threads/{id}/state: a new checkpoint as if written by `asNode`. Not while a run is in flight. */
  async update(
    org: OrgId,
    thread: Thread,
    update: { values: unknown; asNode?: string; checkpoint?: Record<string, unknown> },
  ) {
    if (thread.status === "busy")
      throw conflict(`Thread ${thread.thread_id} is busy with a run; update its state after it ends`);
    const graph = await this.graphOf(thread);
    if (!graph)
      throw badRequest(`Thread ${thread.thread_id} has no graph yet: run it once before updating its state`);
    const checkpoint = checkpointConfig(org, thread.thread_id, update.checkpoint);
    const config = await rejectAsBadRequest("state update", () =>
      graph.updateState({ configurable: checkpoint }, update.values, update.asNode),
    );
    await this.record(org, thread.thread_id, graph);
    const { [CHECKPOINT_ORG_KEY]: _, ...written } = config.configurable ?? {};
    return { checkpoint: written };
  }

  /** Applies `supersteps` on a new thread (threads.create with supersteps). */
  async applySupersteps(org: OrgId, thread: Thread, supersteps: { updates: any[] }[]) {
    const graph = await this.graphOf(thread);
    if (!graph) throw badRequest("supersteps need metadata.graph_id naming a registered graph");
    await rejectAsBadRequest("supersteps", () =>
      graph.bulkUpdateState(
        { configurable: checkpointConfig(org, thread.thread_id) },
        supersteps.map((s) => ({
          updates: s.updates.map((u) => ({ values: u.values, asNode: u.as_node, command: u.command })),
        })),
      ),
    );
    await this.record(org, thread.thread_id, graph);
  }

  async record(org: OrgId, threadId: string, graph: CompiledGraph) {
    const snapshot = await graph.getState({ configurable: checkpointConfig(org, threadId) });
    await this.storage.threads.recordState(org, threadId, {
      values: toPlain(snapshot.values),
      interrupts: interruptsByTask(snapshot),
      hasNext: (snapshot.next ?? []).length > 0,
    });
  }
}

/**
 * A state update the graph refuses (unknown node, values its reducers reject) is the caller's error:
 * 400 with LangGraph's message, not a 500.
 */
async function rejectAsBadRequest<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw badRequest(`Invalid ${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The LangGraph config of a checkpoint of this thread. Only the checkpoint's id, namespace and map are
 * taken from the request: the thread id is always the one the caller was authorised for.
 */
function checkpointConfig(
  org: OrgId,
  threadId: string,
  ref: Record<string, unknown> = {},
): Record<string, unknown> {
  const config: Record<string, unknown> = {
    thread_id: threadId,
    checkpoint_ns: ref.checkpoint_ns ?? "",
    [CHECKPOINT_ORG_KEY]: org,
  };
  if (ref.checkpoint_id != null) config.checkpoint_id = ref.checkpoint_id;
  if (ref.checkpoint_map != null) config.checkpoint_map = ref.checkpoint_map;
  return config;
}
