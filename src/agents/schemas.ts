/**
 * Request schemas of the agent-server area. They validate every request (422 on mismatch) and,
 * later, generate /openapi.json (DESIGN.md decision 7). Unknown fields are accepted and ignored,
 * because the official SDKs send fields this server does not use (`ttl`, `langsmith_tracer`, …); known
 * fields of the wrong type are rejected. `null` is accepted wherever the SDK may send it.
 */
import { z } from "zod";
import { MULTITASK_STRATEGIES, RUN_STATUSES, THREAD_STATUSES } from "../storage/statuses.js";

const obj = z.record(z.string(), z.unknown());
const uuid = z.uuid({ message: "must be a UUID" });
const optionalObj = obj.nullish();

/**
 * The longest text a name or id field takes (names, graph, assistant and node ids, filter keys, …):
 * each becomes an SQL parameter, an index key or a LIKE pattern (SQLite refuses patterns over 50,000
 * bytes), or names a graph node, so each is bounded at the door, the same on both engines (README
 * "Input limits").
 */
export const MAX_QUERY_TEXT = 1024;
export const queryText = () =>
  z.string({ error: "must be a string" }).max(MAX_QUERY_TEXT, {
    message: `must be at most ${MAX_QUERY_TEXT} characters`,
  });

/**
 * The most conditions one filter may hold (each scalar one, at any depth, in arrays too, as arrays are
 * compared element by element): each becomes an SQL condition, and SQLite's expressions nest at most
 * 1,000 deep.
 */
export const MAX_FILTER_CONDITIONS = 100;

/** The SQL comparisons a filter value makes: one per scalar, arrays and objects element by element. */
function conditions(value: unknown): number {
  if (value === null || typeof value !== "object") return 1;
  let n = 0;
  for (const v of Object.values(value)) n += conditions(v);
  return Math.max(n, 1);
}

/** A key of a filter (at any depth) longer than MAX_QUERY_TEXT: each is a JSON path in SQL. */
function longKey(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k.length > MAX_QUERY_TEXT) return k;
    const nested = longKey(v);
    if (nested !== undefined) return nested;
  }
  return undefined;
}

/** A containment filter (metadata, values, store `filter`): an object of at most MAX_FILTER_CONDITIONS conditions. */
export const filterObj = z
  .record(z.string(), z.unknown(), { error: "must be an object" })
  .refine((f) => conditions(f) <= MAX_FILTER_CONDITIONS, {
    message: `must hold at most ${MAX_FILTER_CONDITIONS} conditions`,
  })
  .refine((f) => longKey(f) === undefined, {
    message: `keys must be at most ${MAX_QUERY_TEXT} characters`,
  });
const optionalFilter = filterObj.nullish();
const limit = (max: number, dflt: number) => z.coerce.number().int().min(1).max(max).default(dflt);
const offset = z.coerce.number().int().min(0).default(0);
const sortOrder = z.enum(["asc", "desc"]).default("desc");

export const STREAM_MODES = [
  "values",
  "updates",
  "messages",
  "messages-tuple",
  "custom",
  "debug",
  "events",
  "tasks",
  "checkpoints",
  "tools",
  "lifecycle",
] as const;

// ---- path parameters -------------------------------------------------------------------------
export const ThreadPath = z.object({ thread_id: uuid });
export const RunPath = z.object({ thread_id: uuid, run_id: uuid });
export const StatelessRunPath = z.object({ run_id: uuid });
export const AssistantPath = z.object({ assistant_id: queryText().min(1) });
/** Checkpoint ids are LangGraph's opaque strings (uuid6-like, and not always valid UUIDs): never parsed here. */
const checkpointId = z
  .string()
  .min(1, { message: "must not be empty" })
  .max(1024, { message: "must be at most 1024 characters" });
/** A checkpoint namespace or id in a body: LangGraph's strings, bounded (they key the checkpoint tables). */
const checkpointKey = z.string().max(1024, { message: "must be at most 1024 characters" });
export const CheckpointPath = z.object({ thread_id: uuid, checkpoint_id: checkpointId });

const flag = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .optional()
  .transform((v) => v === "true" || v === "1" || v === "yes");

