/**
 * JSON Schemas of a graph (`/assistants/{id}/schemas`, `/subgraphs`), in the order `langgraph dev` tries:
 *
 * 1. at run time, from the graph's own definitions: a `StateSchema` state (its `getJsonSchema()`), or a
 *    zod state with its LangGraph metadata (`withLangGraph`, the zod registry: reducers, defaults,
 *    `langgraph_type: "messages"`). That metadata lives in a registry inside `@langchain/langgraph`, so it
 *    is read with the graph's own copy of the package, resolved from the graph file (a project may have
 *    its own, another than Hangar's);
 * 2. else from the TypeScript source (`ts-schemas.ts`, for `Annotation<T>` states): in a worker thread,
 *    on first request, every graph file of the project that needs it at once (one TypeScript program),
 *    cached for the life of the process. The time it may take is `LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS`
 *    (default 30 s, as `langgraph dev`);
 * 3. else (no source types, or the extraction failed) a schema listing the state's channels.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS } from "../../config/settings.js";
import type { FileOutcome, SchemaParts, SourceFile, StaticSchemas } from "./ts-schemas.js";

/** The answer of `/assistants/{id}/schemas` (less `graph_id`) and of each `/subgraphs` entry. */
export type GraphSchema = {
  input_schema?: unknown;
  output_schema?: unknown;
  state_schema?: unknown;
  config_schema?: unknown;
  context_schema?: unknown;
};

type Warn = (msg: string, fields?: Record<string, unknown>) => void;

/** What the module `@langchain/langgraph/zod/schema` (and `/zod`) of some copy of LangGraph exports. */
type SchemaLib = {
  getUpdateTypeSchema?: (graph: unknown) => unknown;
  getInputTypeSchema?: (graph: unknown) => unknown;
  getOutputTypeSchema?: (graph: unknown) => unknown;
  getConfigTypeSchema?: (graph: unknown) => unknown;
  schemaMetaRegistry?: {
    getExtendedChannelSchemas(schema: unknown, effects: Record<string, boolean>): unknown;
  };
  toJsonSchema?: (schema: unknown, params?: Record<string, unknown>) => unknown;
};

const PARTIAL_STATE = Symbol.for("langgraph.state.partial");
const THREAD_ENTRY = fileURLToPath(new URL("../../../bin/schema-thread.js", import.meta.url));

/**
 * The ESM module `specifier` (`pkg` or `pkg/sub`) as `from` would import it: the package is located by
 * Node's own resolution from that file, the subpath mapped through the package's `exports` ("import").
 */
async function importFrom(from: string, specifier: string): Promise<any> {
  const [scope, name, ...rest] = specifier.split("/");
  const pkgName = `${scope}/${name}`;
  const pkgJson = createRequire(from).resolve(`${pkgName}/package.json`);
  const pkg = JSON.parse(readFileSync(pkgJson, "utf8"));
  let target = pkg.exports?.[rest.length ? `./${rest.join("/")}` : "."];
  target = target?.import ?? target;
  target = target?.default ?? target;
  if (typeof target !== "string") throw new Error(`${specifier}: no "import" export in ${pkgJson}`);
  return import(pathToFileURL(path.join(path.dirname(pkgJson), target)).href);
}

/** The graph file's copy of LangGraph's schema helpers (Hangar's own when the file resolves none). */
async function schemaLibFor(file: string): Promise<SchemaLib> {
  try {
    const langgraph = createRequire(file).resolve("@langchain/langgraph/package.json");
    const [schema, zod, core] = await Promise.all([
      importFrom(file, "@langchain/langgraph/zod/schema"),
      importFrom(file, "@langchain/langgraph/zod"),
      importFrom(langgraph, "@langchain/core/utils/json_schema").catch(() => ({})),
    ]);
    return { ...schema, schemaMetaRegistry: zod.schemaMetaRegistry, toJsonSchema: core.toJsonSchema };
  } catch {
    const [schema, zod, core] = await Promise.all([
      import("@langchain/langgraph/zod/schema"),
      import("@langchain/langgraph/zod"),
      import("@langchain/core/utils/json_schema"),
    ]);
    return {
      ...schema,
      schemaMetaRegistry: zod.schemaMetaRegistry as any,
      toJsonSchema: core.toJsonSchema as SchemaLib["toJsonSchema"],
    };
  }
}

