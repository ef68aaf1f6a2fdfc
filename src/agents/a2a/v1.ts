/**
 * The A2A 1.0 wire (JSON-RPC binding, ProtoJSON) ↔ the v0.3 shapes the service works in. Pure.
 *
 * 1.0 differs from 0.3 on the wire in: PascalCase method names; enums spelled as their proto names
 * (`ROLE_USER`, `TASK_STATE_COMPLETED`); parts without `kind` (`{text}`, `{data}`, `{raw}`, `{url}`);
 * no `kind` on messages and tasks; `SendMessage` answering `{task}` or `{message}`; stream frames
 * wrapped as `{task}`, `{statusUpdate}` or `{artifactUpdate}` (a status update has no `final`: the
 * stream simply ends); `configuration.returnImmediately` in place of `blocking`.
 */
import { invalidParams, isJsonObject, RpcError } from "../jsonrpc.js";
import { A2A_ERRORS, type A2AMessage, type Part } from "./messages.js";
import type { Artifact, ArtifactUpdate, StatusUpdate, Task, TaskState, TaskStatus } from "./tasks.js";

const ROLE_TO_V1 = { user: "ROLE_USER", agent: "ROLE_AGENT" } as const;

const STATE_TO_V1: Record<TaskState, string> = {
  submitted: "TASK_STATE_SUBMITTED",
  working: "TASK_STATE_WORKING",
  "input-required": "TASK_STATE_INPUT_REQUIRED",
  completed: "TASK_STATE_COMPLETED",
  canceled: "TASK_STATE_CANCELED",
  failed: "TASK_STATE_FAILED",
  rejected: "TASK_STATE_REJECTED",
  "auth-required": "TASK_STATE_AUTH_REQUIRED",
  unknown: "TASK_STATE_UNSPECIFIED",
};

/** The proto numbers of `TaskState` (ProtoJSON readers accept an enum's number as well as its name). */
const STATE_NUMBERS = [
  "TASK_STATE_UNSPECIFIED",
  "TASK_STATE_SUBMITTED",
  "TASK_STATE_WORKING",
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_REJECTED",
  "TASK_STATE_AUTH_REQUIRED",
];

/** A 1.0 `TaskState` (name or number) as the v0.3 state; undefined when it names none. */
export function stateFromV1(value: unknown): TaskState | undefined {
  const name = typeof value === "number" ? STATE_NUMBERS[value] : value;
  return (Object.keys(STATE_TO_V1) as TaskState[]).find((state) => STATE_TO_V1[state] === name);
}

function v1Part(part: Part): Record<string, unknown> {
  const { kind: _, ...rest } = part;
  return rest;
}

export function v1Message(m: A2AMessage): Record<string, unknown> {
  const { kind: _, role, parts, ...rest } = m;
  return { ...rest, role: ROLE_TO_V1[role], parts: parts.map(v1Part) };
}

function v1Status(s: TaskStatus): Record<string, unknown> {
  const out: Record<string, unknown> = { state: STATE_TO_V1[s.state] };
  if (s.message) out.message = v1Message(s.message);
  out.timestamp = s.timestamp;
  return out;
}

function v1Artifact(a: Artifact): Record<string, unknown> {
  return { ...a, parts: a.parts.map(v1Part) };
}

export function v1Task(t: Task): Record<string, unknown> {
  const out: Record<string, unknown> = { id: t.id, contextId: t.contextId, status: v1Status(t.status) };
  if (t.history) out.history = t.history.map(v1Message);
  if (t.artifacts) out.artifacts = t.artifacts.map(v1Artifact);
  return out;
}

