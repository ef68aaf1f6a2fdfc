/**
 * The protocol commands the reference server lacks (it answers `unknown_command`), with the spec's
 * shapes (`@langchain/protocol` 0.0.21): `agent.getTree`, `state.listCheckpoints`, `state.fork`,
 * `input.inject`. `subscription.reconnect` is the WebSocket's (socket.ts). Registered in
 * commands.ts' `COMMANDS`; authorized as the REST routes they stand for (reading the thread, creating a
 * run on it).
 */
import { visibleThread } from "../agents/authz.js";
import { admitRun } from "../agents/runs.js";
import { HangarError } from "../errors.js";
import { orgOf } from "../http/context.js";
import type { RunRequest } from "../runtime/runs/service.js";
import type { JsonObject, Thread } from "../storage/ports.js";
import { type CommandContext, CommandError, type CommandHandler } from "./commands.js";
import { mayRead } from "./routes.js";
import { THREAD_EVENTS_KWARG, type ThreadEvent } from "./thread-events.js";

const invalid = (message: string) => new CommandError("invalid_argument", message);

type Status = "started" | "running" | "completed" | "failed" | "interrupted";
interface TreeNode {
  namespace: string[];
  status: Status;
  graph_name: string;
  children?: TreeNode[];
}

/**
 * `agent.getTree {run_id?}`: the agent tree of a run (default: the thread's latest), from its kept
 * lifecycle events: each namespace that started is a node under its nearest ancestor that did, with its
 * last status; children in namespace order (as the reference orders them).
 */
export const agentGetTree: CommandHandler = async (params, { deps, c, threadId }) => {
  if (params.run_id !== undefined && typeof params.run_id !== "string")
    throw invalid("run_id must be a string");
  await mayRead(deps, c, threadId);
  const org = orgOf(c);
  const feed = deps.threadEvents;
  const last = await feed.lastSeq(org, threadId);
  const lifecycle: ThreadEvent[] = [];
  let latestRun: string | undefined;
  if (last > 0) {
    const scan = new AbortController();
    try {
      for await (const item of feed.follow(org, threadId, undefined, scan.signal)) {
        if (item.kind !== "event") continue;
        const e = item.event;
        if (params.run_id === undefined && e.run_id !== latestRun) {
          latestRun = e.run_id;
          lifecycle.length = 0; // only the latest run's
        }
        if (e.method === "lifecycle" && (params.run_id === undefined || e.run_id === params.run_id))
          lifecycle.push(e);
        if (e.seq >= last) break;
      }
    } finally {
      scan.abort();
    }
  }
  const root = lifecycle.filter((e) => e.namespace.length === 0).at(-1);
  if (!root) {
    throw new CommandError(
      "no_such_run",
      params.run_id
        ? `No events of run ${params.run_id} are kept on this thread`
        : "This thread has no run yet",
    );
  }
  const nodes = new Map<string, TreeNode>();
  const key = (ns: string[]) => JSON.stringify(ns);
  for (const e of lifecycle) {
    const data = e.data as { event?: Status; graph_name?: string };
    const node = nodes.get(key(e.namespace));
    if (node) node.status = data.event ?? node.status;
    else
      nodes.set(key(e.namespace), {
        namespace: e.namespace,
        status: data.event ?? "started",
        graph_name: data.graph_name ?? e.namespace.at(-1)?.split(":")[0] ?? "",
      });
  }
  const tree = nodes.get(key([]))!;
  const sorted = [...nodes.values()]
    .filter((n) => n !== tree)
    .sort((a, b) => (key(a.namespace) < key(b.namespace) ? -1 : 1));
  for (const node of sorted.sort((a, b) => a.namespace.length - b.namespace.length)) {
    let parent: TreeNode | undefined;
    for (let depth = node.namespace.length - 1; !parent && depth >= 0; depth--)
      parent = nodes.get(key(node.namespace.slice(0, depth)));
    parent!.children ??= [];
    parent!.children.push(node);
  }
  const order = (n: TreeNode) => {
    n.children?.sort((a, b) => (key(a.namespace) < key(b.namespace) ? -1 : 1)).forEach(order);
  };
  order(tree);
  return { tree };
};

const namespaceOf = (value: unknown): string[] => {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((s) => typeof s !== "string"))
    throw invalid("namespace must be a list of strings");
  return value as string[];
};

/** The thread if it exists and this caller may read it (404 → null only where the thread is absent). */
async function readable(ctx: CommandContext): Promise<Thread | null> {
  const { deps, c, threadId } = ctx;
  await mayRead(deps, c, threadId);
  const thread = await deps.storage.threads.get(orgOf(c), threadId);
  return thread && visibleThread(deps, c, threadId, "read");
}

/** Throws `no_such_checkpoint` unless the thread (at `namespace`) has checkpoint `id`. */
async function assertCheckpoint(ctx: CommandContext, thread: Thread | null, id: string, ns: string[]) {
  if (!thread)
    throw new CommandError("no_such_checkpoint", `Checkpoint ${id} not found: the thread has none`);
  try {
    await ctx.deps.state.get(orgOf(ctx.c), thread, {
      checkpoint_id: id,
      ...(ns.length && { checkpoint_ns: ns.join("|") }),
    });
  } catch (err) {
    if (err instanceof HangarError && err.kind === "not_found")
      throw new CommandError(
        "no_such_checkpoint",
        `Checkpoint ${id} not found on thread ${thread.thread_id}`,
      );
    throw err;
  }
}

