/**
 * The thread-centric streaming protocol over HTTP (agent-protocol `streaming/`, reference
 * protocol-v2.md): `POST /threads/{thread_id}/commands` (commands.ts) and
 * `POST /threads/{thread_id}/stream/events` (the thread's events over SSE: kept ones after `since`,
 * then live, filtered by filter.ts). Envelopes are `@langchain/protocol`'s, snake_case.
 *
 * Errors: a command refused is HTTP 200 with the protocol's ErrorResponse (the SDK reads `.code` only
 * from a 2xx); a body that is no command or stream request is 400 with the same shape, `id` null.
 */
import type { CommandResponse, ErrorCode, ErrorResponse, Event } from "@langchain/protocol";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { authorize, visibleThread } from "../agents/authz.js";
import { HangarError, StatusError } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import type { ApiDocs } from "../http/openapi.js";
import { sseResponse } from "../http/sse.js";
import { matchesFilter } from "../storage/filter.js";
import type { RunEvent } from "../streams/run-log.js";
import { COMMANDS, CommandError, type ProtocolDeps } from "./commands.js";
import { type EventFilter, matches } from "./filter.js";
import type { ThreadEvent, ThreadEventItem } from "./thread-events.js";

type C = Context<AppEnv>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Bounds of a stream request: what one reader can make the server hold and test per event. */
const MAX_FILTER_ITEMS = 64;
const MAX_NAMESPACE_DEPTH = 32;
const MAX_NAME = 256;

const name = z.string().max(MAX_NAME);
export const EventStreamRequest = z
  .object({
    channels: z.array(name).min(1).max(MAX_FILTER_ITEMS),
    namespaces: z.array(z.array(name).max(MAX_NAMESPACE_DEPTH)).max(MAX_FILTER_ITEMS).optional(),
    depth: z.int().min(0).max(1_000).optional(),
    since: z.int().min(0).optional(),
  })
  .loose();

