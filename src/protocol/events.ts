/**
 * The converter from a LangGraph run's stream to the protocol's events (agent-protocol `streaming/`,
 * the types of `@langchain/protocol`; reference: ../shared/reference/protocol-v2.md §1.5 and §2). It
 * is fed the graph's chunks (`[namespace, mode, data]`, any LangGraph release Hangar runs) and a
 * callback handler's tool events, and produces `ProducedEvent`s in order; numbering them (`seq`) and
 * keeping them is the buffer's job (buffer.ts).
 *
 * It imports nothing of the runtime: the executor owns the graph and hands chunks in.
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type {
  AgentStatus,
  Checkpoint,
  ContentBlockDeltaData,
  ContentBlockFinishData,
  ContentBlockStartData,
  CustomData,
  FinalizedContentBlock,
  InputAnsweredData,
  InputRequestedData,
  LifecycleData,
  MessageFinishData,
  MessageStartData,
  ToolsData,
  UpdatesData,
} from "@langchain/protocol";
import type { ThreadEvent } from "./thread-events.js";

/** An event before the buffer numbers it. */
export type ProducedEvent = Omit<ThreadEvent, "seq">;

/**
 * The LangGraph stream modes the converter reads (a release without `checkpoints`/`tasks` gives `debug`;
 * one without `tools` has the tool events from callbacks).
 */
export function protocolGraphModes(streamsTasks: boolean, streamsTools: boolean): string[] {
  return [
    ...(streamsTasks
      ? ["values", "updates", "messages", "custom", "tasks", "checkpoints"]
      : ["values", "updates", "messages", "custom", "debug"]),
    ...(streamsTools ? ["tools"] : []),
  ];
}

/** How a run ended, as the root lifecycle tells it. */
export type RunEnding =
  | { status: "success"; interrupted: boolean }
  | { status: "error"; error: unknown }
  | { status: "interrupted" };

const INTERRUPT = "__interrupt__";
const key = (ns: string[]) => ns.join("|");
const isPrefix = (prefix: string[], ns: string[]) =>
  prefix.length <= ns.length && prefix.every((s, i) => ns[i] === s);
/** A namespace segment's graph or node name: `research:<task id>` → `research`. */
const nameOf = (segment: string) => segment.split(":")[0] ?? segment;

/** The namespace of the node task a callback's metadata names (`langgraph_checkpoint_ns`), if any. */
function taskNamespace(metadata: Record<string, unknown> | undefined): string[] | undefined {
  const ns = metadata?.langgraph_checkpoint_ns;
  if (typeof ns !== "string" || ns === "") return undefined;
  return ns.split("|").filter((segment) => segment !== "");
}

/** JSON of a value as clients read it (LangChain messages as their flat dicts). */
export type ToPlain = (value: unknown) => unknown;

/** One AI message being streamed as content blocks. */
interface StreamedMessage {
  id: string;
  /** The node task's namespace (`[…graph, "<node>:<task id>"]`), where its events go. */
  ns: string[];
  /** The namespace of the graph that runs the node, and the node: its `updates` complete the message. */
  graphNs: string[];
  node?: string;
  /** The chunks so far, concatenated (LangChain merges tool-call chunks and parses their args). */
  acc: any;
  /** The open block: its index and kind (a text block, or the tool-call chunk of this `tcIndex`). */
  open?: { index: number; kind: "text" | "tool"; tcIndex?: number | string; id?: string; name?: string };
  blocks: number;
}