/** `description: "lg:{…}"` (how LangGraph carries `jsonSchemaExtra` through zod) → the extra keys. */
function applyExtras(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(applyExtras);
  if (schema === null || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) out[key] = applyExtras(value);
  if (typeof out.description === "string" && out.description.startsWith("lg:")) {
    const extras = JSON.parse(out.description.slice(3));
    delete out.description;
    Object.assign(out, extras);
  }
  return out;
}

const isStateSchemaLike = (x: any): boolean =>
  x != null &&
  typeof x === "object" &&
  typeof x.getJsonSchema === "function" &&
  typeof x.getInputJsonSchema === "function";

/**
 * One schema through the library; if it throws (zod 4 refuses `z.custom()`, which the documented
 * `messages: z.custom<BaseMessage[]>().register(registry, MessagesZodMeta)` uses), the same schema built
 * from the registry with unrepresentable types as `{}`, so the metadata still shows.
 */
function zodPart(
  lib: SchemaLib,
  graph: any,
  get: keyof SchemaLib,
  def: unknown,
  effects: Record<string, boolean>,
): unknown {
  try {
    return (lib[get] as (g: unknown) => unknown)?.(graph);
  } catch (err) {
    if (!def || !lib.schemaMetaRegistry || !lib.toJsonSchema) throw err;
    const extended = lib.schemaMetaRegistry.getExtendedChannelSchemas(def, {
      ...effects,
      withJsonSchemaExtrasAsDescription: true,
    });
    return applyExtras(lib.toJsonSchema(extended, { unrepresentable: "any" }));
  }
}

/** Schemas from the graph's run-time definitions (StateSchema or zod), or undefined (an Annotation graph). */
function runtimeSchemas(graph: any, lib: SchemaLib): SchemaParts | undefined {
  const builder = graph?.builder;
  if (!builder || typeof builder !== "object") return undefined;
  const stateDef = builder._schemaRuntimeDefinition;
  const inputDef =
    builder._inputRuntimeDefinition === PARTIAL_STATE ? stateDef : builder._inputRuntimeDefinition;
  const outputDef = builder._outputRuntimeDefinition;
  const configDef = builder._configRuntimeSchema;
  const config = configDef ? zodPart(lib, graph, "getConfigTypeSchema", configDef, {}) : undefined;
  if ([stateDef, inputDef, outputDef].some(isStateSchemaLike)) {
    const parts: SchemaParts = {
      state: isStateSchemaLike(stateDef) ? stateDef.getJsonSchema() : undefined,
      input: isStateSchemaLike(inputDef) ? inputDef.getInputJsonSchema() : undefined,
      output: isStateSchemaLike(outputDef) ? outputDef.getJsonSchema() : undefined,
      config,
    };
    return parts;
  }
  if (!stateDef && !inputDef && !outputDef && !configDef) return undefined;
  const parts: SchemaParts = {
    state: stateDef
      ? zodPart(lib, graph, "getUpdateTypeSchema", stateDef, { withReducerSchema: true, asPartial: true })
      : undefined,
    input: inputDef
      ? zodPart(lib, graph, "getInputTypeSchema", inputDef, { withReducerSchema: true, asPartial: true })
      : undefined,
    output: outputDef ? zodPart(lib, graph, "getOutputTypeSchema", outputDef, {}) : undefined,
    config,
  };
  return Object.values(parts).some((p) => p != null) ? parts : undefined;
}

/** A schema listing the state's channels: the last resort, for a graph with no types to read. */
export function channelSchema(graph: { channels?: Record<string, unknown> }): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const key of Object.keys(graph.channels ?? {})) {
    if (key.startsWith("__") || key.startsWith("branch:") || key.includes(":")) continue;
    properties[key] =
      key === "messages"
        ? { type: "array", items: { type: "object", properties: { role: { type: "string" }, content: {} } } }
        : {};
  }
  return { type: "object", properties };
}

