/**
 * The boundary between Hangar and the project's own `@langchain/langgraph` (and `langchain`).
 *
 * Hangar runs a project's graphs with the copy of LangGraph the project pins, whatever its release,
 * while Hangar's code is written against one. Everything that differs from release to release is
 * decided here, once, and nowhere else:
 * - which releases run at all (`SUPPORTED_RANGE`; older ones are refused at start, naming it);
 * - what an export can be: a compiled graph, or a LangChain v1 agent (`createAgent`, deepagents'
 *   `createDeepAgent`: a `ReactAgent` that wraps a compiled graph behind private fields) — `asRunnable`;
 * - the checkpoint shape the release reads: before 0.4 (checkpoint format 1) the pending sends of a
 *   checkpoint are its `pending_sends` list, from 0.4 on they are the `__pregel_tasks` channel — `adaptSaver`;
 * - how a static interrupt (`interruptBefore`/`After`) shows in the `values` stream: only from 1.0 on
 *   (`valuesShowStaticInterrupts`; before, the state is read back to learn it);
 * - the release's version, for `langgraph_version` in run and checkpoint metadata.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  TASKS,
} from "@langchain/langgraph-checkpoint";
import type { CompiledGraph } from "./graphs.js";

/** The releases Hangar runs, as npm would write the range. */
export const SUPPORTED_RANGE = ">=0.2.12 <2";

/** Hangar's own LangGraph, for a graph file that resolves none (it bundles its own, say). */
const HANGAR_VERSION: string = createRequire(import.meta.url)("@langchain/langgraph/package.json").version;

export type Version = readonly [major: number, minor: number, patch: number];

export class LangGraphRelease {
  readonly parts: Version;
  constructor(readonly version: string) {
    const [major = 0, minor = 0, patch = 0] = version.split(/[.+-]/).map((p) => Number.parseInt(p, 10) || 0);
    this.parts = [major, minor, patch];
  }

  /** Whether this release is at least `other`. */
  atLeast(...other: Version): boolean {
    for (let i = 0; i < 3; i++) if (this.parts[i] !== other[i]) return this.parts[i]! > other[i]!;
    return true;
  }

  /**
   * Why this release cannot run, or null. Below 0.2.12, a `streamMode` list of one mode streams bare
   * values (0.2.5–0.2.11) or lists are not taken at all (earlier).
   */
  unsupported(): string | null {
    if (!this.atLeast(0, 2, 12))
      return (
        `@langchain/langgraph ${this.version} is not supported: Hangar runs ${SUPPORTED_RANGE}; ` +
        `upgrade the project's (for example \`npm install @langchain/langgraph@^0.2.74\`, the last 0.2 release)`
      );
    return null;
  }

  /** Whether `stream` marks a stop at `interruptBefore`/`interruptAfter` with `__interrupt__` in `values`. */
  get valuesShowStaticInterrupts(): boolean {
    return this.atLeast(1, 0, 0);
  }

  /**
   * Whether `stream` has the `tools` mode (tool events in the stream's order). 1.4.13 is the oldest
   * release checked to have it (the release fixtures: 0.4.9 has not); older ones give the protocol its
   * tool events from callbacks.
   */
  get streamsTools(): boolean {
    return this.atLeast(1, 4, 13);
  }

  /** Before 0.4 a checkpoint carries `pending_sends` (format 1); later ones the `__pregel_tasks` channel. */
  get readsPendingSends(): boolean {
    return !this.atLeast(0, 4, 0);
  }
}

/**
 * The `@langchain/langgraph` a project file imports: found as Node finds it, in the `node_modules` of
 * the file's folder or of the nearest folder above that has one (the package's `exports` may not list
 * its package.json, so it is not `require.resolve`d); Hangar's own when none is found.
 */
export function releaseOf(file: string): LangGraphRelease {
  for (let dir = path.dirname(path.resolve(file)); ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, "node_modules", "@langchain", "langgraph", "package.json");
    if (existsSync(manifest)) return new LangGraphRelease(JSON.parse(readFileSync(manifest, "utf8")).version);
    if (path.dirname(dir) === dir) return new LangGraphRelease(HANGAR_VERSION);
  }
}