// ---- assistants ------------------------------------------------------------------------------
export const AssistantCreate = z.object({
  graph_id: queryText().min(1),
  assistant_id: uuid.optional(),
  config: optionalObj,
  context: optionalObj,
  metadata: optionalObj,
  if_exists: z.enum(["raise", "do_nothing"]).nullish(),
  name: queryText().nullish(),
  description: z.string().nullish(),
});

export const AssistantPatch = z.object({
  graph_id: queryText().min(1).nullish(),
  config: optionalObj,
  context: optionalObj,
  metadata: optionalObj,
  name: queryText().nullish(),
  description: z.string().nullish(),
});

const assistantFilters = {
  graph_id: queryText().nullish(),
  name: queryText().nullish(),
  metadata: optionalFilter,
};

export const AssistantSearch = z.object({
  ...assistantFilters,
  limit: limit(1000, 10),
  offset,
  sort_by: z.enum(["assistant_id", "graph_id", "name", "created_at", "updated_at"]).default("created_at"),
  sort_order: sortOrder,
  select: z.array(queryText()).nullish(),
});

export const AssistantCount = z.object(assistantFilters);

export const AssistantVersions = z.object({ metadata: optionalFilter, limit: limit(1000, 10), offset });

/** Versions are 32-bit integers in storage. */
export const AssistantLatest = z.object({
  version: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 1),
});

export const AssistantDeleteQuery = z.object({ delete_threads: flag });
export const GraphQuery = z.object({ xray: z.union([flag, z.coerce.number().int()]).optional() });
export const SubgraphsQuery = z.object({ recurse: flag });

// ---- threads ---------------------------------------------------------------------------------
/**
 * An `extract` path of a thread search: a field of the thread (`values`, `metadata`, …) and keys below
 * it, dot-separated, each optionally indexed (`values.messages[-1].content`; a negative index counts
 * from the end).
 */
const EXTRACT_PATH = /^[A-Za-z_][\w-]*(\[-?\d{1,6}\])*(\.[\w-]+(\[-?\d{1,6}\])*){0,15}$/;
const EXTRACT_PATH_RULE =
  "must be a path of at most 16 dot-separated keys, each optionally indexed, like values.messages[-1].content";
export const MAX_EXTRACTS = 16;
const superstep = z.object({
  updates: z.array(
    z.object({
      values: z.unknown().optional(),
      command: z.record(z.string(), z.unknown()).nullish(),
      as_node: queryText(),
    }),
  ),
});

/**
 * A thread's own TTL, as the SDKs send it: `{strategy, ttl}` in minutes (the JS SDK turns a bare number
 * into `{strategy: "delete", ttl}`). Minutes after the thread's last update, it is swept.
 */
const threadTtl = z
  .union([
    z.number().positive({ message: "must be more than 0 minutes" }),
    z.object({
      strategy: z.enum(["delete", "keep_latest"]).nullish(),
      ttl: z
        .number({ message: "must be a number of minutes" })
        .positive({ message: "must be more than 0 minutes" }),
    }),
  ])
  .nullish()
  .transform((t) =>
    t == null
      ? undefined
      : typeof t === "number"
        ? { strategy: "delete" as const, minutes: t }
        : { strategy: t.strategy ?? ("delete" as const), minutes: t.ttl },
  );

export const ThreadCreate = z.object({
  thread_id: uuid.optional(),
  metadata: optionalObj,
  if_exists: z.enum(["raise", "do_nothing"]).nullish(),
  supersteps: z.array(superstep).nullish(),
  ttl: threadTtl,
});

export const ThreadPatch = z.object({ metadata: optionalObj, ttl: threadTtl });

/** `PATCH /threads/{id}/state`: metadata only (a TTL is set on the thread itself). */
export const ThreadStatePatch = z.object({ metadata: obj });

const threadFilters = {
  metadata: optionalFilter,
  values: optionalFilter,
  status: z.enum(THREAD_STATUSES).nullish(),
};

