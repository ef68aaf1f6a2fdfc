/**
 * Response shapes of the agent-server area, for /openapi.json (the request schemas are in
 * `schemas.ts`). They describe what the routes send (the storage records of `storage/ports.ts`, the
 * state of `state.ts`); nothing parses responses with them.
 */
import { z } from "zod";
import { MULTITASK_STRATEGIES, RUN_STATUSES, THREAD_STATUSES } from "../storage/statuses.js";

const obj = z.record(z.string(), z.unknown());
const timestamp = z.string().describe("ISO-8601 date-time, e.g. `2025-01-01T00:00:00.000Z`.");

// ---- assistants ------------------------------------------------------------------------------

export const Assistant = z
  .object({
    assistant_id: z.string().describe("A UUID; default assistants have uuid5(graph_id)."),
    graph_id: z.string(),
    version: z.number().int().describe("The current version (a PATCH writes a new one)."),
    name: z.string(),
    description: z.string().nullable(),
    config: obj,
    context: obj,
    metadata: obj.describe("Default assistants carry `created_by: system`."),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("A configured instance of a graph.");

export const AssistantVersion = Assistant.omit({ updated_at: true }).describe("One version of an assistant.");

export const AssistantList = z.array(Assistant);
export const AssistantVersionList = z.array(AssistantVersion);

export const GraphSchemas = z
  .object({
    graph_id: z.string(),
    input_schema: obj.describe("JSON Schema"),
    output_schema: obj.describe("JSON Schema"),
    state_schema: obj.describe("JSON Schema"),
    config_schema: obj.describe("JSON Schema"),
    context_schema: obj.describe("JSON Schema"),
  })
  .describe("The JSON Schemas of an assistant's graph.");

export const DrawableGraph = z
  .object({
    nodes: z.array(
      z.object({ id: z.union([z.string(), z.number()]), type: z.string().optional(), data: z.unknown() }),
    ),
    edges: z.array(
      z.object({
        source: z.string(),
        target: z.string(),
        conditional: z.boolean().optional(),
        data: z.unknown().optional(),
      }),
    ),
  })
  .describe("A drawable graph: nodes and edges.");

export const Subgraphs = z
  .record(
    z.string(),
    z.object({ input: z.unknown(), output: z.unknown(), state: z.unknown(), config: z.unknown() }).partial(),
  )
  .describe("Subgraph schemas by namespace (pipe-joined for nested subgraphs).");

// ---- threads ---------------------------------------------------------------------------------

const Interrupt = z.object({ id: z.string().optional(), value: z.unknown() }).loose();

export const Thread = z
  .object({
    thread_id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    state_updated_at: timestamp,
    metadata: obj,
    status: z.enum(THREAD_STATUSES),
    config: obj,
    values: z.unknown().optional().describe("The state after the last run or update; absent until then."),
    interrupts: z.record(z.string(), z.array(Interrupt)).describe("Pending interrupts by task id."),
    error: z.unknown().optional(),
    ttl: z
      .object({ strategy: z.enum(["delete", "keep_latest"]), ttl_minutes: z.number(), expires_at: timestamp })
      .nullable()
      .optional()
      .describe("With `include=ttl` (`GET /threads/{thread_id}`): the thread's own TTL, null without one."),
    extracted: obj
      .optional()
      .describe(
        "With `extract` (`POST /threads/search`): each alias's value, null where its path leads nowhere.",
      ),
  })
  .describe("Accumulated state of a group of runs.");

export const PruneResult = z
  .object({ pruned_count: z.number().int().min(0).describe("Threads deleted or pruned.") })
  .describe("What `POST /threads/prune` did.");

const StorageSection = z.object({
  count: z.number().int().min(0).describe("Rows."),
  bytes: z.number().int().min(0).describe("Bytes as stored."),
});

export const ThreadStorage = z
  .object({
    thread_id: z.string(),
    total_bytes: z.number().int().min(0).describe("Sum of the three sections below."),
    checkpoints: StorageSection.describe(
      "Checkpoint rows: the serialized checkpoint (less its channel values) and metadata.",
    ),
    channel_values: StorageSection.extend({
      channels: z.record(z.string(), StorageSection).describe("The same, per channel."),
    }).describe("Channel values stored in the checkpoints, one per channel per checkpoint."),
    pending_writes: StorageSection.describe("Task writes not yet folded into a checkpoint."),
  })
  .describe("Bytes the thread's checkpoints occupy in the database.");

export const THREAD_STREAM_EVENTS =
  "Each run of the thread in turn, as it comes, until the client leaves. `run_modes` (default): every event " +
  "of each run (as its join stream sends them) and `run_done` (`{run_id, thread_id, status}`) after each; " +
  "`lifecycle`: only each run's `metadata` (its start) and `run_done`; `state_update`: `state_update` " +
  "(`{thread_id, status, state_updated_at, values, interrupts}`) whenever the thread's state changes. Ids are " +
  "`<run_id>:<event id>`: `Last-Event-ID` resumes after one; `-` replays the runs the thread still lists.";

export const ThreadList = z.array(Thread);

export const CheckpointRef = z
  .object({
    thread_id: z.string(),
    checkpoint_ns: z.string(),
    checkpoint_id: z.string(),
    checkpoint_map: obj.nullable().optional(),
  })
  .describe("Names one checkpoint of a thread.");

export interface ThreadStateShape {
  values: unknown;
  next: string[];
  tasks: {
    id: string;
    name: string;
    path: unknown[];
    error: string | null;
    interrupts: unknown[];
    checkpoint: z.infer<typeof CheckpointRef> | null;
    state: ThreadStateShape | null;
    result: unknown;
  }[];
  metadata: Record<string, unknown>;
  created_at: string | null;
  checkpoint: z.infer<typeof CheckpointRef> | null;
  parent_checkpoint: z.infer<typeof CheckpointRef> | null;
  interrupts: unknown[];
}

export const ThreadState: z.ZodType<ThreadStateShape> = z
  .object({
    values: z.unknown().describe("The graph state (an object, or a list for list states)."),
    next: z.array(z.string()).describe("Nodes that run next; empty when the graph is done."),
    tasks: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        path: z.array(z.unknown()),
        error: z.string().nullable(),
        interrupts: z.array(z.unknown()),
        checkpoint: CheckpointRef.nullable(),
        get state() {
          return ThreadState.nullable().describe("The subgraph's state, with `?subgraphs=true`.");
        },
        result: z.unknown(),
      }),
    ),
    metadata: obj,
    created_at: timestamp.nullable(),
    checkpoint: CheckpointRef.nullable(),
    parent_checkpoint: CheckpointRef.nullable(),
    interrupts: z.array(z.unknown()),
  })
  .describe("A thread's state at one checkpoint.") as z.ZodType<ThreadStateShape>;

