/**
 * A2A v0.3 messages and parts ↔ LangGraph state. Pure: no storage, no HTTP.
 *
 * Incoming: text parts become `messages` entries (`user` → `human`, `agent` → `assistant`), data parts
 * are shallow-merged into the run input. Outgoing: LangChain messages in thread state (their
 * serialised `{type, content, id, …}` form) become A2A messages with a text part.
 */
import { invalidParams, isJsonObject, RpcError } from "../jsonrpc.js";

/** A2A-specific JSON-RPC error codes (A2A v0.3 §8.2, 1.0 §5.4). */
export const A2A_ERRORS = {
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  /** A2A 1.0 only: an `A2A-Version` this endpoint does not serve. */
  VERSION_NOT_SUPPORTED: -32009,
} as const;

export type TextPart = { kind: "text"; text: string; metadata?: Record<string, unknown> };
export type DataPart = { kind: "data"; data: Record<string, unknown>; metadata?: Record<string, unknown> };
export type Part = TextPart | DataPart;

export interface A2AMessage {
  kind: "message";
  messageId: string;
  role: "user" | "agent";
  parts: Part[];
  contextId?: string;
  taskId?: string;
  metadata?: Record<string, unknown>;
}

/** An incoming `message/send` / `message/stream` request, checked and normalised. */
export interface IncomingMessage {
  message: A2AMessage;
  /** The thread to run on: `message.contextId`, else the spec's `params.thread.threadId`. */
  contextId?: string;
  texts: string[];
  data: Record<string, unknown>[];
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: unknown): s is string => typeof s === "string" && UUID_RE.test(s);

const contentNotSupported = (message: string) => new RpcError(A2A_ERRORS.CONTENT_TYPE_NOT_SUPPORTED, message);

/**
 * Validates `params` of `message/send` / `message/stream`. Accepts the A2A v0.3 shape
 * (`params.message.{messageId, contextId}`) and the spec's (`params.messageId`,
 * `params.thread.threadId`). Throws -32602 for a missing or malformed field, -32005 for a part kind
 * other than `text` and `data`.
 */
export function readIncomingMessage(params: unknown): IncomingMessage {
  if (!isJsonObject(params)) throw invalidParams("Invalid params: must be an object");
  const raw = params.message;
  if (!isJsonObject(raw)) throw invalidParams("Missing or invalid 'message' in params");

  const messageId = raw.messageId ?? params.messageId;
  if (typeof messageId !== "string" || messageId === "") {
    throw invalidParams("Missing or invalid 'messageId': a non-empty string is required");
  }
  if (raw.role !== "user" && raw.role !== "agent") {
    throw invalidParams("Missing or invalid 'role' in message: expected 'user' or 'agent'");
  }
  if (!Array.isArray(raw.parts))
    throw invalidParams("Missing or invalid 'parts' in message: expected an array");
  if (raw.parts.length === 0) throw invalidParams("Message must contain at least one part");

  const thread = params.thread;
  const contextId = raw.contextId ?? (isJsonObject(thread) ? thread.threadId : undefined);
  if (contextId !== undefined && contextId !== null && !isUuid(contextId)) {
    throw invalidParams(`Invalid contextId '${String(contextId)}': it is a thread id and must be a UUID`);
  }

  const parts: Part[] = [];
  const texts: string[] = [];
  const data: Record<string, unknown>[] = [];
  raw.parts.forEach((part: unknown, i: number) => {
    if (!isJsonObject(part)) throw invalidParams(`Invalid part at index ${i}: expected an object`);
    const kind = part.kind;
    if (kind === "text") {
      if (typeof part.text !== "string")
        throw invalidParams(`Invalid text part at index ${i}: 'text' must be a string`);
      texts.push(part.text);
      parts.push(withMetadata({ kind: "text", text: part.text }, part.metadata));
    } else if (kind === "data") {
      if (!isJsonObject(part.data)) {
        throw contentNotSupported(`Invalid data part at index ${i}: 'data' must be a JSON object`);
      }
      data.push(part.data);
      parts.push(withMetadata({ kind: "data", data: part.data }, part.metadata));
    } else {
      throw contentNotSupported(
        `Unsupported part kind '${typeof kind === "string" ? kind : String(kind)}'. A2A agents support 'text' and 'data' parts only.`,
      );
    }
  });

  const message: A2AMessage = { kind: "message", messageId, role: raw.role, parts };
  if (typeof contextId === "string") message.contextId = contextId;
  if (typeof raw.taskId === "string") message.taskId = raw.taskId;
  if (isJsonObject(raw.metadata)) message.metadata = raw.metadata;
  return { message, contextId: typeof contextId === "string" ? contextId : undefined, texts, data };
}

