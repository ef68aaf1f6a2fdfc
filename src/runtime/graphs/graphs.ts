import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type BaseStore,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  MemorySaver,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { GraphSpec } from "../../config/index.js";
import { CHECKPOINT_ORG_KEY } from "../../storage/ports.js";
import { adaptSaver, asRunnable, attach, type LangGraphRelease, releaseOf } from "./langgraph-compat.js";
import { importProjectExport } from "./project-module.js";
import { type GraphSchema, GraphSchemas } from "./schemas.js";

/** The compiled-graph surface the server uses (a LangGraph `Pregel`). */
export type CompiledGraph = {
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
  streamEvents(input: unknown, options: Record<string, unknown>): AsyncIterable<any>;
  getState(config: Record<string, unknown>, options?: { subgraphs?: boolean }): Promise<any>;
  getStateHistory(config: Record<string, unknown>, options?: Record<string, unknown>): AsyncIterable<any>;
  updateState(config: Record<string, unknown>, values: unknown, asNode?: string): Promise<any>;
  bulkUpdateState(config: Record<string, unknown>, supersteps: unknown[]): Promise<any>;
  getGraphAsync(config: Record<string, unknown>): Promise<{ toJSON(): any }>;
  getSubgraphsAsync(namespace?: string, recurse?: boolean): AsyncIterable<[string, CompiledGraph]>;
  checkpointer?: unknown;
  store?: unknown;
  builder?: any;
  channels?: Record<string, unknown>;
  nodes?: Record<string, unknown>;
};

type GraphSource = (
  | { kind: "static"; graph: CompiledGraph }
  | { kind: "factory"; make: (config: Record<string, unknown>) => unknown }
) & {
  release: LangGraphRelease;
  /** The server's saver as this graph's release reads it. */
  saver: BaseCheckpointSaver;
};

export class GraphLoadError extends Error {
  override name = "GraphLoadError";
}

/** Namespace of the LangGraph default-assistant ids (the same constant the official servers use). */
const ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

/** RFC 4122 version-5 (SHA-1, name-based) uuid. */
export function uuid5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replaceAll("-", ""), "hex");
  const hash = createHash("sha1").update(ns).update(name, "utf8").digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const defaultAssistantId = (graphId: string) => uuid5(graphId, ASSISTANT_NAMESPACE);

/** A stateless run's thread in `ThreadSavers.memory`: its organization and id. */
const memoryKey = (org: string, threadId: string) => JSON.stringify([org, threadId]);

/**
 * The organization of a state read in progress. Reading a thread paused inside a subgraph
 * (`getState(…, {subgraphs: true})`), LangGraph builds the subgraph's config itself from the thread id
 * and namespace alone, without `CHECKPOINT_ORG_KEY`: the savers then take the organization from here.
 */
const readingOrg = new AsyncLocalStorage<string>();

/** Runs a read of `org`'s thread state, so configs LangGraph derives still name the organization. */
export const withCheckpointOrg = <T>(org: string, read: () => Promise<T>): Promise<T> =>
  readingOrg.run(org, read);

/** `config` naming its organization: its own, else that of the state read in progress. */
function scoped(config: RunnableConfig): RunnableConfig {
  const org = readingOrg.getStore();
  if (org === undefined || config.configurable?.[CHECKPOINT_ORG_KEY] !== undefined) return config;
  return { ...config, configurable: { ...config.configurable, [CHECKPOINT_ORG_KEY]: org } };
}

/**
 * The server's saver for every graph: the database's, or, for a thread a stateless run executes on
 * (`get(…, {durable: false})`), that run's own `MemorySaver`. One saver set once on each graph, as `langgraph dev`
 * sets its own, so no graph object is ever copied to give it another.
 */
class ThreadSavers extends BaseCheckpointSaver {
  /** By `memoryKey`: a thread id is unique within its organization only. */
  readonly memory = new Map<string, MemorySaver>();
  constructor(private readonly durable: BaseCheckpointSaver) {
    super(durable.serde);
  }
  #of(config: RunnableConfig): BaseCheckpointSaver {
    const thread = config.configurable?.thread_id;
    const org = config.configurable?.[CHECKPOINT_ORG_KEY];
    return (thread != null && this.memory.get(memoryKey(String(org), String(thread)))) || this.durable;
  }
  getTuple(config: RunnableConfig) {
    const own = scoped(config);
    return this.#of(own).getTuple(own);
  }
  list(config: RunnableConfig, options?: CheckpointListOptions) {
    const own = scoped(config);
    return this.#of(own).list(own, options);
  }
  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    versions: ChannelVersions,
  ) {
    const own = scoped(config);
    return this.#of(own).put(own, checkpoint, metadata, versions);
  }
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, ...rest: unknown[]) {
    const own = scoped(config);
    const saver = this.#of(own);
    return (saver.putWrites as (...args: unknown[]) => Promise<void>).call(
      saver,
      own,
      writes,
      taskId,
      ...rest,
    );
  }
  deleteThread(threadId: string) {
    return this.durable.deleteThread(threadId);
  }
  override getNextVersion(current: number | undefined): number {
    return this.durable.getNextVersion(current);
  }
}

export interface GraphRegistryOptions {
  /** Told what the schemas of a graph could not be read from. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
  /** How long one reading of schemas from source may take (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS). */
  schemaTimeoutMs?: number;
}

