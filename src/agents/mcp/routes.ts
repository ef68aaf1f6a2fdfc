/**
 * MCP (Model Context Protocol) at `/mcp`: the streamable-HTTP transport, stateless and JSON-only —
 * no session ids, no server-initiated SSE stream (GET answers 405, which the spec reserves for that).
 * Every assistant is a tool; calling it runs the assistant as a stateless run.
 *
 *   POST a request         → 200 JSON-RPC response (`initialize`, `ping`, `tools/list`, `tools/call`)
 *   POST a notification or response → 202, no body
 *   POST something else    → 400 with a JSON-RPC error body (-32700 malformed JSON, -32600 otherwise)
 */
import { type Context, Hono } from "hono";
import { HangarError } from "../../errors.js";
import { type AppEnv, orgOf } from "../../http/context.js";
import type { Logger } from "../../logger.js";
import type { Assistant } from "../../storage/ports.js";
import { SERVER_VERSION } from "../a2a/card.js";
import { errorText } from "../a2a/messages.js";
import { authorize } from "../authz.js";
import type { AgentDeps } from "../context.js";
import {
  accepts,
  invalidParams,
  isJsonObject,
  parseEnvelope,
  RPC,
  RpcError,
  rpcError,
  rpcResult,
} from "../jsonrpc.js";
import { simplifyInputSchema, toolInfo, toolName } from "./tools.js";

type C = Context<AppEnv>;

/** Protocol revisions this server speaks; a client asking for another one gets the newest. */
export const MCP_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const SERVER_INFO = { name: "hangar", version: SERVER_VERSION };
const PAGE_SIZE = 100;