export const ProtocolCommand = z
  .object({
    id: z.int().min(0),
    method: z.string().min(1).max(MAX_NAME),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

const ThreadIdPath = z.object({ thread_id: z.string() });

/** A 400 in the protocol's error shape, naming the problem. */
export class BadRequest extends Error {}

export function errorResponse(
  id: number | null,
  error: ErrorCode,
  message: string,
  meta?: object,
): ErrorResponse {
  return { type: "error", id, error, message, ...(meta && { meta }) };
}

/** The protocol code of an error a handler threw (the REST routes' errors, mapped once here). */
function codeOf(err: unknown): { code: ErrorCode; message: string } | null {
  if (err instanceof CommandError) return { code: err.code, message: err.message };
  if (err instanceof StatusError)
    return {
      code: err.status === 401 || err.status === 403 ? "permission_denied" : "invalid_argument",
      message: err.message,
    };
  if (err instanceof HangarError) {
    const code: ErrorCode =
      err.kind === "forbidden" || err.kind === "unauthorized" ? "permission_denied" : "invalid_argument";
    return { code, message: err.message };
  }
  return null;
}

async function jsonBody(c: C): Promise<unknown> {
  const text = await c.req.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest("the body must be JSON");
  }
}

export function threadIdOf(c: C): string {
  const threadId = c.req.param("thread_id") ?? "";
  if (!UUID.test(threadId)) throw new BadRequest(`thread_id must be a UUID, got ${JSON.stringify(threadId)}`);
  return threadId;
}

const problem = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ");

/** The wire form of a kept event (`event_id` = `seq`, also the SSE id); the same on the WebSocket. */
export function wireEvent(e: ThreadEvent): Event {
  return {
    type: "event",
    event_id: String(e.seq),
    seq: e.seq,
    method: e.method,
    params: {
      namespace: e.namespace,
      timestamp: e.timestamp,
      ...(e.node !== undefined && { node: e.node }),
      data: e.data,
    },
  } as Event;
}

/** What a reader is told when events it asked for are no longer kept; then its stream goes on. */
export function missedError(item: Extract<ThreadEventItem, { kind: "missed" }>) {
  return {
    ...errorResponse(
      null,
      "invalid_argument",
      `Events ${item.from} to ${item.to} of this thread are no longer kept (the thread's event buffer holds the newest only); the stream goes on from ${item.to + 1}`,
    ),
    missed: { from: item.from, to: item.to },
  };
}

/**
 * Who may read a thread's events: whoever may read the thread. A thread not created yet (run.start
 * creates it) may be followed ahead of it, unless a custom auth filter decides who sees threads:
 * then only a thread that exists and passes it.
 */
export async function mayRead(deps: ProtocolDeps, c: C, threadId: string): Promise<void> {
  const thread = await deps.storage.threads.get(orgOf(c), threadId);
  if (thread) return void (await visibleThread(deps, c, threadId, "read"));
  const { filter } = await authorize(deps, c, "threads", "read", { thread_id: threadId });
  if (filter && !matchesFilter({}, filter)) await visibleThread(deps, c, threadId, "read"); // 404
}

/**
 * One command of the registry, answered as the protocol says: the result, or the error a handler
 * refused with (`CommandError`, or the REST routes' errors mapped by `codeOf`); anything else throws.
 * The same for `POST …/commands` and the WebSocket.
 */
export async function runCommand(
  deps: ProtocolDeps,
  c: C,
  threadId: string,
  { id, method, params = {} }: { id: number; method: string; params?: Record<string, unknown> },
): Promise<CommandResponse | ErrorResponse> {
  const handler = Object.hasOwn(COMMANDS, method) ? COMMANDS[method] : undefined;
  const meta = async () => ({
    thread_id: threadId,
    applied_through_seq: await deps.threadEvents.lastSeq(orgOf(c), threadId),
  });
  if (!handler)
    return errorResponse(id, "unknown_command", `Unknown command ${JSON.stringify(method)}`, await meta());
  try {
    const result = await handler(params, { deps, c, threadId });
    return { type: "success", id, result, meta: await meta() } as CommandResponse;
  } catch (err) {
    const known = codeOf(err);
    if (!known) throw err;
    // A refusal tells the thread's seq only to a caller who may read the thread.
    const readable = (await readRefusal(deps, c, threadId, id)) === null;
    return errorResponse(id, known.code, known.message, readable ? await meta() : undefined);
  }
}

/**
 * Null when the caller may read the thread (`mayRead`), else the protocol error answering command `id`:
 * a WebSocket checks it again for each subscription, so access withdrawn after the upgrade applies.
 */
export async function readRefusal(
  deps: ProtocolDeps,
  c: C,
  threadId: string,
  id: number,
): Promise<ErrorResponse | null> {
  try {
    await mayRead(deps, c, threadId);
    return null;
  } catch (err) {
    const known = codeOf(err);
    if (!known) throw err;
    return errorResponse(id, known.code, known.message);
  }
}

export function protocolRoutes(deps: ProtocolDeps) {
  const feed = deps.threadEvents;
  const sse = (e: ThreadEvent): RunEvent => ({
    id: e.seq,
    event: e.method,
    data: JSON.stringify(wireEvent(e)),
  });
  const missed = (item: Extract<ThreadEventItem, { kind: "missed" }>): RunEvent => ({
    id: item.to,
    event: "error",
    data: JSON.stringify(missedError(item)),
  });

  return new Hono<AppEnv>()
    .onError((err, c) => {
      if (err instanceof BadRequest) return c.json(errorResponse(null, "invalid_argument", err.message), 400);
      throw err; // the app's error handler (auth refusals, 404s of the stream route)
    })
    .post("/threads/:thread_id/commands", async (c) => {
      const threadId = threadIdOf(c);
      const parsed = ProtocolCommand.safeParse(await jsonBody(c));
      if (!parsed.success) throw new BadRequest(`not a protocol command: ${problem(parsed.error)}`);
      return c.json(await runCommand(deps, c, threadId, parsed.data));
    })
    .post("/threads/:thread_id/stream/events", async (c) => {
      const threadId = threadIdOf(c);
      const parsed = EventStreamRequest.safeParse(await jsonBody(c));
      if (!parsed.success) throw new BadRequest(`not an event stream request: ${problem(parsed.error)}`);
      await mayRead(deps, c, threadId);
      const filter: EventFilter = parsed.data;
      const org = orgOf(c);
      return sseResponse(
        (signal) =>
          (async function* () {
            for await (const item of feed.follow(org, threadId, parsed.data.since, signal)) {
              if (item.kind === "missed") yield missed(item);
              else if (matches(item.event, filter)) yield sse(item.event);
            }
          })(),
        { withIds: true },
      );
    });
}

export const protocolApiDocs: ApiDocs = {
  tags: [
    {
      name: "Thread Streaming",
      description:
        "The thread-centric streaming protocol (agent-protocol `streaming/`, `@langchain/protocol`), as " +
        "`client.threads.stream()` of the SDK and `@langchain/react` speak it.",
    },
  ],
  routes: {
    "POST /threads/{thread_id}/commands": {
      tag: "Thread Streaming",
      summary: "Send a protocol command",
      description:
        "`{id, method, params}`: `run.start` (creates the thread if needed; on a thread with pending " +
        "interrupts, input resumes them), `input.respond`, `state.get`, and the subscription commands " +
        '(connection-scoped over HTTP: open a stream instead). Answers HTTP 200 with `{type: "success", ' +
        'id, result, meta}` or `{type: "error", id, error, message}`; a body that is no command: 400 ' +
        "with the error shape. Authorized as the REST routes: `run.start` as creating a run on the " +
        "thread, `state.get` as reading it.",
      params: ThreadIdPath,
      body: ProtocolCommand,
      response: z.record(z.string(), z.unknown()),
      errors: [400],
    },
    "POST /threads/{thread_id}/stream/events": {
      tag: "Thread Streaming",
      summary: "Follow a thread's protocol events",
      description:
        "The thread's events with seq > `since` (default: every event kept), then each new one, across " +
        "runs, until the client closes the stream; filtered by `channels`, `namespaces` (prefixes) and " +
        "`depth`. Unknown keys are ignored. A thread not created yet streams nothing until its first run.",
      params: ThreadIdPath,
      body: EventStreamRequest,
      stream:
        '`id:` is the event\'s seq; `data:` the protocol Event `{type: "event", event_id, seq, method, params}`. ' +
        'If events after `since` are no longer kept, an `error` event `{type: "error", id: null, error: ' +
        '"invalid_argument", message, missed: {from, to}}` comes first. Heartbeat comments while idle.',
      errors: [400],
    },
    "GET /threads/{thread_id}/stream/events": {
      tag: "Thread Streaming",
      summary: "The protocol over a WebSocket",
      status: 426,
      description:
        "A WebSocket (send `Upgrade: websocket`): JSON text frames both ways — commands as on " +
        "`POST /threads/{thread_id}/commands`, plus `subscription.subscribe` / `unsubscribe` / `reconnect`; " +
        "the server sends command responses and the subscriptions' events in seq order. Credentials as " +
        "headers, or (browsers) as subprotocols `hangar.key.<base64url>` / `hangar.authorization.<base64url>` " +
        "beside `hangar.console`. A refused upgrade is closed with 4000 + the HTTP status; a plain GET is " +
        "answered 426.",
      params: ThreadIdPath,
      responses: { 101: { description: "Switching Protocols: the WebSocket" } },
      errors: [400, 404],
    },
  },
};
