/**
 * A2A (agent-to-agent, protocols 1.0 and 0.3, JSON-RPC binding), the version chosen per request
 * (versions.ts):
 *   GET  /.well-known/agent-card.json?assistant_id=…   the assistant's agent card (1.0 or 0.3 shape)
 *   POST /a2a/{assistant_id}                           SendMessage, SendStreamingMessage, GetTask,
 *        CancelTask, ListTasks, SubscribeToTask (1.0); message/send, message/stream, tasks/get,
 *        tasks/cancel, tasks/resubscribe (0.3)
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
import { agentCard, agentCardV1, requestBaseUrl } from "./card.js";
import { A2A_ERRORS } from "./messages.js";
import { A2AService } from "./service.js";
import type { ArtifactUpdate, StatusUpdate, Task } from "./tasks.js";
import { pushNotSupported, sendParamsFromV1, v1StreamResponse, v1Task } from "./v1.js";
import { type A2AVersion, parseVersion, route, versionNotSupported } from "./versions.js";

const VERSION_HEADER = "A2A-Version";

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

  /** The version a client asks for: the `A2A-Version` header, else the query parameter the spec allows. */
  const requestedVersion = (c: C) => c.req.header(VERSION_HEADER) ?? c.req.query(VERSION_HEADER);

  const card = async (c: C, assistantId: string | undefined) => {
    c.header("Vary", VERSION_HEADER);
    const cardError = (message: string, code: number = RPC.INVALID_PARAMS) =>
      c.json({ error: { code, message } }, 400);
    if (!assistantId) return cardError("Missing required query parameter: assistant_id");
    // A 1.0 client (its resolver sends `A2A-Version: 1.0`) gets the 1.0 card; no header means 0.3.
    const asked = requestedVersion(c)?.trim();
    const version: A2AVersion | null = asked ? parseVersion(asked) : "0.3";
    if (!version) {
      const err = versionNotSupported(asked ?? "");
      return cardError(err.message, err.code);
    }
    try {
      // Only a caller who may use the assistant sees its card (assistants:read, as for its messages).
      const assistant = await serviceFor(c).assistant(orgOf(c), assistantId);
      return c.json(version === "1.0" ? agentCardV1(assistant, baseOf(c)) : agentCard(assistant, baseOf(c)));
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
    let chosen: ReturnType<typeof route>;
    try {
      chosen = route(requestedVersion(c), method);
    } catch (err) {
      return c.json(rpcError(id, asRpcError(err, method)));
    }
    const { version, operation } = chosen;
    const v1 = version === "1.0";
    const org = orgOf(c);
    const pathId = c.req.param("assistant_id")!;
    const headers = c.req.raw.headers;
    const accept = c.req.header("accept");
    /** 1.0 requests carry 1.0 shapes; the service reads and answers in 0.3's. */
    const sendParams = () => (v1 ? sendParamsFromV1(params) : params);
    const asTask = (task: Task) => (v1 ? v1Task(task) : task);

    if (operation === "stream" || operation === "subscribe") {
      if (!accepts(accept, ["text/event-stream"])) {
        return c.json({ error: "Accept header must include text/event-stream for streaming" }, 400);
      }
      const events = (signal: AbortSignal): AsyncIterable<Task | StatusUpdate | ArtifactUpdate> =>
        operation === "stream"
          ? serviceFor(c).stream(org, pathId, sendParams(), headers, signal)
          : serviceFor(c).subscribe(org, pathId, params, signal);
      async function* results(signal: AbortSignal) {
        for await (const event of events(signal)) yield v1 ? v1StreamResponse(event) : event;
      }
      return sseResponse((signal) => frames(id, method, results(signal)), { withIds: false });
    }
    if (!accepts(accept, ["application/json"])) {
      return c.json({ error: "Accept header must include application/json" }, 400);
    }
    try {
      const signal = c.req.raw.signal;
      let result: unknown;
      switch (operation) {
        case "send": {
          const task = await serviceFor(c).send(org, pathId, sendParams(), headers, signal);
          result = v1 ? { task: v1Task(task) } : task;
          break;
        }
        case "get":
          result = asTask(await serviceFor(c).getTask(org, pathId, params));
          break;
        case "cancel":
          result = asTask(await serviceFor(c).cancelTask(org, pathId, params, signal));
          break;
        case "list": {
          const page = await serviceFor(c).listTasks(org, pathId, params);
          result = { ...page, tasks: page.tasks.map(v1Task) };
          break;
        }
        case "push-config":
          throw pushNotSupported();
        case "extended-card":
          throw new RpcError(
            A2A_ERRORS.UNSUPPORTED_OPERATION,
            "This agent has no extended agent card (capabilities.extendedAgentCard is false): the public card is the whole card",
          );
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
