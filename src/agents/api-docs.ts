/**
 * /openapi.json metadata of the agent-server area, keyed by `"METHOD /path/{param}"` (see
 * `http/openapi.ts`). Request schemas are the ones the routes validate with (`schemas.ts`);
 * response schemas are in `response-schemas.ts`.
 *
 * A route module that adds a route adds its entry here: `test/unit/openapi.test.ts` fails listing
 * every registered route without one. Entries whose route is not registered (a disabled group, a
 * route still being built) are simply left out of the document.
 */
import { z } from "zod";
import type { ApiDocs, RouteDoc } from "../http/openapi.js";
import * as C from "./crons.js";
import * as M from "./metrics.js";
import * as R from "./response-schemas.js";
import * as S from "./schemas.js";
import * as St from "./store.js";

const obj = z.record(z.string(), z.unknown());

export const AGENT_TAGS = [
  { name: "Assistants", description: "Configured instances of a graph." },
  { name: "Threads", description: "Accumulated outputs of a group of runs." },
  { name: "Thread Runs", description: "Invocations of a graph or assistant on a thread." },
  { name: "Stateless Runs", description: "Invocations with no state persistence." },
  { name: "Crons", description: "Periodic runs on a schedule." },
  { name: "Store", description: "Persistent key-value store for long-term memory." },
  { name: "A2A", description: "Agent-to-agent protocol (JSON-RPC 2.0) endpoints." },
  { name: "MCP", description: "Model Context Protocol endpoint (streamable HTTP, stateless)." },
  { name: "System", description: "Health checks, server info and this API reference." },
];

const PAGINATION =
  "The response carries `X-Pagination-Total` (all matches) and, when more follow, `X-Pagination-Next` " +
  "(the offset of the next page).";

const STATE_SELECT =
  "`select` keeps only the fields named (`values`, `next`, `tasks`, `checkpoint`, `metadata`, " +
  "`created_at`, `parent_checkpoint`, `interrupts`); `values.<key>` keeps that key of the values.";

const RUN_CREATED =
  "The response carries `Content-Location` with the run's URL. The run is stored before the response " +
  "is sent and executes as soon as the thread has no other run in flight (`multitask_strategy`).";

// ---- A2A and MCP ------------------------------------------------------------------------------
// Their routes parse JSON-RPC by hand (`jsonrpc.ts`, per method), so these envelope schemas exist only
// to describe the wire (A2A 1.0 and 0.3, docs/a2a-mcp.md); nothing validates with them.

const jsonRpcId = z.union([z.string(), z.number()]).nullable();

export const A2ARequest = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: jsonRpcId,
    method: z
      .enum([
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "CancelTask",
        "ListTasks",
        "SubscribeToTask",
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
      ])
      .describe("A2A 1.0 (PascalCase) or 0.3 (`a/b`) names; the `A2A-Version` header, if sent, chooses."),
    params: z
      .object({
        message: z
          .object({
            kind: z.literal("message").optional(),
            messageId: z.string(),
            role: z
              .enum(["ROLE_USER", "ROLE_AGENT", "user", "agent"])
              .describe("1.0: `ROLE_*`; 0.3: lowercase."),
            parts: z.array(
              z.union([
                z.object({ kind: z.literal("text").optional(), text: z.string() }),
                z.object({ kind: z.literal("data").optional(), data: obj }),
              ]),
            ),
            contextId: z.string().optional().describe("The thread id."),
            taskId: z.string().optional().describe("The run id."),
          })
          .optional(),
        id: z.string().optional().describe("`tasks/get`: the task (run) id."),
        historyLength: z.number().int().optional(),
        thread: z.object({ threadId: z.string() }).optional(),
        metadata: obj.optional(),
      })
      .loose(),
  })
  .describe("A JSON-RPC 2.0 request (A2A 1.0 or 0.3).");

export const JsonRpcResponse = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: jsonRpcId,
    result: z
      .unknown()
      .optional()
      .describe(
        "0.3: a Task; 1.0: `{task}` for `SendMessage`, a Task for `GetTask`/`CancelTask`, a page for `ListTasks`.",
      ),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .describe("A JSON-RPC 2.0 response: `result` or `error` (errors are answered with HTTP 200).");