const EMPTY_CONFIG = { type: "object", properties: {} };

function toGraphSchema(parts: SchemaParts, graph: any): GraphSchema {
  const fallback = () => channelSchema(graph);
  const config = parts.config ?? EMPTY_CONFIG;
  return {
    input_schema: parts.input ?? fallback(),
    output_schema: parts.output ?? fallback(),
    state_schema: parts.state ?? fallback(),
    config_schema: config,
    context_schema: config,
  };
}

/**
 * Runs one source extraction of `files` in a worker thread, which ends with it (its memory goes with it).
 * `onResult` hears each file's outcome as the thread posts it; every file not told when the thread ends
 * (the timeout, an error, an exit) is told that.
 */
function extractInThread(
  files: readonly SourceFile[],
  ms: number,
  onResult: (file: string, outcome: FileOutcome) => void,
): Promise<void> {
  return new Promise((resolve) => {
    const untold = new Set(files.map((f) => f.file));
    let worker: Worker;
    try {
      worker = new Worker(THREAD_ENTRY, { workerData: { files } });
    } catch (err) {
      for (const file of untold) onResult(file, { ok: false, error: (err as Error).message });
      return resolve();
    }
    let timer: NodeJS.Timeout | undefined;
    const finish = (error?: string) => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      void worker.terminate();
      for (const file of untold) onResult(file, { ok: false, error: error ?? "the schema thread gave none" });
      untold.clear();
      resolve();
    };
    timer = setTimeout(() => finish(`timed out after ${ms} ms (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS)`), ms);
    type Reply = ({ file: string } & FileOutcome) | { done: true; error?: string };
    worker.on("message", (msg: Reply) => {
      if ("done" in msg) finish(msg.error);
      else if (untold.delete(msg.file)) onResult(msg.file, msg);
    });
    worker.once("error", (err) => finish(err.message));
    worker.once("exit", (code) => finish(`the schema thread exited (code ${code})`));
  });
}

type FileSchemas = Record<string, StaticSchemas>;

/**
 * Schemas of the graphs of one project: run-time ones each time, source ones once per graph file (for
 * all the graphs the project exports from it). The first request that needs a file's source reads, in
 * one thread and one TypeScript program, every graph file of the project that needs its source: the
 * files with a graph (or subgraph) the run-time schemas do not cover. Factories' files are read when
 * asked for (what a factory returns is not known before).
 */
export class GraphSchemas {
  readonly #libs = new Map<string, Promise<SchemaLib>>();
  readonly #fromSource = new Map<string, Promise<FileSchemas | null>>();
  /** Files asked for (or found to need reading) and not yet given to a thread. */
  readonly #waiting = new Map<string, { names: string[]; resolve: (s: FileSchemas | null) => void }>();
  readonly #exports = new Map<string, string[]>();
  /** Each file's graphs that are known without a config (not factories'). */
  readonly #graphs = new Map<string, unknown[]>();
  #needed?: Promise<string[]>;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #warn: Warn;
  readonly #timeoutMs: number;

  constructor(
    specs: readonly { file: string; exportName: string }[],
    opts: { warn?: Warn; schemaTimeoutMs?: number } = {},
  ) {
    for (const { file, exportName } of specs) {
      const names = this.#exports.get(file) ?? [];
      if (!names.includes(exportName)) names.push(exportName);
      this.#exports.set(file, names);
    }
    this.#warn = opts.warn ?? (() => {});
    this.#timeoutMs = opts.schemaTimeoutMs ?? DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS;
  }

  /** A graph exported from `file` (a compiled graph, not a factory): tells whether the file needs its source read. */
  addGraph(file: string, graph: unknown): void {
    const graphs = this.#graphs.get(file) ?? [];
    graphs.push(graph);
    this.#graphs.set(file, graphs);
  }

