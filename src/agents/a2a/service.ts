/**
 * The A2A methods on top of the runtime: a message is a run on the thread named by its `contextId`
 * (created if missing); the task is that run (task id = run id, `contextId` = thread id).
 */
import { randomUUID } from "node:crypto";
import { HangarError } from "../../errors.js";
import { toPlain } from "../../runtime/graphs/serialize.js";
import type { RunRequest } from "../../runtime/runs/service.js";
import { matchesFilter } from "../../storage/filter.js";
import { type Assistant, CHECKPOINT_ORG_KEY, type OrgId, type Run } from "../../storage/ports.js";
import { isFinal, type RunStatus } from "../../storage/statuses.js";
import { type Access, OPEN_ACCESS, usableAssistant } from "../authz.js";
import type { AgentDeps } from "../context.js";
import { invalidParams, isJsonObject, RpcError } from "../jsonrpc.js";
import {
  A2A_ERRORS,
  contentText,
  type IncomingMessage,
  isAgentMessage,
  isUuid,
  readIncomingMessage,
  resumeValue,
  stateMessages,
  toA2AMessage,
  toGraphInput,
} from "./messages.js";
import {
  type ArtifactUpdate,
  agentText,
  artifactUpdate,
  finalStatus,
  historyOf,
  type Outcome,
  outcomeOf,
  type StatusUpdate,
  stateOfRun,
  statusUpdate,
  type Task,
  type TaskIds,
  type TaskState,
  task,
  timestamp,
} from "./tasks.js";
import { stateFromV1 } from "./v1.js";

/** LangGraph's cap on `tasks/get` history. */
const MAX_HISTORY = 10;

interface Started {
  run: Run;
  ids: TaskIds;
  incoming: IncomingMessage;
  assistant: Assistant;
}

export class A2AService {
  /** `access`: the caller's user and authorization (custom auth); one service per request. */
  constructor(
    private readonly deps: AgentDeps,
    private readonly access: Access = OPEN_ACCESS,
  ) {}

  /**
   * The assistant of the endpoint path (an assistant id, or a graph id for its default assistant), if
   * the caller may use it: as for runs created over HTTP, another user's assistant is not found
   * (`assistants:read`, `usableAssistant`). Its card, its messages and its tasks all start here.
   */
  async assistant(org: OrgId, pathId: string): Promise<Assistant> {
    try {
      return await usableAssistant(this.deps, org, this.access, pathId);
    } catch (err) {
      if (err instanceof HangarError && err.kind === "not_found") {
        throw invalidParams(`Assistant '${pathId}' not found`);
      }
      throw err;
    }
  }

  /** Whether the caller may `action` the thread `threadId` (an absent one counts as allowed). */
  private async threadAllowed(org: OrgId, threadId: string, action: "read" | "update") {
    const { filter } = await this.access.authorize("threads", action, { thread_id: threadId });
    if (!filter) return true;
    const thread = await this.deps.storage.threads.get(org, threadId);
    return !thread || matchesFilter(thread.metadata, filter);
  }

  /** `message/send`: run the message and answer with the finished task (or at once when not blocking). */
  async send(
    org: OrgId,
    pathId: string,
    params: unknown,
    headers: Headers,
    signal: AbortSignal,
  ): Promise<Task> {
    const config = sendConfiguration(params);
    const { run, ids, incoming, assistant } = await this.start(org, pathId, params, headers, ["values"]);
    if (config.blocking === false) {
      return task(ids, { state: "submitted", timestamp: timestamp() }, { history: [stamped(incoming, ids)] });
    }
    const result = await this.deps.runs.joinRun(org, run, signal);
    const status = (await this.deps.storage.runs.get(org, ids.contextId, run.run_id))?.status;
    const outcome = outcomeOf(result, ids, assistant.assistant_id, status);
    const values =
      isJsonObject(result) && !("__error__" in result)
        ? result
        : (await this.deps.storage.threads.get(org, ids.contextId))?.values;
    // A state without messages still has a conversation: the message that started the task.
    const history = stateMessages(values)
      ? historyOf(values, ids, config.historyLength)
      : [stamped(incoming, ids)].slice(config.historyLength === 0 ? 1 : 0);
    return task(ids, finalStatus(outcome, ids), { history, artifacts: outcome.artifacts });
  }