export const AgentCard = z
  .object({
    protocolVersion: z.string().optional().describe("0.3 card only."),
    name: z.string(),
    description: z.string(),
    url: z.string().optional().describe("0.3 card only: the A2A endpoint, `<server>/a2a/<assistant_id>`."),
    supportedInterfaces: z
      .array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() }))
      .describe("Both cards: JSON-RPC 1.0 (preferred) and 0.3, at the same endpoint."),
    version: z.string(),
    preferredTransport: z.string().optional(),
    capabilities: z.object({
      streaming: z.boolean().optional(),
      pushNotifications: z.boolean().optional(),
      stateTransitionHistory: z.boolean().optional(),
      extendedAgentCard: z.boolean().optional(),
    }),
    defaultInputModes: z.array(z.string()),
    defaultOutputModes: z.array(z.string()),
    skills: z.array(
      z
        .object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) })
        .loose(),
    ),
  })
  .loose()
  .describe(
    "An assistant's A2A agent card: 1.0's when the request sends `A2A-Version: 1.0`, else 0.3's (with the 1.0 interfaces embedded).",
  );

export const AgentCardQuery = z.object({
  assistant_id: z.string().describe("An assistant id or a graph id."),
});
export const A2APath = z.object({ assistant_id: z.string().describe("An assistant id or a graph id.") });

export const McpRequest = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: jsonRpcId.optional().describe("Absent for notifications (answered with 202)."),
    method: z
      .string()
      .describe("`initialize`, `ping`, `tools/list`, `tools/call`, `notifications/initialized`, …"),
    params: obj.optional(),
  })
  .describe("One JSON-RPC 2.0 message (no batches).");

const A2A_ERRORS = "JSON-RPC errors are answered with HTTP 200 and an `error` member.";

const CardError = z.object({ error: z.object({ code: z.number().int(), message: z.string() }) });

/** A method the endpoint refuses with 405 (and an `Allow` header). */
const notAllowed = (tag: string, allow: string, params?: z.ZodObject): RouteDoc => ({
  tag,
  summary: `Not allowed (405): use ${allow}`,
  ...(params ? { params } : {}),
  status: 405,
  responseDescription: `Method not allowed; the \`Allow\` header lists ${allow}.`,
  response: z.unknown(),
});

// ---- the routes ------------------------------------------------------------------------------

const assistant = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Assistants",
  summary,
  params: S.AssistantPath,
  ...rest,
});
const thread = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Threads",
  summary,
  params: S.ThreadPath,
  ...rest,
});
const threadRun = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Thread Runs",
  summary,
  params: S.ThreadPath,
  ...rest,
});
const stateless = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Stateless Runs",
  summary,
  ...rest,
});

