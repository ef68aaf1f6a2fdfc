/**
 * Assistants as MCP tools: clean tool names and input schemas an MCP client can fill in. Pure.
 */

/** MCP tool names: 1–128 characters from `[A-Za-z0-9_.-]`. */
const MAX_TOOL_NAME = 128;

/**
 * An assistant name as a tool name: trimmed, whitespace runs → `_`, other characters outside
 * `[A-Za-z0-9_.-]` dropped, at most 128 characters. Empty when nothing usable is left.
 */
export function toolName(name: string): string {
  return name
    .trim()
    .replace(/\s+/g, "_")
    .replace(/[^A-Za-z0-9_.-]/g, "")
    .slice(0, MAX_TOOL_NAME);
}

type Schema = Record<string, unknown>;

const isObject = (x: unknown): x is Schema => x !== null && typeof x === "object" && !Array.isArray(x);

/** LangChain message classes (and their parts) as Pydantic/zod-to-JSON-schema name them in `$defs`. */
const MESSAGE_DEF =
  /^(Base|AI|Human|System|Tool|Function|Chat|Remove|Any)?Message(Chunk)?$|^(AI|Human|System|Tool|Function|Chat)MessageChunk$|^(ToolCall|ToolCallChunk|InvalidToolCall|UsageMetadata|InputTokenDetails|OutputTokenDetails)$/;

const MESSAGE_INPUT = { type: "string", description: "The user message to send to the agent." };

/** The def name a `$ref` points at (`#/$defs/X`, `#/definitions/X`). */
const refName = (ref: unknown) => (typeof ref === "string" ? ref.split("/").pop() : undefined);

/** Whether a schema describes one LangChain message (a ref to a message def, a union of them, or {role, content}). */
function isMessageSchema(s: unknown): boolean {
  if (!isObject(s)) return false;
  const name = refName(s.$ref);
  if (name && MESSAGE_DEF.test(name)) return true;
  const union = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(union) && union.length > 0 && union.every(isMessageSchema)) return true;
  const props = s.properties;
  return isObject(props) && "content" in props && "role" in props;
}

/** Whether a property is a message list: LangGraph's `messages` channel marker or an array of messages. */
function isMessageList(s: unknown): boolean {
  if (!isObject(s)) return false;
  if (s.langgraph_type === "messages") return true;
  return s.type === "array" && isMessageSchema(s.items);
}

/**
 * A graph input schema as an MCP `inputSchema`: message lists become one string (the message to send;
 * LangGraph's messages reducer turns a string into a human message), LangChain message defs are
 * dropped, nested `$schema` markers removed, and the result is always `{type: "object", properties}`
 * with an object for every property.
 */
export function simplifyInputSchema(schema: unknown): Schema {
  const source = isObject(schema) ? schema : {};
  const properties: Schema = {};
  for (const [key, value] of Object.entries(isObject(source.properties) ? source.properties : {})) {
    if (isMessageList(value)) {
      const title = isObject(value) && typeof value.title === "string" ? { title: value.title } : {};
      properties[key] = { ...MESSAGE_INPUT, ...title };
    } else if (isObject(value)) {
      const { $schema: _, ...rest } = value;
      properties[key] = rest;
    } else {
      properties[key] = {};
    }
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === "$schema" || key === "properties" || key === "type") continue;
    if (key === "$defs" || key === "definitions") {
      const defs = isObject(value)
        ? Object.fromEntries(Object.entries(value).filter(([name]) => !MESSAGE_DEF.test(name)))
        : {};
      if (Object.keys(defs).length > 0) out[key] = defs;
      continue;
    }
    if (key === "required" && Array.isArray(value)) {
      const required = value.filter((r) => typeof r === "string" && r in properties);
      if (required.length > 0) out.required = required;
      continue;
    }
    out[key] = value;
  }
  return { type: "object", ...out, properties };
}

export interface ToolSource {
  name: string;
  description: string | null;
}

/** What `tools/list` says about an assistant, but the schema. */
export function toolInfo(assistant: ToolSource, name: string) {
  return {
    name,
    title: assistant.name,
    description: assistant.description || `Tool based on the ${assistant.name} assistant`,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  };
}
