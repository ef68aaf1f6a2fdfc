/**
 * The thread-centric protocol over a WebSocket: `GET /threads/{id}/stream/events` upgraded (spec §6;
 * reference/protocol-v2.md §1.9). JSON text frames both ways: the client sends `Command`s, the server
 * answers each with a `CommandResponse` or `ErrorResponse` and sends the `Event`s of the connection's
 * subscriptions.
 *
 * - Every command of the registry runs as on `POST /threads/{id}/commands`, with the credentials of the
 *   upgrade request; `subscription.subscribe` / `unsubscribe` / `reconnect` are the connection's own.
 * - A subscription is answered at once with `replayed_events` (the kept events of the thread's latest
 *   run that match it), then those events, then live ones, across runs until it is unsubscribed or the
 *   socket closes. Overlapping subscriptions each get their events (the spec's fan-out; the SDK dedupes).
 * - A subscription id carries its filter (`<base64url(JSON filter)>.<random>`), so
 *   `subscription.reconnect` restores subscriptions of a closed socket on any API process, from
 *   `last_event_id`.
 * - A frame that is not a command is answered with the protocol's error shape (`id: null`); the
 *   connection stays open.
 * - Flow control: while more than SOCKET_HIGH_WATER bytes wait to go out, subscriptions stop reading
 *   the thread's buffer (the events stay there, durable); a client that has read nothing for
 *   STALLED_MS while events wait, or that lets SEND_QUEUE_CAP bytes pile up, is closed with
 *   CLOSE_NOT_READING.
 */
import { randomUUID } from "node:crypto";
import type { CommandResponse, ErrorResponse } from "@langchain/protocol";
import { Hono } from "hono";
import type { WebSocket, WebSocketServer } from "ws";
import { webSocketProtocol } from "../console/routes.js";
import { type AppEnv, orgOf } from "../http/context.js";
import type { UpgradeEnv } from "../http/upgrade.js";
import type { OrgId } from "../storage/ports.js";
import type { ProtocolDeps } from "./commands.js";
import { type EventFilter, isChannel, matches } from "./filter.js";
import {
  BadRequest,
  errorResponse,
  mayRead,
  missedError,
  readRefusal,
  runCommand,
  threadIdOf,
  wireEvent,
} from "./routes.js";
import type { ThreadEventFeed, ThreadEventItem } from "./thread-events.js";

/** Subscriptions one connection may hold at once. */
export const MAX_SUBSCRIPTIONS = 64;
/** Bytes waiting to go out above which subscriptions stop reading events. */
export const SOCKET_HIGH_WATER = 2 ** 20;
/** Bytes waiting to go out at which the client is deemed not to read (a large answer can pass the high water). */
export const SEND_QUEUE_CAP = 16 * 2 ** 20;
/** How long events may wait on a client that reads nothing before it is closed. */
export const STALLED_MS = 15_000;
/** "Try Again Later" (RFC 6455 registry): not final for the SDK, which reconnects and re-subscribes. */
export const CLOSE_NOT_READING = 1013;

/** A command frame once its id and method are checked. */
interface ProtocolCommand {
  id: number;
  method: string;
  params?: Record<string, unknown>;
}

export interface SocketContext {
  org: OrgId;
  threadId: string;
  feed: ThreadEventFeed;
  /** Runs a command of the registry as `POST /threads/{id}/commands` does for this connection's caller. */
  execute(command: ProtocolCommand): Promise<CommandResponse | ErrorResponse>;
  /** Whether `runId` names a run of this thread (`subscription.reconnect`'s `run_id`). */
  runExists(runId: string): Promise<boolean>;
  /** Null while the caller may still read the thread, else the error answering command `id`. */
  readRefusal(id: number): Promise<ErrorResponse | null>;
}

const failure = errorResponse;

/** `EventFilter` from a command's params, or the reason it is not one. */
export function parseFilter(params: Record<string, unknown>, method: string): EventFilter | string {
  const { channels, namespaces, depth } = params;
  if (!Array.isArray(channels) || channels.length === 0) {
    return `${method} requires a non-empty channels array.`;
  }
  for (const channel of channels) {
    if (typeof channel !== "string" || !isChannel(channel)) {
      return `${method}: unsupported channel ${JSON.stringify(channel)}.`;
    }
  }
  if (
    namespaces !== undefined &&
    (!Array.isArray(namespaces) ||
      !namespaces.every((ns) => Array.isArray(ns) && ns.every((s) => typeof s === "string")))
  ) {
    return `${method}: namespaces must be an array of string arrays.`;
  }
  if (depth !== undefined && !(Number.isInteger(depth) && (depth as number) >= 0)) {
    return `${method}: depth must be an integer ≥ 0.`;
  }
  return {
    channels: channels as string[],
    ...(namespaces !== undefined && { namespaces: namespaces as string[][] }),
    ...(depth !== undefined && { depth: depth as number }),
  };
}