export const ThreadSearch = z.object({
  ids: z.array(uuid).nullish(),
  ...threadFilters,
  limit: limit(1000, 10),
  offset,
  sort_by: z
    .enum(["thread_id", "status", "created_at", "updated_at", "state_updated_at"])
    .default("created_at"),
  sort_order: sortOrder,
  select: z.array(queryText()).nullish(),
  extract: z
    .record(queryText().min(1), z.string().regex(EXTRACT_PATH, { message: EXTRACT_PATH_RULE }), {
      error: "must be an object of alias → path",
    })
    .refine((e) => Object.keys(e).length <= MAX_EXTRACTS, {
      message: `must hold at most ${MAX_EXTRACTS} paths`,
    })
    .nullish(),
});

export const ThreadCount = z.object(threadFilters);

/** A list the SDK sends as repeated query parameters (`a=x&a=y`) or one comma-separated value. */
const queryList = <T extends string>(values: readonly [T, ...T[]], what: string) =>
  z
    .union([z.string(), z.array(z.string())])
    .describe(`One or more of: ${values.join(", ")} (the parameter repeated, or comma-separated).`)
    .optional()
    .transform((v) => (v === undefined ? [] : [v].flat().flatMap((s) => s.split(","))).map((s) => s.trim()))
    .pipe(z.array(z.enum(values, { error: `must be ${what}: ${values.join(", ")}` })).max(values.length * 4));

/** `GET /threads/{id}?include=ttl`: fields a thread leaves out unless asked for. */
export const ThreadGetQuery = z.object({ include: queryList(["ttl"], "a field to include") });

/** `POST /threads/prune`. */
export const MAX_PRUNE_THREADS = 1000;
export const ThreadPrune = z.object({
  thread_ids: z
    .array(uuid)
    .min(1, { message: "must name at least one thread" })
    .max(MAX_PRUNE_THREADS, { message: `must name at most ${MAX_PRUNE_THREADS} threads` }),
  strategy: z
    .enum(["delete", "keep_latest"], { error: 'must be "delete" or "keep_latest"' })
    .default("delete"),
});

export const THREAD_STREAM_MODES = ["run_modes", "lifecycle", "state_update"] as const;
/**
 * `GET /threads/{id}/stream`: the official API names the parameter `stream_modes`, the JS SDK sends
 * `stream_mode`; either (or both) is taken. Default `run_modes`.
 */
export const ThreadStreamQuery = z.object({
  stream_mode: queryList(THREAD_STREAM_MODES, "a thread stream mode"),
  stream_modes: queryList(THREAD_STREAM_MODES, "a thread stream mode"),
});

const checkpointRef = z.object({
  checkpoint_id: checkpointKey.nullish(),
  checkpoint_ns: checkpointKey.nullish(),
  checkpoint_map: optionalObj,
  thread_id: queryText().nullish(),
});

/** Fields of a thread state `select` may name; `values.<key>` keeps one key of the values. */
export const STATE_FIELDS = [
  "values",
  "next",
  "tasks",
  "checkpoint",
  "metadata",
  "created_at",
  "parent_checkpoint",
  "interrupts",
] as const;
const STATE_FIELD_RULE = `must be one of ${STATE_FIELDS.join(", ")}, or values.<key>`;
const stateField = queryText().refine(
  (f) => (STATE_FIELDS as readonly string[]).includes(f) || /^values\.[^.]+$/.test(f),
  { message: STATE_FIELD_RULE },
);
const stateSelect = z.array(stateField).max(64).nullish();

export const StateQuery = z.object({
  subgraphs: flag,
  select: z
    .union([stateField, z.array(stateField).max(64)])
    .optional()
    .transform((v) => (v === undefined ? undefined : [v].flat())),
});

export const StateCheckpoint = z.object({
  checkpoint: checkpointRef,
  subgraphs: z.boolean().nullish(),
  select: stateSelect,
});

export const StateUpdate = z.object({
  values: z
    .union([obj, z.array(obj), z.null()], { error: "must be an object, a list of objects, or null" })
    .optional(),
  as_node: queryText().nullish(),
  checkpoint_id: checkpointKey.nullish(),
  checkpoint: checkpointRef.nullish(),
});

export const HistoryQuery = z.object({ limit: limit(1000, 10), before: z.string().optional() });