  #lib(file: string): Promise<SchemaLib> {
    let lib = this.#libs.get(file);
    if (!lib) {
      lib = schemaLibFor(file);
      this.#libs.set(file, lib);
    }
    return lib;
  }

  /** Whether one of `file`'s graphs or their subgraphs has no run-time schemas (so `schemas()` would read the source). */
  async #needsSource(file: string): Promise<boolean> {
    try {
      const lib = await this.#lib(file);
      const lacking = (graph: unknown) => {
        const runtime = runtimeSchemas(graph, lib);
        return !(runtime && (runtime.state || runtime.input || runtime.output));
      };
      for (const graph of this.#graphs.get(file) ?? []) {
        if (lacking(graph)) return true;
        for await (const [, subgraph] of (graph as any).getSubgraphsAsync(undefined, true))
          if (lacking(subgraph)) return true;
      }
    } catch {
      // Not known: read when asked for.
    }
    return false;
  }

  #claim(file: string, names: string[]): void {
    this.#fromSource.set(file, new Promise((resolve) => this.#waiting.set(file, { names, resolve })));
  }

  /** One thread for the files waiting and every other one the project needs read and has not (yet) had. */
  async #extract(): Promise<void> {
    this.#needed ??= (async () => {
      const files = [...this.#exports.keys()];
      const needs = await Promise.all(files.map((file) => this.#needsSource(file)));
      return files.filter((_, i) => needs[i]);
    })();
    const needed = await this.#needed;
    for (const file of needed) if (!this.#fromSource.has(file)) this.#claim(file, this.#exports.get(file)!);
    const waiting = new Map(this.#waiting);
    this.#waiting.clear();
    // The files that need it in one program, in the project's order whichever was asked for first: the
    // checker numbers types as it meets them (unions list their members in that order), so the same files
    // in the same order read the same. A file not known to need it (a factory's) alone, as it always was.
    const shared = needed.filter((file) => waiting.has(file));
    const units: string[][] = []; // in the order they were asked for
    for (const file of waiting.keys()) {
      if (!needed.includes(file)) units.push([file]);
      else if (!units.includes(shared)) units.push(shared);
    }
    for (const unit of units) {
      const files = unit.map((file) => ({ file, exportNames: waiting.get(file)!.names }));
      await extractInThread(files, this.#timeoutMs, (file, outcome) => {
        const { resolve } = waiting.get(file)!;
        if (outcome.ok) return resolve(outcome.schemas);
        this.#warn(
          "graph schemas: reading the TypeScript types failed; the schemas list the state's channels",
          { file, error: outcome.error },
        );
        if (/timed out/.test(outcome.error)) this.#fromSource.delete(file);
        resolve(null);
      });
    }
  }

  /** The source schemas of `file`'s export, or null if they cannot be had (warned; a timeout is retried). */
  async #source(file: string, exportName: string): Promise<StaticSchemas | null> {
    if (!this.#fromSource.has(file)) {
      this.#claim(file, this.#exports.get(file) ?? [exportName]);
      // One extraction at a time: each holds a TypeScript program (some hundred MB) while it runs.
      const run = this.#queue.then(() => this.#extract());
      this.#queue = run.catch(() => undefined);
    }
    return (await this.#fromSource.get(file))?.[exportName] ?? null;
  }
  /**
   * The schemas of `graph`, exported as `exportName` from `file`, or of its subgraph at `namespace`
   * (`child`, `child|grandchild`; `graph` is then that subgraph). `fromSource: false` skips the
   * TypeScript extraction (callers that only need the state's keys at once).
   */
  async schemas(
    graph: any,
    file: string,
    exportName: string,
    opts: { namespace?: string; fromSource?: boolean } = {},
  ): Promise<GraphSchema> {
    const runtime = runtimeSchemas(graph, await this.#lib(file));
    if (runtime && (runtime.state || runtime.input || runtime.output)) return toGraphSchema(runtime, graph);
    const source = opts.fromSource === false ? null : await this.#source(file, exportName);
    const parts = source?.[opts.namespace ?? ""] ?? {};
    return toGraphSchema({ ...parts, config: runtime?.config ?? parts.config }, graph);
  }
}