/**
 * `state.listCheckpoints {namespace?, limit?, before?}`: the newest checkpoints first (at most `limit`,
 * default 10, before the checkpoint `before`), as `{id, timestamp, step, node_name?, metadata}`; the
 * node is the task that ran from the checkpoint before (the first checkpoint has none).
 */
export const stateListCheckpoints: CommandHandler = async (params, ctx) => {
  const namespace = namespaceOf(params.namespace);
  const limit = params.limit ?? 10;
  if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > 1000)
    throw invalid("limit must be an integer from 1 to 1000");
  if (params.before !== undefined && typeof params.before !== "string")
    throw invalid("before must be a checkpoint id");
  const thread = await readable(ctx);
  if (!thread) return { checkpoints: [] };
  if (params.before) await assertCheckpoint(ctx, thread, params.before as string, namespace);
  const history = (await ctx.deps.state.history(orgOf(ctx.c), thread, {
    limit: (limit as number) + 1, // the one after shows what ran to make the last
    before: params.before as string | undefined,
    ...(namespace.length && { checkpoint: { checkpoint_ns: namespace.join("|") } }),
  })) as {
    checkpoint: { checkpoint_id: string };
    created_at: string | null;
    metadata: { step?: number } & Record<string, unknown>;
    tasks: { name: string }[];
  }[];
  const checkpoints = history.slice(0, limit as number).map((snapshot, i) => {
    const parent = history[i + 1];
    const node = parent?.tasks.map((t) => t.name).join(",");
    return {
      id: snapshot.checkpoint.checkpoint_id,
      timestamp: snapshot.created_at ?? "",
      step: snapshot.metadata.step ?? -1,
      ...(node && { node_name: node }),
      metadata: snapshot.metadata,
    };
  });
  return { checkpoints };
};

/** The assistant the thread runs (its last run's), or `no_such_run`. */
async function boundAssistant(ctx: CommandContext, thread: Thread | null): Promise<string> {
  const [last] = thread
    ? await ctx.deps.storage.runs.list(orgOf(ctx.c), ctx.threadId, { limit: 1, offset: 0 })
    : [];
  const assistantId = (thread?.metadata.assistant_id as string | undefined) ?? last?.assistant_id;
  if (!assistantId)
    throw new CommandError("no_such_run", `Thread ${ctx.threadId} has no run yet: call run.start first`);
  return assistantId;
}

/**
 * `state.fork {checkpoint_id, input?, config?}`: a run on this thread from that checkpoint (time travel:
 * the thread's history branches there), queued behind a run in flight. `{run_id, thread_id}`.
 */
export const stateFork: CommandHandler = async (params, ctx) => {
  if (typeof params.checkpoint_id !== "string" || !params.checkpoint_id)
    throw invalid("state.fork requires a checkpoint_id");
  if (
    params.config !== undefined &&
    (typeof params.config !== "object" || params.config === null || Array.isArray(params.config))
  )
    throw invalid("config must be an object");
  const thread = await readable(ctx);
  await assertCheckpoint(ctx, thread, params.checkpoint_id, []);
  const request: RunRequest = {
    assistant_id: await boundAssistant(ctx, thread),
    input: (params.input ?? null) as JsonObject | null,
    checkpoint_id: params.checkpoint_id,
    config: (params.config as JsonObject | undefined) ?? null,
    multitask_strategy: "enqueue",
    stream_mode: ["values"],
  };
  const run = await admitRun(ctx.deps, ctx.c, ctx.threadId, request, { [THREAD_EVENTS_KWARG]: true });
  return { run_id: run.run_id, thread_id: ctx.threadId };
};

/**
 * `input.inject {namespace, message: {role: "user"|"system", content, name?}}`: the message is the root
 * graph's next input: a run queued behind the one in flight (a running LangGraph graph takes no input
 * from outside), or started at once. Only the root namespace: a subgraph's input is its parent's.
 */
export const inputInject: CommandHandler = async (params, ctx) => {
  const namespace = namespaceOf(params.namespace);
  const message = params.message as { role?: unknown; content?: unknown; name?: unknown } | undefined;
  if (!message || typeof message !== "object" || Array.isArray(message))
    throw invalid("input.inject requires a message {role, content}");
  if (message.role !== "user" && message.role !== "system")
    throw invalid('message.role must be "user" or "system"');
  if (typeof message.content !== "string") throw invalid("message.content must be a string");
  if (message.name !== undefined && typeof message.name !== "string")
    throw invalid("message.name must be a string");
  if (namespace.length > 0)
    throw new CommandError(
      "not_supported",
      "input.inject into a subgraph is not supported: injected input becomes the root graph's next input",
    );
  const thread = await ctx.deps.storage.threads.get(orgOf(ctx.c), ctx.threadId);
  if (thread) await visibleThread(ctx.deps, ctx.c, ctx.threadId, "read");
  const request: RunRequest = {
    assistant_id: await boundAssistant(ctx, thread),
    input: {
      messages: [
        {
          type: message.role === "user" ? "human" : "system",
          content: message.content,
          ...(message.name !== undefined && { name: message.name }),
        },
      ],
    },
    multitask_strategy: "enqueue",
    stream_mode: ["values"],
  };
  await admitRun(ctx.deps, ctx.c, ctx.threadId, request, { [THREAD_EVENTS_KWARG]: true });
  return {};
};

/** What commands.ts' `COMMANDS` adds from here. */
export const STATE_COMMANDS: Record<string, CommandHandler> = {
  "agent.getTree": agentGetTree,
  "state.listCheckpoints": stateListCheckpoints,
  "state.fork": stateFork,
  "input.inject": inputInject,
};
