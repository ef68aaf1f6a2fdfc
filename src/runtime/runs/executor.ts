import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Command, INTERRUPT, Send } from "@langchain/langgraph";
import type { WebhooksConfig } from "../../config/index.js";
import type { Logger } from "../../logger.js";
import type { ThreadEventBuffer, ThreadEventWriter } from "../../protocol/buffer.js";
import {
  type ProducedEvent,
  protocolGraphModes,
  RestProtocolModes,
  type RunEnding,
  ThreadEventConverter,
} from "../../protocol/events.js";
import { ANSWERED_INTERRUPTS_KWARG, THREAD_EVENTS_KWARG } from "../../protocol/thread-events.js";
import {
  CHECKPOINT_ORG_KEY,
  type JsonObject,
  type OrgId,
  type Run,
  type Storage,
} from "../../storage/ports.js";
import type { RunLogs } from "../../streams/run-log.js";
import type { CompiledGraph, GraphRegistry } from "../graphs/graphs.js";
import { toJson, toPlain } from "../graphs/serialize.js";
import type { HangarStore } from "../store/store.js";
import { interruptsByTask, withCheckpointRefs, withTaskCheckpoint } from "./checkpoint-ref.js";
import { type RunOutcome, sendWebhook } from "./webhooks.js";
import type { RunEnd } from "./worker-stats.js";

/**
 * Why the runtime stopped a run it was executing: a cancel or double text (`interrupt`, `rollback`),
 * a graceful shutdown handing it back (`shutdown`), or a lease this worker lost (`lease_lost`: the run
 * was recovered elsewhere, so this attempt stops without settling anything).
 */
export type StopReason = "interrupt" | "rollback" | "shutdown" | "lease_lost";

export interface ExecutorDeps {
  graphs: GraphRegistry;
  storage: Storage;
  logs: RunLogs;
  log: Logger;
  /** Delivers webhooks whose URL is a path of this server (`/…`) without leaving the process. */
  localFetch: (request: Request) => Promise<Response>;
  /** The long-term memory store; each run gets its organization's view of it. */
  store?: HangarStore;
  /** langgraph.json `webhooks`: URL policy, headers and payload fields of deliveries. */
  webhooks?: WebhooksConfig;
  /** The API URL runs tell graph code (`langgraph_api_url`, provideGraphHost); absent: none. */
  apiUrl?: () => string | undefined;
  /** Where runs started through the protocol (`thread_events` in kwargs) write their protocol events. */
  threadEvents?: ThreadEventBuffer;
}

/** Stream modes a client may ask for, and the LangGraph mode that feeds each. */
/** Makes chat models stream (`lc_prefer_streaming`) and listens to nothing, so it costs almost nothing. */
class PreferStreaming extends BaseCallbackHandler {
  name = "hangar_prefer_streaming";
  lc_prefer_streaming = true;
  override ignoreChain = true;
  override ignoreAgent = true;
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;
}
const preferStreaming = new PreferStreaming();

/** Whether a run's stream would show a chat model's message differently had the model not streamed. */
function showsChunks(requested: string[], graphModes: string[]): boolean {
  if (graphModes.includes("messages")) return false; // the graph streams messages: models stream anyway
  return requested.some((m) => m === "updates" || m === "debug" || m === "tasks" || m === "checkpoints");
}

const GRAPH_MODE: Record<string, string | null> = {
  values: "values",
  updates: "updates",
  debug: "debug",
  custom: "custom",
  tasks: "tasks",
  checkpoints: "checkpoints",
  tools: null, // from callbacks (ProtocolRun)
  lifecycle: null, // from the chunks of every namespace (ProtocolRun)
  "messages-tuple": "messages",
  messages: "messages",
  events: null, // served from streamEvents
};

/**
 * Executes one claimed run: streams the graph, publishes its events to the run's log, and records
 * the outcome. Never throws: every ending (success, graph error, stop) is settled in storage. Resolves
 * to how the execution ended (counted for `/metrics`).
 */