  /**
   * `message/stream`: the task (submitted), a working update when the run starts, one per step of
   * agent text (the text so far), the result artifact, and the final status update carrying the reply.
   */
  async *stream(
    org: OrgId,
    pathId: string,
    params: unknown,
    headers: Headers,
    signal: AbortSignal,
  ): AsyncGenerator<Task | StatusUpdate | ArtifactUpdate> {
    const { run, ids, incoming, assistant } = await this.start(org, pathId, params, headers, ["messages"]);
    yield task(ids, { state: "submitted", timestamp: timestamp() }, { history: [stamped(incoming, ids)] });
    yield* this.follow(org, run, ids, assistant, signal);
  }

  /**
   * `tasks/resubscribe` / `SubscribeToTask`: the task as it stands, then the same updates as
   * `message/stream` until it ends (its agent text only if the run was started streaming messages).
   * A task that has ended has nothing to follow: -32004, as the spec says.
   */
  async *subscribe(
    org: OrgId,
    pathId: string,
    params: unknown,
    signal: AbortSignal,
  ): AsyncGenerator<Task | StatusUpdate | ArtifactUpdate> {
    const { id } = taskQuery(params);
    const assistant = await this.assistant(org, pathId);
    const run = await this.findRun(org, id, assistant);
    if (isFinal(run.status)) {
      throw new RpcError(
        A2A_ERRORS.UNSUPPORTED_OPERATION,
        `Task ${id} has already ended (${stateOfRun(run.status, false)}): there are no updates to subscribe to; read it with GetTask / tasks/get`,
      );
    }
    yield await this.taskOfRun(org, id, run, undefined);
    yield* this.follow(org, run, { taskId: id, contextId: run.thread_id }, assistant, signal);
  }

  /** A run's updates: working, the agent's text so far at each step, the result artifact, the final status. */
  private async *follow(
    org: OrgId,
    run: Run,
    ids: TaskIds,
    assistant: Assistant,
    signal: AbortSignal,
  ): AsyncGenerator<StatusUpdate | ArtifactUpdate> {
    const sent = new Map<string, string>();
    let working = false;
    for await (const event of await this.deps.runs.streamRun(org, run, -1, signal)) {
      if (event.event === "metadata" && !working) {
        working = true;
        yield statusUpdate(ids, { state: "working", timestamp: timestamp() }, false);
        continue;
      }
      if (event.event !== "messages/partial" && event.event !== "messages/complete") continue;
      const [message] = JSON.parse(event.data) as [Record<string, unknown>];
      if (!isJsonObject(message) || !isAgentMessage(message)) continue;
      const key = typeof message.id === "string" ? message.id : "";
      const a2a = toA2AMessage(message, { ...ids, fallbackId: `${ids.taskId}:message:${sent.size}` });
      const text = contentText(message.content);
      const fingerprint = JSON.stringify(a2a.parts);
      if ((text === "" && a2a.parts.length === 1) || sent.get(key) === fingerprint) continue;
      sent.set(key, fingerprint);
      yield statusUpdate(ids, { state: "working", message: a2a, timestamp: timestamp() }, false);
    }
    if (signal.aborted) return;
    const outcome = await this.outcome(org, ids, run, assistant, signal);
    for (const artifact of outcome.artifacts) yield artifactUpdate(ids, artifact);
    const status = finalStatus(outcome, ids);
    status.message ??= agentText(ids, outcome.text, `${ids.taskId}:status`);
    yield statusUpdate(ids, status, true);
  }

  private async outcome(
    org: OrgId,
    ids: TaskIds,
    run: Run,
    assistant: Assistant,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const result = await this.deps.runs.joinRun(org, run, signal);
    const status = (await this.deps.storage.runs.get(org, ids.contextId, run.run_id))?.status;
    return outcomeOf(result, ids, assistant.assistant_id, status);
  }

  /** `tasks/get`: the run's status; when it has ended, its result and the conversation as it left it. */
  async getTask(org: OrgId, pathId: string, params: unknown): Promise<Task> {
    const { id, historyLength } = taskQuery(params);
    const assistant = await this.assistant(org, pathId);
    const run = await this.findRun(org, id, assistant);
    return this.taskOfRun(org, id, run, historyLength);
  }

  /** `tasks/cancel`: stops a pending or running task; a task that has ended cannot be canceled. */
  async cancelTask(org: OrgId, pathId: string, params: unknown, signal: AbortSignal): Promise<Task> {
    const { id } = taskQuery(params);
    const assistant = await this.assistant(org, pathId);
    const run = await this.findRun(org, id, assistant, "update");
    if (isFinal(run.status)) {
      throw new RpcError(
        A2A_ERRORS.TASK_NOT_CANCELABLE,
        `Task ${id} has already ended (${stateOfRun(run.status, false)}) and cannot be canceled`,
      );
    }
    await this.deps.runs.cancel(org, run.thread_id, run.run_id, "interrupt");
    await this.deps.runs.join(org, run.thread_id, run.run_id, signal).catch(() => undefined);
    const latest = (await this.deps.storage.runs.get(org, run.thread_id, run.run_id)) ?? run;
    return this.taskOfRun(org, id, latest, undefined);
  }