export class ThreadEventConverter {
  readonly #emit: (event: ProducedEvent) => void;
  readonly #toPlain: ToPlain;
  readonly #runId: string;
  readonly #graphName: string;
  /** Sub-namespaces whose `started` was sent, and whether they ended. */
  readonly #namespaces = new Map<string, { ns: string[]; ended: boolean }>();
  readonly #interruptsSent = new Set<string>();
  readonly #messages = new Map<string, StreamedMessage>();
  /** Tool runs (callback run id) → their call id and namespace. */
  readonly #tools = new Map<
    string,
    { callId: string; givenCallId: string | undefined; name: string | undefined; ns: string[] }
  >();
  /** Whether LangGraph's `tools` mode streams the tool events (see `toolCallbacks`). */
  readonly #toolsInStream: boolean;
  /** Tool starts the callbacks saw, waiting for their `tools` chunk: which node task each runs in. */
  readonly #toolStarts: { runId: string; callId?: string; name?: string; ns: string[] }[] = [];
  /** Set once the run ended: callbacks still arriving (a tool that outlived a stop) are dropped. */
  #ended = false;

  constructor(opts: {
    runId: string;
    graphName: string;
    emit: (event: ProducedEvent) => void;
    toPlain: ToPlain;
    /** The graph streams LangGraph's `tools` mode (protocolGraphModes' `streamsTools`). */
    toolsInStream?: boolean;
  }) {
    this.#toolsInStream = opts.toolsInStream ?? false;
    this.#emit = opts.emit;
    this.#toPlain = opts.toPlain;
    this.#runId = opts.runId;
    this.#graphName = opts.graphName;
  }