export async function executeRun(
  deps: ExecutorDeps,
  run: Run,
  org: OrgId,
  /** The thread's metadata when the run was claimed (`ClaimResult.threadMetadata`). */
  threadMetadata: JsonObject,
  signal: AbortSignal,
): Promise<RunEnd> {
  const { storage, logs } = deps;
  const kwargs = run.kwargs;
  const configurable: Record<string, unknown> = {
    ...(kwargs.config.configurable ?? {}),
    thread_id: run.thread_id,
    run_id: run.run_id,
    // Whose thread: set last, so a client's own configurable cannot name another organization's.
    [CHECKPOINT_ORG_KEY]: org,
  };
  const graphId = String(configurable.graph_id);
  // The project's LangGraph release (langgraph-compat.ts); an unknown graph fails below, in `get`.
  const release = deps.graphs.has(graphId) ? deps.graphs.release(graphId) : undefined;
  // Run metadata as the official servers build it: the assistant's (in kwargs since admission), the
  // thread's, the run's, then what the server says about itself and the run.
  const config: Record<string, unknown> = {
    ...kwargs.config,
    configurable,
    metadata: {
      ...((kwargs.config.metadata as object) ?? {}),
      ...threadMetadata,
      ...run.metadata,
      run_id: run.run_id,
      thread_id: run.thread_id,
      graph_id: graphId,
      assistant_id: run.assistant_id,
      run_attempt: run.attempt,
      langgraph_version: release?.version,
      langgraph_plan: "developer",
      langgraph_host: "self-hosted",
      langgraph_api_url: deps.apiUrl?.(),
    },
  };
  const publish = (event: string, data: unknown) => logs.publish(run.run_id, event, toJson(data));
  publish("metadata", { run_id: run.run_id, attempt: run.attempt });

  let graph: CompiledGraph | undefined;
  let outcome: RunOutcome | undefined;
  const protocol = ProtocolRun.open(deps, run, org, graphId, publish, {
    tasks: release?.atLeast(0, 3, 0) ?? true,
    tools: release?.streamsTools ?? true,
  });
  try {
    graph = await deps.graphs.get(graphId, config, { durable: !kwargs.temporary });
    const input = await runInput(storage, run, configurable);
    protocol?.start();
    // The legacy `messages` mode streams the tokens of every chat model, subgraphs' included, as the
    // reference does (it reads them from streamEvents): the graph streams subgraphs for it, and only
    // their message tuples are kept unless the client asked for subgraphs.
    const subgraphs =
      kwargs.stream_subgraphs || kwargs.stream_mode.includes("messages") || protocol?.subgraphs === true;
    const emit = modeEmitter(kwargs.stream_mode, kwargs.stream_subgraphs, publish);
    const final = new FinalState(release?.valuesShowStaticInterrupts ?? true);
    const onChunk = (chunk: unknown) => {
      const [ns, mode, data] = subgraphs
        ? (chunk as [string[], string, unknown])
        : [[] as string[], ...(chunk as [string, unknown])];
      if (mode === "values" && ns.length === 0) final.sawValues(data);
      emit(mode, ns, data);
      protocol?.chunk(ns, mode, data);
    };
    const graphModes = [
      ...new Set([
        "values",
        ...kwargs.stream_mode.map((m) => GRAPH_MODE[m]).filter((m): m is string => Boolean(m)),
        ...(protocol?.graphModes ?? []),
      ]),
    ];
    const callbacks = [
      ...(showsChunks(kwargs.stream_mode, graphModes) ? [preferStreaming] : []),
      ...(protocol?.callbacks ?? []),
    ];
    const options = {
      ...config,
      recursionLimit: (kwargs.config.recursion_limit as number | undefined) ?? undefined,
      streamMode: graphModes,
      subgraphs,
      interruptBefore: kwargs.interrupt_before,
      interruptAfter: kwargs.interrupt_after,
      durability: kwargs.durability,
      context: kwargs.context,
      // The run's organization sees its own long-term memory (LangGraph prefers config.store to graph.store).
      store: deps.store?.withOrg(org),
      signal,
      // Chat models stream whatever the client asked for (the reference runs every graph through
      // streamEvents): the messages they return are chunks, as `updates`, `debug`, `tasks` and
      // `checkpoints` show them (`values` reads them back the same either way). Without a messages mode
      // a handler that only asks them to stream does it; it costs about 1 ms of CPU per run, so only
      // runs that would show the difference get it. (A run's config comes from JSON: no callbacks.)
      ...(callbacks.length > 0 && { callbacks }),
    };
    if (kwargs.stream_mode.includes("events")) {
      for await (const event of graph.streamEvents(input, { ...options, version: "v2" })) {
        const isRoot = (event.parent_ids ?? []).length === 0;
        if (event.event === "on_chain_stream" && isRoot) onChunk(event.data.chunk);
        else if (!(event.tags ?? []).includes("langsmith:hidden")) publish("events", event);
      }
    } else {
      for await (const chunk of await graph.stream(input, options)) onChunk(chunk);
      outcome = final.fromStream();
    }
    // Else read back: temporary threads checkpoint in memory (graphs.get), so their state is there too.
    outcome ??= await readFinalState(graph, org, run.thread_id);
  } catch (err) {
    outcome = await settleFailure(deps, run, org, graph, signal, err);
  } finally {
    if (kwargs.temporary) deps.graphs.forgetMemoryOf(org, run.thread_id);
  }

  if (outcome.status === "error") publish("error", outcome.error);
  // The protocol's events are stored before the run counts as ended (a reader that sees it ended has them).
  await protocol?.finish(outcome);
  try {
    if ((await retryOnce(() => record(storage, run, org, outcome))) === "superseded") {
      // This worker lost the run (its lease expired and another attempt took over): the readers, the
      // webhook belong to the attempt that now holds it.
      deps.log.warn("a stale attempt of a run ended; its result is discarded", { run_id: run.run_id });
      return "handed_back";
    }
  } catch (err) {
    // The run stays `running` in storage; it is recovered (retried from its checkpoint) at the next
    // start (embedded) or once its lease expires (shared storage).
    deps.log.error("recording the end of a run failed; it will be recovered", {
      run_id: run.run_id,
      error: (err as Error).message,
    });
  }
  if (outcome.status === "handed_back") {
    // The run will execute again (here after a restart, or on another worker): keep its log open.
    return "handed_back";
  }
  // Whatever happened above, readers of this run are released.
  logs.end(run.run_id, joinResult(outcome));
  // Delivered in the background: a slow receiver must not hold a worker slot.
  if (kwargs.webhook) void sendWebhook(deps, run, outcome);
  return outcome.status;
}