export const HistoryBody = z.object({
  limit: limit(1000, 10),
  // A checkpoint id, or a config naming one (`{configurable: {checkpoint_id}}`, as the SDK sends it).
  before: z.union([z.string(), z.object({ configurable: checkpointRef }), checkpointRef]).nullish(),
  metadata: optionalFilter,
  checkpoint: checkpointRef.nullish(),
  select: stateSelect,
});

// ---- runs ------------------------------------------------------------------------------------
const nodes = z.union([z.literal("*"), z.array(queryText())], {
  error: 'must be "*" or a list of node names',
});
const goto = z.union([queryText(), z.object({ node: queryText(), input: z.unknown() })]);

export const RunCreate = z.object({
  assistant_id: queryText().min(1),
  input: z.unknown().optional(),
  command: z
    .object({
      resume: z.unknown().optional(),
      update: z.union([obj, z.array(z.tuple([z.string(), z.unknown()])), z.null()]).optional(),
      goto: z.union([goto, z.array(goto), z.null()]).optional(),
    })
    .nullish(),
  metadata: optionalObj,
  config: z
    .object({
      tags: z.array(z.string()).nullish(),
      recursion_limit: z.number().int().min(1).nullish(),
      configurable: optionalObj,
    })
    .loose()
    .nullish(),
  context: optionalObj,
  checkpoint_id: checkpointKey.nullish(),
  checkpoint: checkpointRef.nullish(),
  webhook: z.url({ message: "must be a URL" }).or(z.string().startsWith("/")).nullish(),
  interrupt_before: nodes.nullish(),
  interrupt_after: nodes.nullish(),
  stream_mode: z
    .union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES))], {
      error: `must be one of ${STREAM_MODES.join(", ")}, or a list of them`,
    })
    .nullish(),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z.boolean().nullish(),
  on_disconnect: z.enum(["cancel", "continue"]).nullish(),
  multitask_strategy: z.enum(MULTITASK_STRATEGIES).nullish(),
  if_not_exists: z.enum(["create", "reject"]).nullish(),
  after_seconds: z
    .number()
    .min(0)
    .max(366 * 24 * 3600, { message: "must be at most a year (31622400 seconds)" })
    .nullish(),
  on_completion: z.enum(["delete", "keep"]).nullish(),
  feedback_keys: z.array(queryText()).nullish(),
  langsmith_tracer: optionalObj,
  durability: z.enum(["sync", "async", "exit"]).nullish(),
  checkpoint_during: z.boolean().nullish(),
});

export const RunBatch = z.array(RunCreate).min(1);

export const RUN_FIELDS = [
  "run_id",
  "thread_id",
  "assistant_id",
  "created_at",
  "updated_at",
  "status",
  "metadata",
  "kwargs",
  "multitask_strategy",
  "cancel_reason",
] as const;

export const RunListQuery = z.object({
  limit: limit(1000, 10),
  offset,
  status: z.enum(RUN_STATUSES).optional(),
  select: queryList(RUN_FIELDS, "a run field"),
});

/** `POST /runs/search` (a Hangar extension): runs of every thread, newest first. */
export const RunSearch = z.object({
  status: z
    .union([z.enum(RUN_STATUSES), z.array(z.enum(RUN_STATUSES)).min(1).max(RUN_STATUSES.length)], {
      error: `must be one of ${RUN_STATUSES.join(", ")}, or a list of them`,
    })
    .nullish(),
  assistant_id: uuid.nullish(),
  thread_id: uuid.nullish(),
  metadata: optionalFilter,
  limit: limit(1000, 10),
  offset,
});

export const CancelQuery = z.object({
  wait: flag,
  action: z.enum(["interrupt", "rollback"]).default("interrupt"),
});

export const JoinStreamQuery = z.object({
  cancel_on_disconnect: flag,
  /** Only these modes' events come back (plus `metadata`, `error` and the end); default every mode. */
  stream_mode: queryList(STREAM_MODES, "a stream mode"),
});

export const BulkCancel = z.object({
  thread_id: uuid.nullish(),
  run_ids: z.array(uuid).nullish(),
  status: z.enum(["pending", "running", "all"]).nullish(),
});
export const BulkCancelQuery = z.object({ action: z.enum(["interrupt", "rollback"]).default("interrupt") });