export class GraphRegistry {
  readonly #sources = new Map<string, GraphSource>();
  readonly #specs: readonly GraphSpec[];
  readonly #savers: ThreadSavers;
  readonly #store?: BaseStore;
  readonly #schemas: GraphSchemas;

  private constructor(
    specs: readonly GraphSpec[],
    checkpointer: BaseCheckpointSaver,
    store: BaseStore | undefined,
    opts: GraphRegistryOptions,
  ) {
    this.#specs = specs;
    this.#savers = new ThreadSavers(checkpointer);
    this.#store = store;
    this.#schemas = new GraphSchemas(specs, opts);
  }

  /** Imports every graph file; throws GraphLoadError naming the graph and file that failed. */
  static async load(
    specs: readonly GraphSpec[],
    checkpointer: BaseCheckpointSaver,
    store?: BaseStore,
    opts: GraphRegistryOptions = {},
  ): Promise<GraphRegistry> {
    const registry = new GraphRegistry(specs, checkpointer, store, opts);
    for (const spec of specs) {
      const where = `graph "${spec.id}" (${spec.file}:${spec.exportName})`;
      const release = releaseOf(spec.file);
      const unsupported = release.unsupported();
      if (unsupported) throw new GraphLoadError(`Failed to load ${where}: ${unsupported}`);
      const saver = adaptSaver(registry.#savers, release);
      let exported: unknown;
      try {
        exported = await importProjectExport(spec.file, spec.exportName);
      } catch (err) {
        throw new GraphLoadError(`Failed to load ${where}: ${(err as Error).message ?? err}`);
      }
      if (typeof exported === "function" && asRunnable(exported) === null) {
        registry.#sources.set(spec.id, {
          kind: "factory",
          make: exported as (c: any) => unknown,
          release,
          saver,
        });
        continue;
      }
      const graph = asRunnable(exported);
      if (!graph) {
        throw new GraphLoadError(
          `Failed to load ${where}: the export is not a compiled graph, a StateGraph, a LangChain agent, a promise of one, or a (config) => graph factory`,
        );
      }
      attach(graph, saver, store);
      registry.#schemas.addGraph(spec.file, graph);
      registry.#sources.set(spec.id, { kind: "static", graph, release, saver });
    }
    return registry;
  }

  get specs(): readonly GraphSpec[] {
    return this.#specs;
  }

  has(graphId: string): boolean {
    return this.#sources.has(graphId);
  }

  /** The project's `@langchain/langgraph` release that runs the graph (see langgraph-compat.ts). */
  release(graphId: string): LangGraphRelease {
    return this.#source(graphId).release;
  }

  /**
   * The graph to run or inspect; factories are called with the run's (or assistant's) config.
   * `durable: false` (a stateless run's temporary thread, `configurable.thread_id`) checkpoints in
   * memory, for this run only, until `forgetMemoryOf(thread)`: nothing reaches the database, yet
   * `interrupt()` and reading the final state work as on a thread.
   */
  async get(
    graphId: string,
    config: Record<string, unknown>,
    opts: { durable?: boolean } = {},
  ): Promise<CompiledGraph> {
    const source = this.#source(graphId);
    if (opts.durable === false) {
      const c = config.configurable as Record<string, unknown> | undefined;
      const key = memoryKey(String(c?.[CHECKPOINT_ORG_KEY]), String(c?.thread_id));
      if (!this.#savers.memory.has(key)) this.#savers.memory.set(key, new MemorySaver());
    }
    if (source.kind === "static") return source.graph;
    const graph = asRunnable(await source.make(config));
    if (!graph) throw new GraphLoadError(`The factory of graph "${graphId}" did not return a graph`);
    attach(graph, source.saver, this.#store);
    return graph;
  }

  /** Ends the in-memory checkpoints of a stateless run's thread (see `get`). */
  forgetMemoryOf(org: string, threadId: string): void {
    this.#savers.memory.delete(memoryKey(org, threadId));
  }

  #source(graphId: string): GraphSource {
    const source = this.#sources.get(graphId);
    if (!source) throw new GraphLoadError(`Graph "${graphId}" is not registered`);
    return source;
  }

  /**
   * JSON Schemas of a registered graph (`schemas.ts`). `fromSource: false` answers at once: a graph
   * whose types are only in its TypeScript source then gets the schema listing its channels.
   */
  async schemas(graphId: string, config: Record<string, unknown>, opts: { fromSource?: boolean } = {}) {
    const spec = this.#spec(graphId);
    const graph = await this.get(graphId, config);
    return { graph_id: graphId, ...(await this.#schemas.schemas(graph, spec.file, spec.exportName, opts)) };
  }

  /** `/subgraphs`: the schemas of each subgraph (below `namespace`; all levels with `recurse`). */
  async subgraphSchemas(
    graphId: string,
    config: Record<string, unknown>,
    namespace?: string,
    recurse?: boolean,
  ): Promise<Record<string, GraphSchema>> {
    const spec = this.#spec(graphId);
    const graph = await this.get(graphId, config);
    const result: Record<string, GraphSchema> = {};
    for await (const [ns, subgraph] of graph.getSubgraphsAsync(namespace, recurse)) {
      result[ns] = await this.#schemas.schemas(subgraph, spec.file, spec.exportName, { namespace: ns });
    }
    return result;
  }

  #spec(graphId: string): GraphSpec {
    const spec = this.#specs.find((s) => s.id === graphId);
    if (!spec) throw new GraphLoadError(`Graph "${graphId}" is not registered`);
    return spec;
  }
}