/**
 * A run's protocol side: what its graph must stream for the protocol's events (the thread's buffer,
 * for runs started through the protocol) and for the `tools` / `lifecycle` REST modes, and the
 * converter both read. Null for a run that asks for neither: it pays nothing.
 */
class ProtocolRun {
  static open(
    deps: ExecutorDeps,
    run: Run,
    org: OrgId,
    graphId: string,
    publish: (event: string, data: unknown) => void,
    streams: { tasks: boolean; tools: boolean },
  ): ProtocolRun | null {
    const modes = run.kwargs.stream_mode;
    const rest = { tools: modes.includes("tools"), lifecycle: modes.includes("lifecycle") };
    const writer =
      run.kwargs[THREAD_EVENTS_KWARG] === true && deps.threadEvents && !run.kwargs.temporary
        ? deps.threadEvents.writer(org, run.thread_id)
        : undefined;
    if (!writer && !rest.tools && !rest.lifecycle) return null;
    return new ProtocolRun(run, graphId, writer, rest, publish, streams);
  }

  readonly graphModes: string[];
  readonly callbacks: unknown[];
  /** The graph streams every namespace: protocol events and lifecycle show subgraphs. */
  readonly subgraphs: boolean;
  readonly #converter: ThreadEventConverter;
  readonly #writer: ThreadEventWriter | undefined;