const subscriptionId = (filter: EventFilter) =>
  `${Buffer.from(JSON.stringify(filter)).toString("base64url")}.${randomUUID()}`;

/** The filter a subscription id carries (null: not one this server made). */
function filterOf(id: unknown): EventFilter | null {
  if (typeof id !== "string" || id.length > 16_384) return null;
  const dot = id.lastIndexOf(".");
  if (dot <= 0) return null;
  try {
    const parsed = JSON.parse(Buffer.from(id.slice(0, dot), "base64url").toString("utf8"));
    const filter = parsed && typeof parsed === "object" ? parseFilter(parsed, "subscription") : null;
    return filter && typeof filter === "object" ? filter : null;
  } catch {
    return null;
  }
}

export function handleProtocolSocket(ws: WebSocket, ctx: SocketContext): void {
  const { org, threadId, feed } = ctx;
  /** The connection's subscriptions: each with the last seq it was given (or skipped). */
  const subscriptions = new Map<string, { filter: EventFilter; delivered: number }>();
  let closed = false;

  // Flow control: waiters for the send queue to drain, resolved from send callbacks.
  let drained: (() => void)[] = [];
  let stalledTimer: NodeJS.Timeout | undefined;
  const closeNotReading = (why: string) => {
    if (closed) return;
    ws.close(CLOSE_NOT_READING, why);
    // The close frame waits behind what the client does not read: free the socket anyway.
    setTimeout(() => ws.terminate(), 2000).unref();
    shutdown();
  };
  const send = (frame: object) => {
    if (closed || ws.readyState !== ws.OPEN) return;
    ws.send(JSON.stringify(frame), () => {
      if (ws.bufferedAmount < SOCKET_HIGH_WATER / 2 && drained.length) {
        clearTimeout(stalledTimer);
        stalledTimer = undefined;
        const waiters = drained;
        drained = [];
        for (const resolve of waiters) resolve();
      }
    });
    if (ws.bufferedAmount > SEND_QUEUE_CAP) {
      closeNotReading(`more than ${SEND_QUEUE_CAP} bytes waited to be sent: the client is not reading`);
    }
  };
  /** Resolves once the send queue is below the high water (at once if it is). */
  const writable = (): Promise<void> => {
    if (ws.bufferedAmount <= SOCKET_HIGH_WATER) return Promise.resolve();
    stalledTimer ??= setTimeout(
      () => closeNotReading(`events waited ${STALLED_MS / 1000} s for a client that read nothing`),
      STALLED_MS,
    );
    return new Promise((resolve) => drained.push(resolve));
  };

  /**
   * One reader of the thread's events per connection, in seq order, fanned out to every subscription
   * that matches and has not had it (so events reach the client in order across subscriptions). It
   * restarts from further back when a new subscription needs a replay before where it is.
   */
  let pump: AbortController | null = null;
  let position = Number.POSITIVE_INFINITY; // the last seq the pump read
  /** Missed-event notes up to this seq were already answered (`subscription.reconnect`'s `missed_events`). */
  let missedAnswered = 0;
  const runPump = (from: number) => {
    pump?.abort();
    const abort = new AbortController();
    pump = abort;
    position = from;
    void (async () => {
      for await (const item of feed.follow(org, threadId, from, abort.signal)) {
        if (abort.signal.aborted) return;
        if (item.kind === "missed") {
          const behind = [...subscriptions.values()].filter((sub) => sub.delivered < item.to);
          // Reported, not fatal: what is still kept follows.
          if (behind.length && item.to > missedAnswered) send(missedError(item));
          for (const sub of behind) sub.delivered = item.to;
          position = item.to;
          continue;
        }
        const event = item.event;
        for (const sub of subscriptions.values()) {
          if (event.seq <= sub.delivered) continue;
          sub.delivered = event.seq;
          if (!matches(event, sub.filter)) continue;
          await writable();
          if (abort.signal.aborted) return;
          send(wireEvent(event));
        }
        position = event.seq;
      }
    })().catch((err) => {
      if (!abort.signal.aborted)
        send(failure(null, "unknown_error", `Event stream ended: ${(err as Error).message}`));
    });
  };
  /** Adds a subscription that wants the events after `from`. */
  const start = (id: string, filter: EventFilter, from: number) => {
    subscriptions.set(id, { filter, delivered: from });
    if (!pump || from < position) runPump(Math.min(from, position));
  };

  const shutdown = () => {
    if (closed) return;
    closed = true;
    clearTimeout(stalledTimer);
    pump?.abort();
    subscriptions.clear();
    for (const resolve of drained) resolve();
    drained = [];
  };
  ws.on("close", shutdown);
  ws.on("error", shutdown);

  /**
   * Reads the thread's kept events once to find where its latest run began and how many of that
   * run's events match `filter` (`replayed_events`), keeping no event in memory.
   */
  async function latestRun(filter: EventFilter): Promise<{ from: number; count: number }> {
    const last = await feed.lastSeq(org, threadId);
    if (last === 0) return { from: 0, count: 0 };
    const scan = new AbortController();
    let runId: string | undefined;
    let from = 0;
    let count = 0;
    try {
      for await (const item of feed.follow(org, threadId, undefined, scan.signal)) {
        if (item.kind !== "event") continue;
        const event = item.event;
        if (event.run_id !== runId) {
          runId = event.run_id;
          from = event.seq - 1;
          count = 0;
        }
        if (matches(event, filter)) count++;
        if (event.seq >= last) break;
      }
    } finally {
      scan.abort();
    }
    return { from, count };
  }

  const tooMany = () =>
    subscriptions.size >= MAX_SUBSCRIPTIONS
      ? `A connection holds at most ${MAX_SUBSCRIPTIONS} subscriptions; unsubscribe one first.`
      : null;

  async function subscribe(command: ProtocolCommand): Promise<void> {
    const filter = parseFilter(command.params ?? {}, "subscription.subscribe");
    if (typeof filter === "string") return send(failure(command.id, "invalid_argument", filter));
    const refused = await ctx.readRefusal(command.id);
    if (refused) return send(refused);
    const full = tooMany();
    if (full) return send(failure(command.id, "invalid_argument", full));
    const id = subscriptionId(filter);
    const { from, count } = await latestRun(filter);
    if (closed) return;
    send({
      type: "success",
      id: command.id,
      result: { subscription_id: id, replayed_events: count },
      meta: { thread_id: threadId, applied_through_seq: await feed.lastSeq(org, threadId) },
    });
    start(id, filter, from);
  }

  async function reconnect(command: ProtocolCommand): Promise<void> {
    const params = command.params ?? {};
    if (typeof params.run_id !== "string" || !params.run_id) {
      return send(failure(command.id, "invalid_argument", "subscription.reconnect requires a run_id."));
    }
    let since: number | undefined;
    if (params.last_event_id !== undefined) {
      since = Number(params.last_event_id);
      if (typeof params.last_event_id !== "string" || !Number.isSafeInteger(since) || since < 0) {
        return send(
          failure(command.id, "invalid_argument", "last_event_id must be an event_id this server sent."),
        );
      }
    }
    if (params.subscriptions !== undefined && !Array.isArray(params.subscriptions)) {
      return send(
        failure(command.id, "invalid_argument", "subscriptions must be an array of subscription ids."),
      );
    }
    const refused = await ctx.readRefusal(command.id);
    if (refused) return send(refused);
    if (!(await ctx.runExists(params.run_id))) {
      return send(failure(command.id, "no_such_run", `Run ${params.run_id} not found on thread ${threadId}`));
    }
    const ids = (params.subscriptions as unknown[] | undefined) ?? [];
    let restored = ids.length > 0;
    let missed = 0;
    const starts: (() => void)[] = [];
    for (const id of ids) {
      const filter = filterOf(id);
      if (!filter || tooMany()) {
        restored = false;
        continue;
      }
      if (subscriptions.has(id as string)) continue;
      const from = since ?? (await latestRun(filter)).from;
      // Whether events after `from` were dropped is read before answering.
      const peek = new AbortController();
      const items = feed.follow(org, threadId, from, peek.signal)[Symbol.asyncIterator]();
      const first = await firstItem(items, await feed.lastSeq(org, threadId), from);
      peek.abort();
      void items.return?.();
      if (first?.kind === "missed") {
        missed = Math.max(missed, first.to - first.from + 1);
        missedAnswered = Math.max(missedAnswered, first.to);
      }
      starts.push(() => start(id as string, filter, from));
    }
    if (closed) return;
    send({
      type: "success",
      id: command.id,
      result: { restored, ...(since !== undefined && { missed_events: missed }) },
      meta: { thread_id: threadId, applied_through_seq: await feed.lastSeq(org, threadId) },
    });
    for (const begin of starts) begin();
  }

  async function handle(command: ProtocolCommand): Promise<void> {
    switch (command.method) {
      case "subscription.subscribe":
        return subscribe(command);
      case "subscription.reconnect":
        return reconnect(command);
      case "subscription.unsubscribe": {
        const id = command.params?.subscription_id;
        if (typeof id !== "string" || !id) {
          return send(
            failure(command.id, "invalid_argument", "subscription.unsubscribe requires a subscription_id."),
          );
        }
        if (!subscriptions.delete(id))
          return send(failure(command.id, "no_such_subscription", `Unknown subscription: ${id}`));
        if (subscriptions.size === 0) {
          pump?.abort(); // nothing to follow until the next subscription
          pump = null;
        }
        return send({ type: "success", id: command.id, result: {} });
      }
      default:
        return send(await ctx.execute(command));
    }
  }

  // Commands run one after another, so answers keep their order and a subscription's answer precedes its events.
  let queue = Promise.resolve();
  ws.on("message", (raw, isBinary) => {
    const text = isBinary ? Buffer.from(raw as Buffer).toString("utf8") : raw.toString();
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return send(failure(null, "invalid_argument", "Protocol commands must be valid JSON."));
    }
    const { id, method, params } = (frame ?? {}) as Partial<ProtocolCommand>;
    if (!Number.isSafeInteger(id) || (id as number) < 0 || typeof method !== "string") {
      return send(
        failure(null, "invalid_argument", "Protocol commands must include an integer id and string method."),
      );
    }
    if (params !== undefined && (params === null || typeof params !== "object" || Array.isArray(params))) {
      return send(failure(id as number, "invalid_argument", "params must be an object."));
    }
    const command = { id, method, params } as ProtocolCommand;
    queue = queue
      .then(() => (closed ? undefined : handle(command)))
      .catch((err) => send(failure(command.id, "unknown_error", (err as Error).message)));
  });
}