  /**
   * `ListTasks` (1.0): the assistant's tasks the caller may see (threads:search), newest first, a page
   * at a time; `pageToken` is an offset. A `status` filter selects runs by status; COMPLETED and
   * INPUT_REQUIRED both end as a successful run, so a page filtered on one may hold fewer tasks.
   */
  async listTasks(org: OrgId, pathId: string, params: unknown): Promise<TaskPage> {
    const q = listQuery(params);
    const assistant = await this.assistant(org, pathId);
    const { filter } = await this.access.authorize("threads", "search", {
      metadata: {} as Record<string, unknown>,
      status: null,
      thread_id: q.contextId ?? null,
      assistant_id: assistant.assistant_id,
      limit: q.pageSize,
      offset: q.offset,
    });
    const statuses = q.state ? RUN_STATUSES_OF[q.state] : undefined;
    if (statuses?.length === 0) return { tasks: [], nextPageToken: "", pageSize: q.pageSize, totalSize: 0 };
    const { items, total } = await this.deps.storage.runs.search(org, {
      assistant_id: assistant.assistant_id,
      thread_id: q.contextId,
      status: statuses,
      auth: filter,
      limit: q.pageSize,
      offset: q.offset,
    });
    const tasks: Task[] = [];
    for (const run of items) {
      const t = await this.taskOfRun(org, run.run_id, run, q.historyLength);
      if (q.state && t.status.state !== q.state) continue;
      if (!q.includeArtifacts) delete t.artifacts;
      tasks.push(t);
    }
    const next = q.offset + items.length;
    return { tasks, nextPageToken: next < total ? String(next) : "", pageSize: q.pageSize, totalSize: total };
  }

  /** Validates the message, resolves the assistant and thread, and admits the run. */
  private async start(
    org: OrgId,
    pathId: string,
    params: unknown,
    headers: Headers,
    streamMode: string[],
  ): Promise<Started> {
    const incoming = readIncomingMessage(params);
    const assistant = await this.assistant(org, pathId);
    const continued = await this.referencedContext(org, incoming, assistant);
    const contextId = continued ?? randomUUID();
    // As a run on a thread (threads:create_run): a context of another user is not found.
    const asked = await this.access.authorize("threads", "create_run", {
      thread_id: contextId,
      assistant_id: assistant.assistant_id,
      metadata: {} as Record<string, unknown>,
      if_not_exists: "create",
    });
    const thread = continued ? await this.deps.storage.threads.get(org, contextId) : null;
    if (thread && !matchesFilter(thread.metadata, asked.filter))
      throw invalidParams(`Failed to create run: Thread with ID ${contextId} not found`);
    // A message to a thread stopped at interrupt() answers it: the graph resumes with the message.
    const resume =
      thread?.status === "interrupted" && Object.values(thread.interrupts ?? {}).some((l) => l.length > 0);
    if (!resume && incoming.texts.length > 0) await this.requireMessagesKey(assistant);

    const request: RunRequest = {
      assistant_id: assistant.assistant_id,
      metadata: asked.value.metadata,
      if_not_exists: "create",
      stream_mode: streamMode,
      ...(resume ? { command: { resume: resumeValue(incoming) } } : { input: toGraphInput(incoming) }),
    };
    let run: Run;
    try {
      run = await this.deps.runs.create(org, contextId, request, headers, this.access.user);
    } catch (err) {
      if (err instanceof HangarError) throw invalidParams(`Failed to create run: ${err.message}`);
      throw err;
    }
    return { run, ids: { taskId: run.run_id, contextId }, incoming, assistant };
  }

  /**
   * The context a message continues: its `contextId`, or the context of the task its `taskId` names.
   * A named task must exist (-32001), match the `contextId` if both are given (-32602), and not have
   * ended (-32004): only a task waiting for input takes another message (both versions' spec).
   */
  private async referencedContext(
    org: OrgId,
    incoming: IncomingMessage,
    assistant: Assistant,
  ): Promise<string | undefined> {
    const taskId = incoming.message.taskId;
    if (taskId === undefined) return incoming.contextId;
    const run = await this.findRun(org, taskId, assistant);
    if (incoming.contextId !== undefined && incoming.contextId !== run.thread_id) {
      throw invalidParams(
        `contextId '${incoming.contextId}' does not match the context of task ${taskId} ('${run.thread_id}')`,
      );
    }
    const { state } = (await this.taskOfRun(org, taskId, run, 0)).status;
    if (state === "completed" || state === "failed" || state === "canceled" || state === "rejected") {
      throw new RpcError(
        A2A_ERRORS.UNSUPPORTED_OPERATION,
        `Task ${taskId} has ended (${state}) and takes no more messages: send the next one with its contextId alone, which starts a new task`,
      );
    }
    return run.thread_id;
  }