const routes: Record<string, RouteDoc> = {
  // ---- system
  "GET /ok": { tag: "System", summary: "Health check", response: R.Ok, public: true },
  "GET /info": { tag: "System", summary: "Server version and feature flags", response: R.Info },
  "GET /metrics": {
    tag: "System",
    summary: "System metrics",
    description:
      "Run, queue and worker figures in the Prometheus text format (`format=prometheus`, the default) or " +
      "JSON. The queue figures cover every process sharing the database; the worker figures and run " +
      "counters are this process's own (absent workers: it executes no runs).",
    query: M.MetricsQuery,
    response: M.Metrics,
    textAlternatives: {
      "text/plain; version=0.0.4":
        "`format=prometheus`: the same figures as Prometheus gauges and counters " +
        "(`lg_api_num_pending_runs`, `lg_api_workers_active`, `hangar_runs_ended_total{outcome}`, …).",
    },
  },

  // ---- assistants
  "POST /assistants": {
    tag: "Assistants",
    summary: "Create an assistant",
    body: S.AssistantCreate,
    response: R.Assistant,
    description: "`if_exists: do_nothing` returns the existing assistant instead of a 409.",
    errors: [404, 409],
  },
  "POST /assistants/search": {
    tag: "Assistants",
    summary: "Search assistants",
    body: S.AssistantSearch,
    response: R.AssistantList,
    description: PAGINATION,
  },
  "POST /assistants/count": {
    tag: "Assistants",
    summary: "Count assistants",
    body: S.AssistantCount,
    response: R.Count,
  },
  "GET /assistants/{assistant_id}": assistant("Get an assistant", {
    response: R.Assistant,
    description: "A graph id names that graph's default assistant.",
  }),
  "PATCH /assistants/{assistant_id}": assistant("Update an assistant (writes a new version)", {
    body: S.AssistantPatch,
    response: R.Assistant,
  }),
  "DELETE /assistants/{assistant_id}": assistant("Delete an assistant", {
    query: S.AssistantDeleteQuery,
    response: R.DeletedIds,
    description: "Deletes its versions and runs; with `delete_threads=true` also its threads.",
  }),
  "POST /assistants/{assistant_id}/versions": assistant("List an assistant's versions", {
    body: S.AssistantVersions,
    response: R.AssistantVersionList,
  }),
  "POST /assistants/{assistant_id}/latest": assistant("Make a version the current one", {
    body: S.AssistantLatest,
    response: R.Assistant,
  }),
  "GET /assistants/{assistant_id}/schemas": assistant("Get the graph's JSON Schemas", {
    response: R.GraphSchemas,
  }),
  "GET /assistants/{assistant_id}/graph": assistant("Get the drawable graph", {
    query: S.GraphQuery,
    response: R.DrawableGraph,
  }),
  "GET /assistants/{assistant_id}/subgraphs": assistant("Get the subgraphs' schemas", {
    query: S.SubgraphsQuery,
    response: R.Subgraphs,
  }),
  "GET /assistants/{assistant_id}/subgraphs/{namespace}": assistant("Get one namespace's subgraph schemas", {
    params: S.AssistantPath.extend({ namespace: z.string() }),
    query: S.SubgraphsQuery,
    response: R.Subgraphs,
  }),

  // ---- threads
  "POST /threads": {
    tag: "Threads",
    summary: "Create a thread",
    body: S.ThreadCreate,
    response: R.Thread,
    description:
      "An empty body creates a thread with a new id. `supersteps` applies state updates through the " +
      "graph named by `metadata.graph_id`.",
    errors: [400, 409],
  },
  "POST /threads/search": {
    tag: "Threads",
    summary: "Search threads",
    body: S.ThreadSearch,
    response: R.ThreadList,
    description:
      `${PAGINATION} \`extract\` (alias → path, like \`values.messages[-1].content\`) adds \`extracted\` ` +
      "to each thread: each alias's value, null where its path leads nowhere.",
  },
  "POST /threads/count": { tag: "Threads", summary: "Count threads", body: S.ThreadCount, response: R.Count },
  "POST /threads/prune": {
    tag: "Threads",
    summary: "Prune threads",
    body: S.ThreadPrune,
    response: R.PruneResult,
    description:
      "`delete` deletes each thread as `DELETE /threads/{thread_id}` does (stopping its runs in flight); " +
      "`keep_latest` keeps each thread and, of its checkpoints, the latest of each namespace with what it " +
      "needs to rebuild delta channels (`DeltaValue`), skipping a thread with a run in flight. Threads " +
      "absent or hidden (custom auth: `threads:delete`) are skipped; `pruned_count` counts the rest.",
  },
  "GET /threads/{thread_id}": thread("Get a thread", {
    query: S.ThreadGetQuery,
    response: R.Thread,
    description: "`include=ttl` adds the thread's own TTL (`{strategy, ttl_minutes, expires_at}`).",
  }),
  "GET /threads/{thread_id}/stream": thread("Join a thread's stream", {
    query: S.ThreadStreamQuery,
    headers: z.object({
      "Last-Event-ID": z.string().optional().describe("Resume after this event id; `-` from the beginning."),
    }),
    stream: R.THREAD_STREAM_EVENTS,
  }),
  "GET /threads/{thread_id}/storage": thread("Get the bytes the thread's checkpoints occupy", {
    response: R.ThreadStorage,
  }),
  "PATCH /threads/{thread_id}": thread("Update a thread's metadata (merged)", {
    body: S.ThreadPatch,
    response: R.Thread,
  }),
  "DELETE /threads/{thread_id}": thread("Delete a thread", {
    description: "Deletes its runs (stopping any in flight) and checkpoints.",
  }),
  "POST /threads/{thread_id}/copy": thread("Copy a thread with its checkpoints", { response: R.Thread }),
  "GET /threads/{thread_id}/state": thread("Get the thread's current state", {
    query: S.StateQuery,
    response: R.ThreadState,
    description: STATE_SELECT,
  }),
  "POST /threads/{thread_id}/state": thread("Update the thread's state", {
    body: S.StateUpdate,
    response: R.ThreadStateUpdated,
    description:
      "Writes a checkpoint as if `as_node` had returned `values`. Not while a run is in flight (409).",
    errors: [400, 409],
  }),
  "PATCH /threads/{thread_id}/state": thread("Update the thread's metadata", { body: S.ThreadStatePatch }),
  "POST /threads/{thread_id}/state/checkpoint": thread("Get the state at a checkpoint (or a subgraph's)", {
    body: S.StateCheckpoint,
    response: R.ThreadState,
    description: STATE_SELECT,
  }),
  "GET /threads/{thread_id}/state/{checkpoint_id}": thread("Get the state at a checkpoint", {
    params: S.CheckpointPath,
    query: S.StateQuery,
    response: R.ThreadState,
    description: STATE_SELECT,
  }),
  "GET /threads/{thread_id}/history": thread("List past states, newest first", {
    query: S.HistoryQuery,
    response: R.ThreadStateList,
  }),
  "POST /threads/{thread_id}/history": thread("List past states, newest first (with filters)", {
    body: S.HistoryBody,
    response: R.ThreadStateList,
    description: STATE_SELECT,
  }),

  // ---- thread runs
  "POST /threads/{thread_id}/runs": threadRun("Create a run in the background", {
    body: S.RunCreate,
    response: R.Run,
    description: RUN_CREATED,
    errors: [409],
  }),
  "POST /threads/{thread_id}/runs/stream": threadRun("Create a run and stream its output", {
    body: S.RunCreate,
    stream: R.SSE_EVENTS,
    description: `${RUN_CREATED} The response also carries \`Location\`: the run's join-stream URL.`,
    errors: [409],
  }),
  "POST /threads/{thread_id}/runs/wait": threadRun("Create a run and wait for its result", {
    body: S.RunCreate,
    response: R.RunResult,
    description: RUN_CREATED,
    errors: [409],
  }),
  "GET /threads/{thread_id}/runs": threadRun("List a thread's runs, newest first", {
    query: S.RunListQuery,
    response: R.RunList,
    description: "`select` (repeated, or comma-separated) keeps only those fields of each run.",
  }),
  "GET /threads/{thread_id}/runs/{run_id}": threadRun("Get a run", { params: S.RunPath, response: R.Run }),
  "DELETE /threads/{thread_id}/runs/{run_id}": threadRun("Delete a run that is not running", {
    params: S.RunPath,
    description: "Deletes the run and its checkpoints. A running run must be cancelled first (409).",
    errors: [409],
  }),
  "GET /threads/{thread_id}/runs/{run_id}/join": threadRun("Wait for a run's result", {
    params: S.RunPath,
    response: R.RunResult,
  }),
  "GET /threads/{thread_id}/runs/{run_id}/stream": threadRun("Join a run's stream", {
    params: S.RunPath,
    query: S.JoinStreamQuery,
    headers: z.object({
      "Last-Event-ID": z.string().optional().describe("Resume after this event id."),
    }),
    stream: R.SSE_EVENTS,
    description:
      "`stream_mode` (repeated, or comma-separated) keeps only those modes' events, with `metadata` and " +
      "`error`; without it, every mode the run streams.",
  }),
  "POST /threads/{thread_id}/runs/{run_id}/cancel": threadRun("Cancel a run", {
    params: S.RunPath,
    query: S.CancelQuery,
    status: 202,
    responseDescription: "Cancellation requested (`wait=false`).",
    responses: { 204: { description: "Cancelled and settled (`wait=true`)." } },
    description:
      "`action=interrupt` stops it (status `interrupted`); `rollback` deletes it and its checkpoints.",
  }),

  // ---- stateless runs
  "POST /runs": stateless("Create a stateless run in the background", {
    body: S.RunCreate,
    response: R.Run,
    description: `${RUN_CREATED} Its temporary thread is deleted afterwards unless \`on_completion=keep\`.`,
  }),
  "POST /runs/stream": stateless("Create a stateless run and stream its output", {
    body: S.RunCreate,
    stream: R.SSE_EVENTS,
  }),
  "POST /runs/wait": stateless("Create a stateless run and wait for its result", {
    body: S.RunCreate,
    response: R.RunResult,
  }),
  "POST /runs/batch": stateless("Create several stateless runs", { body: S.RunBatch, response: R.RunList }),
  "POST /runs/search": stateless("Search the runs of every thread (Hangar extension)", {
    body: S.RunSearch,
    response: R.RunWithErrorList,
    description:
      "Not in the official API, which lists runs thread by thread. Runs of all the organization's threads " +
      "(stateless runs' included), newest first, filtered by status (one or a list), assistant, thread " +
      "and run metadata (containment). Under custom auth it raises `threads:search`, whose filter applies " +
      "to the runs' threads. Each run carries `error`: how it failed, with the stack trace for API-key " +
      `callers. ${PAGINATION}`,
  }),
  "POST /runs/cancel": stateless("Cancel runs in bulk", {
    body: S.BulkCancel,
    query: S.BulkCancelQuery,
    description: "Cancels the named runs, and/or the pending or running runs of a thread.",
  }),
  "GET /runs/{run_id}/stream": stateless("Join a stateless run's stream", {
    params: S.StatelessRunPath,
    stream: R.SSE_EVENTS,
  }),

  // ---- crons
  "POST /runs/crons": {
    tag: "Crons",
    summary: "Create a stateless cron",
    body: C.CronCreate,
    response: R.Cron,
    description: "Each firing creates a stateless run (a new thread) from the cron's run fields.",
    errors: [404],
  },
  "POST /threads/{thread_id}/runs/crons": {
    tag: "Crons",
    summary: "Create a cron on a thread",
    params: S.ThreadPath,
    body: C.CronCreate,
    response: R.Cron,
    description: "Each firing creates a run on the thread (`multitask_strategy` applies).",
  },
  "POST /runs/crons/search": {
    tag: "Crons",
    summary: "Search crons",
    body: C.CronSearch,
    response: R.CronList,
    description: PAGINATION,
  },
  "POST /runs/crons/count": { tag: "Crons", summary: "Count crons", body: C.CronCount, response: R.Count },
  "PATCH /runs/crons/{cron_id}": {
    tag: "Crons",
    summary: "Update a cron",
    params: C.CronPath,
    body: C.CronPatch,
    response: R.Cron,
  },
  "DELETE /runs/crons/{cron_id}": { tag: "Crons", summary: "Delete a cron", params: C.CronPath },

  // ---- store
  "PUT /store/items": { tag: "Store", summary: "Store an item", body: St.StorePut },
  "GET /store/items": {
    tag: "Store",
    summary: "Get an item",
    query: St.StoreGetQuery,
    response: R.StoreItem.nullable(),
    responseDescription: "The item, or `null` when there is none.",
  },
  "DELETE /store/items": { tag: "Store", summary: "Delete an item", body: St.StoreDelete },
  "POST /store/items/search": {
    tag: "Store",
    summary: "Search items under a namespace prefix",
    body: St.StoreSearch,
    response: R.StoreSearchResult,
  },
  "POST /store/namespaces": {
    tag: "Store",
    summary: "List namespaces",
    body: St.StoreNamespaces,
    response: R.StoreNamespaceList,
  },

  // ---- A2A
  "POST /a2a/{assistant_id}": {
    tag: "A2A",
    summary: "A2A JSON-RPC endpoint",
    params: A2APath,
    body: A2ARequest,
    response: JsonRpcResponse,
    description:
      "A2A 1.0 and 0.3 on one endpoint, the version chosen by the `A2A-Version` header, else the method's name. " +
      "`SendMessage` / `message/send` runs the assistant on the thread named by `contextId` and returns a Task; " +
      "`SendStreamingMessage` / `message/stream` and `SubscribeToTask` / `tasks/resubscribe` answer with Server-Sent Events " +
      "(send `Accept: text/event-stream`); `GetTask` / `tasks/get` returns a task by id, `CancelTask` / `tasks/cancel` stops one, " +
      `\`ListTasks\` pages through them. ${A2A_ERRORS}`,
    responses: {
      400: { description: "Not a JSON-RPC request, or a wrong `Accept` header.", schema: z.unknown() },
    },
  },
  "GET /a2a/{assistant_id}": {
    tag: "A2A",
    summary: "The assistant's agent card",
    params: A2APath,
    response: AgentCard,
    responses: { 400: { description: "No such assistant.", schema: CardError } },
  },
  "GET /a2a/{assistant_id}/.well-known/agent-card.json": {
    tag: "A2A",
    summary: "The assistant's agent card (well-known path)",
    params: A2APath,
    response: AgentCard,
    responses: { 400: { description: "No such assistant.", schema: CardError } },
  },
  "GET /a2a/{assistant_id}/.well-known/agent.json": {
    tag: "A2A",
    summary: "The assistant's agent card (older well-known path)",
    params: A2APath,
    response: AgentCard,
    responses: { 400: { description: "No such assistant.", schema: CardError } },
  },
  "GET /.well-known/agent-card.json": {
    tag: "A2A",
    summary: "Agent card of an assistant",
    query: AgentCardQuery,
    response: AgentCard,
    responses: { 400: { description: "Missing `assistant_id`, or no such assistant.", schema: CardError } },
  },
  "PUT /a2a/{assistant_id}": notAllowed("A2A", "GET, POST", A2APath),
  "PATCH /a2a/{assistant_id}": notAllowed("A2A", "GET, POST", A2APath),
  "DELETE /a2a/{assistant_id}": notAllowed("A2A", "GET, POST", A2APath),

  // ---- MCP
  "POST /mcp": {
    tag: "MCP",
    summary: "MCP JSON-RPC endpoint (streamable HTTP)",
    body: McpRequest,
    response: JsonRpcResponse,
    description:
      "Stateless (no session id) and JSON only. Methods: `initialize`, `ping`, `tools/list` (one tool per " +
      "assistant), `tools/call` (runs the assistant as a stateless run and returns its output as text). " +
      "`Accept` must include `application/json` or `text/event-stream`. JSON-RPC errors are HTTP 200.",
    responses: {
      202: { description: "A notification or a response was accepted." },
      400: { description: "Not a JSON-RPC message, or a wrong `Accept` header.", schema: JsonRpcResponse },
    },
  },
  "GET /mcp": notAllowed("MCP", "POST"),
  "PUT /mcp": notAllowed("MCP", "POST"),
  "PATCH /mcp": notAllowed("MCP", "POST"),
  "DELETE /mcp": notAllowed("MCP", "POST"),
};

/** The agent-server area's metadata for /openapi.json. */
export const agentApiDocs: ApiDocs = {
  tags: AGENT_TAGS,
  routes,
  components: {
    Assistant: R.Assistant,
    AssistantVersion: R.AssistantVersion,
    Thread: R.Thread,
    ThreadState: R.ThreadState,
    CheckpointRef: R.CheckpointRef,
    Run: R.Run,
    GraphSchemas: R.GraphSchemas,
    AssistantCreate: S.AssistantCreate,
    AssistantPatch: S.AssistantPatch,
    AssistantSearch: S.AssistantSearch,
    ThreadCreate: S.ThreadCreate,
    ThreadSearch: S.ThreadSearch,
    ThreadStateUpdate: S.StateUpdate,
    RunCreate: S.RunCreate,
    Cron: R.Cron,
    CronCreate: C.CronCreate,
    StoreItem: R.StoreItem,
    AgentCard: AgentCard,
    JsonRpcResponse: JsonRpcResponse,
  },
};