  #push(method: string, namespace: string[], data: unknown, node?: string): void {
    if (namespace.length > 0) this.#enter(namespace);
    this.#emit({
      method,
      namespace,
      ...(node !== undefined && { node }),
      timestamp: Date.now(),
      data,
      run_id: this.#runId,
    });
  }

  /** `started` for each sub-namespace the first time an event shows it. */
  #enter(ns: string[]): void {
    for (let i = 1; i <= ns.length; i++) {
      const prefix = ns.slice(0, i);
      const k = key(prefix);
      if (this.#namespaces.has(k)) continue;
      this.#namespaces.set(k, { ns: prefix, ended: false });
      this.#push("lifecycle", prefix, {
        event: "started",
        graph_name: nameOf(prefix[prefix.length - 1]!),
      } satisfies LifecycleData);
    }
  }

  /** The root lifecycle `running`, and `input.answered` when the run resumes interrupts by id. */
  start(answeredInterruptIds: string[] = []): void {
    this.#push("lifecycle", [], { event: "running", graph_name: this.#graphName } satisfies LifecycleData);
    if (answeredInterruptIds.length > 0)
      this.#push("input.answered", [], { interrupt_ids: answeredInterruptIds } satisfies InputAnsweredData);
  }

  /**
   * `values` held until the next chunk: LangGraph streams a step's values before the checkpoint that
   * holds them, and the protocol has the checkpoint first (clients pair them by adjacent seq).
   */
  #heldValues: [string[], unknown][] = [];

  #releaseValues(): void {
    const held = this.#heldValues;
    this.#heldValues = [];
    for (const [ns, data] of held) this.#values(ns, data);
  }

  /** One chunk of the graph's stream (namespace `[]`: the root graph). */
  chunk(ns: string[], mode: string, data: unknown): void {
    const isCheckpoint =
      mode === "checkpoints" ||
      (mode === "debug" && (data as { type?: unknown } | null)?.type === "checkpoint");
    if (!isCheckpoint) this.#releaseValues();
    switch (mode) {
      case "values":
        this.#heldValues.push([ns, data]);
        break;
      case "updates":
        this.#updates(ns, data);
        break;
      case "messages":
        this.#message(ns, data as [any, Record<string, unknown>]);
        break;
      case "custom":
        this.#custom(ns, data);
        break;
      case "tools":
        this.#toolChunk(ns, data);
        break;
      case "tasks":
        this.#task(ns, data);
        break;
      case "checkpoints":
        this.#checkpoint(ns, data);
        this.#releaseValues();
        break;
      case "debug": {
        // Releases without the `tasks`/`checkpoints` modes (0.2): the same facts, wrapped.
        const d = data as { type?: string; payload?: unknown } | null;
        if (d?.type === "checkpoint") {
          this.#checkpoint(ns, d.payload);
          this.#releaseValues();
        } else if (d?.type === "task" || d?.type === "task_result") this.#task(ns, d.payload);
        break;
      }
    }
  }

  #values(ns: string[], data: unknown): void {
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      if (data != null) this.#push("values", ns, this.#toPlain(data));
      return;
    }
    const { [INTERRUPT]: interrupts, ...values } = data as Record<string, unknown>;
    if (Object.keys(values).length > 0) this.#push("values", ns, this.#toPlain(values));
    if (interrupts !== undefined) this.#interrupts(ns, interrupts);
  }

  #interrupts(ns: string[], interrupts: unknown): void {
    const list = Array.isArray(interrupts) ? interrupts : [interrupts];
    list.forEach((raw, i) => {
      const interrupt = (this.#toPlain(raw) ?? {}) as Record<string, unknown>;
      // 1.x: `id`; 0.x: `interrupt_id`, or none (a static interrupt, or 0.2): one per namespace and place.
      const id = String(interrupt.id ?? interrupt.interrupt_id ?? `${key(ns)}#${i}`);
      if (this.#interruptsSent.has(id)) return;
      this.#interruptsSent.add(id);
      this.#push("input.requested", ns, {
        interrupt_id: id,
        payload: interrupt.value,
      } satisfies InputRequestedData);
    });
  }

  #updates(ns: string[], data: unknown): void {
    if (data === null || typeof data !== "object") return;
    for (const [node, values] of Object.entries(data as Record<string, unknown>)) {
      if (node === INTERRUPT) {
        this.#interrupts(ns, values);
        continue;
      }
      // The node returned: its model's messages are complete (root nodes' messages stream in its namespace).
      this.#finishMessages((m) => m.node === node && key(m.graphNs) === key(ns));
      this.#push("updates", ns, { node, values: this.#toPlain(values) as UpdatesData["values"] }, node);
    }
  }

  #custom(ns: string[], data: unknown): void {
    const d = data as { name?: unknown; payload?: unknown } | null;
    const named = d !== null && typeof d === "object" && typeof d.name === "string" && "payload" in d;
    const payload: CustomData = named
      ? { name: d.name as string, payload: this.#toPlain(d.payload) }
      : { payload: this.#toPlain(data) };
    this.#push("custom", ns, payload);
  }

  #checkpoint(ns: string[], data: any): void {
    const id = data?.config?.configurable?.checkpoint_id;
    if (typeof id !== "string") return;
    const parent =
      data?.parentConfig?.configurable?.checkpoint_id ?? data?.parent_config?.configurable?.checkpoint_id;
    // The input checkpoint (step -1, before the first step) is not sent, as the reference does not: a
    // graph's first checkpoint names it as its parent, and state.listCheckpoints lists it.
    if (data?.metadata?.source === "input") return;
    const checkpoint: Checkpoint = {
      id,
      ...(typeof parent === "string" && { parent_id: parent }),
      step: typeof data?.metadata?.step === "number" ? data.metadata.step : -1,
      source: data?.metadata?.source ?? "loop",
    };
    this.#push("checkpoints", ns, checkpoint);
  }

  /** A task started (`input`) or ended (`result`): its messages are complete, its namespace ended. */
  #task(ns: string[], data: any): void {
    if (data === null || typeof data !== "object") return;
    const { state: _state, ...task } = data;
    const ended = "result" in data || "error" in data;
    const taskNs = [...ns, `${data.name}:${data.id}`];
    if (ended)
      this.#finishMessages(
        (m) => isPrefix(taskNs, m.ns) || (m.node === data.name && key(m.graphNs) === key(ns)),
      );
    this.#push("tasks", ns, this.#toPlain(task));
    if (!ended) return;
    const failed = data.error != null;
    for (const entry of this.#namespaces.values()) {
      if (entry.ended || !isPrefix(taskNs, entry.ns)) continue;
      this.#endNamespace(entry, failed ? "failed" : "completed", failed ? data.error : undefined);
    }
  }

  #endNamespace(entry: { ns: string[]; ended: boolean }, event: AgentStatus, error?: unknown): void {
    entry.ended = true;
    const data: LifecycleData = { event, graph_name: nameOf(entry.ns[entry.ns.length - 1]!) };
    if (error !== undefined)
      data.error = typeof error === "string" ? error : JSON.stringify(this.#toPlain(error));
    this.#push("lifecycle", entry.ns, data);
  }

  /**
   * A `messages` chunk: `[message or chunk, metadata]`. AI messages only (tools have their channel).
   * Its events go in the namespace of the node task that produced it (the metadata's checkpoint
   * namespace, `["model:<task id>"]`), as the reference and the spec's examples have them; LangGraph
   * streams the chunk in the graph's namespace.
   */
  #message(graphNs: string[], tuple: [any, Record<string, unknown>]): void {
    const [message, metadata] = Array.isArray(tuple) ? tuple : [];
    const type = typeof message?.getType === "function" ? message.getType() : message?.type;
    if (type !== "ai" && type !== "AIMessageChunk") return;
    const id = message.id;
    if (typeof id !== "string" || id === "") return;
    const node = typeof metadata?.langgraph_node === "string" ? metadata.langgraph_node : undefined;
    const ns = taskNamespace(metadata) ?? graphNs;
    let streamed = this.#messages.get(id);
    const isChunk = typeof message.concat === "function" && /Chunk$/.test(message.constructor?.name ?? "");
    if (!streamed) {
      // A new message in this namespace completes the one before it there.
      this.#finishMessages((m) => key(m.ns) === key(ns));
      streamed = { id, ns, graphNs, node, acc: undefined, blocks: 0 };
      this.#messages.set(id, streamed);
      this.#push("messages", ns, { event: "message-start", role: "ai", id } satisfies MessageStartData);
    } else if (!isChunk) {
      return; // the finished message of one that was streamed: already sent in blocks
    }
    streamed.acc = streamed.acc === undefined || !isChunk ? message : streamed.acc.concat(message);
    for (const text of textsOf(message.content)) this.#delta(streamed, "text", text);
    const toolChunks: any[] = isChunk
      ? (message.tool_call_chunks ?? [])
      : (message.tool_calls ?? []).map((c: any, i: number) => ({
          ...c,
          index: i,
          args: JSON.stringify(c.args),
        }));
    for (const chunk of toolChunks) this.#delta(streamed, "tool", chunk.args ?? "", chunk);
    if (!isChunk) this.#finish(streamed);
  }

  #delta(m: StreamedMessage, kind: "text" | "tool", piece: string, toolChunk?: any): void {
    let text = piece;
    const open = m.open;
    const sameTool =
      kind === "tool" &&
      open?.kind === "tool" &&
      (toolChunk.index === undefined || toolChunk.index === open.tcIndex) &&
      (!toolChunk.id || !open.id || toolChunk.id === open.id);
    if (!open || open.kind !== kind || (kind === "tool" && !sameTool)) {
      if (kind === "text" && text === "") return; // no empty text block
      this.#closeBlock(m);
      const index = m.blocks++;
      m.open = { index, kind };
      let content: ContentBlockStartData["content"];
      if (kind === "text") content = { type: "text", text: "" };
      else {
        Object.assign(m.open, { tcIndex: toolChunk.index, id: toolChunk.id, name: toolChunk.name });
        // A call whose args arrive whole with it starts with them and has no delta, as the reference
        // sends it; args that come in pieces start empty and follow as `tool-call-delta`s.
        const whole = isWholeJson(text);
        content = {
          type: "tool_call_chunk",
          ...(toolChunk.id && { id: toolChunk.id }),
          ...(toolChunk.name && { name: toolChunk.name }),
          args: whole ? text : "",
          index: toolChunk.index ?? index,
        };
        if (whole) text = "";
      }
      this.#push("messages", m.ns, {
        event: "content-block-start",
        index,
        content,
      } satisfies ContentBlockStartData);
    }
    if (text === "") return;
    const delta: ContentBlockDeltaData["delta"] =
      kind === "text" ? { type: "text-delta", text } : { type: "tool-call-delta", args: text };
    this.#push("messages", m.ns, {
      event: "content-block-delta",
      index: m.open!.index,
      delta,
    } satisfies ContentBlockDeltaData);
  }

  /** The open block's `content-block-finish`, with its final content (a tool call's args parsed). */
  #closeBlock(m: StreamedMessage): void {
    const open = m.open;
    if (!open) return;
    m.open = undefined;
    let content: FinalizedContentBlock;
    if (open.kind === "text") {
      content = { type: "text", text: textsOf(m.acc?.content).join("") };
    } else {
      const calls: any[] = m.acc?.tool_calls ?? [];
      const chunks: any[] = m.acc?.tool_call_chunks ?? [];
      const position = chunks.findIndex((c) => c.index === open.tcIndex || (open.id && c.id === open.id));
      const call = calls.find((c) => open.id && c.id === open.id) ?? calls[Math.max(position, 0)];
      content = {
        type: "tool_call",
        id: call?.id ?? open.id ?? "",
        name: call?.name ?? open.name ?? "",
        args: call?.args ?? {},
      };
    }
    this.#push("messages", m.ns, {
      event: "content-block-finish",
      index: open.index,
      content,
    } satisfies ContentBlockFinishData);
  }

  #finish(m: StreamedMessage): void {
    if (!this.#messages.has(m.id)) return;
    // Tool calls the chunks never showed (a model that sets them whole): a block each, as complete.
    if (m.open?.kind !== "tool" && !m.acc?.tool_call_chunks?.length)
      (m.acc?.tool_calls ?? []).forEach((c: any, i: number) => {
        this.#delta(m, "tool", JSON.stringify(c.args ?? {}), { ...c, index: i });
      });
    this.#closeBlock(m);
    this.#messages.delete(m.id);
    const usage = m.acc?.usage_metadata;
    const data: MessageFinishData = { event: "message-finish", reason: "stop" };
    if (usage && typeof usage === "object") data.usage = this.#toPlain(usage) as MessageFinishData["usage"];
    this.#push("messages", m.ns, data);
  }

  #finishMessages(which: (m: StreamedMessage) => boolean): void {
    for (const m of [...this.#messages.values()]) if (which(m)) this.#finish(m);
  }

  /**
   * The tool callbacks. With LangGraph's `tools` stream mode (`toolsInStream`), the events come from its
   * chunks, in the stream's order (a callback runs while chunks produced before it still wait in the
   * stream), and the callbacks only tell each call's node task, which the chunks do not (LangGraph 1.7
   * streams them in the graph's namespace). Releases before that mode: the callbacks send the events.
   */
  readonly toolCallbacks = (): BaseCallbackHandler => new ToolEvents(this);

  /** @internal ToolEvents' entry point. */
  tool(
    phase: "start" | "end" | "error" | "drop",
    runId: string,
    fields: {
      name?: string;
      input?: unknown;
      output?: unknown;
      error?: unknown;
      callId?: string;
      metadata?: any;
    },
  ): void {
    if (this.#ended) return;
    if (this.#toolsInStream) {
      // Kept for the chunk that follows (bounded: a call's record goes when its chunk comes, or at the end).
      if (phase === "start")
        this.#toolStarts.push({
          runId,
          callId: fields.callId,
          name: fields.name,
          ns: taskNamespace(fields.metadata) ?? [],
        });
      return;
    }
    this.#releaseValues();
    if (phase === "start") {
      // The node task's namespace (`["tools:<task id>"]`), as for messages.
      this.#toolStarted(runId, taskNamespace(fields.metadata) ?? [], fields.callId ?? runId, fields);
      return;
    }
    this.#toolEnded(runId, phase, fields);
  }

  /** A `tools` chunk of LangGraph's stream: `{event: "on_tool_start" | "on_tool_end" | "on_tool_error", toolCallId, name, …}`. */
  #toolChunk(graphNs: string[], data: any): void {
    if (data === null || typeof data !== "object") return;
    const callId = typeof data.toolCallId === "string" ? data.toolCallId : undefined;
    const name = typeof data.name === "string" ? data.name : undefined;
    const sameCall = (r: { callId?: string; name?: string }) =>
      callId !== undefined ? r.callId === callId : r.callId === undefined && r.name === name;
    if (data.event === "on_tool_start") {
      const i = this.#toolStarts.findIndex(sameCall);
      const record = i >= 0 ? this.#toolStarts.splice(i, 1)[0] : undefined;
      const key = callId ?? record?.runId ?? `${name}#${this.#tools.size}`;
      this.#toolStarted(key, record?.ns ?? graphNs, callId ?? key, { name, input: data.input, callId });
      return;
    }
    const key = [...this.#tools].find(([, t]) => sameCall({ callId: t.givenCallId, name: t.name }))?.[0];
    if (key === undefined) return;
    if (data.event === "on_tool_end") this.#toolEnded(key, "end", { output: data.output });
    else if (data.event === "on_tool_error")
      this.#toolEnded(key, isInterrupt(data.error) ? "drop" : "error", { error: data.error });
  }

  #toolStarted(
    key: string,
    ns: string[],
    callId: string,
    fields: { name?: string; input?: unknown; callId?: string },
  ): void {
    this.#tools.set(key, { callId, givenCallId: fields.callId ?? undefined, name: fields.name, ns });
    const input =
      typeof fields.input === "string" ? fields.input : JSON.stringify(this.#toPlain(fields.input));
    this.#push("tools", ns, {
      event: "tool-started",
      tool_call_id: callId,
      tool_name: fields.name ?? "",
      input,
    } satisfies ToolsData);
  }

  #toolEnded(
    key: string,
    phase: "end" | "error" | "drop",
    fields: { output?: unknown; error?: unknown },
  ): void {
    const started = this.#tools.get(key);
    if (!started) return;
    this.#tools.delete(key);
    if (phase === "drop") return;
    if (phase === "end") {
      const output = this.#toPlain(fields.output);
      this.#push("tools", started.ns, { event: "tool-finished", tool_call_id: started.callId, output });
    } else {
      const e = fields.error as { message?: unknown } | undefined;
      const message = typeof e?.message === "string" ? e.message : String(fields.error);
      this.#push("tools", started.ns, { event: "tool-error", tool_call_id: started.callId, message });
    }
  }

  /**
   * The end of the run: open messages finish, open sub-namespaces end as the run did, and the root's
   * terminal lifecycle event (`completed`, `interrupted` when interrupts are pending, `failed` with the
   * error as JSON text, as the reference sends it).
   */
  finish(ending: RunEnding): void {
    this.#releaseValues();
    this.#finishMessages(() => true);
    this.#toolStarts.length = 0;
    const event: AgentStatus =
      ending.status === "error"
        ? "failed"
        : ending.status === "interrupted" || ending.interrupted
          ? "interrupted"
          : "completed";
    const open = [...this.#namespaces.values()].filter((e) => !e.ended).reverse();
    for (const entry of open) this.#endNamespace(entry, event === "interrupted" ? "interrupted" : event);
    const data: LifecycleData = { event, graph_name: this.#graphName };
    if (ending.status === "error") data.error = JSON.stringify(this.#toPlain(ending.error));
    this.#push("lifecycle", [], data);
    this.#ended = true;
  }
}

/** An interrupt raised in a tool is no failure: the interrupt shows on the `input` channel. */
function isInterrupt(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "GraphInterrupt" || name === "NodeInterrupt" || name === "GraphBubbleUp";
}

/** Whether a tool call's args text is a complete JSON object (a call that arrived whole). */
function isWholeJson(text: string): boolean {
  if (!text.startsWith("{")) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The text of a message's content: a string, or its text blocks. */
function textsOf(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content
    .filter((b) => b && typeof b === "object" && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string);
}

/** Tool start / end / error as protocol `tools` events; listens to nothing else. */
class ToolEvents extends BaseCallbackHandler {
  name = "hangar_protocol_tools";
  /** Awaited inline, as LangGraph's own `tools` mode handler is: events come before the tool's result. */
  override awaitHandlers = true;
  override ignoreLLM = true;
  override ignoreChain = true;
  // Not ignoreAgent: LangChain calls tool handlers only on handlers that listen to agents.
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;

  constructor(private readonly converter: ThreadEventConverter) {
    super();
  }

  override handleToolStart(
    tool: { id?: string[]; name?: string },
    input: string,
    runId: string,
    _parentRunId?: string,
    tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): void {
    if (tags?.includes("langsmith:hidden")) return;
    const name = runName ?? tool?.name ?? tool?.id?.[tool.id.length - 1];
    this.converter.tool("start", runId, { name, input, callId: toolCallId, metadata });
  }

  override handleToolEnd(output: unknown, runId: string): void {
    this.converter.tool("end", runId, { output });
  }

  override handleToolError(error: unknown, runId: string): void {
    this.converter.tool(isInterrupt(error) ? "drop" : "error", runId, { error });
  }
}

/**
 * The `tools` and `lifecycle` stream modes of ordinary REST runs (SDK 1.15's `ToolsStreamEvent` and
 * `LifecycleStreamEvent`), from the same converter's events: `tools[|<graph ns>]` with LangGraph's
 * `on_tool_*` payloads, and `lifecycle|<ns>` for each sub-namespace's start and end.
 */
export class RestProtocolModes {
  readonly #names = new Map<string, string>();
  constructor(
    private readonly modes: { tools: boolean; lifecycle: boolean },
    private readonly subgraphs: boolean,
    private readonly publish: (event: string, data: unknown) => void,
  ) {}

  event(e: ProducedEvent): void {
    if (e.method === "tools" && this.modes.tools) {
      // The tool runs in a node task (the namespace's last segment) of the graph that streams it.
      const graphNs = e.namespace.slice(0, -1);
      if (graphNs.length > 0 && !this.subgraphs) return;
      const name = graphNs.length ? `tools|${graphNs.join("|")}` : "tools";
      const d = e.data as Record<string, any>;
      const toolCallId = d.tool_call_id;
      if (d.event === "tool-started") {
        this.#names.set(toolCallId, d.tool_name);
        this.publish(name, { event: "on_tool_start", toolCallId, name: d.tool_name, input: d.input });
        return;
      }
      const toolName = this.#names.get(toolCallId) ?? "unknown";
      this.#names.delete(toolCallId);
      if (d.event === "tool-finished")
        this.publish(name, { event: "on_tool_end", toolCallId, name: toolName, output: d.output });
      else if (d.event === "tool-error")
        this.publish(name, {
          event: "on_tool_error",
          toolCallId,
          name: toolName,
          error: { error: "Error", message: d.message },
        });
      return;
    }
    if (e.method === "lifecycle" && this.modes.lifecycle && e.namespace.length > 0) {
      const d = e.data as LifecycleData;
      if (d.event === "running") return;
      const data: Record<string, unknown> = { event: d.event, namespace: e.namespace };
      if (d.error !== undefined) data.error = parseError(d.error);
      this.publish(`lifecycle|${e.namespace.join("|")}`, data);
    }
  }
}

function parseError(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { error: "Error", message: text };
  }
}
