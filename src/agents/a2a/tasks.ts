/**
 * A2A v0.3 tasks from runs. A task is one run: its id is the run id and its `contextId` the thread id.
 * Pure: callers pass the run's result (what `join` answers) or stored statuses.
 */
import type { RunStatus } from "../../storage/statuses.js";
import { isJsonObject } from "../jsonrpc.js";
import {
  type A2AMessage,
  errorText,
  interruptText,
  type Part,
  replyText,
  stateMessages,
  toA2AMessage,
} from "./messages.js";

export type TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected"
  | "auth-required"
  | "unknown";

export interface TaskStatus {
  state: TaskState;
  message?: A2AMessage;
  timestamp: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
}

export interface Task {
  kind: "task";
  id: string;
  contextId: string;
  status: TaskStatus;
  history?: A2AMessage[];
  artifacts?: Artifact[];
}

export interface TaskIds {
  taskId: string;
  contextId: string;
}

/** How a finished run ended, as the task's final status and artifacts. */
export interface Outcome {
  state: TaskState;
  /** The text of the final status message (error, interrupt question, or the reply). */
  text: string;
  artifacts: Artifact[];
}

const now = () => new Date().toISOString();

/** An agent message carrying one text part (status messages). */
export function agentText(ids: TaskIds, text: string, messageId: string): A2AMessage {
  return {
    kind: "message",
    messageId,
    role: "agent",
    parts: [{ kind: "text", text }],
    taskId: ids.taskId,
    contextId: ids.contextId,
  };
}

export function responseArtifact(ids: TaskIds, assistantId: string, text: string): Artifact {
  return {
    artifactId: `${ids.taskId}:response`,
    name: "Assistant Response",
    description: `Response from assistant ${assistantId}`,
    parts: [{ kind: "text", text }],
  };
}

function interruptArtifact(ids: TaskIds, interrupts: unknown[]): Artifact {
  return {
    artifactId: `${ids.taskId}:interrupt`,
    name: "Interrupt",
    description: "Agent requires input to continue",
    parts: interrupts.map((i) => ({
      kind: "data" as const,
      data: isJsonObject(i) ? { id: i.id ?? null, value: i.value ?? null } : { id: null, value: i },
    })),
  };
}

/**
 * The outcome of a run from its join result: `{__error__}` → failed (with the error text), values
 * with `__interrupt__` → input-required (an "Interrupt" artifact with one data part per interrupt),
 * anything else → completed with the reply in an "Assistant Response" artifact. A run stopped by a
 * cancel (status `interrupted`) is canceled.
 */
export function outcomeOf(
  result: unknown,
  ids: TaskIds,
  assistantId: string,
  runStatus?: RunStatus,
): Outcome {
  if (runStatus === "interrupted") return { state: "canceled", text: "Task was canceled", artifacts: [] };
  if (isJsonObject(result) && "__error__" in result) {
    return {
      state: "failed",
      text: `Error executing assistant: ${errorText(result.__error__)}`,
      artifacts: [],
    };
  }
  if (runStatus === "error" || runStatus === "timeout") {
    return { state: "failed", text: `Task failed with status: ${runStatus}`, artifacts: [] };
  }
  if (isJsonObject(result) && Array.isArray(result.__interrupt__) && result.__interrupt__.length > 0) {
    const interrupts = result.__interrupt__;
    const text = interrupts.map((i) => interruptText(isJsonObject(i) ? i.value : i)).join("\n");
    return { state: "input-required", text, artifacts: [interruptArtifact(ids, interrupts)] };
  }
  const values = isJsonObject(result) ? withoutInterrupts(result) : result;
  const text = replyText(values);
  return { state: "completed", text, artifacts: [responseArtifact(ids, assistantId, text)] };
}

function withoutInterrupts(values: Record<string, unknown>): Record<string, unknown> {
  if (!("__interrupt__" in values)) return values;
  const { __interrupt__: _, ...rest } = values;
  return rest;
}

/** The final status of an outcome: completed carries no message (the reply is the artifact). */
export function finalStatus(outcome: Outcome, ids: TaskIds, timestamp = now()): TaskStatus {
  const status: TaskStatus = { state: outcome.state, timestamp };
  if (outcome.state !== "completed") status.message = agentText(ids, outcome.text, `${ids.taskId}:status`);
  return status;
}

/** The conversation in a state's `messages`, as A2A messages (the last `limit` when given). */
export function historyOf(values: unknown, ids: TaskIds, limit?: number): A2AMessage[] {
  const messages = stateMessages(values) ?? [];
  const kept = limit === undefined ? messages : limit === 0 ? [] : messages.slice(-limit);
  const offset = messages.length - kept.length;
  return kept.map((m, i) => toA2AMessage(m, { ...ids, fallbackId: `${ids.taskId}:history:${offset + i}` }));
}

/** The task state of a run that may still be in flight (tasks/get). */
export function stateOfRun(status: RunStatus, interrupted: boolean): TaskState {
  switch (status) {
    case "pending":
      return "submitted";
    case "running":
      return "working";
    case "success":
      return interrupted ? "input-required" : "completed";
    case "error":
    case "timeout":
      return "failed";
    case "interrupted":
      return "canceled";
    default:
      return "unknown";
  }
}

export function task(
  ids: TaskIds,
  status: TaskStatus,
  extra: Pick<Task, "history" | "artifacts"> = {},
): Task {
  const t: Task = { kind: "task", id: ids.taskId, contextId: ids.contextId, status };
  if (extra.history) t.history = extra.history;
  if (extra.artifacts && extra.artifacts.length > 0) t.artifacts = extra.artifacts;
  return t;
}

export interface StatusUpdate {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
}

export interface ArtifactUpdate {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

export function statusUpdate(ids: TaskIds, status: TaskStatus, final: boolean): StatusUpdate {
  return { kind: "status-update", taskId: ids.taskId, contextId: ids.contextId, status, final };
}

export function artifactUpdate(ids: TaskIds, artifact: Artifact): ArtifactUpdate {
  return {
    kind: "artifact-update",
    taskId: ids.taskId,
    contextId: ids.contextId,
    artifact,
    append: false,
    lastChunk: true,
  };
}

export { now as timestamp };
