/**
 * JSON-RPC 2.0 framing shared by the A2A (`/a2a/{assistant_id}`) and MCP (`/mcp`) endpoints. Pure:
 * no HTTP here; each endpoint decides which envelope problems become which HTTP status.
 */
import { parseJson } from "../http/json-limits.js";

export type RpcId = string | number | null;

/** The codes JSON-RPC 2.0 itself defines. Protocol-specific codes live with their protocol. */
export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
} as const;

/** Thrown by method handlers; becomes `{"error": {code, message, data?}}`. */
export class RpcError extends Error {
  override name = "RpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const invalidParams = (message: string) => new RpcError(RPC.INVALID_PARAMS, message);

/** What a request body turned out to be. */
export type Envelope =
  | { kind: "request"; id: string | number; method: string; params: unknown }
  /** A method without an id: nobody waits for an answer. */
  | { kind: "notification"; method: string; params: unknown }
  /** A JSON-RPC response object sent to the server (has an id and a result or error, no method). */
  | { kind: "response" }
  | { kind: "invalid"; id: RpcId; error: RpcError };

const isObject = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === "object" && !Array.isArray(x);

/**
 * Classifies a request body. Checks, in order: JSON syntax (-32700), a single object — batches are
 * not supported (-32600), the id's type (-32600), `jsonrpc: "2.0"` (-32600), and the method (-32601
 * when it is not a string, -32600 when absent from something that is not a response either).
 */
export function parseEnvelope(text: string): Envelope {
  const parsed = parseJson(text);
  if ("problem" in parsed) {
    const { loc, msg, type } = parsed.problem;
    if (type === "json_invalid")
      return invalid(null, RPC.PARSE_ERROR, "Parse error: the request body is not valid JSON");
    return invalid(null, RPC.INVALID_REQUEST, `Invalid Request: ${loc.join(".")} ${msg}`);
  }
  const body = parsed.value;
  if (Array.isArray(body)) {
    return invalid(null, RPC.INVALID_REQUEST, "Invalid Request: batch requests are not supported");
  }
  if (!isObject(body)) return invalid(null, RPC.INVALID_REQUEST, "Invalid Request: expected a JSON object");
  const hasId = "id" in body && body.id !== undefined;
  const id = body.id;
  if (hasId && !(typeof id === "string" || (typeof id === "number" && Number.isFinite(id)))) {
    return invalid(null, RPC.INVALID_REQUEST, "Invalid Request: 'id' must be a string or a number");
  }
  const replyId = hasId ? (id as string | number) : null;
  if (body.jsonrpc !== "2.0") {
    return invalid(replyId, RPC.INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"");
  }
  if (!("method" in body)) {
    if (hasId && ("result" in body || "error" in body)) return { kind: "response" };
    return invalid(replyId, RPC.INVALID_REQUEST, "Invalid Request: missing 'method'");
  }
  if (typeof body.method !== "string") {
    return invalid(replyId, RPC.METHOD_NOT_FOUND, "Method not found: 'method' must be a string");
  }
  if (!hasId) return { kind: "notification", method: body.method, params: body.params };
  return { kind: "request", id: id as string | number, method: body.method, params: body.params };
}

function invalid(id: RpcId, code: number, message: string): Envelope {
  return { kind: "invalid", id, error: new RpcError(code, message) };
}

export const rpcResult = (id: RpcId, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });

export function rpcError(id: RpcId, error: RpcError) {
  const body: { code: number; message: string; data?: unknown } = {
    code: error.code,
    message: error.message,
  };
  if (error.data !== undefined) body.data = error.data;
  return { jsonrpc: "2.0" as const, id, error: body };
}

/**
 * Whether an `Accept` header admits one of `types` (exact, `type/*` or `*\/*`). No header at all
 * accepts anything (RFC 9110 §12.5.1). Quality values are not weighed, but `q=0` rules a range out.
 */
export function accepts(header: string | undefined | null, types: string[]): boolean {
  if (header === undefined || header === null || header.trim() === "") return true;
  for (const range of header.split(",")) {
    const [mediaRange, ...paramsList] = range.split(";").map((s) => s.trim().toLowerCase());
    if (!mediaRange) continue;
    if (paramsList.some((p) => /^q=0(\.0*)?$/.test(p.replace(/\s+/g, "")))) continue;
    if (mediaRange === "*/*") return true;
    for (const type of types) {
      if (mediaRange === type) return true;
      if (mediaRange.endsWith("/*") && type.startsWith(mediaRange.slice(0, -1))) return true;
    }
  }
  return false;
}

export const isJsonObject = isObject;