/** The first item of `items` if one is already kept (`last` > `from`); none otherwise, without waiting. */
async function firstItem(
  items: AsyncIterator<ThreadEventItem>,
  last: number,
  from: number,
): Promise<ThreadEventItem | undefined> {
  if (last <= from) return undefined;
  const next = await items.next();
  return next.done ? undefined : next.value;
}

/**
 * `GET /threads/{thread_id}/stream/events` with `Upgrade: websocket`, authorized as the SSE stream
 * (`mayRead`) with the upgrade request's credentials (headers, or subprotocols:
 * `consoleWebSocketCredentials`); a plain GET is answered 426. A refusal becomes a close code
 * (src/http/upgrade.ts).
 */
export function protocolSocketRoutes(deps: ProtocolDeps) {
  let wss: Promise<WebSocketServer> | undefined;
  const webSockets = () => {
    // A frame is a command: no larger than a command's body may be.
    wss ??= import("ws").then(
      ({ WebSocketServer }) =>
        new WebSocketServer({
          noServer: true,
          maxPayload: deps.config.maxBodyBytes,
          handleProtocols: webSocketProtocol,
        }),
    );
    return wss;
  };
  return new Hono<AppEnv>().get(STREAM_EVENTS_PATH, async (c) => {
    let threadId: string;
    try {
      threadId = threadIdOf(c);
    } catch (err) {
      if (err instanceof BadRequest) return c.json(errorResponse(null, "invalid_argument", err.message), 400);
      throw err;
    }
    const upgrade = (c.env as UpgradeEnv | undefined)?.upgrade;
    if (!upgrade) {
      return c.json(
        {
          detail:
            "GET on this path is the protocol's WebSocket: send an Upgrade: websocket request (the SSE stream is POST)",
        },
        426,
      );
    }
    await mayRead(deps, c, threadId);
    const org = orgOf(c);
    (await webSockets()).handleUpgrade(upgrade.req, upgrade.socket, upgrade.head, (ws) =>
      handleProtocolSocket(ws, {
        org,
        threadId,
        feed: deps.threadEvents,
        execute: (command) => runCommand(deps, c, threadId, command),
        runExists: async (runId) => (await deps.storage.runs.get(org, threadId, runId)) !== null,
        readRefusal: (id) => readRefusal(deps, c, threadId, id),
      }),
    );
    return c.body(null, 200, { "x-hangar-upgraded": "1" });
  });
}

const STREAM_EVENTS_PATH = "/threads/:thread_id/stream/events";
/** Upgrades the protocol answers by closing with 4000 + the HTTP status (final for SDK 1.15) rather than an HTTP error. */
export const isProtocolSocketPath = (path: string) => /\/threads\/[^/]+\/stream\/events$/.test(path);