const isCompiled = (x: any): boolean =>
  x != null && typeof x.getState === "function" && typeof x.stream === "function";

/** A compiled LangGraph graph (a `Pregel`): it has its channels and nodes, not only a graph's methods. */
const isPregel = (x: any): boolean => isCompiled(x) && x.channels != null && x.nodes != null;

/**
 * What Hangar runs for an export, or null: a compiled graph as it is; a `StateGraph` compiled; a
 * LangChain v1 agent (`ReactAgent`: graph methods, but its compiled graph in `.graph`) as a view that
 * streams through the agent, as `langgraph dev` runs it (the agent fills its middleware's state before
 * each run), and reads state, schemas and subgraphs from its compiled graph; `{graph}` as its graph.
 * The user's object is never copied: setters of a class with private fields fail on a copy.
 */
export function asRunnable(x: any): CompiledGraph | null {
  if (x != null && !isCompiled(x) && typeof x.compile === "function") return x.compile();
  if (isPregel(x)) return x;
  if (x != null && isPregel(x.graph)) return isCompiled(x) ? agentView(x, x.graph) : x.graph;
  if (isCompiled(x)) return x;
  return null;
}

/** A LangChain agent seen as a compiled graph: runs through the agent, everything else on its graph. */
function agentView(agent: any, graph: any): CompiledGraph {
  const view = Object.create(graph) as CompiledGraph & { [AGENT]?: unknown };
  view[AGENT] = agent;
  view.stream = (input, options) => agent.stream(input, options);
  view.streamEvents = (input, options) => agent.streamEvents(input, options);
  return view;
}

const AGENT = Symbol("hangar.agent");

/**
 * Gives the graph its checkpointer and store as `langgraph dev` does: set on the user's object (an
 * agent's setters pass them to its compiled graph), once, not on a copy.
 */
export function attach(graph: CompiledGraph, checkpointer: BaseCheckpointSaver, store?: unknown): void {
  const target: any = (graph as { [AGENT]?: unknown })[AGENT] ?? graph;
  target.checkpointer = checkpointer;
  if (store) target.store = store;
}

/**
 * The saver as the release reads it. Releases before 0.4 read a format-1 checkpoint's pending sends
 * from `pending_sends`; Hangar's savers give them as the `__pregel_tasks` channel (format 4, which
 * those releases neither know nor expect among the channels' versions), so they are moved back.
 */
export function adaptSaver(saver: BaseCheckpointSaver, release: LangGraphRelease): BaseCheckpointSaver {
  return release.readsPendingSends ? new PendingSendsSaver(saver) : saver;
}

function withPendingSends(tuple: CheckpointTuple | undefined): CheckpointTuple | undefined {
  if (!tuple || tuple.checkpoint.v >= 4) return tuple;
  const { [TASKS]: sends, ...values } = tuple.checkpoint.channel_values ?? {};
  const { [TASKS]: _version, ...versions } = tuple.checkpoint.channel_versions ?? {};
  const checkpoint = {
    ...tuple.checkpoint,
    channel_values: values,
    channel_versions: versions,
    pending_sends: Array.isArray(sends) ? sends : [],
  };
  return { ...tuple, checkpoint: checkpoint as Checkpoint };
}

class PendingSendsSaver extends BaseCheckpointSaver {
  constructor(private readonly saver: BaseCheckpointSaver) {
    super(saver.serde);
  }
  async getTuple(config: RunnableConfig) {
    return withPendingSends(await this.saver.getTuple(config));
  }
  async *list(config: RunnableConfig, options?: CheckpointListOptions) {
    for await (const tuple of this.saver.list(config, options)) yield withPendingSends(tuple)!;
  }
  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    versions: ChannelVersions,
  ) {
    return this.saver.put(config, checkpoint, metadata, versions);
  }
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, ...rest: unknown[]) {
    const putWrites = this.saver.putWrites as (...args: unknown[]) => Promise<void>;
    return putWrites.call(this.saver, config, writes, taskId, ...rest);
  }
  deleteThread(threadId: string) {
    return this.saver.deleteThread(threadId);
  }
  override getNextVersion(current: number | undefined): number {
    return this.saver.getNextVersion(current);
  }
}
