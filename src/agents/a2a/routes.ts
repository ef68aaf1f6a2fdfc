/**
 * A2A (agent-to-agent, protocol v0.3, JSON-RPC binding):
 *   GET  /.well-known/agent-card.json?assistant_id=…   the assistant's agent card
 *   POST /a2a/{assistant_id}                           message/send, message/stream, tasks/get, tasks/cancel
 *   GET  /a2a/{assistant_id}[/.well-known/agent-card.json]   the card again, where A2A clients look for it
 *
 * Every JSON-RPC answer, errors included, is HTTP 200 (the official server's newest convention); only an
 * `Accept` header that rules out the reply's content type gets HTTP 400 `{"error": "…"}`.
 */

import { type Context, Hono } from "hono";
import { type AppEnv, orgOf } from "../../http/context.js";
import { mountPrefixOf } from "../../http/mount-prefix.js";
import { sseResponse } from "../../http/sse.js";
import type { Logger } from "../../logger.js";
import type { RunEvent } from "../../streams/run-log.js";
import { accessOf } from "../authz.js";
import type { AgentDeps } from "../context.js";
import { accepts, parseEnvelope, RPC, RpcError, type RpcId, rpcError, rpcResult } from "../jsonrpc.js";
import { agentCard, requestBaseUrl } from "./card.js";
import { A2AService } from "./service.js";

type C = Context<AppEnv>;

export function a2aRoutes(deps: AgentDeps, log: Logger) {
  const serviceFor = (c: C) => (deps.auth ? new A2AService(deps, accessOf(deps, c)) : service);
  const service = new A2AService(deps);
  const configuredBase = deps.config.publicUrl;
  const baseOf = (c: C) => configuredBase ?? requestBaseUrl(c.req.url, c.req.raw.headers) + mountPrefixOf(c);

  /** Anything but an RpcError is a bug: logged, and answered without its details. */
  const asRpcError = (err: unknown, method: string): RpcError => {
    if (err instanceof RpcError) return err;
    log.error("A2A request failed", { method, error: (err as Error)?.stack ?? String(err) });
    return new RpcError(RPC.INTERNAL_ERROR, "Internal server error");
  };

  const card = async (c: C, assistantId: string | undefined) => {
    const cardError = (message: string) => c.json({ error: { code: RPC.INVALID_PARAMS, message } }, 400);
    if (!assistantId) return cardError("Missing required query parameter: assistant_id");
    try {
      // Only a caller who may use the assistant sees its card (assistants:read, as for its messages).
      const assistant = await serviceFor(c).assistant(orgOf(c), assistantId);
      return c.json(agentCard(assistant, baseOf(c)));
    } catch (err) {
      if (err instanceof RpcError) return cardError(err.message);
      throw err;
    }
  };

  /** One SSE frame per JSON-RPC response, each carrying the request id; a failure ends with an error frame. */
  async function* frames(
    id: RpcId,
    method: string,
    results: AsyncIterable<unknown>,
  ): AsyncGenerator<RunEvent> {
    let n = 0;
    try {
      for await (const result of results) {
        yield { id: n++, event: "message", data: JSON.stringify(rpcResult(id, result)) };
      }
    } catch (err) {
      yield { id: n++, event: "message", data: JSON.stringify(rpcError(id, asRpcError(err, method))) };
    }
  }

  const rpc = async (c: C) => {
    const envelope = parseEnvelope(await c.req.text());
    if (envelope.kind === "invalid") return c.json(rpcError(envelope.id, envelope.error));
    if (envelope.kind === "response") return c.body(null, 202);
    if (envelope.kind === "notification") {
      return c.json(
        rpcError(null, new RpcError(RPC.INVALID_REQUEST, "Invalid Request: A2A methods need an 'id'")),
      );
    }
    const { id, method, params } = envelope;
    const org = orgOf(c);
    const pathId = c.req.param("assistant_id")!;
    const headers = c.req.raw.headers;
    const accept = c.req.header("accept");

    if (method === "message/stream") {
      if (!accepts(accept, ["text/event-stream"])) {
        return c.json({ error: "Accept header must include text/event-stream for streaming" }, 400);
      }
      return sseResponse(
        (signal) => frames(id, method, serviceFor(c).stream(org, pathId, params, headers, signal)),
        { withIds: false },
      );
    }
    if (!accepts(accept, ["application/json"])) {
      return c.json({ error: "Accept header must include application/json" }, 400);
    }
    try {
      const signal = c.req.raw.signal;
      let result: unknown;
      switch (method) {
        case "message/send":
          result = await serviceFor(c).send(org, pathId, params, headers, signal);
          break;
        case "tasks/get":
          result = await serviceFor(c).getTask(org, pathId, params);
          break;
        case "tasks/cancel":
          result = await serviceFor(c).cancelTask(org, pathId, params, signal);
          break;
        default:
          throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${method}`);
      }
      return c.json(rpcResult(id, result));
    } catch (err) {
      return c.json(rpcError(id, asRpcError(err, method)));
    }
  };

  const notAllowed = (c: C) => {
    c.header("Allow", "GET, POST");
    return c.json({ detail: `Method ${c.req.method} not allowed on the A2A endpoint` }, 405);
  };

  return new Hono<AppEnv>()
    .get("/.well-known/agent-card.json", (c) => card(c, c.req.query("assistant_id")))
    .get("/a2a/:assistant_id/.well-known/agent-card.json", (c) => card(c, c.req.param("assistant_id")))
    .get("/a2a/:assistant_id/.well-known/agent.json", (c) => card(c, c.req.param("assistant_id")))
    .get("/a2a/:assistant_id", (c) => card(c, c.req.param("assistant_id")))
    .post("/a2a/:assistant_id", rpc)
    .on(["PUT", "PATCH", "DELETE"], "/a2a/:assistant_id", notAllowed);
}