  /** Text parts become `messages`: the graph's input (else state) schema must have that key. */
  private async requireMessagesKey(assistant: Assistant): Promise<void> {
    // A graph that cannot even be built to read its schemas fails its run, with the real error.
    const schemas = await this.deps.graphs
      .schemas(assistant.graph_id, assistant.config, { fromSource: false })
      .catch(() => null);
    if (!schemas) return;
    const fields = (schema: unknown) =>
      isJsonObject(schema) && isJsonObject(schema.properties) ? Object.keys(schema.properties) : [];
    let available = fields(schemas.input_schema);
    if (available.length === 0) available = fields(schemas.state_schema);
    if (available.includes("messages")) return;
    throw invalidParams(
      `Assistant '${assistant.assistant_id}' (graph '${assistant.graph_id}') does not support A2A conversational messages. ` +
        `Graph input schema must include a 'messages' field to accept text parts. ` +
        `Available input fields: [${available.join(", ")}]. Send a data part instead.`,
    );
  }

  /** A task id is a run id; `<context id>:<run id>` is accepted too. Other assistants' runs are not found. */
  private async findRun(
    org: OrgId,
    id: string,
    assistant: Assistant,
    action: "read" | "update" = "read",
  ): Promise<Run> {
    const colon = id.indexOf(":");
    const contextId = colon >= 0 ? id.slice(0, colon) : null;
    const runId = colon >= 0 ? id.slice(colon + 1) : id;
    const notFound = () => new RpcError(A2A_ERRORS.TASK_NOT_FOUND, `Task not found: ${id}`);
    if (!isUuid(runId) || (contextId !== null && !isUuid(contextId))) throw notFound();
    const run = await this.deps.storage.runs.get(org, contextId, runId);
    if (!run || run.assistant_id !== assistant.assistant_id) throw notFound();
    if (!(await this.threadAllowed(org, run.thread_id, action))) throw notFound();
    return run;
  }

  private async taskOfRun(
    org: OrgId,
    id: string,
    run: Run,
    historyLength: number | undefined,
  ): Promise<Task> {
    const ids: TaskIds = { taskId: id, contextId: run.thread_id };
    const { storage } = this.deps;
    const left = await this.leftBehind(org, run);
    const thread = left ? null : await storage.threads.get(org, run.thread_id);
    const values = left ? left.values : thread?.values;
    const interrupts = left ? left.interrupts : [];
    const state = stateOfRun(run.status, interrupts.length > 0);
    const history = historyOf(values, ids, historyLength);
    if (state === "submitted" || state === "working") {
      return task(ids, { state, timestamp: run.updated_at }, { history });
    }
    let result: unknown = values;
    if (state === "failed") {
      const error = (thread ?? (await storage.threads.get(org, run.thread_id)))?.error;
      const latest = (await storage.runs.list(org, run.thread_id, { limit: 1, offset: 0 }))[0]?.run_id;
      result = error && latest === run.run_id ? { __error__: error } : undefined;
    }
    if (state === "input-required")
      result = { ...(isJsonObject(values) ? values : {}), __interrupt__: interrupts };
    const outcome = outcomeOf(result, ids, run.assistant_id, run.status);
    return task(ids, finalStatus(outcome, ids, run.updated_at), { history, artifacts: outcome.artifacts });
  }

  /**
   * The state the run left behind — values and pending interrupts of its last checkpoint (later runs
   * may have moved the thread on) — or null when there is no checkpoint of it to read.
   */
  private async leftBehind(org: OrgId, run: Run): Promise<{ values: unknown; interrupts: unknown[] } | null> {
    const config = run.kwargs.config;
    const graphId = config.configurable?.graph_id;
    if (typeof graphId !== "string" || !this.deps.graphs.has(graphId)) return null;
    try {
      const graph = await this.deps.graphs.get(graphId, config);
      const history = graph.getStateHistory(
        { configurable: { thread_id: run.thread_id, checkpoint_ns: "", [CHECKPOINT_ORG_KEY]: org } },
        { filter: { run_id: run.run_id }, limit: 1 },
      );
      for await (const snapshot of history) {
        const interrupts = (snapshot.tasks ?? []).flatMap(
          (t: { interrupts?: unknown[] }) => t.interrupts ?? [],
        );
        return { values: toPlain(snapshot.values), interrupts: (toPlain(interrupts) as unknown[]) ?? [] };
      }
    } catch {
      // No checkpoints to read (a temporary thread, a graph that failed to build).
    }
    return null;
  }
}