export function mcpRoutes(deps: AgentDeps, log: Logger) {
  const { storage, graphs, runs } = deps;

  /**
   * Assistants in a stable order (oldest first), one page at a time: those the caller may see
   * (`assistants:search`, custom auth).
   */
  const page = async (c: C, offset: number) =>
    storage.assistants.search(orgOf(c), {
      limit: PAGE_SIZE,
      offset,
      sort_by: "created_at",
      sort_order: "asc",
      auth: (await authorize(deps, c, "assistants", "search", { limit: PAGE_SIZE, offset })).filter,
    });

  const nameOf = (a: Assistant) => toolName(a.name) || a.assistant_id;

  async function listTools(c: C, params: unknown) {
    const cursor = isJsonObject(params) ? params.cursor : undefined;
    let offset = 0;
    if (cursor !== undefined && cursor !== null) {
      if (typeof cursor !== "string" || !/^\d+$/.test(cursor)) throw invalidParams("Invalid cursor");
      offset = Number(cursor);
    }
    const { items, total } = await page(c, offset);
    const seen = new Set<string>();
    const tools = [];
    for (const assistant of items) {
      const name = nameOf(assistant);
      if (seen.has(name)) continue; // the oldest assistant of a name is the tool
      seen.add(name);
      try {
        const { input_schema } = await graphs.schemas(assistant.graph_id, assistant.config, {
          fromSource: false,
        });
        tools.push({ ...toolInfo(assistant, name), inputSchema: simplifyInputSchema(input_schema) });
      } catch (err) {
        log.warn("MCP: assistant left out of tools/list, its input schema failed", {
          assistant_id: assistant.assistant_id,
          error: (err as Error)?.message ?? String(err),
        });
      }
    }
    const next = offset + items.length;
    return next < total ? { tools, nextCursor: String(next) } : { tools };
  }

  async function findTool(c: C, name: string): Promise<Assistant | null> {
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const { items } = await page(c, offset);
      const found = items.find((a) => nameOf(a) === name);
      if (found) return found;
      if (items.length < PAGE_SIZE) return null;
    }
  }

  async function callTool(c: C, params: unknown) {
    if (!isJsonObject(params)) throw invalidParams("Invalid params: must be an object");
    const { name, arguments: args, context } = params;
    if (typeof name !== "string" || name === "")
      throw invalidParams("Invalid params: 'name' must be a tool name");
    if (args !== undefined && args !== null && !isJsonObject(args)) {
      throw invalidParams("Invalid params: 'arguments' must be an object");
    }
    const org = orgOf(c);
    const assistant = await findTool(c, name);
    if (!assistant) throw invalidParams(`Unknown tool: ${name}`);
    const signal = c.req.raw.signal;
    let runId: string | undefined;
    try {
      // A stateless run, admitted as any other for this user (threads:create_run may stamp its metadata).
      const { value } = await authorize(deps, c, "threads", "create_run", {
        thread_id: null,
        assistant_id: assistant.assistant_id,
        metadata: {} as Record<string, unknown>,
      });
      const run = await runs.create(
        org,
        null,
        {
          assistant_id: assistant.assistant_id,
          input: args ?? {},
          metadata: value.metadata,
          ...(isJsonObject(context) ? { context } : {}),
        },
        c.req.raw.headers,
        c.get("auth"),
      );
      runId = run.run_id;
      // A caller that gives up does not leave the tool running.
      const cancel = () => void runs.cancel(org, null, run.run_id, "interrupt").catch(() => {});
      signal.addEventListener("abort", cancel, { once: true });
      const result = await runs.joinRun(org, run, signal);
      signal.removeEventListener("abort", cancel);
      if (isJsonObject(result) && "__error__" in result) {
        return { isError: true, content: [{ type: "text", text: errorText(result.__error__) }] };
      }
      return { content: [{ type: "text", text: JSON.stringify(result ?? null) }] };
    } catch (err) {
      if (err instanceof HangarError)
        return { isError: true, content: [{ type: "text", text: err.message }] };
      log.error("MCP tool call failed", {
        tool: name,
        run_id: runId,
        error: (err as Error)?.stack ?? String(err),
      });
      throw new RpcError(RPC.INTERNAL_ERROR, "Internal server error");
    }
  }

  const dispatch = async (c: C, method: string, params: unknown): Promise<unknown> => {
    switch (method) {
      case "initialize": {
        const asked = isJsonObject(params) ? params.protocolVersion : undefined;
        const protocolVersion =
          typeof asked === "string" && MCP_PROTOCOL_VERSIONS.includes(asked)
            ? asked
            : MCP_PROTOCOL_VERSIONS[0];
        return { protocolVersion, capabilities: { tools: { listChanged: false } }, serverInfo: SERVER_INFO };
      }
      case "ping":
        return {};
      case "tools/list":
        return listTools(c, params);
      case "tools/call":
        return callTool(c, params);
      default:
        throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
  };

  const badRequest = (c: C, error: RpcError, id: string | number | null = null) =>
    c.json(rpcError(id, error), 400);

  return new Hono<AppEnv>()
    .post("/mcp", async (c) => {
      if (!accepts(c.req.header("accept"), ["application/json", "text/event-stream"])) {
        return badRequest(
          c,
          new RpcError(
            RPC.INVALID_REQUEST,
            "Accept header must include application/json or text/event-stream",
          ),
        );
      }
      const envelope = parseEnvelope(await c.req.text());
      if (envelope.kind === "invalid") return badRequest(c, envelope.error, envelope.id);
      if (envelope.kind !== "request") return c.body(null, 202);
      try {
        return c.json(rpcResult(envelope.id, await dispatch(c, envelope.method, envelope.params)));
      } catch (err) {
        if (err instanceof RpcError) return c.json(rpcError(envelope.id, err));
        log.error("MCP request failed", {
          method: envelope.method,
          error: (err as Error)?.stack ?? String(err),
        });
        return c.json(rpcError(envelope.id, new RpcError(RPC.INTERNAL_ERROR, "Internal server error")));
      }
    })
    .on(["GET", "PUT", "PATCH", "DELETE"], "/mcp", (c) => {
      c.header("Allow", "POST");
      return c.json(
        rpcError(
          null,
          new RpcError(-32000, "Method not allowed: this MCP endpoint is stateless; POST JSON-RPC messages"),
        ),
        405,
      );
    });
}