function withMetadata<P extends Part>(part: P, metadata: unknown): P {
  return isJsonObject(metadata) ? { ...part, metadata } : part;
}

/**
 * The run input: one `messages` entry per text part (A2A `messageId` becomes the LangChain message
 * id, suffixed for the second part on), then every data part merged over the top level.
 */
export function toGraphInput(incoming: IncomingMessage): Record<string, unknown> {
  const { message, texts, data } = incoming;
  const input: Record<string, unknown> = {};
  if (texts.length > 0) {
    const role = message.role === "user" ? "human" : "assistant";
    input.messages = texts.map((text, i) => ({
      role,
      content: text,
      id: i === 0 ? message.messageId : `${message.messageId}:${i}`,
    }));
  }
  for (const d of data) Object.assign(input, d);
  return input;
}

/** What a message answering an `interrupt()` resumes the graph with: the text, the data, or both. */
export function resumeValue(incoming: IncomingMessage): unknown {
  const text = incoming.texts.join("\n");
  if (incoming.data.length === 0) return text;
  const merged = Object.assign({}, ...incoming.data) as Record<string, unknown>;
  return incoming.texts.length === 0 ? merged : { text, ...merged };
}

/** Plain text of a LangChain message content: a string, or the text of its content blocks. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((block) =>
        typeof block === "string"
          ? block
          : isJsonObject(block) && typeof block.text === "string" && (block.type ?? "text") === "text"
            ? block.text
            : "",
      )
      .join("");
  }
  if (content === undefined || content === null) return "";
  return JSON.stringify(content);
}

type StateMessage = Record<string, unknown>;

const isHuman = (m: StateMessage) => m.type === "human" || m.role === "user" || m.role === "human";
const isAi = (m: StateMessage) =>
  m.type === "ai" || m.type === "AIMessageChunk" || m.role === "assistant" || m.role === "ai";

/** The `messages` list of a state, or null when the state has none. */
export function stateMessages(values: unknown): StateMessage[] | null {
  if (!isJsonObject(values) || !Array.isArray(values.messages)) return null;
  return values.messages.filter(isJsonObject);
}

/** A LangChain message (serialised) as an A2A message; its tool calls ride along in a data part. */
export function toA2AMessage(
  m: StateMessage,
  ids: { taskId: string; contextId: string; fallbackId: string },
): A2AMessage {
  const parts: Part[] = [{ kind: "text", text: contentText(m.content) }];
  if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
    parts.push({ kind: "data", data: { tool_calls: m.tool_calls } });
  }
  return {
    kind: "message",
    messageId: typeof m.id === "string" && m.id !== "" ? m.id : ids.fallbackId,
    role: isHuman(m) ? "user" : "agent",
    parts,
    taskId: ids.taskId,
    contextId: ids.contextId,
  };
}

/** Whether a serialised message is one the agent produced (an AI message or chunk). */
export const isAgentMessage = isAi;

/**
 * The reply of a finished run, from its final values: the content of the last AI message, else of
 * the last message; a state without a (non-empty) `messages` list is answered with the whole state
 * as JSON.
 */
export function replyText(values: unknown): string {
  const messages = stateMessages(values);
  if (!messages || messages.length === 0) return JSON.stringify(values ?? null);
  let reply = messages[messages.length - 1];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (isAi(messages[i])) {
      reply = messages[i];
      break;
    }
  }
  return contentText(reply.content);
}

/** A run error (`{error, message}` as the runtime records it, or anything else) as one line of text. */
export function errorText(error: unknown): string {
  if (typeof error === "string") return error;
  if (isJsonObject(error)) {
    const { error: name, message } = error;
    if (typeof message === "string")
      return typeof name === "string" && name ? `${name}: ${message}` : message;
  }
  return JSON.stringify(error ?? "unknown error");
}

/** An interrupt value as text, for the `input-required` status message. */
export function interruptText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}