export const ThreadStateList = z.array(ThreadState);

export const ThreadStateUpdated = z
  .object({ checkpoint: obj.describe("The new checkpoint: `{thread_id, checkpoint_ns, checkpoint_id}`.") })
  .describe("Where the state update was written.");

// ---- runs ------------------------------------------------------------------------------------

export const Run = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    assistant_id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    status: z.enum(RUN_STATUSES),
    metadata: obj,
    kwargs: obj.describe("What the run executes: input, command, config, context, stream_mode, …"),
    multitask_strategy: z.enum(MULTITASK_STRATEGIES),
    attempt: z.number().int().describe("How many times a worker has started this run."),
  })
  .describe("An invocation of a graph or assistant.");

export const RunList = z.array(Run);

export const RunWithErrorList = z.array(
  Run.extend({
    error: z
      .object({
        error: z.string().describe("The error's type."),
        message: z.string(),
        stack: z
          .string()
          .optional()
          .describe("The stack trace (at most 16 KiB): for API-key callers, never under custom auth."),
      })
      .nullable()
      .describe("How the run failed; null unless its status is `error`."),
  }),
);

export const RunResult = z
  .unknown()
  .describe(
    "The thread's state values once the run ended (with `__interrupt__` when it stopped at an " +
      "interrupt), or `{__error__: {error, message}}` when it failed.",
  );

export const SSE_EVENTS =
  "Events: `metadata` (`{run_id, thread_id, attempt}`) first, then one event per chunk of each requested " +
  "stream mode (`values`, `updates`, `messages/metadata`, `messages/partial`, `messages/complete`, " +
  "`custom`, `debug`, `events`, `tasks`, `checkpoints`; with `|<namespace>` for subgraphs), and `error` " +
  "when the run fails. The stream closes when the run ends. Thread run streams carry `id:` lines, so a " +
  "reader can resume with `Last-Event-ID`.";

// ---- crons -----------------------------------------------------------------------------------

export const Cron = z
  .object({
    cron_id: z.string(),
    assistant_id: z.string(),
    thread_id: z.string().nullable().describe("The thread each firing runs on; null for a stateless cron."),
    user_id: z.string().nullable(),
    schedule: z.string().describe("A cron expression."),
    timezone: z.string().nullable().describe("IANA time zone the schedule is read in; null = UTC."),
    end_time: timestamp.nullable().describe("No firing after this time; null = no end."),
    enabled: z.boolean(),
    on_run_completed: z.enum(["delete", "keep"]).nullable(),
    payload: obj.describe("The run request each firing makes."),
    metadata: obj,
    next_run_date: timestamp
      .nullable()
      .describe("When it fires next (disabled: when it would, if enabled); null past its end."),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("A schedule that creates runs.");

export const CronList = z.array(Cron);

// ---- store -----------------------------------------------------------------------------------

const namespace = z.array(z.string()).describe('Namespace labels, e.g. `["users", "42"]`.');

export const StoreItem = z
  .object({
    namespace,
    key: z.string(),
    value: obj,
    created_at: timestamp,
    updated_at: timestamp,
    score: z.number().nullish().describe("Similarity to the search `query` (searches only)."),
  })
  .describe("An item of the long-term memory store.");

export const StoreSearchResult = z.object({ items: z.array(StoreItem) });
export const StoreNamespaceList = z.object({ namespaces: z.array(namespace) });

// ---- system ----------------------------------------------------------------------------------

export const Ok = z.object({ ok: z.literal(true) });

export const Info = z
  .object({
    version: z.string(),
    server: z.string().optional(),
    context: z.string().optional(),
    flags: z.record(z.string(), z.boolean()),
    metadata: obj.optional(),
  })
  .loose()
  .describe("Server version and feature flags.");

export const Count = z.number().int().min(0).describe("How many match.");

export const DeletedIds = z.array(z.string()).describe("The ids that were deleted.");