/** The incoming message as it belongs to the task (for the task's history). */
function stamped(incoming: IncomingMessage, ids: TaskIds) {
  return { ...incoming.message, taskId: ids.taskId, contextId: ids.contextId };
}

/** `params.configuration` of message/send: `blocking` and `historyLength` are honoured. */
function sendConfiguration(params: unknown): { blocking?: boolean; historyLength?: number } {
  const config = isJsonObject(params) && isJsonObject(params.configuration) ? params.configuration : {};
  const out: { blocking?: boolean; historyLength?: number } = {};
  if (typeof config.blocking === "boolean") out.blocking = config.blocking;
  if (config.historyLength !== undefined && config.historyLength !== null) {
    const n = config.historyLength;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
      throw invalidParams("Invalid 'configuration.historyLength': must be a non-negative integer");
    }
    out.historyLength = n;
  }
  return out;
}

export interface TaskPage {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

/** The run statuses a task state can come from (the inverse of `stateOfRun`). */
const RUN_STATUSES_OF: Record<TaskState, RunStatus[]> = {
  submitted: ["pending"],
  working: ["running"],
  completed: ["success"],
  "input-required": ["success"],
  failed: ["error", "timeout"],
  canceled: ["interrupted"],
  rejected: [],
  "auth-required": [],
  unknown: [],
};

const MAX_PAGE = 100;

/** `ListTasksRequest` params, checked: -32602 naming the field for any that is malformed. */
function listQuery(params: unknown) {
  const p = params === undefined || params === null ? {} : params;
  if (!isJsonObject(p)) throw invalidParams("Invalid params: must be an object");
  const present = (x: unknown) => x !== undefined && x !== null && x !== "";
  const count = (name: string, max: number): number | undefined => {
    const n = p[name];
    if (!present(n)) return undefined;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > max) {
      throw invalidParams(`Invalid '${name}': must be an integer from 0 to ${max}`);
    }
    return n;
  };
  let contextId: string | undefined;
  if (present(p.contextId)) {
    if (!isUuid(p.contextId))
      throw invalidParams(`Invalid 'contextId': it is a thread id and must be a UUID`);
    contextId = p.contextId;
  }
  let state: TaskState | undefined;
  if (present(p.status) && p.status !== "TASK_STATE_UNSPECIFIED" && p.status !== 0) {
    state = stateFromV1(p.status);
    if (!state) throw invalidParams(`Invalid 'status': '${String(p.status)}' is not a TaskState`);
  }
  let offset = 0;
  if (present(p.pageToken)) {
    if (typeof p.pageToken !== "string" || !/^\d{1,9}$/.test(p.pageToken)) {
      throw invalidParams("Invalid 'pageToken': pass the nextPageToken of the previous page");
    }
    offset = Number(p.pageToken);
  }
  if (present(p.statusTimestampAfter)) {
    throw new RpcError(A2A_ERRORS.UNSUPPORTED_OPERATION, "'statusTimestampAfter' is not supported here");
  }
  if (p.includeArtifacts !== undefined && typeof p.includeArtifacts !== "boolean") {
    throw invalidParams("Invalid 'includeArtifacts': must be a boolean");
  }
  return {
    contextId,
    state,
    offset,
    pageSize: count("pageSize", MAX_PAGE) || 50,
    historyLength: count("historyLength", MAX_HISTORY),
    includeArtifacts: p.includeArtifacts === true,
  };
}

/** `params` of tasks/get and tasks/cancel: `id` (or `taskId`) and an optional `historyLength` ≤ 10. */
function taskQuery(params: unknown): { id: string; historyLength?: number } {
  if (!isJsonObject(params)) throw invalidParams("Invalid params: must be an object");
  const id = params.id ?? params.taskId;
  if (typeof id !== "string" || id === "") throw invalidParams("Missing required parameter: id (task_id)");
  const n = params.historyLength;
  if (n === undefined || n === null) return { id };
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
    throw invalidParams("Invalid 'historyLength': must be a non-negative integer");
  }
  if (n > MAX_HISTORY) throw invalidParams(`historyLength cannot exceed ${MAX_HISTORY}`);
  return { id, historyLength: n };
}