  private constructor(
    private readonly run: Run,
    graphId: string,
    writer: ThreadEventWriter | undefined,
    rest: { tools: boolean; lifecycle: boolean },
    publish: (event: string, data: unknown) => void,
    streams: { tasks: boolean; tools: boolean },
  ) {
    this.#writer = writer;
    const restModes =
      rest.tools || rest.lifecycle ? new RestProtocolModes(rest, run.kwargs.stream_subgraphs, publish) : null;
    this.#converter = new ThreadEventConverter({
      runId: run.run_id,
      graphName: graphId,
      toPlain,
      toolsInStream: streams.tools,
      emit: (e: ProducedEvent) => {
        writer?.push(e);
        restModes?.event(e);
      },
    });
    const allModes = protocolGraphModes(streams.tasks, streams.tools);
    // A REST run with `lifecycle` only needs what shows namespaces start and end; with `tools` only,
    // the `tools` mode (or callbacks, on a release without it).
    this.graphModes = writer
      ? allModes
      : [
          ...(rest.lifecycle
            ? allModes.filter((m) => m !== "messages" && m !== "custom" && m !== "tools")
            : []),
          ...(rest.tools && streams.tools ? ["tools"] : []),
        ];
    this.subgraphs = Boolean(writer) || rest.lifecycle;
    this.callbacks = writer || rest.tools ? [this.#converter.toolCallbacks()] : [];
  }

  /** The root `running`, and `input.answered` for the interrupts this run resumes (set by the command). */
  start(): void {
    const answered = this.run.kwargs[ANSWERED_INTERRUPTS_KWARG];
    this.#converter.start(this.#writer && Array.isArray(answered) && this.run.attempt === 1 ? answered : []);
  }

  chunk(ns: string[], mode: string, data: unknown): void {
    this.#converter.chunk(ns, mode, data);
  }

  async finish(outcome: RunOutcome): Promise<void> {
    if (outcome.status === "handed_back") {
      // It executes again (here after a restart, or elsewhere): that attempt ends it.
      await this.#writer?.close();
      return;
    }
    const ending: RunEnding =
      outcome.status === "error"
        ? { status: "error", error: outcome.error }
        : outcome.status === "success"
          ? {
              status: "success",
              interrupted: Object.keys(outcome.interrupts ?? {}).length > 0 || outcome.hasNext === true,
            }
          : { status: "interrupted" };
    if (outcome.status === "success" && ending.status === "success" && ending.interrupted)
      this.#converter.chunk([], "values", { __interrupt__: Object.values(outcome.interrupts ?? {}).flat() });
    this.#converter.finish(ending);
    await this.#writer?.close();
  }
}

async function readFinalState(graph: CompiledGraph, org: OrgId, threadId: string): Promise<RunOutcome> {
  const state = await graph.getState({ configurable: { thread_id: threadId, [CHECKPOINT_ORG_KEY]: org } });
  return {
    status: "success",
    values: toPlain(state.values),
    interrupts: interruptsByTask(state),
    hasNext: state.next.length > 0,
  };
}

/**
 * A run's final state from its own stream, which saves reading the last checkpoint back (`getState`: a
 * tenth of the graph's own CPU for a one-node graph). `graph.stream` streams every state channel in
 * `values` (its output keys default to the state's, whatever the output schema), so the last root chunk
 * is the state's values; a run that streamed no `__interrupt__` (static interrupts stream one too, with no
 * value, from LangGraph.js 1.0 on: `staticInterruptsShow`) ran to its end, so nothing is next and no
 * task is interrupted. Anything else is read back.
 */
class FinalState {
  constructor(private readonly staticInterruptsShow: boolean) {}
  #values: unknown;
  #seen = false;
  #interrupted = false;

  sawValues(data: unknown): void {
    if (data !== null && typeof data === "object" && INTERRUPT in data) this.#interrupted = true;
    else {
      this.#values = data;
      this.#seen = true;
    }
  }