/** One `StreamResponse` of `SendStreamingMessage` / `SubscribeToTask`. */
export function v1StreamResponse(event: Task | StatusUpdate | ArtifactUpdate): Record<string, unknown> {
  switch (event.kind) {
    case "task":
      return { task: v1Task(event) };
    case "status-update":
      return {
        statusUpdate: { taskId: event.taskId, contextId: event.contextId, status: v1Status(event.status) },
      };
    case "artifact-update":
      return {
        artifactUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          artifact: v1Artifact(event.artifact),
          append: event.append ?? false,
          lastChunk: event.lastChunk ?? true,
        },
      };
  }
}

const pushNotSupported = () =>
  new RpcError(
    A2A_ERRORS.PUSH_NOTIFICATION_NOT_SUPPORTED,
    "Push notifications are not supported (the agent card says capabilities.pushNotifications: false)",
  );

/** Empty strings are proto3's "not set". */
const present = (x: unknown) => x !== undefined && x !== null && x !== "";

function roleFromV1(role: unknown): "user" | "agent" {
  if (role === "ROLE_USER" || role === 1) return "user";
  if (role === "ROLE_AGENT" || role === 2) return "agent";
  throw invalidParams("Missing or invalid 'message.role': expected 'ROLE_USER' or 'ROLE_AGENT'");
}

const PART_CONTENTS = ["text", "data", "raw", "url"] as const;

function partFromV1(part: unknown, i: number): Record<string, unknown> {
  if (!isJsonObject(part)) throw invalidParams(`Invalid part at index ${i}: expected an object`);
  const contents = PART_CONTENTS.filter((k) => part[k] !== undefined);
  if (contents.length !== 1) {
    throw invalidParams(
      `Invalid part at index ${i}: it must have exactly one of 'text', 'data', 'raw' or 'url' (found ${contents.length === 0 ? "none" : contents.join(", ")})`,
    );
  }
  const meta = isJsonObject(part.metadata) ? { metadata: part.metadata } : {};
  switch (contents[0]) {
    case "text":
      return { kind: "text", text: part.text, ...meta };
    case "data":
      return { kind: "data", data: part.data, ...meta };
    default:
      throw new RpcError(
        A2A_ERRORS.CONTENT_TYPE_NOT_SUPPORTED,
        `Unsupported part at index ${i}: file parts ('${contents[0]}') are not accepted. A2A agents support 'text' and 'data' parts only.`,
      );
  }
}

/**
 * `SendMessageRequest` params (1.0) as the v0.3 `MessageSendParams` the service reads: role and
 * parts translated, `returnImmediately` → `blocking: false`. The rest of the checks (messageId, parts
 * not empty, contextId a UUID) are the service's, the same for both versions.
 */
export function sendParamsFromV1(params: unknown): Record<string, unknown> {
  if (!isJsonObject(params)) throw invalidParams("Invalid params: must be an object");
  const message = params.message;
  if (!isJsonObject(message)) throw invalidParams("Missing or invalid 'message' in params");
  if (!Array.isArray(message.parts))
    throw invalidParams("Missing or invalid 'message.parts': expected an array");
  const converted: Record<string, unknown> = {
    kind: "message",
    messageId: message.messageId,
    role: roleFromV1(message.role),
    parts: message.parts.map(partFromV1),
  };
  if (present(message.contextId)) converted.contextId = message.contextId;
  if (present(message.taskId)) converted.taskId = message.taskId;
  if (isJsonObject(message.metadata)) converted.metadata = message.metadata;

  const out: Record<string, unknown> = { message: converted };
  const config = params.configuration;
  if (config !== undefined && config !== null) {
    if (!isJsonObject(config)) throw invalidParams("Invalid 'configuration': must be an object");
    if (present(config.taskPushNotificationConfig)) throw pushNotSupported();
    const rt = config.returnImmediately;
    if (rt !== undefined && typeof rt !== "boolean")
      throw invalidParams("Invalid 'configuration.returnImmediately': must be a boolean");
    out.configuration = {
      ...(rt === true ? { blocking: false } : {}),
      ...(config.historyLength !== undefined ? { historyLength: config.historyLength } : {}),
    };
  }
  return out;
}

export { pushNotSupported };