  fromStream(): RunOutcome | undefined {
    if (!this.#seen || this.#interrupted || !this.staticInterruptsShow) return undefined;
    return { status: "success", values: toPlain(this.#values), interrupts: {}, hasNext: false };
  }
}

/**
 * Records how the run ended: its status, and the thread's status and state that follow. "superseded"
 * when storage refused because another attempt of the run holds it now (requeued by the sweeper, or
 * claimed again); a run that was deleted or settled by someone else counts as settled.
 */
async function record(
  storage: Storage,
  run: Run,
  org: OrgId,
  outcome: RunOutcome,
): Promise<"settled" | "superseded"> {
  if (outcome.status === "rolled_back") {
    await storage.runs.completeRolledBack(run.run_id);
    // Also when the run row went with its thread or assistant: a checkpoint the graph wrote before it
    // saw the stop must not outlive them.
    await storage.checkpointer.deleteRun(org, run.thread_id, run.run_id);
    return "settled";
  }
  if (outcome.status === "handed_back") {
    await storage.runs.requeue(run.run_id, run.attempt);
    return "settled";
  }
  if (await storage.runs.complete({ run_id: run.run_id, attempt: run.attempt, ...outcome })) return "settled";
  const now = await storage.runs.get(org, null, run.run_id);
  const inFlight = now?.status === "pending" || now?.status === "running";
  return now && (inFlight || now.attempt !== run.attempt) ? "superseded" : "settled";
}

/** One more try after a short pause, for transient storage errors (SQLITE_BUSY, a dropped connection). */
async function retryOnce<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch {
    await new Promise((r) => setTimeout(r, 200));
    return fn();
  }
}

/** toPlain for values on a failure path: a value that cannot be serialised must not hide the failure. */
function plainOrUndefined(value: unknown): unknown {
  try {
    return toPlain(value);
  } catch {
    return undefined;
  }
}

/** What `join`/`wait` return for an ended run (reference section 3.5). */
export function joinResult(outcome: RunOutcome): unknown {
  if (outcome.status === "error") return { __error__: outcome.error };
  if (outcome.status !== "success" && outcome.status !== "interrupted") return undefined;
  const flat = Object.values(outcome.interrupts ?? {}).flat();
  if (flat.length === 0) return outcome.values ?? null;
  return { ...((outcome.values as object) ?? {}), __interrupt__: flat };
}

async function settleFailure(
  deps: ExecutorDeps,
  run: Run,
  org: OrgId,
  graph: CompiledGraph | undefined,
  signal: AbortSignal,
  err: unknown,
): Promise<RunOutcome> {
  if (signal.aborted) {
    const reason = signal.reason as StopReason;
    if (reason === "rollback") return { status: "rolled_back" };
    if (reason === "shutdown" || reason === "lease_lost") return { status: "handed_back" };
    // interrupt: the run stops where it is and keeps its progress; the thread shows that state.
    const state = graph ? await readState(graph, org, run.thread_id) : null;
    return { status: "interrupted", values: plainOrUndefined(state?.values), interrupts: {}, hasNext: false };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  deps.log.warn("run failed", { run_id: run.run_id, error: e.name, message: e.message });
  const state = graph ? await readState(graph, org, run.thread_id) : null;
  return {
    status: "error",
    error: { error: e.name, message: e.message },
    stack: e.stack,
    values: plainOrUndefined(state?.values),
    interrupts: {},
    hasNext: false,
  };
}

async function readState(graph: CompiledGraph, org: OrgId, threadId: string) {
  try {
    return await graph.getState({ configurable: { thread_id: threadId, [CHECKPOINT_ORG_KEY]: org } });
  } catch {
    return null;
  }
}

/**
 * The graph input of a run. A run executing again after a crash or hand-back continues from its
 * own last checkpoint (input null) instead of applying its input a second time.
 */
async function runInput(storage: Storage, run: Run, configurable: Record<string, unknown>): Promise<unknown> {
  const { command, input } = run.kwargs;
  if (run.attempt > 1 && !run.kwargs.temporary) {
    const latest = await storage.checkpointer.getTuple({
      configurable: {
        thread_id: run.thread_id,
        checkpoint_ns: "",
        [CHECKPOINT_ORG_KEY]: configurable[CHECKPOINT_ORG_KEY],
      },
    });
    if (latest?.metadata && (latest.metadata as Record<string, unknown>).run_id === run.run_id) {
      // Continue from the run's own latest checkpoint, not from the checkpoint it was forked from.
      delete configurable.checkpoint_id;
      delete configurable.checkpoint_map;
      configurable.checkpoint_ns = "";
      return null;
    }
  }
  if (command) return toCommand(command as Record<string, unknown>);
  return input ?? null;
}

function toCommand(c: Record<string, unknown>): Command {
  const toGoto = (g: unknown): string | Send =>
    typeof g === "string" ? g : new Send((g as { node: string }).node, (g as { input: unknown }).input);
  const goto =
    c.goto === undefined || c.goto === null
      ? undefined
      : Array.isArray(c.goto)
        ? c.goto.map(toGoto)
        : toGoto(c.goto);
  return new Command({ resume: c.resume, update: c.update as any, goto: goto as any });
}

/**
 * Turns graph stream chunks into the events the client asked for, as the reference server names and
 * shapes them (agent-server.md 3.6). The legacy `messages` mode, as the reference builds it:
 * - `messages/metadata` `{<id>: {metadata}}` the first time a chat model streams a message id, then
 *   `messages/partial` `[the message accumulated so far]` for each of its tokens (any namespace, no
 *   `|ns` suffix); the metadata is the chat model's run metadata (the tuple's, without the `tags` and
 *   `name` LangGraph adds to it);
 * - `messages/complete` `[messages]` for the messages with an id not sent complete before in this run
 *   found under `messages` in a root chunk (the input, the state after each step, streamed or not).
 */
function modeEmitter(
  requested: string[],
  subgraphs: boolean,
  publish: (event: string, data: unknown) => void,
) {
  const wants = new Set(requested);
  const legacy = wants.has("messages");
  const partials = new Map<string, any>();
  const completed = new Set<string>();

  const partial = (tuple: unknown) => {
    const [message, metadata] = tuple as [any, Record<string, unknown>];
    const id: unknown = message?.id;
    if (!id || typeof id !== "string" || !isChunk(message)) return;
    const acc = partials.get(id);
    if (acc === undefined) {
      const { tags: _tags, name: _name, ...meta } = metadata ?? {};
      publish("messages/metadata", { [id]: { metadata: meta } });
    }
    const next = acc === undefined ? message : acc.concat(message);
    partials.set(id, next);
    publish("messages/partial", [next]);
  };

  const complete = (data: unknown) => {
    if (data === null || typeof data !== "object" || Array.isArray(data) || isMessage(data)) return;
    if (!("messages" in data)) return;
    const found = (data as { messages: unknown }).messages;
    const fresh = [];
    for (const message of Array.isArray(found) ? found : [found]) {
      const id = (message as { id?: unknown } | null)?.id;
      if (!id || typeof id !== "string" || completed.has(id)) continue;
      completed.add(id);
      fresh.push(message);
    }
    if (fresh.length > 0) publish("messages/complete", fresh);
  };

  return (mode: string, ns: string[], data: unknown) => {
    const root = ns.length === 0;
    const suffix = root ? "" : `|${ns.join("|")}`;
    // The `tools` mode's events reach REST clients through the protocol's converter (RestProtocolModes).
    if (mode === "tools") return;
    if (mode === "messages") {
      if (wants.has("messages-tuple") && (root || subgraphs)) publish(`messages${suffix}`, data);
      if (legacy) partial(data);
      return;
    }
    // A subgraph's chunk the client did not ask for (the graph streams subgraphs for legacy tokens).
    if (!root && !subgraphs) return;
    if (wants.has(mode)) publish(mode + suffix, preprocess(mode, data));
    if (legacy && root) complete(data);
  };
}

const isMessage = (value: any): boolean =>
  typeof value?.getType === "function" && typeof value?.toDict === "function";
const isChunk = (message: any): boolean =>
  isMessage(message) &&
  typeof message.concat === "function" &&
  /Chunk$/.test(message.constructor?.name ?? "");

/** Checkpoint and task payloads of `debug`, `checkpoints` and `tasks`, as the reference sends them. */
function preprocess(mode: string, data: any): unknown {
  if (mode === "checkpoints") return withCheckpointRefs(data);
  if (mode === "tasks") return withTaskCheckpoint(data);
  if (mode === "debug" && data?.type === "checkpoint")
    return { ...data, payload: withCheckpointRefs(data.payload) };
  if (mode === "debug" && data?.type === "task_result")
    return { ...data, payload: withTaskCheckpoint(data.payload) };
  return data;
}
